//! The integer models give the same bits whatever the build profile: the w8a16 models of
//! `cargo xtask models` run on the first 300 evaluation words through the host library,
//! once in this process and once in a child process built with the OTHER profile
//! (`--release` when this one is the test profile, the test profile when this one is
//! `--release`), and the two digests of every output id, raw `i32` logit and raw `Q0.15`
//! attention weight must be equal.
//!
//! The profiles differ in everything that could make integer code disagree: opt-level
//! 0 against 3, overflow checks and debug assertions on against off (an overflow that
//! panics in one wraps in the other), one codegen unit against many. The child is the
//! same test, started by `cargo test [--release] -p s2s-tests --test determinism --
//! --exact <this test>` with `S2S_DETERMINISM_CHILD=1`: it prints its digests instead of
//! starting another child. A missing model file fails the test with the hint to run
//! `cargo xtask models`; it is never skipped.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

use host_tools::model::{decode_lines, Decoded, Keep, LoadedModel};
use s2s_tests::{golden, model_file, repo_root};

/// The models checked (made by `cargo xtask models`).
const MODELS: [&str; 2] = ["netra-w8a16.s2s", "g2p-en-w8a16.s2s"];
/// Words of `words-eval.txt` decoded by each model.
const WORDS: usize = 300;
/// Set in the child process.
const CHILD_ENV: &str = "S2S_DETERMINISM_CHILD";
/// Prefix of the child's digest lines on its standard output.
const MARK: &str = "determinism-digest";
/// This test's name, for the child's `--exact` filter.
const TEST_NAME: &str = "w8a16_outputs_are_bit_identical_in_debug_and_release";

/// FNV-1a, 64 bits: stable across platforms, releases and profiles (unlike
/// `std::hash`), and enough to tell two runs apart.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    /// A length-prefixed list of rows, so that no two layouts hash alike.
    fn rows(&mut self, rows: &[Vec<i64>]) {
        self.u64(rows.len() as u64);
        for r in rows {
            self.u64(r.len() as u64);
            for &v in r {
                self.u64(v as u64);
            }
        }
    }
}

/// What one decoded word contributes: its ids, raw logits and raw attention weights.
fn word_digest(d: &Decoded) -> u64 {
    let mut h = Fnv::new();
    h.u64(d.ids.len() as u64);
    for &id in &d.ids {
        h.bytes(&id.to_le_bytes());
    }
    h.rows(&d.raw_logits);
    h.rows(&d.raw_weights);
    h.0
}

/// One model's digest over all the words, with the per-word digests and counts.
#[derive(Debug, PartialEq)]
struct ModelDigest {
    model: String,
    /// FNV-1a of the model file itself (tells a rebuilt model from a real difference).
    file: u64,
    total: u64,
    steps: usize,
    logits: usize,
    weights: usize,
    words: Vec<u64>,
}

impl ModelDigest {
    fn line(&self) -> String {
        let mut s = format!(
            "{MARK} {} file={:016x} {:016x} steps={} logits={} weights={}",
            self.model, self.file, self.total, self.steps, self.logits, self.weights
        );
        for w in &self.words {
            let _ = write!(s, " {w:016x}");
        }
        s
    }

    /// Reads a digest line; the test harness may have printed `test NAME ... ` before it
    /// on the same line.
    fn parse(line: &str) -> Option<ModelDigest> {
        let mut it = line[line.find(MARK)? + MARK.len()..].split_whitespace();
        let model = it.next()?.to_string();
        let file = u64::from_str_radix(it.next()?.strip_prefix("file=")?, 16).ok()?;
        let total = u64::from_str_radix(it.next()?, 16).ok()?;
        let mut count = |key: &str| -> Option<usize> { it.next()?.strip_prefix(key)?.parse().ok() };
        let (steps, logits, weights) = (count("steps=")?, count("logits=")?, count("weights=")?);
        let words = it
            .map(|w| u64::from_str_radix(w, 16).ok())
            .collect::<Option<Vec<u64>>>()?;
        Some(ModelDigest {
            model,
            file,
            total,
            steps,
            logits,
            weights,
            words,
        })
    }
}

