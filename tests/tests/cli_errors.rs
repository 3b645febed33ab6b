//! `s2s` on bad inputs: exactly one error line on standard error that names the file,
//! tensor or position, a non-zero exit status, and no output file left behind (not even
//! a temporary one).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use s2s_tests::pytorch::{self, Tensor};
use s2s_tests::{assert_one_error, assert_only, import, model_file, s2s, s2s_ok, scratch_dir};

/// The PyTorch example's weights and model file, built once.
fn example() -> &'static (PathBuf, PathBuf) {
    static EXAMPLE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    EXAMPLE.get_or_init(|| pytorch::build_model(&scratch_dir("cli-errors-example")))
}

/// Copies of the netra model: cut to `len` bytes, or with one byte changed.
fn damaged_model(dir: &Path, name: &str, damage: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(model_file("netra.s2s")).expect("reading netra.s2s");
    damage(&mut bytes);
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("writing the damaged model");
    p
}

#[test]
fn truncated_model_file() {
    let dir = scratch_dir("truncated");
    let full = std::fs::metadata(model_file("netra.s2s")).unwrap().len();
    let model = damaged_model(&dir, "cut.s2s", |b| b.truncate(b.len() / 3));
    let cut = (full / 3).to_string();
    let path = model.display().to_string();
    assert_one_error(&s2s(&[&"inspect", &model], ""), &[&path, "truncated", &cut]);
    assert_one_error(&s2s(&[&"run", &model], "abc\n"), &[&path, "truncated"]);
    // Quantizing it writes nothing.
    let out = dir.join("q.s2s");
    let r = s2s(
        &[&"quantize", &model, &"--scheme", &"w8f32", &"-o", &out],
        "",
    );
    assert_one_error(&r, &[&path, "truncated"]);
    assert_only(&dir, &["cut.s2s"]);
    // A file shorter than the header.
    let tiny = damaged_model(&dir, "tiny.s2s", |b| b.truncate(20));
    let path = tiny.display().to_string();
    assert_one_error(&s2s(&[&"inspect", &tiny], ""), &[&path, "truncated"]);
}

#[test]
fn model_file_with_one_corrupted_byte() {
    let dir = scratch_dir("corrupted");
    let model = damaged_model(&dir, "flipped.s2s", |b| {
        let mid = b.len() / 2;
        b[mid] ^= 0x10;
    });
    let path = model.display().to_string();
    let line = assert_one_error(&s2s(&[&"inspect", &model], ""), &[&path]);
    assert!(line.contains("CRC"), "{line:?} does not say CRC");
    assert_one_error(&s2s(&[&"run", &model], "abc\n"), &[&path, "CRC"]);
}

/// Runs `s2s import` of the example configuration with changed tensors into `dir` and
/// checks that no output was written.
fn import_with(dir: &Path, change: impl FnOnce(&mut Vec<Tensor>)) -> Output {
    let mut tensors = pytorch::state_dict(pytorch::SEED, pytorch::SCALE);
    change(&mut tensors);
    let weights = dir.join("weights.safetensors");
    pytorch::write_safetensors(&weights, &tensors);
    let out = dir.join("model.s2s");
    let r = import(&pytorch::config(), &weights, &out);
    assert!(!out.exists(), "{} was written", out.display());
    assert_only(dir, &["weights.safetensors"]);
    r
}

#[test]
fn import_with_a_tensor_of_the_wrong_shape() {
    let dir = scratch_dir("wrong-shape");
    let r = import_with(&dir, |t| {
        let out = t
            .iter_mut()
            .find(|(n, _, _)| n == "decoder.out.weight")
            .unwrap();
        // 10 x 12 -> 10 x 11.
        out.1 = vec![10, 11];
        out.2.truncate(110);
    });
    let line = assert_one_error(&r, &["decoder.out.weight", "10x11", "10x12"]);
    eprintln!("{line}");
}

#[test]
fn import_with_a_missing_tensor() {
    let dir = scratch_dir("missing-tensor");
    let r = import_with(&dir, |t| {
        t.retain(|(n, _, _)| n != "decoder.attention.Va.weight")
    });
    let line = assert_one_error(&r, &["decoder.attention.Va.weight", "not found"]);
    eprintln!("{line}");
}

