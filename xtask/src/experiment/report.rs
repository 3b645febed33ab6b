//! The evaluation stages: they run `s2s eval`, `s2s run --attention`, `s2s heatmap`,
//! `s2s quantize`, `s2s check` and `s2s qemu` on the trained models and keep what they
//! report in `target/experiments/results/`; pictures go to `docs/experiments/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::align::segment_shares;
use super::{read, Exp};
use crate::error::{Error, Result};

/// Words per length bucket drawn for the stratified evaluation's seed.
pub const STRATIFIED_SEED: u64 = 16;
/// The CMUdict buckets (as `s2s eval` reports them).
pub const BUCKETS: [(usize, usize); 4] = [(1, 4), (5, 8), (9, 12), (13, usize::MAX)];

impl Exp<'_> {
    /// `target/experiments/results/<name>`.
    pub fn result(&self, name: &str) -> PathBuf {
        self.path(&format!("results/{name}"))
    }

    /// `docs/experiments/<name>`.
    pub fn picture(&self, name: &str) -> PathBuf {
        self.ctx.root.join("docs/experiments").join(name)
    }

    /// `s2s quantize` of `model` to w8a16 on the sources of `calib` into `out`; its
    /// report.
    pub(super) fn quantize_w8a16(&self, model: &Path, calib: &Path, out: &Path) -> Result<String> {
        self.quantize(model, calib, out, &[])
    }

    /// [`Exp::quantize_w8a16`] with one int8 plane per layer (`--planes none`).
    pub(super) fn quantize_w8a16_one_plane(
        &self,
        model: &Path,
        calib: &Path,
        out: &Path,
    ) -> Result<String> {
        self.quantize(model, calib, out, &["--planes", "none"])
    }

    /// `s2s quantize --scheme w8a16` with `extra` options.
    fn quantize(&self, model: &Path, calib: &Path, out: &Path, extra: &[&str]) -> Result<String> {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"quantize",
            &model,
            &"--scheme",
            &"w8a16",
            &"--calib",
            &calib,
        ];
        for e in extra {
            args.push(e);
        }
        args.extend([&"-o" as &dyn AsRef<std::ffi::OsStr>, &out]);
        self.capture_s2s(&args)
    }

    pub(super) fn need(&self, names: &[&str]) -> Result<Vec<PathBuf>> {
        names
            .iter()
            .map(|n| {
                let p = self.path(&format!("{n}.s2s"));
                if p.is_file() {
                    Ok(p)
                } else {
                    Err(format!(
                        "{} is missing: run `cargo xtask experiment --stage {n}` first",
                        p.display()
                    )
                    .into())
                }
            })
            .collect()
    }

    pub(super) fn dirs(&self) -> Result {
        for d in [self.result(""), self.picture("")] {
            std::fs::create_dir_all(&d).map_err(Error::io(&d))?;
        }
        Ok(())
    }
}

/// FNV-1a of a seed and a text (a stable shuffle key).
fn key(seed: u64, s: &str) -> u64 {
    super::data::split_key(seed, s)
}

/// The data lines of a TSV file (comments and blank lines left out).
fn rows(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect()
}

/// The first `n` sources of a TSV text, one per line.
pub(super) fn sources(text: &str, n: usize) -> String {
    rows(text)
        .iter()
        .take(n)
        .map(|l| format!("{}\n", l.split('\t').next().unwrap_or("")))
        .collect()
}

