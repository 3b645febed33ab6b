//! `peak-rss OUT COMMAND [ARGS...]`: runs COMMAND with this process's standard input,
//! output and error, waits for it, writes its peak resident set size in KiB to the file
//! OUT, and exits with its status (1 when it was killed by a signal).
//!
//! The peak is `getrusage(RUSAGE_CHILDREN)`'s `ru_maxrss`, the largest of this
//! process's waited-for children: COMMAND is its only child, so that is COMMAND's own
//! peak (a test process runs many children, cargo included, and could not tell them
//! apart). The tests use it to assert that `s2s` stays bounded on hostile inputs.

use std::process::{Command, ExitCode};

use nix::sys::resource::{getrusage, UsageWho};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let [out, command, rest @ ..] = &args[..] else {
        eprintln!("usage: peak-rss OUT COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let status = match Command::new(command).args(rest).status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("peak-rss: {}: {e}", command.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    let usage = match getrusage(UsageWho::RUSAGE_CHILDREN) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("peak-rss: getrusage: {e}");
            return ExitCode::from(2);
        }
    };
    // Linux reports ru_maxrss in KiB.
    if let Err(e) = std::fs::write(out, usage.max_rss().to_string()) {
        eprintln!("peak-rss: {}: {e}", out.to_string_lossy());
        return ExitCode::from(2);
    }
    ExitCode::from(status.code().map_or(1, |c| c as u8))
}