#[test]
fn config_with_an_unknown_variant() {
    let dir = scratch_dir("bad-config");
    let text = std::fs::read_to_string(pytorch::config()).unwrap();
    let bad = text.replacen(
        "[decoder]\nembedding = 12\nhidden = 12\nreset = \"after\"",
        "[decoder]\nembedding = 12\nhidden = 12\nreset = \"sideways\"",
        1,
    );
    let reset_line = 1 + bad
        .lines()
        .position(|l| l.contains("sideways"))
        .expect("the example's [decoder] changed; update this test");
    let config = dir.join("bad.toml");
    std::fs::write(&config, bad).unwrap();
    let (weights, _) = example();
    let out = dir.join("model.s2s");
    let r = import(&config, weights, &out);
    let at = format!("{}:{reset_line}:", config.display());
    let line = assert_one_error(&r, &[&at, "sideways"]);
    eprintln!("{line}");
    assert_only(&dir, &["bad.toml"]);
}

#[test]
fn symbol_outside_a_vocabulary_without_unk() {
    let (_, model) = example();
    // 'z' is not in the example's source vocabulary (SOS, EOS, a-h) and there is no unk;
    // positions count from 1.
    let r = s2s(&[&"run", model], "abc\nabzd\n");
    let line = assert_one_error(&r, &["<stdin>:2:", "'z'", "position 3"]);
    eprintln!("{line}");
    // The bad line's output is an empty line; the good one's is there.
    let out = String::from_utf8(r.stdout).unwrap();
    assert!(out.ends_with("\n\n") && out.lines().count() == 2, "{out:?}");
}

#[test]
fn symbol_outside_the_vocabulary_maps_to_unk_in_g2p_en() {
    let model = model_file("g2p-en.s2s");
    let r = s2s(&[&"run", &model, &"--tsv"], "ab1c\n");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let out = String::from_utf8(r.stdout).unwrap();
    assert!(
        out.starts_with("ab1c\t") && out.trim_end().len() > 5,
        "{out:?}"
    );
}

#[test]
fn input_longer_than_the_capacity() {
    let model = model_file("netra.s2s");
    let r = s2s(&[&"run", &model], "abcdefghijklmnopqrstuvwxyz\n");
    let line = assert_one_error(&r, &["26", "25", "<stdin>:1:"]);
    eprintln!("{line}");
}

#[test]
fn calibration_with_nothing_usable() {
    let dir = scratch_dir("calibration");
    let model = model_file("netra.s2s");
    let out = dir.join("q.s2s");
    // An empty file.
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let path = empty.display().to_string();
    let r = s2s(
        &[
            &"quantize",
            &model,
            &"--scheme",
            &"w8a16",
            &"--calib",
            &empty,
            &"-o",
            &out,
        ],
        "",
    );
    assert_one_error(&r, &[&path, "empty"]);
    // Lines whose every symbol is outside the source vocabulary (netra's has letters
    // only): not a model full of zero scales, an error.
    let foreign = dir.join("foreign.txt");
    std::fs::write(&foreign, "1234\n!!?\n\u{17a2}\u{17ab}\n").unwrap();
    let path = foreign.display().to_string();
    let r = s2s(
        &[
            &"quantize",
            &model,
            &"--scheme",
            &"w8a16",
            &"--calib",
            &foreign,
            &"-o",
            &out,
        ],
        "",
    );
    assert_one_error(&r, &[&path, "none of the 3 calibration lines is usable"]);
    assert_only(&dir, &["empty.txt", "foreign.txt"]);
}

#[test]
fn a_weight_layout_that_is_unknown_or_not_for_the_scheme() {
    let dir = scratch_dir("layout");
    let model = model_file("netra.s2s");
    let out = dir.join("q.s2s");
    let quantize = |scheme: &str, layout: &str| {
        s2s(
            &[
                &"quantize",
                &model,
                &"--scheme",
                &scheme,
                &"--layout",
                &layout,
                &"-o",
                &out,
            ],
            "",
        )
    };
    // The layouts are w8a16's (the integer kernels').
    assert_one_error(&quantize("w8f32", "v6m"), &["--layout v6m", "w8a16"]);
    // An unknown name: clap's usage error, naming the layouts.
    let r = quantize("w8a16", "dsp");
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown layout \"dsp\": one of row, v6m"),
        "{stderr}"
    );
    assert_only(&dir, &[]);
}