/// CMUdict: the three models on the test split (overall and by source length, with
/// entropies), on an equal-size stratified draw from it, and three heatmaps.
pub fn cmudict_eval(e: &Exp) -> Result {
    let models = e.need(&["cmudict-vanilla", "cmudict-bahdanau", "cmudict-luong"])?;
    e.dirs()?;
    let test = e.path("cmudict/test.tsv");
    let text = read(&test)?;
    let lines = rows(&text);
    // Stratified: the same number of words from each bucket (the smallest bucket's
    // size), drawn in the order of a seeded hash.
    let mut by_bucket: Vec<Vec<&str>> = vec![Vec::new(); BUCKETS.len()];
    for l in &lines {
        let word = l.split('\t').next().unwrap_or("");
        let n = word.chars().count();
        if let Some(b) = BUCKETS.iter().position(|&(lo, hi)| (lo..=hi).contains(&n)) {
            by_bucket[b].push(l);
        }
    }
    let n = by_bucket.iter().map(Vec::len).min().unwrap_or(0);
    let mut strat = format!(
        "# {n} words from each source-length bucket of cmudict/test.tsv (seeded hash order, seed {STRATIFIED_SEED})\n"
    );
    strat += crate::cmudict::CMUDICT_NOTICE;
    for b in &mut by_bucket {
        b.sort_by_key(|l| key(STRATIFIED_SEED, l));
        for l in b.iter().take(n) {
            let _ = writeln!(strat, "{l}");
        }
    }
    let strat_path = e.path("cmudict/test-stratified.tsv");
    crate::files::write(&strat_path, &strat)?;

    let (json, plot) = (
        e.result("cmudict-test.json"),
        e.picture("cmudict-length.png"),
    );
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"eval"];
    for m in &models {
        args.push(m);
    }
    let rest: [&dyn AsRef<std::ffi::OsStr>; 6] =
        [&"--data", &test, &"--json", &json, &"--plot", &plot];
    let mut full = args.clone();
    full.extend(rest);
    let out = e.capture_s2s(&full)?;
    print!("{out}");
    let json2 = e.result("cmudict-stratified.json");
    let mut full = args.clone();
    full.extend([
        &"--data" as &dyn AsRef<std::ffi::OsStr>,
        &strat_path,
        &"--json",
        &json2,
    ]);
    print!("{}", e.capture_s2s(&full)?);

    // Heatmaps: the longest test word of 9 and of 13+ letters by Bahdanau, the second
    // also by Luong.
    let pick = |lo: usize, hi: usize| -> String {
        lines
            .iter()
            .map(|l| l.split('\t').next().unwrap_or(""))
            .filter(|w| (lo..=hi).contains(&w.len()))
            .min_by_key(|w| key(STRATIFIED_SEED, w))
            .unwrap_or("attention")
            .to_string()
    };
    let (medium, long) = (pick(9, 9), pick(13, 14));
    let maps = [
        ("cmudict-bahdanau", medium.clone()),
        ("cmudict-bahdanau", long.clone()),
        ("cmudict-luong", long.clone()),
    ];
    let mut list = String::new();
    for (model, word) in maps {
        let png = e.picture(&format!("{model}-{word}.png"));
        let m = e.path(&format!("{model}.s2s"));
        e.run_s2s(&[&"heatmap", &m, &word, &"-o", &png])?;
        let _ = writeln!(list, "{model}\t{word}");
    }
    crate::files::write(&e.result("cmudict-heatmaps.tsv"), &list)
}

/// The length task: both models by source length in buckets of 10, plotted.
pub fn length_eval(e: &Exp) -> Result {
    let models = e.need(&["length-vanilla", "length-bahdanau"])?;
    e.dirs()?;
    let test = e.path("length/test.tsv");
    let (json, plot) = (e.result("length-test.json"), e.picture("length-error.png"));
    print!(
        "{}",
        e.capture_s2s(&[
            &"eval",
            &models[0],
            &models[1],
            &"--data",
            &test,
            &"--bucket-width",
            &"10",
            &"--json",
            &json,
            &"--plot",
            &plot,
        ])?
    );
    Ok(())
}

/// The spellings whose heatmaps are drawn, with what they should show.
pub const DATE_MAPS: [(&str, &str); 3] = [
    (
        "2024-03-12",
        "a diagonal: every output character copies its source character",
    ),
    (
        "12 march 2024",
        "crossings: the year, then the month word, then the day, which comes first",
    ),
    (
        "12/03/24",
        "vertical bands: \"20\" of the year has no source character of its own",
    ),
];

