//! `cargo xtask test`: the README's test command, step by step (what `.ci/run` runs).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::boards;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::files::read;
use crate::setup::{thumb_targets, WASM_TARGET};

/// The no_std core crates, built for every thumb target (and published).
const CORE_CRATES: [&str; 5] = [
    "s2s-kernels",
    "rnn-core",
    "attention-core",
    "seq2seq",
    "s2s-device",
];

/// The core crates' optional integrations, each built for the thumb targets and tested on
/// the host: `defmt` (all but s2s-device) and `fast-math` (s2s-kernels; its tests assert
/// the stated micromath errors).
const FEATURE_BUILDS: [(&str, &[&str]); 2] = [
    (
        "defmt",
        &["s2s-kernels", "rnn-core", "attention-core", "seq2seq"],
    ),
    ("fast-math", &["s2s-kernels"]),
];

/// Reduced builds of seq2seq's model parts (its cargo features, which reach rnn-core and
/// attention-core): each is built for the M0 target and its bind-time refusals tested on
/// the host (`seq2seq/tests/features.rs`), so that every part is compiled both in and
/// out. The first is the micro:bit's minimal netra build (see `MINIMAL_FIRMWARE`).
const PART_BUILDS: [&str; 3] = ["gru,additive", "lstm,multiplicative,beam", "bridge"];

/// The features of netra's one-model firmware (what `s2s qemu --one-model` builds).
const ONE_MODEL_FEATURES: &str = "w8a16,gru,additive,error-codes";

/// The minimal firmware checked by clippy and the no-panic link (with the default
/// builds): the micro:bit serving netra w8a16 (`s2s inspect` gives its features).
const MINIMAL_FIRMWARE: (&str, &str) = ("microbit", "w8a16,gru,additive");