// ------------------------------------------- CRC-valid but inconsistent model files

/// Model `source` (in target/models) changed by `damage`, with its CRC recomputed, as
/// `dir/name`: only the parser's structural checks stand between it and the decoder.
fn consistent_crc(
    dir: &Path,
    source: &str,
    name: &str,
    damage: impl FnOnce(&mut Vec<u8>),
) -> PathBuf {
    use seq2seq::format::{crc32, RawHeader, HEADER_LEN};
    let mut b = std::fs::read(model_file(source)).expect("reading the model");
    damage(&mut b);
    let h: RawHeader = bytemuck::pod_read_unaligned(&b[..HEADER_LEN]);
    let len = h.file_len as usize;
    let crc = crc32(&b[..len - 4]);
    b[len - 4..len].copy_from_slice(&crc.to_le_bytes());
    let p = dir.join(name);
    std::fs::write(&p, b).expect("writing the damaged model");
    p
}

/// Reads, changes and writes back the header of model bytes.
fn edit_header(b: &mut [u8], f: impl FnOnce(&mut seq2seq::format::RawHeader)) {
    use seq2seq::format::{RawHeader, HEADER_LEN};
    let mut h: RawHeader = bytemuck::pod_read_unaligned(&b[..HEADER_LEN]);
    f(&mut h);
    b[..HEADER_LEN].copy_from_slice(bytemuck::bytes_of(&h));
}

/// The byte offset of a description field (`index`-th u32 of the stored record).
fn desc_word(b: &[u8], index: usize) -> usize {
    let h: seq2seq::format::RawHeader =
        bytemuck::pod_read_unaligned(&b[..seq2seq::format::HEADER_LEN]);
    h.desc[0] as usize + 4 * index
}