/// Dates: accuracy, heatmaps, and the share of attention near the best monotonic
/// alignment per output segment and spelling.
pub fn dates_eval(e: &Exp) -> Result {
    let model = e.need(&["dates"])?.remove(0);
    e.dirs()?;
    let test = e.path("dates/test.tsv");
    let json = e.result("dates-test.json");
    print!(
        "{}",
        e.capture_s2s(&[&"eval", &model, &"--data", &test, &"--json", &json])?
    );
    for (source, _) in DATE_MAPS {
        let name = source.replace([' ', '/', ','], "_");
        let png = e.picture(&format!("dates-{name}.png"));
        e.run_s2s(&[&"heatmap", &model, &source, &"-o", &png])?;
    }
    let att = e.result("dates-attention.json");
    let sources = e.path("dates/test.txt");
    e.capture_s2s(&[&"run", &model, &"--input", &sources, &"--attention", &att])?;
    let runs: Value =
        serde_json::from_str(&read(&att)?).map_err(|err| format!("{}: {err}", att.display()))?;
    let shares = segment_shares(&runs)?;
    let text = serde_json::to_string_pretty(&shares).map_err(|err| err.to_string())?;
    crate::files::write(&e.result("dates-alignment.json"), &text)
}

/// The value after `label` on the line that starts with it, up to `unit` (commas
/// removed): `sequence agreement  99.20 % (...)` -> 99.20.
pub fn number_after(text: &str, label: &str, unit: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with(label))?;
    let rest = line.trim_start()[label.len()..].trim_start();
    let end = rest.find(unit).unwrap_or(rest.len());
    rest[..end].trim().replace(',', "").parse().ok()
}

/// The device stage: the best CMUdict attention model and the date model in w8a16,
/// checked against f32 and run under QEMU (AN386 and micro:bit).
pub fn device(e: &Exp) -> Result {
    e.dirs()?;
    let mut jobs: Vec<(&str, PathBuf, PathBuf, PathBuf, &str)> = Vec::new();
    // The best CMUdict attention model, once the cmudict-eval stage has chosen it.
    match std::fs::read_to_string(e.result("cmudict-test.json")) {
        Ok(text) => {
            let results: Value =
                serde_json::from_str(&text).map_err(|err| format!("cmudict-test.json: {err}"))?;
            let ter = |i: usize| {
                results["models"][i]["all"]["ter"]
                    .as_f64()
                    .unwrap_or(f64::MAX)
            };
            let best = if ter(1) <= ter(2) {
                "cmudict-bahdanau"
            } else {
                "cmudict-luong"
            };
            e.need(&[best])?;
            // Calibration: the first 1000 training words; on the board: 50 test words.
            let calib = e.path("cmudict/calib.txt");
            crate::files::write(&calib, &sources(&read(&e.path("cmudict/train.tsv"))?, 1000))?;
            let words = e.path("cmudict/device-words.txt");
            crate::files::write(&words, &sources(&read(&e.path("cmudict/test.tsv"))?, 50))?;
            jobs.push((best, calib, e.path("cmudict/test.tsv"), words, "mps2-an386"));
        }
        Err(_) => println!("no CMUdict results yet (stage cmudict-eval): the date model only"),
    }
    e.need(&["dates"])?;
    let inputs = e.path("dates/device-inputs.txt");
    crate::files::write(&inputs, &sources(&read(&e.path("dates/test.tsv"))?, 50))?;
    jobs.push((
        "dates",
        e.path("dates/valid.txt"),
        e.path("dates/test.tsv"),
        inputs,
        "microbit",
    ));

    let mut summary = serde_json::Map::new();
    for (name, calib, check_input, inputs, board) in &jobs {
        let f32_model = e.path(&format!("{name}.s2s"));
        let q = e.path(&format!("{name}-w8a16.s2s"));
        let quant = e.quantize_w8a16(&f32_model, calib, &q)?;
        let check = e.capture_s2s(&[
            &"check",
            &q,
            &"--reference",
            &f32_model,
            &"--input",
            check_input,
        ])?;
        print!("{check}");
        let qemu = e.capture_s2s(&[&"qemu", &q, &"--board", board, &"--input", inputs])?;
        print!("{qemu}");
        crate::files::write(&e.result(&format!("{name}-check.txt")), &check)?;
        crate::files::write(&e.result(&format!("{name}-qemu.txt")), &qemu)?;
        let bytes = std::fs::metadata(&q).map(|m| m.len()).unwrap_or(0);
        summary.insert(
            name.to_string(),
            serde_json::json!({
                "board": board,
                "file_bytes": bytes,
                "quantize": quant,
                "sequence_agreement": number_after(&check, "sequence agreement", "%"),
                "token_agreement": number_after(&check, "token agreement", "%"),
                "insns_per_token": number_after(&qemu, "decoded token", "instructions"),
                "insns_encoder": number_after(&qemu, "encoder pass", "instructions"),
                "mismatches": number_after(&qemu, "mismatches", ","),
            }),
        );
    }
    let text =
        serde_json::to_string_pretty(&Value::Object(summary)).map_err(|err| err.to_string())?;
    crate::files::write(&e.result("device.json"), &text)
}

