//! The `autoretry` command-line host: a thin loop over the library.
//!
//! - `autoretry replay [FILE]`: replays vector lines (the format of the
//!   shared vectors) on the real machine and prints, for each step line,
//!   one line `{"out":[...],"state":{...}}` (plus `"refused":true` when the
//!   input was refused). Scenario lines start a fresh machine and print
//!   nothing; a step's expectations (`out`, `state`, `refused`) are ignored;
//!   blank lines are skipped.
//! - `autoretry classify [FILE]`: reads `{"text":"..."}` lines and prints
//!   `{"retryable":b,"overflow":b,"usageLimit":b,"hintMs":n|null}` for each.
//!
//! Input comes from FILE, or stdin when absent. Lines are split on `\n`
//! only (texts may contain U+2028). A malformed line stops the run: the
//! lines before it have been printed, the error goes to stderr as
//! `line N: ...` (1-based), and the exit code is 1.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use autoretry::wire::json::{classify_line_text, classify_to_json, DecodeError};
use autoretry::wire::replay::Replayer;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "autoretry",
    version,
    about = "Drive the autoretry state machine from JSON lines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Room for `simulate` and `rpc` (added later): one variant each, its logic
// in the library.
#[derive(Subcommand)]
enum Command {
    /// Replay vector lines (scenario and step lines) and print each step's
    /// outputs and state as one JSON line.
    Replay {
        /// The vector file (JSON lines); stdin when absent.
        file: Option<PathBuf>,
    },
    /// Classify `{"text":"..."}` lines and print
    /// `{"retryable":b,"overflow":b,"usageLimit":b,"hintMs":n|null}` per line.
    Classify {
        /// The input file (JSON lines); stdin when absent.
        file: Option<PathBuf>,
    },
}

/// Turns one input line into the line to print (or nothing).
type LineHandler = Box<dyn FnMut(&str) -> Result<Option<String>, DecodeError>>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (file, mut handle): (_, LineHandler) = match cli.command {
        Command::Replay { file } => {
            let mut replayer = Replayer::new();
            (
                file,
                Box::new(move |line| {
                    Ok(replayer.replay_line(line)?.map(|step| step.to_json_line()))
                }),
            )
        }
        Command::Classify { file } => (
            file,
            Box::new(|line| {
                if is_blank(line) {
                    return Ok(None);
                }
                Ok(Some(classify_to_json(&classify_line_text(line)?)))
            }),
        ),
    };
    let input = match read_input(file.as_ref()) {
        Ok(input) => input,
        Err(e) => {
            let name = file.map_or_else(|| "stdin".into(), |f| f.display().to_string());
            eprintln!("autoretry: cannot read {name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut status = ExitCode::SUCCESS;
    for (index, raw) in split_lines(&input).enumerate() {
        let result = std::str::from_utf8(raw)
            .map_err(|e| DecodeError::new(format!("invalid UTF-8: {e}")))
            .and_then(&mut handle);
        match result {
            Ok(None) => {}
            Ok(Some(line)) => {
                if writeln!(out, "{line}").is_err() {
                    // The reader went away (broken pipe): stop quietly.
                    return status;
                }
            }
            Err(e) => {
                let _ = out.flush();
                eprintln!("line {}: {e}", index + 1);
                status = ExitCode::FAILURE;
                break;
            }
        }
    }
    let _ = out.flush();
    status
}

fn read_input(file: Option<&PathBuf>) -> io::Result<Vec<u8>> {
    match file {
        Some(path) => std::fs::read(path),
        None => {
            let mut buf = Vec::new();
            io::stdin().lock().read_to_end(&mut buf)?;
            Ok(buf)
        }
    }
}

/// Splits on `\n` only; a final empty piece (after the last newline) is
/// dropped.
fn split_lines(input: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    let empty = input.is_empty();
    body.split(|&b| b == b'\n').filter(move |_| !empty)
}

fn is_blank(line: &str) -> bool {
    line.trim_matches([' ', '\t', '\r']).is_empty()
}
