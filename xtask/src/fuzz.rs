//! `cargo xtask fuzz [--minutes N] [--target T]`: runs the libFuzzer targets of `fuzz/`
//! (cargo-fuzz, pinned nightly) for `N` minutes each (10 by default), seeded from the
//! real model files and small builder-made ones, and prints and writes
//! (`target/fuzz/summary.md`) each target's executions, coverage and findings.
//!
//! Everything lives under `target/fuzz/`: the build, the seeds (rewritten each run),
//! the corpora (kept and grown from run to run) and any crashing input. Not part of
//! `cargo xtask test`: fuzzing is open-ended; `docs/RELIABILITY.md` records the runs.

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::ctx::Ctx;
use crate::error::{Error, Result};

/// The fuzz targets (`fuzz/fuzz_targets/<name>.rs`).
const TARGETS: [&str; 9] = [
    "model",
    "config",
    "onnx",
    "safetensors",
    "npz",
    "hdf5",
    "keras",
    "pairs",
    "generate",
];
/// The pinned nightly toolchain (fuzzing needs `-Z` sanitizer flags).
const NIGHTLY: &str = "nightly-2026-05-20";
/// What `rustc -V` of that toolchain says: the machine image installs it as plain
/// `nightly`, which is then used as it is (rustup may not be able to download here).
const NIGHTLY_RUSTC: &str = "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)";
/// The cargo-fuzz release installed when it is missing.
const CARGO_FUZZ: &str = "0.13.2";

const USAGE: &str =
    "usage: cargo xtask fuzz [--minutes N] [--target model|config|onnx|safetensors|npz|hdf5|keras|pairs|generate]";

/// What one run of a target reported.
struct Run {
    target: &'static str,
    seconds: u64,
    executions: u64,
    edges: u64,
    features: u64,
    corpus: u64,
    crash: Option<String>,
}

pub(crate) fn fuzz(ctx: &Ctx, args: &[&str]) -> Result {
    let (mut minutes, mut only) = (10u64, None);
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        match (a, it.next()) {
            ("--minutes", Some(n)) => {
                minutes = n
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("--minutes takes a whole number above 0\n{USAGE}"))?
            }
            ("--target", Some(&t)) => {
                only = Some(
                    *TARGETS
                        .iter()
                        .find(|&&x| x == t)
                        .ok_or(format!("no fuzz target {t:?}\n{USAGE}"))?,
                )
            }
            _ => return Err(USAGE.into()),
        }
    }
    println!("==> fuzz");
    let toolchain = nightly(ctx)?;
    if ctx
        .capture(rustup_cargo(&toolchain).args(["fuzz", "--version"]))
        .is_err()
    {
        ctx.run(Command::new("cargo").args([
            "install",
            "cargo-fuzz",
            "--locked",
            "--version",
            CARGO_FUZZ,
        ]))?;
    }
    // The real models are the first seeds.
    ctx.models()?;

    let dir = ctx.target.join("fuzz");
    let build = dir.join("build");
    let fuzz_cmd = |sub: &str| {
        let mut c = rustup_cargo(&toolchain);
        c.args(["fuzz", sub, "--fuzz-dir"])
            .arg(ctx.root.join("fuzz"))
            .arg("--target-dir")
            .arg(&build);
        c
    };
    // Release with debug assertions and overflow checks, and AddressSanitizer: the
    // cargo-fuzz defaults.
    ctx.run(&mut fuzz_cmd("build"))?;
    let bin = build.join("x86_64-unknown-linux-gnu/release");
    let seeds = dir.join("seeds");
    ctx.run(
        Command::new(bin.join("seeds"))
            .arg(ctx.models_dir())
            .arg(ctx.root.join("models"))
            .arg(&seeds),
    )?;

    let mut runs = Vec::new();
    for target in TARGETS.into_iter().filter(|t| only.is_none_or(|o| o == *t)) {
        let corpus = dir.join("corpus").join(target);
        let artifacts = dir.join("artifacts").join(target);
        for d in [&corpus, &artifacts] {
            std::fs::create_dir_all(d).map_err(Error::io(d))?;
        }
        let mut cmd = fuzz_cmd("run");
        cmd.arg(target)
            .arg(&corpus)
            .arg(seeds.join(target))
            .arg("--")
            .arg(format!("-max_total_time={}", minutes * 60))
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .args(["-print_final_stats=1", "-timeout=30", "-rss_limit_mb=2048"]);
        runs.push(run_target(ctx, target, &mut cmd)?);
    }

    let mut summary = String::from(
        "| target | minutes | executions | edges (cov) | features (ft) | corpus | crash |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in &runs {
        summary += &format!(
            "| {} | {:.1} | {} | {} | {} | {} | {} |\n",
            r.target,
            r.seconds as f64 / 60.0,
            r.executions,
            r.edges,
            r.features,
            r.corpus,
            r.crash.as_deref().unwrap_or("none")
        );
    }
    summary += &format!(
        "\n{toolchain} (`{NIGHTLY_RUSTC}`), cargo-fuzz, `cargo xtask fuzz --minutes {minutes}`\n"
    );
    let file = dir.join("summary.md");
    std::fs::write(&file, &summary).map_err(Error::io(&file))?;
    print!("\n{summary}");
    println!("(written to {})", ctx.show(&file));
    match runs.iter().find_map(|r| r.crash.as_ref()) {
        Some(c) => Err(format!(
            "a fuzz target crashed on {c}; minimise it with `cargo +{toolchain} fuzz tmin --fuzz-dir fuzz <target> {c}` and add it as a regression test"
        ).into()),
        None => Ok(()),
    }
}