impl Ctx {
    pub(crate) fn test(&self) -> Result {
        let mut steps = Steps::default();
        steps.step("setup", || self.setup())?;
        // With training: the tests and the CI training run need it, so s2s is built once.
        steps.step("models", || self.models_with(true))?;
        steps.step("fmt", || {
            self.run(self.cargo().args(["fmt", "--all", "--", "--check"]))
        })?;
        steps.step(
            "floors: no file (host-tools: folder) imports one that imports it back",
            || crate::floors::floors(&self.root),
        )?;
        steps.step("clippy", || {
            self.run(self.cargo().args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]))
        })?;
        steps.step("clippy: the explorer for wasm32-unknown-unknown", || {
            self.run(
                self.cargo_for(&["s2s-explorer"], "clippy")
                    .args(["--target", WASM_TARGET])
                    .args(["--", "-D", "warnings"]),
            )
        })?;
        for t in thumb_targets() {
            steps.step(&format!("build core crates for {t}"), || {
                self.run(self.cargo_for(&CORE_CRATES, "build").args(["--target", t]))
            })?;
            for (feature, crates) in FEATURE_BUILDS {
                steps.step(&format!("build core crates with {feature} for {t}"), || {
                    self.run(self.cargo_for(crates, "build").args([
                        "--target",
                        t,
                        "--features",
                        feature,
                    ]))
                })?;
            }
        }
        for (feature, crates) in FEATURE_BUILDS {
            steps.step(&format!("test core crates with {feature}"), || {
                self.run(self.cargo_for(crates, "test").args(["--features", feature]))
            })?;
        }
        for parts in PART_BUILDS {
            let only = ["--no-default-features", "--features", parts];
            steps.step(&format!("build seq2seq with only {parts}"), || {
                self.run(
                    self.cargo_for(&["seq2seq"], "build")
                        .args(only)
                        .args(["--target", "thumbv6m-none-eabi"]),
                )
            })?;
            steps.step(&format!("test seq2seq's parts with only {parts}"), || {
                self.run(
                    self.cargo_for(&["seq2seq"], "test")
                        .args(only)
                        .args(["--test", "features"]),
                )
            })?;
        }
        steps.step("firmware and embed example rust-version", || {
            self.check_rust_versions()
        })?;
        steps.step("publish dry-run of the core crates", || {
            // Cargo treats registry packages as immutable: both the sources it extracted
            // and what it compiled from them on an earlier run would be reused, so the
            // check runs in a target directory of its own, emptied first.
            forget_packaged_sources()?;
            let dir = self.target.join("publish-check");
            if dir.exists() {
                fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
            }
            self.run(
                self.cargo_for(&CORE_CRATES, "publish")
                    .args(["--dry-run", "--allow-dirty"])
                    .env("CARGO_TARGET_DIR", &dir),
            )
        })?;
        steps.step("doc", || {
            self.run(
                self.cargo()
                    // With s2s's training (not a default feature): its docs too.
                    .args([
                        "doc",
                        "--workspace",
                        "--no-deps",
                        "--features",
                        "host-tools/train",
                    ])
                    .env("RUSTDOCFLAGS", "-D warnings"),
            )
        })?;
        // tests/tests/explorer.rs drives the page built into target/explorer/.
        steps.step("explorer: build the page", || self.explorer())?;
        steps.step("test", || {
            self.run(self.cargo().args(["test", "--workspace"]))
        })?;
        steps.step("build s2s without the train and serial features", || {
            self.run(self.cargo().args([
                "check",
                "-p",
                "host-tools",
                "--no-default-features",
                "--all-targets",
            ]))
        })?;
        steps.step("train the date model (CI size, release)", || {
            self.train_check()
        })?;
        for board in s2s_device::board::register_boards() {
            steps.step(&format!("firmware clippy for {}", board.name), || {
                self.run(
                    self.cargo()
                        .args(["clippy", "--release", "--target", board.target])
                        // kernel-suite: the one binary that needs its own feature;
                        // profile: the model runner's phase counts.
                        .args(["--features", "kernel-suite,profile"])
                        .args(["--", "-D", "warnings"])
                        .env("S2S_BOARD", board.name)
                        .current_dir(self.root.join("firmware")),
                )
            })?;
        }
        let (name, features) = MINIMAL_FIRMWARE;
        // The minimal build also with its errors as codes (`error-codes`, issue 32).
        let coded = format!("{features},error-codes");
        steps.step(
            &format!("firmware clippy for {name}, minimal, and with error-codes"),
            || {
                let board = s2s_device::board::find(name).ok_or("no such board")?;
                for features in [features, coded.as_str()] {
                    self.run(
                        self.cargo()
                            .args(["clippy", "--release", "--target", board.target])
                            .args(["--no-default-features", "--features", features])
                            .args(["--", "-D", "warnings"])
                            .env("S2S_BOARD", board.name)
                            .current_dir(self.root.join("firmware")),
                    )?;
                }
                Ok(())
            },
        )?;
        steps.step("embed examples: fmt and clippy", || self.embed_clippy())?;
        for board in boards::hal_boards() {
            steps.step(
                &format!("HAL board crate for {}: fmt, clippy, link", board.name),
                || self.hal_board_check(board),
            )?;
        }
        for board in s2s_device::board::register_boards() {
            steps.step(
                &format!(
                    "no-panic link check for {}, default and profile",
                    board.name
                ),
                || {
                    self.no_panic_check(board, Build::Default)?;
                    self.no_panic_check(board, Build::Profile)
                },
            )?;
        }
        steps.step(
            &format!("no-panic link check for {name}, minimal, and with error-codes"),
            || {
                let board = s2s_device::board::find(name).ok_or("no such board")?;
                self.no_panic_check(board, Build::Minimal(features))?;
                self.no_panic_check(board, Build::Minimal(&coded))
            },
        )?;
        steps.summary();
        println!("xtask test: all {} steps passed", steps.done.len());
        Ok(())
    }

    /// Links the `firmware` binary (boot, parse and bind at every precision the board
    /// compiles, the line protocol, greedy and beam decoding, the defmt logger, the
    /// fault handlers) with the firmware's `no-panic` feature, whose panic handler calls
    /// a symbol defined nowhere: the link succeeds only if no panic is reachable
    /// (`firmware/src/no_panic.rs`). The same target directory and profile as `s2s
    /// qemu`'s builds, so only the firmware crate is compiled again. `build` says which
    /// of them (the HAL boards' are linked so by their own step, `boards.rs`).
    fn no_panic_check(&self, board: &s2s_device::Board, build: Build) -> Result {
        let firmware = self.root.join("firmware");
        let mut cargo = self.cargo();
        cargo
            .args(["build", "--release", "--bin", "firmware"])
            .args(["--target", board.target])
            .env("S2S_BOARD", board.name)
            .current_dir(&firmware);
        match build {
            Build::Minimal(features) => cargo
                .args(["--no-default-features", "--features"])
                .arg(format!("no-panic,{features}"))
                .arg("--target-dir")
                .arg(firmware.join("target/minimal")),
            Build::Default | Build::Profile => {
                let profile = matches!(build, Build::Profile);
                cargo
                    .arg("--features")
                    .arg(if profile {
                        "no-panic,profile"
                    } else {
                        "no-panic"
                    })
                    .arg("--target-dir")
                    .arg(firmware.join("target"))
            }
        };
        let elf = firmware
            .join("target")
            .join(board.target)
            .join("release/firmware");
        self.run(&mut cargo)
            .map_err(|e| boards::panic_reachable(e, board, &elf))
    }

    /// The Rust embed example (`examples/rust`, its own workspace like the firmware):
    /// rustfmt, and clippy for both its boards' targets with netra w8a16 embedded by
    /// `s2s embed` (the firmware's one-model build too, with the parts netra needs); and
    /// the C API's library for the thumb targets (the host build is the workspace's).
    /// tests/tests/embed.rs builds both examples and runs them, tests/tests/one_model.rs
    /// the one-model firmware.
    fn embed_clippy(&self) -> Result {
        let example = self.root.join("examples/rust");
        self.run(
            self.cargo()
                .args(["fmt", "--", "--check"])
                .current_dir(&example),
        )?;
        let dir = self.target.join("embed-rust");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (target, board) in [
            ("thumbv6m-none-eabi", "microbit"),
            ("thumbv7em-none-eabihf", "mps2-an386"),
        ] {
            let module = dir.join(format!("netra-w8a16-{board}.rs"));
            self.run(
                Command::new(self.s2s())
                    .arg("embed")
                    .arg(self.target.join("models/netra-w8a16.s2s"))
                    .args(["--board", board, "-o"])
                    .arg(&module),
            )?;
            self.run(
                self.cargo()
                    .args(["clippy", "--release", "--target", target])
                    .args(["--", "-D", "warnings"])
                    .env("S2S_BOARD", board)
                    .env(s2s_device::EMBED_VAR, &module)
                    .current_dir(&example),
            )?;
            self.run(
                self.cargo()
                    .args(["clippy", "--release", "--target", target])
                    .args(["--no-default-features", "--features", ONE_MODEL_FEATURES])
                    .args(["--", "-D", "warnings"])
                    .env("S2S_BOARD", board)
                    .env(s2s_device::EMBED_VAR, &module)
                    .current_dir(self.root.join("firmware")),
            )?;
            self.run(
                self.cargo_for(&["s2s-capi"], "clippy")
                    .args(["--profile", "embed", "--target", target])
                    .args(["--", "-D", "warnings"]),
            )?;
            // The C example's library: the same model embedded.
            self.run(
                self.cargo_for(&["s2s-capi"], "clippy")
                    .args(["--profile", "embed", "--target", target])
                    .args(["--no-default-features", "--features", "w8a16,gru,additive"])
                    .args(["--", "-D", "warnings"])
                    .env(s2s_device::EMBED_VAR, &module),
            )?;
        }
        Ok(())
    }

    /// `cargo <command> -p <crate>...`.
    fn cargo_for(&self, crates: &[&str], command: &str) -> Command {
        let mut c = self.cargo();
        c.arg(command);
        for k in crates {
            c.args(["-p", k]);
        }
        c
    }

    /// The firmware, its board crates and the Rust embed example (their own workspaces)
    /// must ask for the same Rust as the workspace.
    fn check_rust_versions(&self) -> Result {
        let version = |path: &Path| -> Result<String> {
            read(path)?
                .lines()
                .find_map(|l| {
                    let v = l
                        .strip_prefix("rust-version")?
                        .trim_start()
                        .strip_prefix('=')?;
                    Some(v.trim().trim_matches('"').to_string())
                })
                .ok_or_else(|| format!("{}: no rust-version", path.display()).into())
        };
        let workspace = version(&self.root.join("Cargo.toml"))?;
        let mut own = vec![
            "firmware/Cargo.toml".to_string(),
            "examples/rust/Cargo.toml".to_string(),
        ];
        for board in boards::hal_boards() {
            if let s2s_device::board::Driver::Hal { dir } = board.driver {
                own.push(format!("firmware/boards/{dir}/Cargo.toml"));
            }
        }
        own.dedup();
        for own in &own {
            let v = version(&self.root.join(own))?;
            if workspace != v {
                return Err(format!(
                    "{own} has rust-version {v}, the workspace {workspace}: make them equal"
                )
                .into());
            }
        }
        println!(
            "rust-version {workspace} in the workspace, the firmware, its board crates and the Rust embed example"
        );
        Ok(())
    }

    // ---------------------------------------------------------------------------------
    // demo
}

