//! End-to-end tests of format detection and of the errors `read_weights` reports.

use super::archive::tests::{build_zip, TestEntry};
use super::hdf5::tests::fixture;
use super::npy::tests::build_npy;
use super::*;

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// An `.npz` with a stored f4 array, a deflated f8 array in a sub-path and an int64
/// array that must be skipped.
fn sample_npz() -> Vec<u8> {
    let w = build_npy("<f4", false, &[2, 2], &f32_bytes(&[1.0, -2.0, 0.5, 4.0]));
    let b64: Vec<u8> = [0.125f64, 3.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let b = build_npy("<f8", false, &[2], &b64);
    let step = build_npy("<i8", false, &[], &5i64.to_le_bytes());
    build_zip(&[
        TestEntry {
            name: "w.npy",
            data: &w,
            deflate: false,
        },
        TestEntry {
            name: "layer/b.npy",
            data: &b,
            deflate: true,
        },
        TestEntry {
            name: "step.npy",
            data: &step,
            deflate: false,
        },
    ])
}

#[test]
fn reads_npz_sorted_and_skips_integers() {
    let tensors = read_weights_bytes(&sample_npz(), "weights.npz").expect("npz");
    assert_eq!(
        tensors,
        [
            Tensor {
                name: "layer/b".into(),
                shape: vec![2],
                data: vec![0.125, 3.0].into(),
            },
            Tensor {
                name: "w".into(),
                shape: vec![2, 2],
                data: vec![1.0, -2.0, 0.5, 4.0].into(),
            },
        ]
    );
}

#[test]
fn reads_keras_archive_through_its_hdf5_entry() {
    let h5 = fixture("earliest.h5");
    let keras = build_zip(&[
        TestEntry {
            name: "metadata.json",
            data: b"{}",
            deflate: false,
        },
        TestEntry {
            name: KERAS_WEIGHTS_ENTRY,
            data: &h5,
            deflate: true,
        },
    ]);
    let from_keras = read_weights_bytes(&keras, "model.keras").expect("keras");
    let from_h5 = read_weights_bytes(&h5, "model.weights.h5").expect("h5");
    assert_eq!(from_keras, from_h5);
    assert!(from_keras
        .iter()
        .any(|t| t.name == "model/layers/dense/vars/0"));
}

#[test]
fn keras_error_names_archive_entry_and_dataset_on_one_line() {
    let mut h5 = fixture("earliest.h5");
    // Make the first IEEE f32 datatype message claim a 16-byte float.
    let pattern = [0x11, 0x20, 0x1f, 0x00, 4, 0, 0, 0];
    let at = h5
        .windows(pattern.len())
        .position(|w| w == pattern)
        .expect("f32 datatype");
    h5[at + 4] = 16;
    let keras = build_zip(&[TestEntry {
        name: KERAS_WEIGHTS_ENTRY,
        data: &h5,
        deflate: false,
    }]);
    let message = read_weights_bytes(&keras, "model.keras")
        .expect_err("bad datatype")
        .to_string();
    assert!(
        message.starts_with("model.keras: model.weights.h5: dataset "),
        "{message}"
    );
    assert!(
        message.contains("unsupported datatype (class 1, size 16"),
        "{message}"
    );
    assert!(!message.contains('\n'));
}

#[test]
fn zip_without_weights_is_rejected() {
    let zip = build_zip(&[TestEntry {
        name: "config.json",
        data: b"{}",
        deflate: false,
    }]);
    let message = read_weights_bytes(&zip, "x.zip")
        .expect_err("no weights")
        .to_string();
    assert_eq!(
        message,
        "x.zip: zip archive holds neither .npy entries (.npz) nor model.weights.h5 (.keras)"
    );
}

/// An archive that names two entries alike is read as the `zip` crate reads it: one
/// entry per name (numpy never writes such archives). Duplicate tensor names across the
/// readers' results are refused (`read_weights_bytes`).
#[test]
fn duplicate_entries_are_read_once() {
    let a = build_npy("<f4", false, &[1], &f32_bytes(&[1.0]));
    let zip = build_zip(&[
        TestEntry {
            name: "a.npy",
            data: &a,
            deflate: false,
        },
        TestEntry {
            name: "b.npy",
            data: &a,
            deflate: true,
        },
    ]);
    // Rename the second entry to the first one's name (the writer refuses to).
    let mut dup = zip.clone();
    for at in 0..dup.len() - 5 {
        if &dup[at..at + 5] == b"b.npy" {
            dup[at..at + 5].copy_from_slice(b"a.npy");
        }
    }
    let tensors = read_weights_bytes(&dup, "dup.npz").expect("one entry per name");
    assert_eq!(tensors.len(), 1);
    assert_eq!(tensors[0].name, "a");
}

#[test]
fn npz_entry_errors_name_the_entry() {
    let bad = build_npy("<f4", false, &[3], &f32_bytes(&[1.0]));
    let zip = build_zip(&[TestEntry {
        name: "bad.npy",
        data: &bad,
        deflate: true,
    }]);
    let error = read_weights_bytes(&zip, "w.npz").expect_err("short data");
    assert_eq!(
        error.to_string(),
        "w.npz: array bad: data is 4 bytes but shape [3] of <f4 needs 12"
    );
}

#[test]
fn reads_safetensors_and_lone_npy_by_content() {
    let raw = f32_bytes(&[0.5, 1.5]);
    let view = ::safetensors::tensor::TensorView::new(::safetensors::Dtype::F32, vec![2], &raw)
        .expect("view");
    let file = ::safetensors::serialize([("bias", view)], None).expect("serialize");
    // The extension is deliberately wrong: detection is by content.
    let tensors = read_weights_bytes(&file, "weights.bin").expect("safetensors");
    assert_eq!(tensors[0].name, "bias");
    assert_eq!(*tensors[0].data, [0.5, 1.5]);

    let npy = build_npy("<f4", false, &[2], &raw);
    let tensors = read_weights_bytes(&npy, "dir/emb.npy").expect("npy");
    assert_eq!(tensors[0].name, "emb");
    assert_eq!(tensors[0].shape, [2]);
}

#[test]
fn unknown_and_empty_inputs_are_one_line_errors() {
    let error = read_weights_bytes(b"GGUF\x03\x00\x00\x00rest", "m.gguf").expect_err("unknown");
    assert_eq!(
        error.to_string(),
        "m.gguf: unrecognised weights format (starts with 47 47 55 46 03 00 00 00); \
         expected safetensors, .npz, .keras, HDF5, .npy or ONNX"
    );
    let error = read_weights_bytes(b"", "empty.h5").expect_err("empty");
    assert!(error.to_string().contains("the file is empty"));
}

#[test]
fn read_weights_from_disk_and_io_errors() {
    let path: std::path::PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "tests", "fixtures"]
        .iter()
        .collect();
    let tensors = read_weights(&path.join("hdf5").join("latest.h5")).expect("read from disk");
    assert_eq!(tensors.len(), 9);
    let names: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);

    let missing = path.join("does-not-exist.safetensors");
    let error = read_weights(&missing).expect_err("missing file");
    assert!(matches!(error, Error::Io { .. }));
    assert!(error.to_string().contains("does-not-exist.safetensors: "));
}

