//! docs/EXPERIMENTS.md: the tables are generated from `target/experiments/` between
//! `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` markers; the text around
//! them (what the numbers show) is written by hand and kept as it is.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::data::{
    CMUDICT_SPLIT_SEED, DATES_DATA, LENGTH_DATA, RUNNING_TEXT_BUCKETS, RUNNING_TEXT_DATA,
    RUNNING_TEXT_LENGTHS,
};
use super::long::{
    running_text_tests, RUNNING_TEXT_REPORTED, RUNNING_TEXT_STREAMING, STREAM_CHARS,
};
use super::report::{DATE_MAPS, STRATIFIED_SEED};
use super::{Exp, RUNS};
use crate::error::Result;

/// Reads a JSON result, if it is there.
fn json(p: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// `(epochs, best epoch, seconds of training and validation, mean training seconds per
/// epoch)` from a run's CSV log.
fn log_times(p: &Path) -> Option<(usize, usize, f64, f64)> {
    let text = std::fs::read_to_string(p).ok()?;
    let mut epochs = 0;
    let mut best = 0;
    let (mut total, mut train) = (0.0, 0.0);
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let epoch = num(0) as usize;
        total += num(6) + num(7);
        if epoch > 0 {
            epochs = epoch;
            train += num(6);
            if f.get(8) == Some(&"1") {
                best = epoch;
            }
        }
    }
    Some((epochs, best, total, train / epochs.max(1) as f64))
}

fn pct(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.2}"))
}

/// The runs: configuration, data, seed, parameters, epochs and times. A run without a
/// log here keeps its row of `old` (the document as it is), which an earlier session
/// measured.
fn runs_table(e: &Exp, old: &str) -> String {
    let mut s = String::from(
        "| run | configuration | seed | threads | parameters | epochs (best) | training + validation | s/epoch | budget | valid TER / SER % |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in RUNS {
        let report = json(&e.path(&format!("{}.json", r.name)));
        let params = report
            .as_ref()
            .and_then(|j| j["parameters"].as_u64())
            .map_or("-".into(), |p| p.to_string());
        let (epochs, time, per) = match log_times(&e.path(&format!("{}.csv", r.name))) {
            Some((n, best, t, per)) => (
                format!(
                    "{n} ({best}){}",
                    if report.is_none() { ", unfinished" } else { "" }
                ),
                format!("{:.0} min", t / 60.0),
                format!("{per:.0}"),
            ),
            None => {
                let prefix = format!("| {} |", r.name);
                if let Some(row) = old.lines().find(|l| l.starts_with(&prefix)) {
                    let _ = writeln!(s, "{row}");
                    continue;
                }
                ("not run".into(), "-".into(), "-".into())
            }
        };
        let valid = report.as_ref().map_or("-".into(), |j| {
            format!("{} / {}", pct(&j["valid_ter"]), pct(&j["valid_ser"]))
        });
        let _ = writeln!(
            s,
            "| {} | `{}{}`{} | {} | {} | {params} | {epochs} | {time} | {per} | {} min | {valid} |",
            r.name,
            if r.init { "--init target/" } else { "" },
            r.config,
            if r.extra.is_empty() {
                String::new()
            } else {
                format!(" `{}`", r.extra.join(" "))
            },
            r.seed,
            match r.threads {
                0 => "all".to_string(),
                n => n.to_string(),
            },
            r.budget_minutes
        );
    }
    s
}

/// One model's rates per bucket as table cells: `TER / SER (n)`.
fn bucket_cells(m: &Value, entropy: bool) -> Vec<String> {
    let mut cells = vec![format!(
        "{} / {}",
        pct(&m["all"]["ter"]),
        pct(&m["all"]["ser"])
    )];
    for b in m["buckets"].as_array().into_iter().flatten() {
        cells.push(if entropy {
            b["entropy"]
                .as_f64()
                .map_or("-".into(), |h| format!("{h:.2}"))
        } else {
            format!("{} / {} ({})", pct(&b["ter"]), pct(&b["ser"]), b["count"])
        });
    }
    cells
}

fn model_name(m: &Value) -> String {
    let p = m["model"].as_str().unwrap_or("?");
    Path::new(p)
        .file_stem()
        .map_or(p.to_string(), |s| s.to_string_lossy().into_owned())
}