/// The pinned nightly: the installed `nightly` when it is that build, else its dated
/// name (rustup installs it on first use).
fn nightly(ctx: &Ctx) -> Result<String> {
    let installed = ctx.capture(Command::new("rustc").arg("+nightly").arg("-V"));
    match installed {
        Ok(v) if v.trim() == NIGHTLY_RUSTC => Ok("nightly".into()),
        _ => {
            println!("fuzz: the installed nightly is not {NIGHTLY_RUSTC}; using {NIGHTLY}");
            Ok(NIGHTLY.into())
        }
    }
}

/// `cargo +<toolchain>` through rustup's proxy, without the toolchain of the cargo
/// that runs the xtask.
fn rustup_cargo(toolchain: &str) -> Command {
    let mut c = Command::new("cargo");
    c.arg(format!("+{toolchain}"))
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("CARGO");
    c
}

/// Runs one target, passing libFuzzer's progress lines through (not each new unit),
/// and reads its final figures.
fn run_target(ctx: &Ctx, target: &'static str, cmd: &mut Command) -> Result<Run> {
    cmd.current_dir(&ctx.root);
    println!("$ {}", ctx.cmdline(cmd));
    let log_path = ctx.target.join("fuzz").join(format!("{target}.log"));
    let mut log = std::fs::File::create(&log_path).map_err(Error::io(&log_path))?;
    let start = Instant::now();
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start cargo fuzz: {e}"))?;
    let mut run = Run {
        target,
        seconds: 0,
        executions: 0,
        edges: 0,
        features: 0,
        corpus: 0,
        crash: None,
    };
    let stderr = child.stderr.take().ok_or("no stderr")?;
    for line in BufReader::new(stderr).lines() {
        let line = line.map_err(|e| format!("reading cargo fuzz: {e}"))?;
        let _ = writeln!(log, "{line}");
        let unit = matches!(line.split_whitespace().nth(1), Some("NEW" | "REDUCE"))
            || line.trim_start().starts_with("NEW_FUNC");
        if !unit && !line.starts_with('"') {
            println!("{line}");
        }
        if let Some(rest) = line.strip_prefix('#') {
            let field = |name: &str| -> Option<u64> {
                let mut w = line.split_whitespace();
                w.position(|x| x == name)?;
                w.next()?.split('/').next()?.parse().ok()
            };
            run.executions = rest
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(run.executions);
            run.edges = field("cov:").unwrap_or(run.edges);
            run.features = field("ft:").unwrap_or(run.features);
            run.corpus = field("corp:").unwrap_or(run.corpus);
        }
        if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            run.executions = n.trim().parse().unwrap_or(run.executions);
        }
        // "Done 238648 runs in 721 second(s)": the time spent fuzzing.
        if let Some(rest) = line.strip_prefix("Done ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let [runs, "runs", "in", secs, ..] = words[..] {
                run.executions = runs.parse().unwrap_or(run.executions);
                run.seconds = secs.parse().unwrap_or(run.seconds);
            }
        }
        if let Some(p) = line.split("Test unit written to ").nth(1) {
            run.crash = Some(p.trim().to_string());
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo fuzz: {e}"))?;
    if run.seconds == 0 {
        run.seconds = start.elapsed().as_secs();
    }
    if !status.success() && run.crash.is_none() {
        return Err(format!(
            "cargo fuzz run {target} failed ({status}); see {}",
            ctx.show(&log_path)
        )
        .into());
    }
    Ok(run)
}
