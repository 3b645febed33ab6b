//! The trained LSTM fixtures of `tests/fixtures/lstm/` (a Keras 2.3.1 `.h5`, a Keras 3
//! `.keras` and a PyTorch-layout safetensors; their README says how they were made):
//! each is imported by the release `s2s` with nothing but its configuration
//! (`models/examples/*-lstm-g2p.toml`) and decoded on its 500 held-out words, token for
//! token against the framework's own references; a difference is allowed only at a step
//! where the reference's own top-two probability gap is below 1e-4, and every one is
//! shown. Then each is quantized to w8a16 by `s2s quantize` and checked against its f32
//! model by `s2s check`; and the configuration mistakes an LSTM import can have give one
//! error line each.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use s2s_tests::{
    assert_one_error, assert_only, import, near_tie_differences, quantize_w8a16_and_check,
    references, repo_root, run_words, scratch_dir, Reference,
};

/// Largest reference top-two gap at which a differing token is accepted.
const NEAR_TIE: f64 = host_tools::model::NEAR_TIE as f64;
/// Least sequence agreement of a w8a16 fixture with its f32 model (percent).
const MIN_AGREEMENT: f64 = 99.0;
/// Largest w8a16 file, as a share of the f32 file.
const MAX_SIZE_SHARE: f64 = 0.35;

/// One fixture: its directory, weights file and configuration.
struct Fixture {
    name: &'static str,
    weights: &'static str,
    config: &'static str,
}

const FIXTURES: [Fixture; 3] = [
    Fixture {
        name: "keras2-g2p",
        weights: "model.h5",
        config: "keras2-lstm-g2p",
    },
    Fixture {
        name: "keras3-g2p",
        weights: "model.keras",
        config: "keras3-lstm-g2p",
    },
    Fixture {
        name: "pytorch-g2p",
        weights: "model.safetensors",
        config: "pytorch-lstm-g2p",
    },
];

impl Fixture {
    fn dir(&self) -> PathBuf {
        repo_root().join("tests/fixtures/lstm").join(self.name)
    }
    fn weights(&self) -> PathBuf {
        self.dir().join(self.weights)
    }
    fn config(&self) -> PathBuf {
        repo_root()
            .join("models/examples")
            .join(format!("{}.toml", self.config))
    }
}

