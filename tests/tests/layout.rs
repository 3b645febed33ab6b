//! `s2s quantize --layout`: netra's w8a16 file in the `v6m` layout (made by `cargo xtask
//! models` with `--layout v6m`) is the row file re-encoded, byte for byte, and decodes
//! exactly as it on every evaluation word; `s2s inspect` names the layout.

use s2s_kernels::Layout;
use s2s_tests::{golden, model_file, s2s_ok};
use seq2seq::builder::aligned;
use seq2seq::format::{DType, Slot, HEADER_LEN};
use seq2seq::ModelFile;

/// The file's bytes and the byte ranges of its int8 weight tensors.
fn weights_of(bytes: &[u8]) -> (Layout, Vec<std::ops::Range<usize>>) {
    let words = aligned(bytes);
    let file = ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()])
        .expect("a valid model file");
    let ranges = file
        .tensors()
        .filter(|t| t.id.slot == Slot::Weight && t.dtype == DType::I8)
        .map(|t| t.offset..t.offset + t.len)
        .collect();
    (file.layout(), ranges)
}

#[test]
fn netra_w8a16_v6m_is_the_row_file_re_encoded() {
    let row = std::fs::read(model_file("netra-w8a16.s2s")).unwrap();
    let v6m = std::fs::read(model_file("netra-w8a16-v6m.s2s")).unwrap();
    let ((lr, weights), (lv, weights_v)) = (weights_of(&row), weights_of(&v6m));
    assert_eq!((lr, lv), (Layout::Row, Layout::V6m));
    assert_eq!(weights, weights_v, "the same tensors at the same places");
    assert_eq!(row.len(), v6m.len());
    let is_weight = |i: usize| weights.iter().any(|r| r.contains(&i));
    let crc = row.len() - 4;
    for (i, (&a, &b)) in row.iter().zip(&v6m).enumerate() {
        let want = if i == 7 {
            1 // the header's layout byte
        } else if i >= crc {
            b // the CRC
        } else if is_weight(i) {
            Layout::V6m.store(a as i8) as u8
        } else {
            a
        };
        assert_eq!(b, want, "byte {i} (header {HEADER_LEN} bytes)");
    }
    assert!(weights.iter().map(|r| r.len()).sum::<usize>() > 10_000);
}

#[test]
fn netra_w8a16_v6m_decodes_as_the_row_layout_on_every_eval_word() {
    let words = std::fs::read_to_string(golden("words-eval.txt")).unwrap();
    assert_eq!(words.lines().count(), 2000);
    let run = |model: &str| s2s_ok(&[&"run", &model_file(model), &"--tsv"], &words);
    let (row, v6m) = (run("netra-w8a16.s2s"), run("netra-w8a16-v6m.s2s"));
    assert_eq!(row.lines().count(), 2000, "one output per word");
    assert!(row == v6m, "the v6m layout decodes otherwise");
    let inspect = s2s_ok(&[&"inspect", &model_file("netra-w8a16-v6m.s2s")], "");
    assert!(
        inspect.contains("(w8a16, v6m layout, format v"),
        "{inspect}"
    );
}
