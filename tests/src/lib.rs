//! Shared helpers of the end-to-end tests: where the repository, the fixtures, the model
//! files of `cargo xtask models` and the release `s2s` binary are; reading fixtures;
//! running `s2s`; and the weights of the PyTorch-tutorial example model
//! (`models/examples/pytorch-bahdanau.toml`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// A file of `tests/fixtures/golden/`.
pub fn golden(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/golden").join(name)
}

/// The cargo that built us.
fn cargo() -> Command {
    let cargo = std::env::var("CARGO")
        .ok()
        .or(option_env!("CARGO").map(String::from))
        .unwrap_or_else(|| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(repo_root());
    c
}

/// The first `n` golden evaluation words (`words-eval.txt`) of at most `max_len`
/// characters; fails when the file has fewer.
pub fn eval_words(n: usize, max_len: usize) -> Vec<String> {
    let path = golden("words-eval.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let words: Vec<String> = text
        .lines()
        .filter(|w| !w.is_empty() && w.chars().count() <= max_len)
        .take(n)
        .map(String::from)
        .collect();
    assert_eq!(words.len(), n, "{} has too few words", path.display());
    words
}

/// Cargo's target directory (as `cargo metadata` reports it: `CARGO_TARGET_DIR` and
/// configuration honoured).
pub fn target_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = cargo()
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .stderr(Stdio::inherit())
            .output()
            .expect("running cargo metadata");
        assert!(out.status.success(), "cargo metadata failed");
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("cargo metadata gives JSON");
        PathBuf::from(
            v["target_directory"]
                .as_str()
                .expect("cargo metadata gives target_directory"),
        )
    })
}

/// A file that `cargo xtask models` makes in `target/models/`; panics (failing the
/// test, never skipping it) when it is missing.
pub fn model_file(name: &str) -> PathBuf {
    let p = target_dir().join("models").join(name);
    assert!(
        p.is_file(),
        "{} is missing: run `cargo xtask models` first",
        p.display()
    );
    p
}

/// The release `s2s` binary, built (once per test process) with
/// `cargo build --release -p host-tools --bin s2s`, the same command `cargo xtask models`
/// uses, so it is up to date with the sources and usually already built.
pub fn s2s_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = cargo()
            .args([
                "build",
                "--release",
                "-p",
                "host-tools",
                "--bin",
                "s2s",
                "--features",
                "train",
                "--quiet",
                "--message-format=json-render-diagnostics",
            ])
            .stderr(Stdio::inherit())
            .output()
            .expect("running cargo build");
        assert!(
            out.status.success(),
            "cargo build --release -p host-tools failed"
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["target"]["name"] == "s2s")
            .find_map(|v| v["executable"].as_str().map(PathBuf::from))
            .expect("cargo build reported the s2s executable")
    })
}

/// Runs `s2s` with `args` (and `stdin` as its standard input) and returns what it did.
pub fn s2s(args: &[&dyn AsRef<std::ffi::OsStr>], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(s2s_bin())
        .args(args.iter().map(|a| a.as_ref()))
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting s2s");
    let mut input = child.stdin.take().expect("stdin is piped");
    // s2s may exit before reading its input; a broken pipe is then expected.
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    child.wait_with_output().expect("waiting for s2s")
}

/// `s2s import --config CONFIG --weights WEIGHTS -o OUT`.
pub fn import(config: &Path, weights: &Path, out: &Path) -> Output {
    s2s(
        &[
            &"import",
            &"--config",
            &config,
            &"--weights",
            &weights,
            &"-o",
            &out,
        ],
        "",
    )
}

