//! The real models against their packages' own outputs (`tests/fixtures/golden/`): the
//! f32 model files of `cargo xtask models`, run by the release `s2s` binary.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use host_tools::eval::rates::{split_tokens, Report};
use host_tools::model::{decode_lines, is_near_tie, top_two, Keep, LoadedModel};
use s2s_tests::{golden, model_file, s2s_ok, Tsv};

/// Outputs of `s2s run MODEL --tsv` on every source of a golden fixture, by source.
fn run_on_golden(model: &str, fixture: &str) -> (Tsv, BTreeMap<String, String>) {
    let golden = Tsv::read(&golden(fixture));
    let model = model_file(model);
    let input: String = golden.rows.iter().map(|(w, _)| format!("{w}\n")).collect();
    let out = s2s_ok(&[&"run", &model, &"--tsv"], &input);
    let ours = Tsv::parse(&out, "s2s run output");
    assert_eq!(ours.rows.len(), golden.rows.len(), "one output per input");
    (golden, ours.rows.into_iter().collect())
}

/// g2p-en over the 2000 eval words, shared by the tests (one run).
fn g2p_en() -> &'static (Tsv, BTreeMap<String, String>) {
    static RUN: OnceLock<(Tsv, BTreeMap<String, String>)> = OnceLock::new();
    RUN.get_or_init(|| run_on_golden("g2p-en.s2s", "g2p-en-2.1.0.tsv"))
}

#[test]
fn g2p_en_f32_matches_the_package_on_the_golden_words() {
    let (golden, ours) = g2p_en();
    assert_eq!(golden.rows.len(), 2000, "the fixture has 2000 words");
    let differing: Vec<(&String, &String)> = golden
        .rows
        .iter()
        .filter(|(w, g)| ours.get(w) != Some(g))
        .map(|(w, g)| (w, g))
        .collect();
    let identical = golden.rows.len() - differing.len();
    let rate = identical as f64 / golden.rows.len() as f64;
    eprintln!(
        "g2p-en f32: {identical}/{} identical ({:.2} %)",
        golden.rows.len(),
        100.0 * rate
    );
    assert!(
        rate >= 0.999,
        "only {identical} of {} identical; first differences: {:?}",
        golden.rows.len(),
        &differing[..differing.len().min(5)]
    );

    // Every difference must start at a step where our own top two logits are a near tie.
    if differing.is_empty() {
        return;
    }
    let model = LoadedModel::load(&model_file("g2p-en.s2s")).expect("model loads");
    let words: Vec<String> = differing.iter().map(|(w, _)| w.to_string()).collect();
    let keep = Keep {
        logits: true,
        ..Keep::default()
    };
    let decoded = decode_lines(&model, &words, keep).expect("decodes");
    for ((word, expected), d) in differing.iter().zip(&decoded) {
        assert_eq!(
            Some(&d.text),
            ours.get(*word),
            "{word}: library and binary differ"
        );
        let expected: Vec<&str> = expected.split(' ').collect();
        let step = d
            .tokens
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .unwrap_or(d.tokens.len().min(expected.len()));
        let gap = top_two(&d.logits[step]).1;
        eprintln!(
            "{word}: ours {:?}, package {expected:?}, first difference at step {step}, top-two gap {gap:.2e}",
            d.tokens
        );
        assert!(
            is_near_tie(gap),
            "{word}: first difference at step {step} is not a near tie: top-two logit gap {gap}"
        );
    }
}

#[test]
fn g2p_en_error_rates_match_the_package() {
    let (golden, ours) = g2p_en();
    let per: f64 = golden
        .header_value("per")
        .and_then(|v| v.parse().ok())
        .expect("fixture header has per=");
    let wer: f64 = golden
        .header_value("wer")
        .and_then(|v| v.parse().ok())
        .expect("fixture header has wer=");
    let refs = Tsv::read(&model_file("g2p-en-eval.tsv"));
    assert_eq!(refs.rows.len(), 2000);
    let mut report = Report::default();
    for (word, reference) in &refs.rows {
        let hyp = ours
            .get(word)
            .unwrap_or_else(|| panic!("no output for {word}"));
        report.add(
            word.chars().count(),
            &split_tokens(hyp, " "),
            &split_tokens(reference, " "),
        );
    }
    let (ter, ser) = (report.all.ter(), report.all.ser());
    eprintln!(
        "g2p-en f32: PER {:.3} % (package {:.3} %), WER {:.2} % (package {:.2} %)",
        100.0 * ter,
        100.0 * per,
        100.0 * ser,
        100.0 * wer
    );
    assert!(
        (100.0 * (ter - per)).abs() <= 0.2,
        "PER {:.3} % is more than 0.2 points from the package's {:.3} %",
        100.0 * ter,
        100.0 * per
    );
    assert!(
        (100.0 * (ser - wer)).abs() <= 0.2,
        "WER {:.3} % is more than 0.2 points from the package's {:.3} %",
        100.0 * ser,
        100.0 * wer
    );
}

#[test]
fn netra_f32_matches_the_package_on_every_golden_word() {
    let (golden, ours) = run_on_golden("netra.s2s", "netra-1.0.1.tsv");
    assert!(
        golden.rows.len() >= 200,
        "only {} golden netra words",
        golden.rows.len()
    );
    let differing: Vec<String> = golden
        .rows
        .iter()
        .filter(|(w, g)| ours.get(w) != Some(g))
        .map(|(w, g)| format!("{w}: ours {:?}, package {g:?}", ours.get(w)))
        .collect();
    assert!(
        differing.is_empty(),
        "{} of {} netra words differ, e.g. {:?}",
        differing.len(),
        golden.rows.len(),
        &differing[..differing.len().min(5)]
    );
}

#[test]
fn s2s_eval_reports_netra_as_exact() {
    let model = model_file("netra.s2s");
    let data = model_file("netra-eval.tsv");
    let out = s2s_ok(&[&"eval", &model, &"--data", &data], "");
    let all: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("all "))
        .unwrap_or_else(|| panic!("no `all` line in:\n{out}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        all[..4],
        ["all", "2000", "0.00", "0.00"],
        "s2s eval output:\n{out}"
    );
    // netra attends: the last column is the mean attention entropy, in nats, between
    // 0 and ln 25 (its 25 padded positions).
    let h: f64 = all[4].parse().unwrap();
    assert!(out.contains("H nats") && h > 0.0 && h < 25f64.ln(), "{out}");
}
