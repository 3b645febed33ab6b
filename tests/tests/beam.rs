//! Beam search of the real models against the fixtures of `tests/fixtures/beam/`:
//! netra-transliterate's own `transliterate()` (beam 3, its variant) and the reference
//! in-slot and finished-set searches of `scripts/golden/beam_rules.py`, on the 2,000
//! golden words, through `s2s run --beam K --nbest 1` of the f32 model files.
//!
//! An output may differ from a fixture only on a word whose search had a decision
//! closer than 1e-4 in log-probability (the fixture's `min_gap`), the near-tie rule of
//! every reference comparison here.

use std::collections::BTreeMap;

use host_tools::eval::rates::{split_tokens, Report};
use s2s_tests::{model_file, s2s_ok};

/// One fixture row: output, score (natural log), smallest decision gap.
struct Row {
    output: String,
    score: f64,
    min_gap: f64,
}

fn fixture(name: &str) -> Vec<(String, Row)> {
    let path = s2s_tests::golden("../beam").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 7, "{}: a short row {l:?}", path.display());
            let num = |s: &str| s.parse::<f64>().unwrap_or_else(|_| panic!("{l:?}: {s:?}"));
            (
                f[0].to_string(),
                Row {
                    output: f[1].to_string(),
                    score: num(f[2]),
                    min_gap: num(f[5]),
                },
            )
        })
        .collect()
}

/// `(output, score)` of `s2s run MODEL --beam K --beam-variant V --nbest 1` per word.
fn run_beam(
    model: &str,
    width: usize,
    variant: &str,
    words: &[&str],
) -> BTreeMap<String, (String, f64)> {
    let input: String = words.iter().map(|w| format!("{w}\n")).collect();
    let k = width.to_string();
    let out = s2s_ok(
        &[
            &"run",
            &model_file(model),
            &"--beam",
            &k,
            &"--beam-variant",
            &variant,
            &"--nbest",
            &"1",
        ],
        &input,
    );
    let rows: BTreeMap<String, (String, f64)> = out
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "an --nbest line has 4 fields: {l:?}");
            assert_eq!(f[1], "1", "rank 1 only: {l:?}");
            (
                f[0].to_string(),
                (f[2].to_string(), f[3].parse().expect("a score")),
            )
        })
        .collect();
    assert_eq!(rows.len(), words.len(), "one result per word");
    rows
}

/// Runs the fixture's search and compares: returns the outputs by word.
fn check(model: &str, fixture_name: &str, width: usize, variant: &str) -> BTreeMap<String, String> {
    let rows = fixture(fixture_name);
    assert_eq!(rows.len(), 2000, "{fixture_name} has the 2000 golden words");
    let words: Vec<&str> = rows.iter().map(|(w, _)| w.as_str()).collect();
    let ours = run_beam(model, width, variant, &words);
    let (mut same, mut near_ties, mut worst_score) = (0, 0, 0.0f64);
    for (word, r) in &rows {
        let (out, score) = &ours[word];
        if *out == r.output {
            same += 1;
            // The same hypothesis has the same score, up to float noise.
            worst_score = worst_score.max((score - r.score).abs());
        } else {
            assert!(
                r.min_gap < 1e-4,
                "{fixture_name}: {word}: {out:?} here, {:?} in the fixture (its smallest gap {})",
                r.output,
                r.min_gap
            );
            near_ties += 1;
        }
    }
    eprintln!(
        "{model} beam {width} {variant}: {same}/2000 identical, {near_ties} at near ties; \
         largest score difference {worst_score:.2e}"
    );
    assert!(worst_score < 1e-3, "scores differ by {worst_score}");
    ours.into_iter().map(|(w, (o, _))| (w, o)).collect()
}

#[test]
fn netra_beam_3_reproduces_transliterate() {
    check("netra.s2s", "netra-1.0.1-transliterate-b3.tsv", 3, "netra");
}

#[test]
fn netra_reference_in_slot_and_finished_set_beam_2() {
    check("netra.s2s", "netra-1.0.1-in-slot-b2.tsv", 2, "in-slot");
    check(
        "netra.s2s",
        "netra-1.0.1-finished-set-b2.tsv",
        2,
        "finished-set",
    );
}

#[test]
fn g2p_en_reference_beams_and_their_error_rates() {
    check("g2p-en.s2s", "g2p-en-2.1.0-in-slot-b2.tsv", 2, "in-slot");
    check(
        "g2p-en.s2s",
        "g2p-en-2.1.0-finished-set-b2.tsv",
        2,
        "finished-set",
    );
    let b3 = check("g2p-en.s2s", "g2p-en-2.1.0-in-slot-b3.tsv", 3, "in-slot");
    // PER / WER at beam 3 against cmudict (the golden fixture's references).
    let refs = s2s_tests::Tsv::read(&model_file("g2p-en-eval.tsv"));
    let mut rep = Report::default();
    for (word, reference) in &refs.rows {
        let Some(out) = b3.get(word) else { continue };
        rep.add(
            word.chars().count(),
            &split_tokens(out, " "),
            &split_tokens(reference, " "),
        );
    }
    eprintln!(
        "g2p-en in-slot beam 3: PER {:.3} % WER {:.2} % on {} words",
        100.0 * rep.all.ter(),
        100.0 * rep.all.ser(),
        rep.all.sequences
    );
    assert_eq!(rep.all.sequences, 2000);
}

#[test]
fn beam_one_is_greedy_on_both_models() {
    for (model, fixture) in [
        ("netra.s2s", "netra-1.0.1.tsv"),
        ("g2p-en.s2s", "g2p-en-2.1.0.tsv"),
    ] {
        let golden = s2s_tests::Tsv::read(&s2s_tests::golden(fixture));
        let words: Vec<&str> = golden
            .rows
            .iter()
            .take(300)
            .map(|(w, _)| w.as_str())
            .collect();
        let input: String = words.iter().map(|w| format!("{w}\n")).collect();
        let greedy = s2s_ok(&[&"run", &model_file(model)], &input);
        for variant in ["in-slot", "finished-set", "netra"] {
            let beam = s2s_ok(
                &[
                    &"run",
                    &model_file(model),
                    &"--beam",
                    &"1",
                    &"--beam-variant",
                    &variant,
                ],
                &input,
            );
            assert_eq!(
                beam, greedy,
                "{model}: beam 1 {variant} differs from greedy"
            );
        }
    }
}

#[test]
fn bad_beam_options_are_one_line_errors() {
    let model = model_file("netra.s2s");
    for (args, says) in [
        (vec!["--beam", "0"], "--beam 0: the width is 1 to 16"),
        (vec!["--beam", "17"], "--beam 17: the width is 1 to 16"),
        (vec!["--nbest", "2"], "--nbest needs --beam"),
        (
            vec!["--beam", "2", "--nbest", "3"],
            "--nbest takes 1 to the beam width (2)",
        ),
        (
            vec!["--beam", "2", "--alpha", "0.7"],
            "beam alpha 0.7 is not one of 0, 0.5, 1, 1.5, 2",
        ),
        (
            vec!["--beam", "2", "--beam-variant", "x"],
            "beam variant \"x\" is not one of",
        ),
        (
            vec!["--alpha", "1"],
            "--beam-variant and --alpha need --beam",
        ),
    ] {
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", &model];
        for x in &args {
            a.push(x);
        }
        let line = s2s_tests::assert_one_error(&s2s_tests::s2s(&a, "phnom\n"), &[says]);
        assert!(line.starts_with("error: "), "{line}");
    }
}