/// Runs `s2s` and returns its standard output; panics with its standard error unless it
/// succeeds.
pub fn s2s_ok(args: &[&dyn AsRef<std::ffi::OsStr>], stdin: &str) -> String {
    let out = s2s(args, stdin);
    assert!(
        out.status.success(),
        "s2s {:?} failed ({}): {}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("s2s writes UTF-8")
}

/// A `word<TAB>output` fixture: its `# ` header lines (without the `# `) and its rows.
pub struct Tsv {
    /// Header lines.
    pub header: Vec<String>,
    /// `(source, output)` rows, in order.
    pub rows: Vec<(String, String)>,
}

impl Tsv {
    /// Reads a TSV file; a row without a tab is an error naming the file and line.
    pub fn read(path: &Path) -> Tsv {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses TSV text (`origin` names it in panics).
    pub fn parse(text: &str, origin: &str) -> Tsv {
        let mut tsv = Tsv {
            header: vec![],
            rows: vec![],
        };
        for (i, line) in text.lines().enumerate() {
            if let Some(h) = line.strip_prefix('#') {
                tsv.header.push(h.trim_start().to_string());
            } else if !line.is_empty() {
                let (a, b) = line
                    .split_once('\t')
                    .unwrap_or_else(|| panic!("{origin}:{}: no tab in {line:?}", i + 1));
                tsv.rows.push((a.to_string(), b.to_string()));
            }
        }
        tsv
    }

    /// The value of `key=value` in the header (e.g. `per`).
    pub fn header_value(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .flat_map(|h| h.split_whitespace())
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    }
}

/// A fresh, empty scratch directory for one test, `target/tmp/s2s-tests-<test>` (what a
/// previous run left there is removed first).
pub fn scratch_dir(test: &str) -> PathBuf {
    let d = target_dir().join("tmp").join(format!("s2s-tests-{test}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    d
}

/// The names of the files in a directory (hidden ones included), sorted.
pub fn dir_listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into()
        })
        .collect();
    v.sort();
    v
}

/// Asserts a failure with one error line containing every one of `needles`; returns the
/// line.
#[track_caller]
pub fn assert_one_error(out: &Output, needles: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected a failure, got {}; stderr: {stderr}",
        out.status
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one error line, got:\n{stderr}");
    let line = lines[0];
    assert!(line.starts_with("error: "), "not an error line: {line}");
    for n in needles {
        assert!(line.contains(n), "{line:?} does not mention {n:?}");
    }
    line.to_string()
}

/// Asserts that `dir` holds exactly `files` (no output, no temporary file).
#[track_caller]
pub fn assert_only(dir: &Path, files: &[&str]) {
    let mut want: Vec<String> = files.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(dir_listing(dir), want, "files left in {}", dir.display());
}

/// A held-out source and a framework's greedy decode of it (the LSTM and ONNX
/// fixtures' `reference.json`).
pub struct Reference {
    /// The source word.
    pub word: String,
    /// The output tokens (end token dropped).
    pub output: Vec<String>,
    /// Per step (the end token's included): top-1 minus top-2 probability.
    pub gaps: Vec<f64>,
}

/// The references of `list` (the JSON array of a `reference.json`): `word`, `output`
/// (space-separated tokens) and `gaps` of each entry.
pub fn references(list: &serde_json::Value, origin: &Path) -> Vec<Reference> {
    list.as_array()
        .unwrap_or_else(|| panic!("{}: no references", origin.display()))
        .iter()
        .map(|c| Reference {
            word: c["word"].as_str().expect("word").to_string(),
            output: c["output"]
                .as_str()
                .expect("output")
                .split_whitespace()
                .map(String::from)
                .collect(),
            gaps: c["gaps"]
                .as_array()
                .expect("gaps")
                .iter()
                .map(|g| g.as_f64().expect("a gap"))
                .collect(),
        })
        .collect()
}

/// `s2s run MODEL` on the references' words: the output tokens of each.
pub fn run_words(model: &Path, refs: &[Reference]) -> Vec<Vec<String>> {
    let input: String = refs.iter().map(|r| format!("{}\n", r.word)).collect();
    let out = s2s_ok(&[&"run", &model], &input);
    let lines: Vec<Vec<String>> = out
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(lines.len(), refs.len(), "one output line per input");
    lines
}

/// Compares `ours` with the references token for token: a difference is accepted only
/// when the reference's top-two gap at the first differing step is below `near_tie`
/// (else the test fails naming the word). Returns the accepted differences.
#[track_caller]
pub fn near_tie_differences(
    name: &str,
    refs: &[Reference],
    ours: &[Vec<String>],
    near_tie: f64,
) -> Vec<String> {
    let mut near_ties = vec![];
    for (c, o) in refs.iter().zip(ours) {
        if &c.output == o {
            continue;
        }
        // The first step that differs (a longer or shorter output differs where one
        // of them has the end token).
        let step = c
            .output
            .iter()
            .zip(o)
            .position(|(a, b)| a != b)
            .unwrap_or(c.output.len().min(o.len()));
        let gap = c.gaps.get(step).copied().unwrap_or(f64::INFINITY);
        assert!(
            gap < near_tie,
            "{name} {:?}: ours {:?}, reference {:?}; first difference at step {step}, where the reference's top-two gap is {gap} (not below {near_tie})",
            c.word,
            o.join(" "),
            c.output.join(" ")
        );
        near_ties.push(format!("{} (step {step}, gap {gap:.2e})", c.word));
    }
    eprintln!(
        "{name}: {} of {} token-identical; {} differ, each at a reference near-tie: {near_ties:?}",
        refs.len() - near_ties.len(),
        refs.len(),
        near_ties.len()
    );
    near_ties
}

/// `s2s quantize MODEL --scheme w8a16` with `tests/fixtures/golden/words-calib.txt`
/// into `out`, then `s2s check` of it against `model` on the references' words (in
/// `out`'s folder) with `--min-agreement`: returns the sequence agreement (percent).
pub fn quantize_w8a16_and_check(
    model: &Path,
    out: &Path,
    refs: &[Reference],
    min_agreement: f64,
) -> f64 {
    let calib = golden("words-calib.txt");
    s2s_ok(
        &[
            &"quantize",
            &model,
            &"--scheme",
            &"w8a16",
            &"--calib",
            &calib,
            &"-o",
            &out,
        ],
        "",
    );
    let words = out.with_extension("words.txt");
    let text: String = refs.iter().map(|c| format!("{}\n", c.word)).collect();
    std::fs::write(&words, text).expect("writing the words");
    let report = s2s_ok(
        &[
            &"check",
            &out,
            &"--reference",
            &model,
            &"--input",
            &words,
            &"--min-agreement",
            &min_agreement.to_string(),
        ],
        "",
    );
    let agreement: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("sequence agreement"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no agreement in:\n{report}"));
    assert!(agreement >= min_agreement, "{}:\n{report}", out.display());
    agreement
}

/// The PyTorch seq2seq tutorial's model in the sizes of
/// `models/examples/pytorch-bahdanau.toml`, with seeded pseudo-random weights.
pub mod pytorch {
    use std::path::{Path, PathBuf};

    /// Source tokens (the tutorial's `SOS` = 0 and `EOS` = 1, then letters).
    pub const SRC: [&str; 10] = ["SOS", "EOS", "a", "b", "c", "d", "e", "f", "g", "h"];
    /// Target tokens.
    pub const TGT: [&str; 10] = ["SOS", "EOS", "p", "q", "r", "s", "t", "u", "v", "w"];
    /// `SOS` id, the decoder's first input.
    pub const SOS: usize = 0;
    /// `EOS` id, appended to every source and ending the output.
    pub const EOS: usize = 1;
    /// Hidden size (the tutorial's `hidden_size`: embeddings, GRUs and attention).
    pub const HIDDEN: usize = 12;
    /// Most decoder steps (the configuration's `max_steps`).
    pub const MAX_STEPS: usize = 10;

    /// The example configuration.
    pub fn config() -> PathBuf {
        super::repo_root().join("models/examples/pytorch-bahdanau.toml")
    }

    /// One named tensor: name, shape, row-major values.
    pub type Tensor = (String, Vec<usize>, Vec<f32>);

    /// splitmix64, for reproducible weights.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform in `[-a, a)`.
        fn uniform(&mut self, a: f32) -> f32 {
            ((self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * a
        }
    }

    /// The tutorial's state dict (`EncoderRNN` + `AttnDecoderRNN` with
    /// `BahdanauAttention`), every value uniform in `[-scale, scale)` from `seed`.
    pub fn state_dict(seed: u64, scale: f32) -> Vec<Tensor> {
        let h = HIDDEN;
        let shapes: [(&str, Vec<usize>); 18] = [
            ("encoder.embedding.weight", vec![SRC.len(), h]),
            ("encoder.gru.weight_ih_l0", vec![3 * h, h]),
            ("encoder.gru.weight_hh_l0", vec![3 * h, h]),
            ("encoder.gru.bias_ih_l0", vec![3 * h]),
            ("encoder.gru.bias_hh_l0", vec![3 * h]),
            ("decoder.embedding.weight", vec![TGT.len(), h]),
            ("decoder.attention.Wa.weight", vec![h, h]),
            ("decoder.attention.Wa.bias", vec![h]),
            ("decoder.attention.Ua.weight", vec![h, h]),
            ("decoder.attention.Ua.bias", vec![h]),
            ("decoder.attention.Va.weight", vec![1, h]),
            ("decoder.attention.Va.bias", vec![1]),
            ("decoder.gru.weight_ih_l0", vec![3 * h, 2 * h]),
            ("decoder.gru.weight_hh_l0", vec![3 * h, h]),
            ("decoder.gru.bias_ih_l0", vec![3 * h]),
            ("decoder.gru.bias_hh_l0", vec![3 * h]),
            ("decoder.out.weight", vec![TGT.len(), h]),
            ("decoder.out.bias", vec![TGT.len()]),
        ];
        let mut rng = Rng(seed);
        shapes
            .into_iter()
            .map(|(name, shape)| {
                let n = shape.iter().product();
                let data = (0..n).map(|_| rng.uniform(scale)).collect();
                (name.to_string(), shape, data)
            })
            .collect()
    }

    /// Writes tensors as a `.safetensors` file (F32, little-endian) with the
    /// `safetensors` crate.
    pub fn write_safetensors(path: &Path, tensors: &[Tensor]) {
        use safetensors::tensor::TensorView;
        let bytes: Vec<Vec<u8>> = tensors
            .iter()
            .map(|(_, _, d)| d.iter().flat_map(|v| v.to_le_bytes()).collect())
            .collect();
        let views: Vec<(String, TensorView<'_>)> = tensors
            .iter()
            .zip(&bytes)
            .map(|((name, shape, _), b)| {
                let v = TensorView::new(safetensors::Dtype::F32, shape.clone(), b)
                    .expect("shape matches the data");
                (name.clone(), v)
            })
            .collect();
        let file = safetensors::serialize(views, None).expect("serializing safetensors");
        std::fs::write(path, file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }

    /// The seed and scale of the example's weights.
    /// (Chosen so that the eight test sources decode to eight different outputs, seven of
    /// them ended by `EOS`, with no near ties.)
    pub const SEED: u64 = 29;
    /// See [`SEED`].
    pub const SCALE: f32 = 1.6;

    /// The example configuration with its source tokens `g`, `h` spelled `<G>`, `<H>`
    /// (the ids, and so the weights, are the same: control tags for prefix slots) and
    /// `edit` applied, imported with the weights at `weights` into `dir/name.s2s`.
    pub fn import_tagged(
        dir: &Path,
        name: &str,
        weights: &Path,
        edit: impl Fn(String) -> String,
    ) -> PathBuf {
        let text = std::fs::read_to_string(config()).expect("the example configuration");
        let text = text.replace(r#""g", "h"]"#, r#""<G>", "<H>"]"#);
        assert!(
            text.contains("<G>"),
            "the example's source tokens end with g, h"
        );
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, edit(text)).expect("writing the configuration");
        let model = dir.join(format!("{name}.s2s"));
        super::s2s_ok(
            &[
                &"import",
                &"--config",
                &path,
                &"--weights",
                &weights,
                &"-o",
                &model,
            ],
            "",
        );
        model
    }

    /// Writes the example's weights (`SEED`, `SCALE`) into `dir/pytorch-bahdanau.safetensors`
    /// and imports them with `s2s import` into `dir/pytorch-bahdanau.s2s`; returns both paths.
    pub fn build_model(dir: &Path) -> (PathBuf, PathBuf) {
        let weights = dir.join("pytorch-bahdanau.safetensors");
        write_safetensors(&weights, &state_dict(SEED, SCALE));
        let model = dir.join("pytorch-bahdanau.s2s");
        super::s2s_ok(
            &[
                &"import",
                &"--config",
                &config(),
                &"--weights",
                &weights,
                &"-o",
                &model,
            ],
            "",
        );
        (weights, model)
    }
}