fn words() -> Vec<String> {
    let path = golden("words-eval.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let words: Vec<String> = text.lines().take(WORDS).map(String::from).collect();
    assert_eq!(words.len(), WORDS, "{} has too few words", path.display());
    words
}

/// Decodes the words with one model on a few threads (each its own runner), in order.
fn digest(name: &str, words: &[String]) -> ModelDigest {
    let model = LoadedModel::load(&model_file(name)).unwrap_or_else(|e| panic!("{e}"));
    let keep = Keep {
        logits: true,
        weights: true,
        ..Keep::default()
    };
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    let chunk = words.len().div_ceil(threads);
    let decoded: Vec<Decoded> = std::thread::scope(|s| {
        let handles: Vec<_> = words
            .chunks(chunk)
            .map(|c| s.spawn(|| decode_lines(&model, c, keep)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .expect("decoding thread panicked")
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
            })
            .collect()
    });
    assert_eq!(decoded.len(), words.len());
    let has_attention = model.file().desc().has_attention();
    let mut total = Fnv::new();
    let mut file = Fnv::new();
    file.bytes(model.bytes());
    let mut out = ModelDigest {
        model: name.to_string(),
        file: file.0,
        total: 0,
        steps: 0,
        logits: 0,
        weights: 0,
        words: vec![],
    };
    for (w, d) in words.iter().zip(&decoded) {
        assert!(!d.raw_logits.is_empty(), "{name} {w}: no logits kept");
        if has_attention {
            assert!(!d.raw_weights.is_empty(), "{name} {w}: no attention kept");
        }
        let h = word_digest(d);
        total.u64(h);
        out.words.push(h);
        out.steps += d.raw_logits.len();
        out.logits += d.raw_logits.iter().map(Vec::len).sum::<usize>();
        out.weights += d.raw_weights.iter().map(Vec::len).sum::<usize>();
    }
    out.total = total.0;
    out
}

fn profile_name(release: bool) -> &'static str {
    if release {
        "release (opt-level 3, no overflow checks)"
    } else {
        "test (opt-level 0, overflow checks)"
    }
}

#[test]
fn w8a16_outputs_are_bit_identical_in_debug_and_release() {
    let words = words();
    let start = Instant::now();
    let ours: Vec<ModelDigest> = MODELS.iter().map(|m| digest(m, &words)).collect();
    let release = !cfg!(debug_assertions);
    if std::env::var_os(CHILD_ENV).is_some() {
        for d in &ours {
            println!("{}", d.line());
        }
        return;
    }
    eprintln!(
        "determinism: {} words x {} models decoded in {:.1} s in the {} profile",
        WORDS,
        MODELS.len(),
        start.elapsed().as_secs_f64(),
        profile_name(release)
    );

    // The same test in the other profile.
    let start = Instant::now();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(repo_root())
        .args(["test", "-p", "s2s-tests", "--test", "determinism"]);
    if !release {
        cmd.arg("--release");
    }
    cmd.args([
        "--",
        "--exact",
        TEST_NAME,
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, "1");
    let out = cmd.output().expect("starting cargo test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the {} child failed ({}):\n{stdout}\n{stderr}",
        profile_name(!release),
        out.status
    );
    let theirs: Vec<ModelDigest> = stdout.lines().filter_map(ModelDigest::parse).collect();
    assert_eq!(
        theirs.len(),
        MODELS.len(),
        "the child printed {} digests instead of {} (did the test filter match?):\n{}\n{stderr}",
        theirs.len(),
        MODELS.len(),
        stdout.chars().take(4000).collect::<String>()
    );
    eprintln!(
        "determinism: the {} child built and ran in {:.1} s",
        profile_name(!release),
        start.elapsed().as_secs_f64()
    );
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a.model, b.model);
        assert_eq!(
            a.file, b.file,
            "{}: the model file changed between the two runs (was `cargo xtask models` running?); run the test again",
            a.model
        );
        if a != b {
            let first = a.words.iter().zip(&b.words).position(|(x, y)| x != y);
            panic!(
                "{}: {} gives digest {:016x} ({} steps, {} logits, {} weights), {} gives {:016x} ({} steps, {} logits, {} weights); first differing word: {:?}",
                a.model,
                profile_name(release),
                a.total,
                a.steps,
                a.logits,
                a.weights,
                profile_name(!release),
                b.total,
                b.steps,
                b.logits,
                b.weights,
                first.map(|i| &words[i])
            );
        }
        eprintln!(
            "determinism: {} {:016x} in both profiles ({} steps, {} logits, {} attention weights)",
            a.model, a.total, a.steps, a.logits, a.weights
        );
    }
}