/// A table of every model of an `s2s eval --json` file by bucket.
fn eval_table(v: &Value, first: &str, entropy: bool) -> String {
    let models = v["models"].as_array().cloned().unwrap_or_default();
    let Some(m0) = models.first() else {
        return String::new();
    };
    let names: Vec<String> = m0["buckets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| b["bucket"].as_str().unwrap_or("?").to_string())
        .collect();
    let mut s = format!("| model | {first} | {} |\n", names.join(" | "));
    s += &format!("|---|---|{}\n", "---|".repeat(names.len()));
    for m in &models {
        let cells = bucket_cells(m, entropy);
        let cells = if entropy { cells[1..].to_vec() } else { cells };
        let all = if entropy {
            m["all"]["entropy"]
                .as_f64()
                .map_or("-".into(), |h| format!("{h:.2}"))
        } else {
            String::new()
        };
        let row = if entropy {
            format!("{all} | {}", cells.join(" | "))
        } else {
            cells.join(" | ")
        };
        let _ = writeln!(s, "| {} | {row} |", model_name(m));
    }
    s
}

fn cmudict(e: &Exp) -> Option<String> {
    let mut s = String::new();
    let test = json(&e.result("cmudict-test.json"))?;
    s += "Test split, PER / WER in % (phoneme and word error rates, stress kept; `s2s eval`), overall and by source length (n words):\n\n";
    s += &eval_table(&test, "all", false);
    if let Some(strat) = json(&e.result("cmudict-stratified.json")) {
        let n = strat["models"][0]["buckets"][0]["count"]
            .as_u64()
            .unwrap_or(0);
        let _ = write!(
            s,
            "\nStratified: {n} words from each bucket of the test split (the smallest bucket's size; the first ones in the order of FNV-1a with seed {STRATIFIED_SEED}), PER / WER in %:\n\n"
        );
        s += &eval_table(&strat, "all", false);
    }
    s += "\nMean attention entropy per decoder step, in nats, on the test split (a one-hot row is 0, a uniform row over n positions ln n):\n\n";
    let attn = Value::Object(
        [(
            "models".to_string(),
            Value::Array(
                test["models"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["all"]["entropy"].is_number())
                    .cloned()
                    .collect(),
            ),
        )]
        .into_iter()
        .collect(),
    );
    s += &eval_table(&attn, "all", true);
    if let Ok(list) = std::fs::read_to_string(e.result("cmudict-heatmaps.tsv")) {
        s += "\n";
        for l in list.lines() {
            if let Some((model, word)) = l.split_once('\t') {
                let _ = writeln!(s, "![{model} on {word}](experiments/{model}-{word}.png)");
            }
        }
    }
    s += "\n![PER by source length](experiments/cmudict-length.png)\n";
    Some(s)
}

fn length(e: &Exp) -> Option<String> {
    let v = json(&e.result("length-test.json"))?;
    let mut s = String::from("Test split, character error rate / sequence error rate in % by source length (n strings):\n\n");
    s += &eval_table(&v, "all", false);
    s += "\n![error rate against source length](experiments/length-error.png)\n";
    Some(s)
}

/// Running text by length bucket: each model's token error rate and mean attention
/// entropy per bucket, and its attention map of 1,000 characters.
fn running_text(e: &Exp) -> Option<String> {
    let tests = running_text_tests();
    let result = |model: &str, bucket: &str| json(&e.result(&format!("{model}-{bucket}.json")));
    let counts: Vec<String> = tests
        .iter()
        .map(|(b, _)| {
            let n = RUNNING_TEXT_REPORTED
                .iter()
                .find_map(|m| result(m, b))
                .map_or("-".into(), |v| v["models"][0]["all"]["count"].to_string());
            format!("{b} ({n})")
        })
        .collect();
    let mut s = format!(
        "Token error rate in % (phonemes and word boundaries) / mean attention entropy in nats, by source length in characters (number of test sentences), with `s2s eval --positions --max-steps`:\n\n| model | {} |\n|---|{}\n",
        counts.join(" | "),
        "---|".repeat(tests.len())
    );
    let mut any = false;
    for m in RUNNING_TEXT_REPORTED {
        let cells: Vec<String> = tests
            .iter()
            .map(|(b, _)| match result(m, b) {
                Some(v) => {
                    any = true;
                    let all = &v["models"][0]["all"];
                    format!("{} / {}", pct(&all["ter"]), pct(&all["entropy"]))
                }
                None => "-".into(),
            })
            .collect();
        let _ = writeln!(s, "| {m} | {} |", cells.join(" | "));
    }
    for m in RUNNING_TEXT_REPORTED {
        let Some(rows) = json(&e.result(&format!("{m}-an386.json"))) else {
            continue;
        };
        let rows = rows.as_array().cloned().unwrap_or_default();
        let count = |r: &Value| r["insns_per_token"].as_f64();
        let cells: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{} positions: {} instructions per output token ({} mismatches)",
                    r["positions"],
                    count(r).map_or("-".into(), crate::bench::thousands),
                    r["mismatches"]
                        .as_f64()
                        .map_or("-".into(), |m| format!("{m:.0}"))
                )
            })
            .collect();
        let ratio = match (rows.first().and_then(count), rows.last().and_then(count)) {
            (Some(a), Some(b)) if a > 0.0 => format!("; ratio {:.2}", b / a),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "\n{m} in w8a16 on the AN386 (QEMU, `-icount`): {}{ratio}.",
            cells.join(", ")
        );
    }
    for (m, boards, rows) in RUNNING_TEXT_STREAMING.iter().filter_map(|(m, boards)| {
        Some((m, boards, json(&e.result(&format!("{m}-streamed.json")))?))
    }) {
        let rows = rows.as_array().cloned().unwrap_or_default();
        for &board in boards.iter() {
            let of = |chars: usize| {
                rows.iter()
                    .find(|r| r["board"] == board && r["chars"] == chars)
                    .cloned()
            };
            let per = |r: &Option<Value>| r.as_ref().and_then(|r| r["insns_per_token"].as_f64());
            let cells: Vec<String> = STREAM_CHARS
                .iter()
                .map(|&c| {
                    let r = of(c);
                    format!(
                        "{} characters: {} tokens, {} instructions per output token ({})",
                        crate::bench::thousands(c as f64),
                        r.as_ref()
                            .and_then(|r| r["tokens"].as_f64())
                            .map_or("-".into(), crate::bench::thousands),
                        per(&r).map_or("-".into(), crate::bench::thousands),
                        match r.as_ref().map(|r| r["matches"] == true) {
                            Some(true) => "0 mismatches",
                            Some(false) => "DIFFERS from the host",
                            None => "-",
                        }
                    )
                })
                .collect();
            let ratio = match (per(&of(STREAM_CHARS[0])), per(&of(STREAM_CHARS[1]))) {
                (Some(a), Some(b)) if a > 0.0 => format!("; ratio {:.3}", b / a),
                _ => String::new(),
            };
            let window = of(STREAM_CHARS[0]).and_then(|r| r["window"].as_f64());
            let _ = writeln!(
                s,
                "\n{m} streamed in w8a16 on the {board} (`s2s qemu --stream`, a window of {} positions): {}{ratio}.",
                window.map_or("-".into(), crate::bench::thousands),
                cells.join(", ")
            );
        }
    }
    for m in RUNNING_TEXT_REPORTED {
        if e.picture(&format!("{m}-1000.png")).is_file() {
            let _ = writeln!(s, "\n![{m} on 1,000 characters](experiments/{m}-1000.png)");
        }
    }
    any.then_some(s)
}