/// A firmware build of `s2s qemu` that the no-panic link check links.
#[derive(Clone, Copy)]
enum Build<'a> {
    /// The default features (`s2s qemu`).
    Default,
    /// With the per-phase counters (`s2s qemu --profile`, `cargo xtask bench-device`).
    Profile,
    /// Only these features (`s2s qemu --minimal`).
    Minimal(&'a str),
}

/// Timed steps of `cargo xtask test`.
#[derive(Default)]
struct Steps {
    done: Vec<(String, Duration)>,
    start: Option<Instant>,
}

impl Steps {
    /// Runs one step; on failure prints what passed and which step failed.
    fn step(&mut self, name: &str, f: impl FnOnce() -> Result) -> Result {
        let start = *self.start.get_or_insert_with(Instant::now);
        let t = Instant::now();
        println!("\n==> [{}] {name}", self.done.len() + 1);
        match f() {
            Ok(()) => {
                self.done.push((name.to_string(), t.elapsed()));
                Ok(())
            }
            Err(e) => {
                self.summary();
                Err(format!(
                    "step `{name}` failed after {:.1} s ({} steps passed, {:.0} s in all): {e}",
                    t.elapsed().as_secs_f64(),
                    self.done.len(),
                    start.elapsed().as_secs_f64()
                )
                .into())
            }
        }
    }

