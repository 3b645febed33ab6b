//! The long-input report (issue 29): a running-text model by length bucket, from the
//! training lengths to 10,000 characters, with `s2s eval --positions --max-steps`, and
//! the attention map of a 1,000-character sentence.

use super::data::{RUNNING_TEXT_BUCKETS, RUNNING_TEXT_LENGTHS};
use super::{read, Exp};
use crate::error::Result;

/// The test files of running text, shortest first: the training lengths' test split,
/// then each longer bucket (`running-text/<name>/test.tsv`), with their names.
pub fn running_text_tests() -> Vec<(String, String)> {
    let (lo, hi) = RUNNING_TEXT_LENGTHS;
    let mut v = vec![(format!("{lo}-{hi}"), "running-text/test.tsv".to_string())];
    for &((lo, hi), _) in RUNNING_TEXT_BUCKETS {
        v.push((
            format!("{lo}-{hi}"),
            format!("running-text/test-{lo}-{hi}/test.tsv"),
        ));
    }
    v
}

/// The models the report measures (each a training stage of its own).
pub const RUNNING_TEXT_MODELS: &[&str] = &["running-text-global"];

/// The longest source in characters and the longest target in tokens of a
/// `source<TAB>target` file (`#` lines skipped).
fn longest(text: &str) -> (usize, usize) {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .fold((0, 0), |(s, t), (src, tgt)| {
            (
                s.max(src.chars().count()),
                t.max(tgt.split_whitespace().count()),
            )
        })
}

/// What `s2s eval` and `s2s heatmap` are given for sources and targets this long: the
/// positions (the end token included) and a step limit a quarter above the target
/// (a model that runs on past it is measured, not cut at the reference's length).
fn limits(chars: usize, tokens: usize) -> [String; 4] {
    [
        "--positions".into(),
        (chars + 1).to_string(),
        "--max-steps".into(),
        (tokens + tokens / 4 + 16).min(65_535).to_string(),
    ]
}

/// `results/running-text-<model>-<bucket>.json` for every model and bucket, and the
/// attention map of each model on the shortest sentence of 1,000 characters or more.
pub fn running_text_eval(e: &Exp) -> Result {
    let models = e.need(RUNNING_TEXT_MODELS)?;
    e.dirs()?;
    let tests = running_text_tests();
    for (name, model) in RUNNING_TEXT_MODELS.iter().zip(&models) {
        for (bucket, file) in &tests {
            let data = e.path(file);
            let (chars, tokens) = longest(&read(&data)?);
            let json = e.result(&format!("{name}-{bucket}.json"));
            let l = limits(chars, tokens);
            let out = e.capture_s2s(&[
                &"eval", model, &"--data", &data, &"--json", &json, &l[0], &l[1], &l[2], &l[3],
            ])?;
            print!("{out}");
        }
        let (source, tokens) = map_source(e)?;
        let l = limits(source.chars().count(), tokens);
        let png = e.picture(&format!("{name}-1000.png"));
        e.run_s2s(&[
            &"heatmap", model, &source, &"-o", &png, &l[0], &l[1], &l[2], &l[3],
        ])?;
    }
    Ok(())
}

/// The shortest test sentence of at least 1,000 characters and its target's tokens.
fn map_source(e: &Exp) -> Result<(String, usize)> {
    let data = e.path("running-text/test-1000-2000/test.tsv");
    let text = read(&data)?;
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .filter(|(s, _)| s.chars().count() >= 1_000)
        .min_by_key(|(s, _)| s.chars().count())
        .map(|(s, t)| (s.to_string(), t.split_whitespace().count()))
        .ok_or_else(|| format!("{}: no sentence of 1,000 characters", data.display()).into())
}