/// Issue 10, items 1 and 2: every command that reads a model refuses these with one
/// error line naming the file and the fault, a non-zero exit, never exit 101.
#[test]
fn crc_valid_inconsistent_model_files() {
    let dir = scratch_dir("inconsistent");
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let set_u32 = |at: fn(&[u8]) -> usize, v: u32| -> Damage {
        Box::new(move |b: &mut Vec<u8>| {
            let at = at(b);
            b[at..at + 4].copy_from_slice(&v.to_le_bytes())
        })
    };
    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "count",
            Box::new(|b| edit_header(b, |h| h.table[1] = 178_956_971)),
            "the tensor table has 178956971 entries",
        ),
        (
            "count2",
            Box::new(|b| edit_header(b, |h| h.table[1] = 2_147_483_648)),
            "the tensor table has 2147483648 entries",
        ),
        (
            "drop-entry",
            Box::new(|b| edit_header(b, |h| h.table[1] -= 1)),
            "tensor data section is not where the layout puts it",
        ),
        (
            "no-bias",
            // The output layer's bit of the bias mask cleared: its bias is not part
            // of the model any more.
            Box::new(|b| edit_header(b, |h| h.biases = [0, 0])),
            "is not part of this model",
        ),
        (
            "reserved",
            Box::new(|b| edit_header(b, |h| h.reserved[1] = 1)),
            "reserved header field not zero",
        ),
        // RawDesc: enc_reset is field 7, attn_dim 11 (netra has attention: use g2p-en
        // below for attn_dim).
        ("reset", set_u32(|b| desc_word(b, 7), 65_536), "enc_reset"),
        ("ordering", set_u32(|b| desc_word(b, 9), 0x100), "ordering"),
    ];
    for (name, damage, needle) in cases {
        let model = consistent_crc(&dir, "netra.s2s", &format!("{name}.s2s"), damage);
        let path = model.display().to_string();
        for args in [
            &[&"inspect" as &dyn AsRef<std::ffi::OsStr>, &model][..],
            &[&"run", &model],
        ] {
            let r = s2s(args, "abc\n");
            assert_ne!(r.status.code(), Some(101), "{name}: a panic");
            assert_one_error(&r, &[&path, needle]);
        }
    }
    // attn_dim on a model without attention: g2p-en.
    let attn = consistent_crc(&dir, "g2p-en.s2s", "attn.s2s", |b| {
        let at = desc_word(b, 11);
        b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    assert_one_error(&s2s(&[&"run", &attn], "abc\n"), &["attn_dim"]);
    // NaN weights: accepted by the parser (the firmware skips the scan), refused by
    // the host's.
    let nan = consistent_crc(&dir, "g2p-en.s2s", "nan.s2s", |b| {
        let h: seq2seq::format::RawHeader =
            bytemuck::pod_read_unaligned(&b[..seq2seq::format::HEADER_LEN]);
        let at = h.data[0] as usize;
        b[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    });
    assert_one_error(&s2s(&[&"run", &nan], "abc\n"), &["non-finite"]);
}

/// A model file of another format version: one line naming both versions and the
/// command that re-creates it.
#[test]
fn model_file_of_another_version() {
    let dir = scratch_dir("version");
    let v = seq2seq::format::VERSION;
    // The first version, the one before this (no prefix slots), and a newer one.
    for old in [1u16, v - 1, v + 1] {
        let model = consistent_crc(&dir, "netra.s2s", &format!("v{old}.s2s"), |b| {
            b[4..6].copy_from_slice(&old.to_le_bytes())
        });
        let path = model.display().to_string();
        for cmd in ["inspect", "run"] {
            assert_one_error(
                &s2s(&[&cmd, &model], "abc\n"),
                &[
                    &path,
                    &format!("version {old}"),
                    &format!("version {v}"),
                    "s2s import",
                    "s2s quantize",
                    "s2s train",
                ],
            );
        }
    }
}

/// Issue 10, item 3: a size beyond 32 bits in a configuration is an error naming the
/// key, not a model with the size modulo 2^32.
#[test]
fn config_size_beyond_32_bits() {
    let dir = scratch_dir("config-wrap");
    let text = std::fs::read_to_string(pytorch::config()).unwrap();
    let at = text
        .find("max_steps = ")
        .expect("the example has max_steps");
    let end = at + text[at..].find('\n').unwrap();
    let bad = format!("{}max_steps = 4294967327{}", &text[..at], &text[end..]);
    let config = dir.join("wrap.toml");
    std::fs::write(&config, bad).unwrap();
    let (weights, _) = example();
    let out = dir.join("model.s2s");
    let r = import(&config, weights, &out);
    assert_one_error(&r, &["target.max_steps = 4294967327", "too large"]);
    assert_only(&dir, &["wrap.toml"]);
}

#[test]
fn explore_refuses_a_bad_model_or_a_missing_page_in_one_line() {
    let dir = scratch_dir("explore-errors");
    let model = damaged_model(&dir, "flipped.s2s", |b| {
        let mid = b.len() / 2;
        b[mid] ^= 0x10;
    });
    let path = model.display().to_string();
    let page = dir.join("no-page");
    let served = |m: &Path| s2s(&[&"explore", &m, &"--port", &"0", &"--dir", &page], "");
    // The model is checked before anything is served.
    assert_one_error(&served(&model), &[&path, "CRC"]);
    // A page that was never built: the command that builds it.
    let netra = model_file("netra.s2s");
    assert_one_error(
        &served(&netra),
        &[&page.display().to_string(), "cargo xtask explorer"],
    );
}

#[test]
fn heatmap_json_is_the_map_and_refuses_a_model_without_attention() {
    let out = s2s(
        &[&"heatmap", &model_file("netra.s2s"), &"angkor", &"--json"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = v["weights"].as_array().expect("weights");
    assert_eq!(rows.len(), v["output"].as_array().unwrap().len());
    assert_eq!(rows.len(), v["entropy"].as_array().unwrap().len());
    let sources = v["source"].as_array().unwrap().len();
    for r in rows {
        let r = r.as_array().unwrap();
        assert_eq!(r.len(), sources);
        let sum: f64 = r.iter().map(|w| w.as_f64().unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-3, "a row sums to {sum}");
    }
    let g2p = model_file("g2p-en.s2s");
    assert_one_error(
        &s2s(&[&"heatmap", &g2p, &"hello", &"--json"], ""),
        &[&g2p.display().to_string(), "no attention"],
    );
}

#[test]
fn explain_tells_a_code_back_and_refuses_an_unknown_one_in_one_line() {
    // A code of the inference core (1-99) and one of the firmware's own (100 and up),
    // as a number or as the device writes it.
    for arg in ["64", "E64"] {
        assert_eq!(
            s2s_ok(&[&"explain", &arg], ""),
            "E64 InputTooLong: input too long\n"
        );
    }
    assert_eq!(
        s2s_ok(&[&"explain", &"E100"], ""),
        "E100 LineTooLong: line too long\n"
    );
    let out = s2s(&[&"explain", &"E999"], "");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_one_error(&out, &["E999", "no such error code"]);
    assert_one_error(
        &s2s(&[&"explain", &"x"], ""),
        &["\"x\"", "not an error code"],
    );
}

#[test]
fn long_inputs_take_positions_and_max_steps_and_bad_values_are_refused() {
    let model = model_file("g2p-en.s2s");
    let path = model.display().to_string();
    let long = format!("{}\n", "a".repeat(600));
    // 600 letters and the end token: more than the 512 positions planned by default;
    // the error says what plans for it.
    let line = assert_one_error(
        &s2s(&[&"run", &model], &long),
        &[
            "<stdin>:1:",
            "601",
            "512",
            "(`--positions 601` plans for it)",
        ],
    );
    eprintln!("{line}");
    // The heatmap of such a source names the model and the same remedy, writing nothing.
    let attends = model_file("pytorch-lstm-g2p.s2s");
    let dir = scratch_dir("cli-errors-long-heatmap");
    let svg = dir.join("long.svg");
    let r = s2s(&[&"heatmap", &attends, &"a".repeat(600), &"-o", &svg], "");
    let line = assert_one_error(
        &r,
        &[
            &attends.display().to_string(),
            "input of 600 positions exceeds the capacity of 512",
            "(`--positions 600` plans for it)",
        ],
    );
    eprintln!("{line}");
    assert!(!svg.exists(), "nothing written");
    let r = s2s(&[&"run", &model, &"--positions", &"601", &"--ids"], &long);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    // A step limit below the model's cuts every output at that many tokens.
    let words = "abandon\nzebra\ntelephone\n";
    let full = s2s_ok(&[&"run", &model, &"--ids"], words);
    let cut = s2s_ok(&[&"run", &model, &"--ids", &"--max-steps", &"3"], words);
    for (f, c) in full.lines().zip(cut.lines()) {
        let (f, c): (Vec<&str>, Vec<&str>) = (f.split(' ').collect(), c.split(' ').collect());
        assert!(f.len() > 3, "{f:?}");
        assert_eq!(c, f[..3], "{c:?} is not the first 3 of {f:?}");
    }
    for (args, needles) in [
        (
            &["--max-steps", "0"][..],
            &["--max-steps 0", "max_steps"][..],
        ),
        (
            &["--max-steps", "65536"][..],
            &["--max-steps 65536", "max_steps"][..],
        ),
        (
            &["--positions", "0"][..],
            &["--positions 0", "outside 1..="][..],
        ),
        (
            &["--positions", "1048577"][..],
            &["--positions 1048577", "outside 1..="][..],
        ),
        (
            &["--positions", "1000000"][..],
            &["--positions 1000000", "bytes of workspace"][..],
        ),
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", &model];
        all.extend(args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        let r = s2s(&all, words);
        let mut needles = needles.to_vec();
        needles.push(&path);
        let line = assert_one_error(&r, &needles);
        eprintln!("{line}");
        assert!(r.stdout.is_empty(), "{args:?}: nothing decoded");
    }
    // A model padded to a fixed length keeps it.
    let netra = model_file("netra.s2s");
    let r = s2s(&[&"run", &netra, &"--positions", &"100"], "abc\n");
    assert_one_error(
        &r,
        &["--positions 100", "pads every source to 25 positions"],
    );
}