#[test]
fn digest_lines_round_trip() {
    let d = ModelDigest {
        model: "m.s2s".into(),
        file: 7,
        total: 0x0123_4567_89ab_cdef,
        steps: 3,
        logits: 30,
        weights: 75,
        words: vec![1, u64::MAX],
    };
    assert_eq!(ModelDigest::parse(&d.line()).as_ref(), Some(&d));
    let harness = format!("test {TEST_NAME} ... {}", d.line());
    assert_eq!(ModelDigest::parse(&harness), Some(d));
    let mut a = Fnv::new();
    a.bytes(b"a");
    assert_eq!(a.0, 0xaf63_dc4c_8601_ec8c, "FNV-1a 64 of \"a\"");
}

/// `s2s run` with RAYON_NUM_THREADS set to `threads`: its standard output.
fn run_with_threads(threads: usize, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<u8> {
    let out = Command::new(s2s_tests::s2s_bin())
        .args(args.iter().map(|a| a.as_ref()))
        .env("RAYON_NUM_THREADS", threads.to_string())
        .current_dir(repo_root())
        .output()
        .expect("starting s2s");
    assert!(
        out.status.success(),
        "{threads} threads: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `s2s run` and `s2s eval` spread their lines over the threads (issue 14): the output
/// is byte for byte the same with 1, 2 and 3 threads, for an f32 and a w8a16 model, in
/// greedy decoding and in a beam search, and for the error-rate report.
#[test]
fn outputs_are_the_same_whatever_the_thread_count() {
    let words = golden("words-eval.txt");
    let g2p = model_file("g2p-en.s2s");
    let netra = model_file("netra-w8a16.s2s");
    let eval = model_file("g2p-en-eval.tsv");
    let runs: [Vec<&dyn AsRef<std::ffi::OsStr>>; 4] = [
        vec![&"run", &g2p, &"--input", &words, &"--tsv"],
        vec![&"run", &netra, &"--input", &words, &"--tsv"],
        vec![&"run", &netra, &"--input", &words, &"--beam", &"3"],
        vec![&"eval", &g2p, &"--data", &eval],
    ];
    for args in &runs {
        let one = run_with_threads(1, args);
        assert!(!one.is_empty());
        for threads in [2, 3] {
            assert!(
                run_with_threads(threads, args) == one,
                "{threads} threads differ from 1 for {:?}",
                args.iter()
                    .map(|a| a.as_ref().to_os_string())
                    .collect::<Vec<_>>()
            );
        }
    }
}

/// `s2s quantize` calibrates on all threads (issue 14): quantizing netra to w8a16 as
/// `cargo xtask models` does gives the same file byte for byte with 1 and 2 threads.
#[test]
fn quantized_files_are_the_same_whatever_the_thread_count() {
    let dir = s2s_tests::scratch_dir("quantize-threads");
    let netra = model_file("netra.s2s");
    let calib = golden("words-calib.txt");
    let files: Vec<Vec<u8>> = [1, 2]
        .into_iter()
        .map(|threads| {
            let out = dir.join(format!("netra-w8a16-{threads}.s2s"));
            #[rustfmt::skip]
            run_with_threads(threads, &[&"quantize", &netra, &"--scheme", &"w8a16", &"--calib", &calib, &"-o", &out]);
            std::fs::read(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()))
        })
        .collect();
    assert!(!files[0].is_empty());
    assert!(
        files[0] == files[1],
        "netra w8a16 quantized with 2 threads differs from 1 thread (in {})",
        dir.display()
    );
}