    fn summary(&self) {
        println!("\npassed steps:");
        let mut total = Duration::ZERO;
        for (name, d) in &self.done {
            println!("  ok  {:>7.1} s  {name}", d.as_secs_f64());
            total += *d;
        }
        println!("      {:>7.1} s  total", total.as_secs_f64());
    }
}

/// Removes the core crates' sources that an earlier `cargo publish --dry-run` extracted.
///
/// A multi-package dry run verifies each crate against its siblings through a temporary
/// local registry, which cargo extracts into `$CARGO_HOME/registry/src/-<hash>/`. Cargo
/// does not re-extract a `name-version` directory that exists, so on a machine that ran
/// the step before, a crate was verified against its siblings' *old* sources (and failed
/// on a trait method added since). Those directories hold nothing but our own packages;
/// registries from the network have names that do not start with `-`.
fn forget_packaged_sources() -> Result {
    let home = match env::var_os("CARGO_HOME") {
        Some(h) => PathBuf::from(h),
        None => match env::var_os("HOME") {
            Some(h) => PathBuf::from(h).join(".cargo"),
            None => return Ok(()),
        },
    };
    let Ok(registries) = fs::read_dir(home.join("registry").join("src")) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(packages) = fs::read_dir(registry.path()) else {
            continue;
        };
        for package in packages.flatten() {
            let name = package.file_name().to_string_lossy().into_owned();
            let ours = CORE_CRATES.iter().any(|c| {
                name.strip_prefix(c)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|v| v.starts_with(|ch: char| ch.is_ascii_digit()))
            });
            if ours {
                fs::remove_dir_all(package.path())
                    .map_err(|e| format!("removing {}: {e}", package.path().display()))?;
            }
        }
    }
    Ok(())
}