fn dates(e: &Exp) -> Option<String> {
    let v = json(&e.result("dates-test.json"))?;
    let m = &v["models"][0];
    let mut s = format!(
        "Test split ({} dates): character error rate {} %, sequence error rate {} %.\n\n",
        m["all"]["count"],
        pct(&m["all"]["ter"]),
        pct(&m["all"]["ser"])
    );
    for (source, what) in DATE_MAPS {
        let name = source.replace([' ', '/', ','], "_");
        let _ = writeln!(
            s,
            "![{source}](experiments/dates-{name}.png)\n\n`{source}`: {what}.\n"
        );
    }
    if let Some(a) = json(&e.result("dates-alignment.json")) {
        s += "Share of each output step's attention within one source position of the best monotonic alignment, mean per output segment (test split, correctly shaped outputs):\n\n| spelling | n | year | month | day |\n|---|---|---|---|---|\n";
        for (name, r) in a.as_object().into_iter().flatten() {
            let f = |k: &str| r[k].as_f64().map_or("-".into(), |x| format!("{x:.2}"));
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} |",
                r["n"],
                f("year"),
                f("month"),
                f("day")
            );
        }
    }
    Some(s)
}

fn device(e: &Exp) -> Option<String> {
    let v = json(&e.result("device.json"))?;
    let mut s = String::from("| model | board | w8a16 file | sequence / token agreement with f32 (test) | instructions per decoded token | encoder instructions per source sequence |\n|---|---|---|---|---|---|\n");
    for (name, r) in v.as_object().into_iter().flatten() {
        let _ = writeln!(
            s,
            "| {name} | {} | {} bytes | {} % / {} % | {} | {} |",
            r["board"].as_str().unwrap_or("?"),
            r["file_bytes"],
            pct(&r["sequence_agreement"]),
            pct(&r["token_agreement"]),
            r["insns_per_token"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.0}")),
            r["insns_encoder"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.0}")),
        );
    }
    // The tools print absolute paths: shown relative to the repository.
    let root = format!("{}/", e.ctx.root.display());
    for name in v.as_object().into_iter().flatten().map(|(k, _)| k) {
        for kind in ["check", "qemu"] {
            if let Ok(t) = std::fs::read_to_string(e.result(&format!("{name}-{kind}.txt"))) {
                let t = t.replace(&root, "");
                let _ = write!(s, "\n`s2s {kind}` of {name}:\n\n```text\n{t}```\n");
            }
        }
    }
    Some(s)
}

