//! `s2s verify MODEL --expect FILE` (issue 31, item 2): every fixture model reproduces
//! the reference decodes its own framework wrote through `scripts/verify/`
//! (`tests/fixtures/verify/`: PyTorch, Keras 2, Keras 3, onnxruntime, g2p-en's numpy
//! code, netra's Keras models and its own beam search), and the command fails naming
//! the first difference when one reference token is changed, labels a near tie by the
//! reference's gap, and reports a malformed line by its field while judging the
//! others.

use std::path::{Path, PathBuf};
use std::process::Output;

use s2s_tests::{assert_one_error, model_file, repo_root, s2s, s2s_ok, scratch_dir};

fn expect(name: &str) -> PathBuf {
    repo_root()
        .join("tests/fixtures/verify")
        .join(format!("{name}.jsonl"))
}

fn verify(model: &Path, expect: &Path) -> Output {
    s2s(&[&"verify", &model, &"--expect", &expect], "")
}

/// `s2s import` of an ONNX fixture (two graphs) into `dir`.
fn onnx_model(variant: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("onnx-{variant}.s2s"));
    let graphs = repo_root().join("tests/fixtures/onnx").join(variant);
    let config = repo_root().join(format!("models/examples/onnx-{variant}.toml"));
    s2s_ok(
        &[
            &"import",
            &"--config",
            &config,
            &"--weights",
            &graphs.join("encoder.onnx"),
            &"--weights",
            &graphs.join("decoder.onnx"),
            &"-o",
            &out,
        ],
        "",
    );
    out
}

/// The lines of a reference file as JSON values.
fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_lines(path: &Path, lines: &[serde_json::Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

#[test]
fn every_fixture_model_reproduces_its_framework() {
    let dir = scratch_dir("verify-fixtures");
    let models: Vec<(&str, PathBuf)> = vec![
        ("pytorch-lstm-g2p", model_file("pytorch-lstm-g2p.s2s")),
        ("keras2-lstm-g2p", model_file("keras2-lstm-g2p.s2s")),
        ("keras3-lstm-g2p", model_file("keras3-lstm-g2p.s2s")),
        ("onnx-gru", onnx_model("gru", &dir)),
        ("onnx-lstm", onnx_model("lstm", &dir)),
        ("g2p-en", model_file("g2p-en.s2s")),
        ("netra", model_file("netra.s2s")),
    ];
    for (name, model) in models {
        let file = expect(name);
        let refs = lines(&file);
        assert!(refs.len() >= 40, "{name}: {} references", refs.len());
        let out = verify(&model, &file);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let n = refs.len();
        assert!(
            stdout.contains(&format!("\nagreement     {n} of {n} (100.00 %)\n")),
            "{name}: {stdout}"
        );
        // The framework's probabilities, within float rounding of ours.
        let worst: f64 = stdout
            .split("largest |p_ref - p_ours| ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no probability line: {stdout}"));
        assert!(worst < 1e-4, "{name}: |p_ref - p_ours| up to {worst}");
        eprint!("{stdout}");
    }
    // netra's lines include its package's own beam search of width 3.
    let beams = lines(&expect("netra"))
        .iter()
        .filter(|l| l["beam"] == 3)
        .count();
    assert!(beams >= 20, "{beams} beam lines");
}

/// Changes `lines[i]["ids"][step]` to another id of a vocabulary of `size` that is not
/// the end token `end`; returns it.
fn change_token(
    lines: &mut [serde_json::Value],
    i: usize,
    step: usize,
    end: u64,
    size: u64,
) -> u64 {
    let id = lines[i]["ids"][step].as_u64().unwrap();
    let other = (1..)
        .map(|d| (id + d) % size)
        .find(|&x| x != end && x != id)
        .unwrap();
    lines[i]["ids"][step] = other.into();
    other
}

#[test]
fn a_changed_token_is_the_first_difference() {
    let dir = scratch_dir("verify-changed");
    let model = model_file("netra.s2s");
    let mut refs = lines(&expect("netra"));
    // Line 3 (greedy) at step 2, and the first beam line at step 1.
    let expected = change_token(&mut refs, 2, 2, 80, 81);
    let beam = refs.iter().position(|l| l["beam"] == 3).unwrap();
    change_token(&mut refs, beam, 1, 80, 81);
    let file = dir.join("netra.jsonl");
    write_lines(&file, &refs);
    let out = verify(&model, &file);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let n = refs.len();
    assert!(
        stdout.contains(&format!("agreement     {} of {n}", n - 2)),
        "{stdout}"
    );
    let source = refs[2]["source"].as_str().unwrap();
    let got = lines(&expect("netra"))[2]["ids"][2].as_u64().unwrap();
    let want = format!("  line 3 {source:?} (greedy): step 2: expected {expected} ");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&want))
        .unwrap_or_else(|| panic!("no {want:?} in {stdout}"));
    assert!(line.contains(&format!(", got {got} ")), "{line}");
    assert!(line.contains("our top-two logit gap "), "{line}");
    assert!(line.contains("the reference's "), "{line}");
    assert!(line.contains("largest |p_ref - p_ours| "), "{line}");
    assert!(!line.contains("near tie"), "{line}");
    let beam_line = format!("  line {} ", beam + 1);
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&beam_line))
        .unwrap_or_else(|| panic!("no {beam_line:?} in {stdout}"));
    assert!(line.contains("(beam 3): step 1: expected "), "{line}");
    assert!(line.contains("our two best scores' gap "), "{line}");
    assert_one_error(
        &out,
        &[
            &file.display().to_string(),
            &format!("2 of {n} sources decode differently from the reference (0 at a near tie)"),
        ],
    );

    // A reference that ends early: the end token is expected where we go on.
    let mut refs = lines(&expect("g2p-en"));
    let ids = refs[0]["ids"].as_array().unwrap().clone();
    refs[0]["ids"] = serde_json::Value::Array(ids[..ids.len() - 1].to_vec());
    // (Its per-step values no longer fit its ids.)
    refs[0].as_object_mut().unwrap().remove("probs");
    refs[0].as_object_mut().unwrap().remove("gaps");
    let file = dir.join("g2p-en.jsonl");
    write_lines(&file, &refs);
    let out = verify(&model_file("g2p-en.s2s"), &file);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let step = ids.len() - 1;
    let want = format!(
        "step {step}: expected 3 \"</s>\", got {} ",
        ids[step].as_u64().unwrap()
    );
    assert!(stdout.contains(&want), "{want:?} in {stdout}");
}

