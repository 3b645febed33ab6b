//! The CI-sized training run of `cargo xtask test`: the date model trained from a few
//! hundred generated pairs with the release `s2s` (about half a minute on 2 cores),
//! checked against the acceptance rules of `s2s train`.

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
        check_report(&report)
    }
}

/// The rules: validation loss below half the initial loss, sequence accuracy above the
/// floor, the written file decoding like the training code.
fn check_report(path: &Path) -> Result {
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
        "validation loss {initial:.4} -> {best:.4}; sequence accuracy {accuracy:.2} % (floor {MIN_SEQUENCE_ACCURACY} %); the file decodes {equal} of {n} as the training code ({agreement:.2} %, floor {MIN_AGREEMENT} %), {} differences away from a near tie",
        far.len()
    );
    let mut failed = Vec::new();
    if best.is_nan() || best >= initial / 2.0 {
        failed.push("the validation loss did not fall below half its initial value");
    }
    if accuracy.is_nan() || accuracy < MIN_SEQUENCE_ACCURACY {
        failed.push("the validation sequence accuracy is below its floor");
    }
    if agreement < MIN_AGREEMENT || !far.is_empty() {
        failed.push("the written model does not decode like the training code");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", path.display(), failed.join("; ")).into())
    }
}