fn setup() -> String {
    let (r, (lo, hi)) = (RUNNING_TEXT_DATA, RUNNING_TEXT_LENGTHS);
    let buckets: Vec<String> = RUNNING_TEXT_BUCKETS
        .iter()
        .map(|((lo, hi), n)| format!("{n} of {lo}-{hi}"))
        .collect();
    format!(
        "CMUdict split seed {CMUDICT_SPLIT_SEED}; length task `s2s generate substitution --seed {} --train {} --valid {} --test {}`; dates `s2s generate dates --seed {} --train {} --valid {} --test {}`; running text `s2s generate running-text --seed {} --train {} --valid {} --test {} --lengths {lo}-{hi}` with each CMUdict split's words, and test sentences of test words ({}; seeds {} on).\n",
        LENGTH_DATA.0, LENGTH_DATA.1, LENGTH_DATA.2, LENGTH_DATA.3, DATES_DATA.0, DATES_DATA.1, DATES_DATA.2, DATES_DATA.3,
        r.0, r.1, r.2, r.3, buckets.join(", "), r.0 + 1
    )
}

/// The skeleton of a new document.
const SKELETON: &str = "# Experiments\n\n<!-- generated:setup -->\n<!-- /generated:setup -->\n\n<!-- generated:runs -->\n<!-- /generated:runs -->\n\n## 1. The bottleneck on CMUdict\n\n<!-- generated:cmudict -->\n<!-- /generated:cmudict -->\n\n## 2. Length beyond words\n\n<!-- generated:length -->\n<!-- /generated:length -->\n\n## 3. The three patterns\n\n<!-- generated:dates -->\n<!-- /generated:dates -->\n\n## 4. To the device\n\n<!-- generated:device -->\n<!-- /generated:device -->\n";

/// Replaces the text between the markers of `name`.
fn fill(doc: &str, name: &str, body: &str) -> String {
    let (open, close) = (
        format!("<!-- generated:{name} -->"),
        format!("<!-- /generated:{name} -->"),
    );
    match (doc.find(&open), doc.find(&close)) {
        (Some(a), Some(b)) if a < b => format!("{}{open}\n{body}{}", &doc[..a], &doc[b..]),
        _ => doc.to_string(),
    }
}

/// The text between the markers of `name`, if there are both.
fn section<'d>(doc: &'d str, name: &str) -> Option<&'d str> {
    let (open, close) = (
        format!("<!-- generated:{name} -->\n"),
        format!("<!-- /generated:{name} -->"),
    );
    let a = doc.find(&open)? + open.len();
    let b = doc[a..].find(&close)? + a;
    Some(&doc[a..b])
}

/// Writes docs/EXPERIMENTS.md from the results so far. A section whose results are
/// not in `target/experiments/` keeps its text: results measured in an earlier session
/// (on another machine) stay until a stage that is run again replaces them.
pub fn write(e: &Exp) -> Result {
    let path = e.ctx.root.join("docs/EXPERIMENTS.md");
    let mut doc = std::fs::read_to_string(&path).unwrap_or_else(|_| SKELETON.to_string());
    let runs = runs_table(e, section(&doc, "runs").unwrap_or(""));
    doc = fill(&doc, "setup", &setup());
    doc = fill(&doc, "runs", &runs);
    for (name, stage, body) in [
        ("cmudict", "cmudict-eval", cmudict(e)),
        ("length", "length-eval", length(e)),
        ("dates", "dates-eval", dates(e)),
        ("device", "device", device(e)),
        ("running-text", "running-text-eval", running_text(e)),
    ] {
        doc = update(&doc, name, stage, body);
    }
    crate::files::write(&path, &doc)
}

/// The document with section `name` replaced by `body`; without a body (no results
/// here) the section keeps its text, or says which stage makes it if it has none.
fn update(doc: &str, name: &str, stage: &str, body: Option<String>) -> String {
    match body {
        Some(b) => fill(doc, name, &b),
        None => match section(doc, name) {
            Some(old) if !old.trim().is_empty() => doc.to_string(),
            _ => fill(
                doc,
                name,
                &format!("Not run yet: `cargo xtask experiment --stage {stage}`.\n"),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_without_results_keep_their_text() {
        let doc = SKELETON;
        let doc = update(doc, "length", "length-eval", None);
        assert_eq!(
            section(&doc, "length"),
            Some("Not run yet: `cargo xtask experiment --stage length-eval`.\n")
        );
        let doc = update(&doc, "length", "length-eval", Some("measured\n".into()));
        assert_eq!(section(&doc, "length"), Some("measured\n"));
        // A later session without the results keeps what an earlier one measured.
        let doc = update(&doc, "length", "length-eval", None);
        assert_eq!(section(&doc, "length"), Some("measured\n"));
        assert_eq!(section(&doc, "dates"), Some(""));
        assert!(doc.contains("## 3. The three patterns"));
    }
}