#[test]
fn a_difference_at_a_reference_near_tie_is_labelled_and_still_fails() {
    let dir = scratch_dir("verify-near-tie");
    let mut refs = lines(&expect("keras3-lstm-g2p"));
    change_token(&mut refs, 0, 1, 2, 42);
    refs[0]["gaps"][1] = 5e-5.into();
    let file = dir.join("keras3.jsonl");
    write_lines(&file, &refs);
    let out = verify(&model_file("keras3-lstm-g2p.s2s"), &file);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the reference's 5.00e-5: a near tie (< 1e-4)"),
        "{stdout}"
    );
    assert_one_error(&out, &["1 of 40 sources decode", "(1 at a near tie)"]);
}

#[test]
fn a_malformed_line_is_named_and_the_others_still_judged() {
    let dir = scratch_dir("verify-malformed");
    let good = std::fs::read_to_string(expect("pytorch-lstm-g2p")).unwrap();
    let mut text: Vec<&str> = good.lines().collect();
    text[1] = r#"{"source": "abc", "ids": "AH B"}"#;
    text[3] = r#"{"source": "abc", "ids": [5], "beam": 0}"#;
    let file = dir.join("bad.jsonl");
    std::fs::write(&file, text.join("\n") + "\n").unwrap();
    let out = verify(&model_file("pytorch-lstm-g2p.s2s"), &file);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = file.display().to_string();
    let errors: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        errors,
        [
            format!("error: {name}:2: ids: a list of target token ids is needed"),
            format!("error: {name}:4: beam: 0 is not a beam width (1 to 16)"),
        ],
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\nagreement     38 of 38 (100.00 %)\n"),
        "{stdout}"
    );
    // A file that is not there: one line naming it, nothing on standard output.
    let missing = dir.join("missing.jsonl");
    let out = verify(&model_file("pytorch-lstm-g2p.s2s"), &missing);
    assert_one_error(&out, &[&missing.display().to_string()]);
    assert!(out.stdout.is_empty());
    // An empty one proves nothing: an error too.
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    let out = verify(&model_file("pytorch-lstm-g2p.s2s"), &empty);
    assert_one_error(
        &out,
        &[&empty.display().to_string(), "no reference decodes"],
    );
}

#[test]
fn a_quantized_file_is_verified_as_s2s_run_decodes_it() {
    // References written from `s2s run --ids` of the w8a16 file itself, greedy and
    // beam 3: verify decodes them the same way, so all agree.
    let dir = scratch_dir("verify-run");
    let model = model_file("netra-w8a16.s2s");
    let words: Vec<String> = lines(&expect("netra"))
        .iter()
        .take(20)
        .map(|l| l["source"].as_str().unwrap().to_string())
        .collect();
    let input = words.join("\n") + "\n";
    let greedy = s2s_ok(&[&"run", &model, &"--ids"], &input);
    let beam = s2s_ok(&[&"run", &model, &"--ids", &"--beam", &"3"], &input);
    let mut refs = vec![];
    for (out, width) in [(&greedy, None), (&beam, Some(3))] {
        for (w, ids) in words.iter().zip(out.lines()) {
            let ids: Vec<u64> = ids.split_whitespace().map(|i| i.parse().unwrap()).collect();
            let mut l = serde_json::json!({ "source": w, "ids": ids });
            if let Some(k) = width {
                l["beam"] = k.into();
            }
            refs.push(l);
        }
    }
    let file = dir.join("run.jsonl");
    write_lines(&file, &refs);
    let out = s2s_ok(&[&"verify", &model, &"--expect", &file, &"--all"], "");
    assert!(
        out.contains("40 sources (20 greedy, 20 beam-searched)"),
        "{out}"
    );
    assert!(
        out.contains("\nagreement     40 of 40 (100.00 %)\n"),
        "{out}"
    );
    assert_eq!(out.matches(": agrees").count(), 40, "{out}");
}
