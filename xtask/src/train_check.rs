//! The CI-sized training runs of `cargo xtask test`: the date model trained from a few
//! hundred generated pairs with the release `s2s` (about half a minute on 2 cores),
//! checked against the acceptance rules of `s2s train`; then fine-tuned from that file
//! with quantization-aware training (`--init`, `--quantize w8a16`), whose file must
//! decode every validation source as the training code's integer model and give the
//! host's outputs on the AN386 and the micro:bit under QEMU.

use std::path::Path;
use std::process::Command;

use crate::ctx::Ctx;
use crate::error::Result;

/// Training and validation pairs.
const PAIRS: (usize, usize) = (400, 200);
/// The lowest validation sequence accuracy (%) accepted; the run reaches about 94.5 %
/// (with 2 threads).
pub const MIN_SEQUENCE_ACCURACY: f64 = 85.0;
/// The lowest share of validation sources the written file must decode as the training
/// code does (%); every other one must differ only at a near tie.
pub const MIN_AGREEMENT: f64 = 99.5;

impl Ctx {
    /// Generates the pairs, trains, and checks the report.
    pub fn train_check(&self) -> Result {
        let dir = self.target.join("ci-train");
        let _ = std::fs::remove_dir_all(&dir);
        self.build_s2s(true)?;
        let s2s = self.s2s();
        let (train, valid) = (PAIRS.0.to_string(), PAIRS.1.to_string());
        self.run(
            Command::new(&s2s)
                .args([
                    "generate", "dates", "--seed", "11", "--train", &train, "--valid", &valid, "-o",
                ])
                .arg(&dir),
        )?;
        let report = dir.join("report.json");
        self.run(
            Command::new(&s2s)
                .arg("train")
                .arg("--config")
                .arg(self.root.join("models/train/dates.toml"))
                .arg("--data")
                .arg(dir.join("train.tsv"))
                .arg("--valid")
                .arg(dir.join("valid.tsv"))
                .arg("-o")
                .arg(dir.join("dates.s2s"))
                .args([
                    "--epochs",
                    "40",
                    "--batch",
                    "16",
                    "--lr",
                    "0.005",
                    "--patience",
                    "6",
                ])
                .args([
                    "--dropout",
                    "0",
                    "--seed",
                    "1",
                    "--threads",
                    "2",
                    "--quiet",
                    "--report",
                ])
                .arg(&report),
        )?;
        check_report(&report, Rules::FLOAT)?;

        // Quantization-aware fine-tuning of that file.
        let qat = dir.join("dates-w8a16.s2s");
        let qat_report = dir.join("qat-report.json");
        self.run(
            Command::new(&s2s)
                .arg("train")
                .arg("--init")
                .arg(dir.join("dates.s2s"))
                .arg("--data")
                .arg(dir.join("train.tsv"))
                .arg("--valid")
                .arg(dir.join("valid.tsv"))
                .arg("-o")
                .arg(&qat)
                .args(["--quantize", "w8a16", "--epochs", "3", "--batch", "16"])
                .args(["--lr", "0.001", "--seed", "1", "--threads", "2", "--quiet"])
                .arg("--report")
                .arg(&qat_report),
        )?;
        check_report(&qat_report, Rules::QUANTIZED)?;
        let inputs = dir.join("device-inputs.txt");
        let valid = crate::files::read(&dir.join("valid.txt"))?;
        let first: String = valid
            .lines()
            .take(QEMU_INPUTS)
            .map(|l| format!("{l}\n"))
            .collect();
        crate::files::write(&inputs, &first)?;
        for board in ["mps2-an386", "microbit"] {
            let out = self.capture(
                Command::new(&s2s)
                    .arg("qemu")
                    .arg(&qat)
                    .args(["--board", board, "--input"])
                    .arg(&inputs),
            )?;
            let line = out
                .lines()
                .find(|l| l.starts_with("mismatches"))
                .unwrap_or("");
            println!("{board}: {line}");
            if line.split_whitespace().nth(1) != Some("0") {
                return Err(format!(
                    "{}: on {board}: {line:?}, expected 0 mismatches",
                    qat.display()
                )
                .into());
            }
        }
        Ok(())
    }
}

/// Validation sources run under QEMU on each board.
const QEMU_INPUTS: usize = 20;

/// What a report must show.
struct Rules {
    /// The validation loss falls below half its initial value.
    halves_loss: bool,
    /// The lowest share of validation sources decoded as the training code does (%).
    min_agreement: f64,
    /// The written file's precision.
    precision: &'static str,
}

impl Rules {
    const FLOAT: Rules = Rules {
        halves_loss: true,
        min_agreement: MIN_AGREEMENT,
        precision: "f32",
    };
    /// Fine-tuned (the loss starts low) and exact: every source as the training code's
    /// integer model.
    const QUANTIZED: Rules = Rules {
        halves_loss: false,
        min_agreement: 100.0,
        precision: "w8a16",
    };
}

/// The rules: validation loss below half the initial loss, sequence accuracy above the
/// floor, the written file decoding like the training code.
fn check_report(path: &Path, rules: Rules) -> Result {
    let text = crate::files::read(path)?;
    let r: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let num = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    let (initial, best) = (num("initial_valid_loss"), num("best_valid_loss"));
    let accuracy = 100.0 - num("valid_ser");
    let a = &r["agreement"];
    let (equal, n) = (
        a["equal"].as_u64().unwrap_or(0),
        a["sequences"].as_u64().unwrap_or(0),
    );
    let far: Vec<&serde_json::Value> = a["differences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| {
            let gap = d["gap"].as_f64().unwrap_or(f64::INFINITY);
            gap.is_nan() || gap >= 1e-4
        })
        .collect();
    let agreement = 100.0 * equal as f64 / n.max(1) as f64;
    println!(
        "validation loss {initial:.4} -> {best:.4}; sequence accuracy {accuracy:.2} % (floor {MIN_SEQUENCE_ACCURACY} %); the file decodes {equal} of {n} as the training code ({agreement:.2} %, floor {} %), {} differences away from a near tie",
        rules.min_agreement,
        far.len()
    );
    let mut failed = Vec::new();
    if r["precision"].as_str() != Some(rules.precision) {
        failed.push("the written file is not in the precision asked for");
    }
    if rules.halves_loss && (best.is_nan() || best >= initial / 2.0) {
        failed.push("the validation loss did not fall below half its initial value");
    }
    if accuracy.is_nan() || accuracy < MIN_SEQUENCE_ACCURACY {
        failed.push("the validation sequence accuracy is below its floor");
    }
    if agreement < rules.min_agreement || !far.is_empty() {
        failed.push("the written model does not decode like the training code");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", path.display(), failed.join("; ")).into())
    }
}
