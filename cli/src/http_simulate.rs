//! `autoretry simulate`: the agent of `autoretry-demo` against its local
//! provider over real HTTP on 127.0.0.1, through every failure of a plan,
//! in one wire format; a live line per request and per decision, then
//! the closing table; `--record FILE` writes what the agent fed the
//! machine as vector lines (`autoretry replay FILE` gives back the same
//! outputs).

use std::path::PathBuf;

use autoretry_demo::clock::Scale;
use autoretry_demo::plan::Plan;
use autoretry_demo::show;
use autoretry_demo::wire::Wire;

/// What `simulate` was asked.
pub struct Options {
    /// The case names, in order; every case of the default plan when empty.
    pub cases: Vec<String>,
    /// The wire format.
    pub wire: Wire,
    /// The time scale (0.1: ten times faster).
    pub time_scale: f64,
    /// Where to write the vector lines.
    pub record: Option<PathBuf>,
}

/// Runs the demo; the exit code.
pub fn run(options: &Options) -> u8 {
    let Some(scale) = Scale::new(options.time_scale) else {
        eprintln!("autoretry simulate: --time-scale must be a finite number > 0");
        return 2;
    };
    let plan = Plan::default_plan();
    let plan = if options.cases.is_empty() {
        plan
    } else {
        let names: Vec<&str> = options.cases.iter().map(String::as_str).collect();
        match plan.only(&names) {
            Ok(plan) => plan,
            Err(name) => {
                let known: Vec<&str> = plan.cases.iter().map(|c| c.name).collect();
                eprintln!(
                    "autoretry simulate: --plan: no case {name:?} (the cases: {})",
                    known.join(", ")
                );
                return 2;
            }
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("autoretry simulate: cannot start the runtime: {e}");
            return 1;
        }
    };
    let mut live = |line: &str| println!("{line}");
    let runs = match runtime.block_on(show::run_plan(&plan, options.wire, scale, &mut live)) {
        Ok(runs) => runs,
        Err(e) => {
            eprintln!("autoretry simulate: {e}");
            return 1;
        }
    };
    println!();
    println!("{}", show::table(&runs));
    let refused: Vec<&String> = runs.iter().flat_map(|r| &r.trace.refused).collect();
    for refused in &refused {
        eprintln!("autoretry simulate: the machine refused {refused}");
    }
    if let Some(path) = &options.record {
        let lines: Vec<&str> = runs
            .iter()
            .flat_map(|r| r.trace.vector.iter().map(String::as_str))
            .collect();
        if let Err(e) = std::fs::write(path, lines.join("\n") + "\n") {
            eprintln!("autoretry simulate: --record {}: {e}", path.display());
            return 1;
        }
    }
    u8::from(!refused.is_empty())
}