/// The references of a fixture's `reference.json`.
fn cases(f: &Fixture) -> Vec<Reference> {
    let path = f.dir().join("reference.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    references(&json["cases"], &path)
}

/// [`import`], which must succeed.
fn import_ok(config: &Path, weights: &Path, out: &Path) {
    let r = import(config, weights, out);
    assert!(
        r.status.success(),
        "s2s import --config {}: {}",
        config.display(),
        String::from_utf8_lossy(&r.stderr)
    );
}

/// The fixture imported with `s2s import` into a scratch directory, once per process.
fn imported(f: &Fixture) -> &'static Path {
    static MODELS: [OnceLock<PathBuf>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let i = FIXTURES
        .iter()
        .position(|x| x.name == f.name)
        .expect("a fixture");
    MODELS[i].get_or_init(|| {
        let dir = scratch_dir(&format!("lstm-{}", f.name));
        let out = dir.join(format!("{}.s2s", f.config));
        import_ok(&f.config(), &f.weights(), &out);
        out
    })
}

/// Decodes the 500 held-out words and compares them with the references.
fn matches_its_references(f: &Fixture) {
    let cases = cases(f);
    assert!(cases.len() >= 200, "{}: {} cases", f.name, cases.len());
    let ours = run_words(imported(f), &cases);
    near_tie_differences(f.name, &cases, &ours, NEAR_TIE);
}

#[test]
fn keras2_fixture_decodes_as_keras_2_3_1() {
    matches_its_references(&FIXTURES[0]);
}

#[test]
fn keras3_fixture_decodes_as_keras_3() {
    matches_its_references(&FIXTURES[1]);
}

#[test]
fn pytorch_fixture_decodes_as_its_f64_reference() {
    matches_its_references(&FIXTURES[2]);
}

/// The masking setting is what makes the Keras 2 model exact: run with Keras 3's zero
/// outputs instead, it decodes many held-out words differently (the fixture's README
/// measured 124 with its numpy model).
#[test]
fn keras2_fixture_needs_its_masking() {
    let f = &FIXTURES[0];
    let dir = scratch_dir("lstm-keras2-zeros");
    let text = std::fs::read_to_string(f.config()).expect("the configuration");
    assert!(text.contains("masked_output = \"previous\""));
    let config = dir.join("zeros.toml");
    std::fs::write(
        &config,
        text.replace("masked_output = \"previous\"", "masked_output = \"zeros\""),
    )
    .expect("writing the configuration");
    let model = dir.join("zeros.s2s");
    import_ok(&config, &f.weights(), &model);
    let cases = cases(f);
    let differ = run_words(&model, &cases)
        .iter()
        .zip(&cases)
        .filter(|(o, c)| **o != c.output)
        .count();
    eprintln!(
        "keras2-g2p with zero outputs at masked steps: {differ} of {} words differ",
        cases.len()
    );
    assert!(differ >= 50, "only {differ} words differ");
}

/// `s2s quantize --scheme w8a16` with the calibration words, then `s2s check` on the
/// held-out words: the sequence agreement and the file size against the f32 model.
fn quantized_agrees(f: &Fixture) {
    let model = imported(f);
    let dir = scratch_dir(&format!("lstm-w8a16-{}", f.name));
    let q = dir.join(format!("{}-w8a16.s2s", f.config));
    let agreement = quantize_w8a16_and_check(model, &q, &cases(f), MIN_AGREEMENT);
    let size = |p: &Path| std::fs::metadata(p).expect("a model file").len() as f64;
    let share = size(&q) / size(model);
    eprintln!(
        "{} w8a16: {agreement:.2} % of {} held-out words as the f32 model, at {:.1} % of its size",
        f.name,
        cases(f).len(),
        100.0 * share
    );
    assert!(
        share <= MAX_SIZE_SHARE,
        "{}: w8a16 is {:.1} % of the f32 file",
        f.name,
        100.0 * share
    );
}

#[test]
fn keras2_fixture_in_w8a16_agrees_with_f32() {
    quantized_agrees(&FIXTURES[0]);
}

#[test]
fn keras3_fixture_in_w8a16_agrees_with_f32() {
    quantized_agrees(&FIXTURES[1]);
}

#[test]
fn pytorch_fixture_in_w8a16_agrees_with_f32() {
    quantized_agrees(&FIXTURES[2]);
}

/// `s2s import` of a fixture with its configuration changed by `edit`: one error line
/// holding every one of `needles`, and no model written.
fn bad_import(f: &Fixture, test: &str, edit: impl Fn(&str) -> String, needles: &[&str]) {
    let dir = scratch_dir(test);
    let text = std::fs::read_to_string(f.config()).expect("the configuration");
    let changed = edit(&text);
    assert_ne!(changed, text, "{test}: the edit changed nothing");
    let config = dir.join("bad.toml");
    std::fs::write(&config, changed).expect("writing the configuration");
    let r = import(&config, &f.weights(), &dir.join("model.s2s"));
    let line = assert_one_error(&r, needles);
    eprintln!("{test}: {line}");
    assert_only(&dir, &["bad.toml"]);
}

#[test]
fn a_gate_order_that_is_not_a_permutation_is_one_error_line() {
    bad_import(
        &FIXTURES[0],
        "lstm-bad-gates",
        |t| t.replacen("gates = \"ifco\"", "gates = \"iffo\"", 1),
        &[
            "encoder.w_ih.l0.fwd",
            "\"iffo\"",
            "not a permutation of the LSTM gates",
        ],
    );
}

#[test]
fn weights_that_do_not_fit_the_cell_are_one_error_line() {
    // The PyTorch LSTM's tensors read as a GRU's: 4 x 64 rows where 3 x 64 are needed.
    bad_import(
        &FIXTURES[2],
        "lstm-as-gru",
        |t| t.replacen("cell = \"lstm\"", "cell = \"gru\"\nreset = \"after\"", 1),
        &[
            "encoder.w_ih.l0.fwd",
            "gives a 256x32 matrix",
            "needs 192x32",
            "a GRU of 64 units has 3 x 64 = 192 rows",
        ],
    );
    // The Keras 3 configuration says so first: its LSTM gate order is no GRU's.
    bad_import(
        &FIXTURES[1],
        "lstm-gates-as-gru",
        |t| t.replacen("cell = \"lstm\"", "cell = \"gru\"\nreset = \"after\"", 1),
        &[
            "encoder.w_ih.l0.fwd",
            "gates \"ifco\" is not a permutation of the GRU gates",
        ],
    );
    // The PyTorch decoder's LSTM read as a GRU.
    bad_import(
        &FIXTURES[2],
        "lstm-decoder-as-gru",
        |t| {
            t.replacen(
                "hidden = 96\ncell = \"lstm\"",
                "hidden = 96\ncell = \"gru\"\nreset = \"after\"",
                1,
            )
            .replacen("init_cell = \"dense\"\n", "", 1)
            .lines()
            .filter(|l| !l.starts_with("\"bridge_c.l0\""))
            .map(|l| format!("{l}\n"))
            .collect()
        },
        &[
            "decoder.w_ih.l0",
            "gives a 384x160 matrix",
            "needs 288x160",
            "a GRU of 96 units has 3 x 96 = 288 rows",
        ],
    );
}

#[test]
fn a_mask_setting_on_a_model_without_a_mask_is_one_error_line() {
    bad_import(
        &FIXTURES[2],
        "lstm-mask-without-padding",
        |t| {
            t.replacen(
                "cell = \"lstm\"",
                "cell = \"lstm\"\nmasked_output = \"zeros\"",
                1,
            )
        },
        &[
            "encoder.masked_output = \"zeros\"",
            "the source has no padding to mask",
        ],
    );
}

/// `s2s tensors` leaves a Keras file's optimizer slots out and says how many and which
/// flag lists them (`--all`): netra's published `.keras` (downloaded into
/// `target/pkgs` by `cargo xtask models`) holds 33 of Adam's; the fixtures were saved
/// without their optimizer, so nothing is left out there.
#[test]
fn tensors_leaves_out_a_keras_optimizers_slots() {
    let pkgs = s2s_tests::target_dir().join("pkgs");
    let netra = std::fs::read_dir(&pkgs)
        .unwrap_or_else(|e| panic!("{}: {e} (run cargo xtask models)", pkgs.display()))
        .flatten()
        .map(|e| e.path().join("khmer_transliterator/weights"))
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "keras"))
        .unwrap_or_else(|| {
            panic!(
                "netra's .keras not in {} (run cargo xtask models)",
                pkgs.display()
            )
        });
    let out = s2s_tests::s2s_ok(&[&"tensors", &netra], "");
    assert!(!out.lines().any(|l| l.starts_with("optimizer/")), "{out}");
    assert!(
        out.ends_with(
            "(33 optimizer slots not listed, such as optimizer/vars/1: --all lists them)\n"
        ),
        "{out}"
    );
    assert!(out.contains("\nlayers/gru/cell/vars/0 "), "{out}");
    let all = s2s_tests::s2s_ok(&[&"tensors", &"--all", &netra], "");
    assert_eq!(
        all.lines()
            .filter(|l| l.starts_with("optimizer/vars/"))
            .count(),
        33,
        "{all}"
    );
    assert!(!all.contains("optimizer slots not listed"), "{all}");
    for f in &FIXTURES[..2] {
        let out = s2s_tests::s2s_ok(&[&"tensors", &f.weights()], "");
        assert!(!out.contains("optimizer slots not listed"), "{out}");
        assert_eq!(out.lines().count(), 2 + 15, "{out}");
    }
}