/// Quantization-aware training against its alternatives, on the CMUdict test split:
/// g2p-en in f32, post-training quantized (the models step's file, and one weight
/// plane rounded to nearest as QAT stores it) and fine-tuned with QAT; the Bahdanau
/// model's f32, QAT and label-smoothing runs where they exist, greedy and with a beam
/// of 4 (`results/qat-test-beam4.json`). PER/WER per model
/// (`results/qat-test.json`) and each file's size against its f32 file
/// (`results/qat-sizes.tsv`).
pub fn qat_eval(e: &Exp) -> Result {
    e.dirs()?;
    let models_dir = e.ctx.target.join("models");
    let f32_g2p = models_dir.join("g2p-en.s2s");
    let calib = e.path("cmudict/calib.txt");
    crate::files::write(&calib, &sources(&read(&e.path("cmudict/train.tsv"))?, 1000))?;
    let ptq1 = e.path("g2p-en-ptq-one-plane.s2s");
    print!("{}", e.quantize_w8a16_one_plane(&f32_g2p, &calib, &ptq1)?);
    let mut pairs: Vec<(PathBuf, PathBuf)> = vec![
        (f32_g2p.clone(), f32_g2p.clone()),
        (models_dir.join("g2p-en-w8a16.s2s"), f32_g2p.clone()),
        (ptq1, f32_g2p.clone()),
    ];
    let bahdanau = e.path("cmudict-bahdanau.s2s");
    // Each trained model that is here (a session may have made only some of them).
    for (name, reference) in [
        ("qat-g2p-en", &f32_g2p),
        ("cmudict-bahdanau", &bahdanau),
        ("qat-cmudict-bahdanau", &bahdanau),
        ("try-cmudict-bahdanau-ls", &bahdanau),
        ("try-cmudict-bahdanau-dropout", &bahdanau),
        ("try-cmudict-bahdanau-wide", &bahdanau),
    ] {
        let m = e.path(&format!("{name}.s2s"));
        if m.is_file() {
            pairs.push((m, reference.clone()));
        } else {
            println!("{} is missing (stage {name}): left out", e.ctx.show(&m));
        }
    }
    let mut sizes = String::from("model\tbytes\tpercent of its f32 file\n");
    for (m, reference) in &pairs {
        let size = |p: &PathBuf| std::fs::metadata(p).map(|m| m.len()).map_err(Error::io(p));
        let (a, b) = (
            size(m)?,
            if reference.is_file() {
                size(reference)?
            } else {
                0
            },
        );
        let _ = writeln!(
            sizes,
            "{}\t{a}\t{:.1}",
            e.ctx.show(m),
            if b > 0 {
                100.0 * a as f64 / b as f64
            } else {
                f64::NAN
            }
        );
    }
    print!("{sizes}");
    crate::files::write(&e.result("qat-sizes.tsv"), &sizes)?;
    let json = e.result("qat-test.json");
    let test = e.path("cmudict/test.tsv");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"eval"];
    for (m, _) in &pairs {
        args.push(m);
    }
    args.extend([
        &"--data" as &dyn AsRef<std::ffi::OsStr>,
        &test,
        &"--json",
        &json,
    ]);
    print!("{}", e.capture_s2s(&args)?);
    // The beam (width 4) on the CMUdict models.
    let beam_json = e.result("qat-test-beam4.json");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"eval"];
    for (m, r) in &pairs {
        if r == &bahdanau {
            args.push(m);
        }
    }
    if args.len() > 1 {
        args.extend([
            &"--data" as &dyn AsRef<std::ffi::OsStr>,
            &test,
            &"--beam",
            &"4",
            &"--json",
            &beam_json,
        ]);
        print!("{}", e.capture_s2s(&args)?);
    }
    Ok(())
}
