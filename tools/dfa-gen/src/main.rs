//! Writes (or, with `--check`, verifies) `src/classify/dfa/`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => {
            eprintln!("unknown argument {other}; usage: [--check]");
            return ExitCode::from(2);
        }
    };
    let built = match autoretry_gen::build_all() {
        Ok(built) => built,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("table      states  classes  bytes");
    for b in &built {
        println!(
            "{:<10} {:>6}  {:>7}  {:>5}",
            b.name,
            b.table.states(),
            b.table.stride,
            b.size()
        );
    }
    let total: usize = built.iter().map(|b| b.size()).sum();
    println!("{:<10} {:>6}  {:>7}  {total:>5}", "total", "", "");

    let dir = autoretry_gen::out_dir();
    let files = match autoretry_gen::files(&built) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if check {
        let stale = autoretry_gen::drift(&dir, &files);
        if stale.is_empty() {
            println!("up to date");
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "stale generated files {stale:?}: run `{}`",
            autoretry_gen::REGENERATE
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    for stray in autoretry_gen::strays(&dir, &files) {
        let path = dir.join(stray);
        if let Err(e) = std::fs::remove_file(&path) {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    for (name, bytes) in &files {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    println!("wrote {} files to {}", files.len(), dir.display());
    ExitCode::SUCCESS
}