#[test]
fn every_truncated_npz_is_rejected_without_panic() {
    let bytes = sample_npz();
    for len in 0..bytes.len() {
        assert!(
            read_weights_bytes(&bytes[..len], "t.npz").is_err(),
            "truncated to {len}"
        );
    }
}

#[test]
fn files_are_read_within_their_bound_and_weights_from_regular_files_only() {
    // Issue 30, finding 3: /dev/zero or a FIFO was read until allocation failed.
    let e = read_weights(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "/dev/zero: not a regular file (a character device): a weights file is read from a file"
    );
    let e = list_tensors(std::path::Path::new("/"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/: not a regular file (a directory)"), "{e}");
    // A stream stops one byte past the bound; a regular file is refused by its size.
    let e = read_bounded(std::path::Path::new("/dev/zero"), 1000)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "/dev/zero: at least 1001 bytes, more than the largest file read (1000 bytes)"
    );
    let dir = std::env::temp_dir().join(format!("s2s-weights-bound-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("w.bin");
    std::fs::write(&file, [7u8; 1001]).unwrap();
    let e = read_bounded(&file, 1000).unwrap_err().to_string();
    assert!(
        e.ends_with("w.bin: 1001 bytes, more than the largest file read (1000 bytes)"),
        "{e}"
    );
    assert_eq!(read_bounded(&file, 1001).unwrap().len(), 1001);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keras_optimizer_slots_are_told_by_their_path() {
    use crate::is_optimizer_slot;
    for slot in [
        "optimizer_weights/Adam/iterations:0",
        "optimizer_weights/training/Adam/dense/kernel/m:0",
        "optimizer/vars/0",
    ] {
        assert!(is_optimizer_slot(slot), "{slot}");
    }
    for weight in [
        "model_weights/output/output/kernel:0",
        "layers/dense/vars/0",
        "model_weights/optimizer/kernel:0",
        "optimizer",
    ] {
        assert!(!is_optimizer_slot(weight), "{weight}");
    }
}
