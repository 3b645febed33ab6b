//! Issue 30, findings 1 to 3: hostile weights and configuration files, made here, are
//! handled in bounded time and memory by `s2s tensors` and `s2s import`. Each case runs
//! under `peak-rss` (its peak resident memory) and `timeout` (so that a hang before the
//! fix is a failure, not a stuck test), and must end within 2 s and 100 MiB with one
//! error line, or, for the legitimate alias files, with the right listing.
//!
//! The ONNX files are written with a few lines of protobuf encoding (varints and
//! length-delimited fields, the field numbers of `onnx.proto`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use s2s_tests::{assert_one_error, s2s_bin, scratch_dir};

/// The bound the issue sets for every hostile file.
const BOUND_MIB: u64 = 100;
const BOUND_TIME: Duration = Duration::from_secs(2);

/// Runs `s2s args` under `peak-rss` and `timeout 30`: what it did, its peak resident
/// memory in MiB and how long it took. `S2S_BIN`, when set, names another `s2s` to run
/// (a build from before a fix, to see these tests fail on it).
fn s2s_peak(args: &[&dyn AsRef<std::ffi::OsStr>], dir: &Path) -> (Output, u64, Duration) {
    let rss = dir.join("peak-rss.txt");
    let bin = std::env::var_os("S2S_BIN").unwrap_or_else(|| s2s_bin().as_os_str().to_owned());
    let start = Instant::now();
    let r = Command::new(env!("CARGO_BIN_EXE_peak-rss"))
        .arg(&rss)
        .args(["timeout", "30"])
        .arg(bin)
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(Stdio::null())
        .output()
        .expect("running peak-rss");
    let took = start.elapsed();
    let kib: u64 = std::fs::read_to_string(&rss)
        .expect("peak-rss wrote its file")
        .trim()
        .parse()
        .expect("a number");
    std::fs::remove_file(&rss).unwrap();
    (r, kib / 1024, took)
}

/// [`s2s_peak`] that must fail with one error line holding `needles`, within bounds.
fn refused(args: &[&dyn AsRef<std::ffi::OsStr>], dir: &Path, needles: &[&str]) {
    let (r, mib, took) = s2s_peak(args, dir);
    assert_ne!(r.status.code(), Some(124), "timed out");
    assert_one_error(&r, needles);
    assert!(mib < BOUND_MIB, "peak {mib} MiB");
    assert!(took < BOUND_TIME, "took {took:?}");
}

/// [`s2s_peak`] that must succeed within bounds; its standard output.
fn listed(args: &[&dyn AsRef<std::ffi::OsStr>], dir: &Path) -> String {
    let (r, mib, took) = s2s_peak(args, dir);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(mib < BOUND_MIB, "peak {mib} MiB");
    assert!(took < BOUND_TIME, "took {took:?}");
    String::from_utf8(r.stdout).expect("UTF-8 listing")
}

// ------------------------------------------------------------- protobuf writing

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field.
fn int_field(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, v);
}

/// A length-delimited field (bytes, string or message).
fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A `NodeProto`.
fn node(op: &str, name: &str, input: &str, output: &str) -> Vec<u8> {
    let mut n = Vec::new();
    bytes_field(&mut n, 1, input.as_bytes());
    bytes_field(&mut n, 2, output.as_bytes());
    bytes_field(&mut n, 3, name.as_bytes());
    bytes_field(&mut n, 4, op.as_bytes());
    n
}

/// A float `TensorProto` of shape `dims` with `raw_data`, or with external data.
fn tensor(name: &str, dims: &[u64], raw: &[u8], external: Option<(&str, u64)>) -> Vec<u8> {
    let mut t = Vec::new();
    for &d in dims {
        int_field(&mut t, 1, d);
    }
    int_field(&mut t, 2, 1);
    bytes_field(&mut t, 8, name.as_bytes());
    if !raw.is_empty() {
        bytes_field(&mut t, 9, raw);
    }
    if let Some((location, length)) = external {
        for (key, value) in [
            ("location", location.to_string()),
            ("length", length.to_string()),
        ] {
            let mut e = Vec::new();
            bytes_field(&mut e, 1, key.as_bytes());
            bytes_field(&mut e, 2, value.as_bytes());
            bytes_field(&mut t, 13, &e);
        }
        int_field(&mut t, 14, 1);
    }
    t
}

/// A `ModelProto` (IR 8, opset 17) of one graph of these nodes and initializers.
fn model(nodes: &[Vec<u8>], initializers: &[Vec<u8>]) -> Vec<u8> {
    let mut g = Vec::new();
    for n in nodes {
        bytes_field(&mut g, 1, n);
    }
    bytes_field(&mut g, 2, b"hostile");
    for t in initializers {
        bytes_field(&mut g, 5, t);
    }
    let mut m = Vec::new();
    int_field(&mut m, 1, 8);
    bytes_field(&mut m, 7, &g);
    let mut opset = Vec::new();
    int_field(&mut opset, 2, 17);
    bytes_field(&mut m, 8, &opset);
    m
}

// ---------------------------------------------------- finding 1: the ONNX reader

/// A chain `w -> a1 -> a2 -> ... -> aN` of `Identity` nodes over one small initializer.
fn identity_chain(n: usize) -> Vec<u8> {
    let nodes: Vec<Vec<u8>> = (1..=n)
        .map(|i| {
            let input = if i == 1 {
                "w".into()
            } else {
                format!("a{}", i - 1)
            };
            node("Identity", &format!("n{i}"), &input, &format!("a{i}"))
        })
        .collect();
    let raw: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    model(&nodes, &[tensor("w", &[2], &raw, None)])
}

#[test]
fn a_long_identity_chain_is_listed_in_linear_time() {
    let dir = scratch_dir("hostile-identity-chain");
    for n in [5_000, 20_000] {
        let path = dir.join(format!("chain{n}.onnx"));
        std::fs::write(&path, identity_chain(n)).unwrap();
        let listing = listed(&[&"tensors", &path], &dir);
        // Every alias names the root it resolves to, the node that makes it.
        let last = format!("a{n} ");
        let line = listing
            .lines()
            .find(|l| l.starts_with(&last))
            .unwrap_or_else(|| panic!("no line for a{n}"));
        assert!(line.contains(&format!("(Identity n{n} of w)")), "{line}");
        assert_eq!(
            listing.lines().filter(|l| l.contains("(Identity ")).count(),
            n
        );
    }
}

#[test]
fn many_aliases_of_a_big_initializer_share_its_data() {
    let dir = scratch_dir("hostile-aliases");
    let raw = vec![0u8; 4 << 20];
    for n in [100, 1_000] {
        let nodes: Vec<Vec<u8>> = (0..n)
            .map(|i| node("Identity", &format!("n{i}"), "big", &format!("alias{i}")))
            .collect();
        let path = dir.join(format!("aliases{n}.onnx"));
        std::fs::write(
            &path,
            model(&nodes, &[tensor("big", &[1 << 20], &raw, None)]),
        )
        .unwrap();
        let listing = listed(&[&"tensors", &path], &dir);
        assert_eq!(
            listing
                .lines()
                .filter(|l| l.contains("1048576  float32  (Identity n") && l.ends_with(" of big)"))
                .count(),
            n,
            "{listing}"
        );
    }
}

#[test]
fn external_data_is_checked_before_it_is_read() {
    let dir = scratch_dir("hostile-external");
    // 6 GiB of sparse external data, all of it claimed by one tensor.
    let big = dir.join("big.data");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(6 << 30)
        .unwrap();
    let onnx = dir.join("big.onnx");
    let elements = (6u64 << 30) / 4;
    std::fs::write(
        &onnx,
        model(
            &[],
            &[tensor(
                "huge",
                &[elements],
                &[],
                Some(("big.data", 6 << 30)),
            )],
        ),
    )
    .unwrap();
    refused(
        &[&"tensors", &onnx],
        &dir,
        &["big.onnx", "tensor huge", "6442450944 bytes", "more than"],
    );
    // A FIFO named as external data: refused, not opened.
    let fifo = dir.join("w.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let onnx = dir.join("fifo.onnx");
    std::fs::write(
        &onnx,
        model(&[], &[tensor("w", &[2], &[], Some(("w.fifo", 8)))]),
    )
    .unwrap();
    refused(
        &[&"tensors", &onnx],
        &dir,
        &["fifo.onnx", "tensor w", "w.fifo", "not a regular file"],
    );
    let config = s2s_tests::pytorch::config();
    let out = dir.join("m.s2s");
    refused(
        &[
            &"import",
            &"--config",
            &config,
            &"--weights",
            &onnx,
            &"-o",
            &out,
        ],
        &dir,
        &["fifo.onnx", "w.fifo", "not a regular file"],
    );
    assert!(!out.exists());
}

// ------------------------------------------------ finding 2: the npy header guard

#[test]
fn brackets_inside_strings_do_not_hide_a_deep_npy_header() {
    let dir = scratch_dir("hostile-npy-nesting");
    // `'k': (')', (')', ...`: every `(` is matched by a `)` inside a string, so a count
    // of brackets that ignores strings never sees the depth npyz's parser backtracks on.
    let levels = 26;
    let mut dict = String::from("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'k': ");
    dict.push_str(&"(')', ".repeat(levels));
    dict.push_str(&")".repeat(levels));
    dict.push_str(", }");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    bytes.extend_from_slice(dict.as_bytes());
    bytes.extend_from_slice(&1.0f32.to_le_bytes());
    let npy = dir.join("deep.npy");
    std::fs::write(&npy, bytes).unwrap();
    refused(
        &[&"tensors", &npy],
        &dir,
        &["deep.npy", "brackets nested more than"],
    );
}

// ------------------------------------------ finding 3: unbounded reads of inputs

#[test]
fn devices_and_fifos_are_not_read_as_weights_or_configurations() {
    let dir = scratch_dir("hostile-unbounded");
    let config = s2s_tests::pytorch::config();
    let out = dir.join("m.s2s");
    refused(
        &[&"tensors", &"/dev/zero"],
        &dir,
        &["/dev/zero", "not a regular file"],
    );
    refused(
        &[
            &"import",
            &"--config",
            &config,
            &"--weights",
            &"/dev/zero",
            &"-o",
            &out,
        ],
        &dir,
        &["/dev/zero", "not a regular file"],
    );
    let fifo = dir.join("w.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    refused(
        &[&"tensors", &fifo],
        &dir,
        &["w.fifo", "not a regular file"],
    );
    refused(
        &[
            &"import",
            &"--config",
            &config,
            &"--weights",
            &fifo,
            &"-o",
            &out,
        ],
        &dir,
        &["w.fifo", "not a regular file"],
    );
    // A configuration may come through a pipe, read up to its bound.
    let weights = dir.join("w.npz");
    std::fs::write(&weights, b"").unwrap();
    refused(
        &[
            &"import",
            &"--config",
            &"/dev/zero",
            &"--weights",
            &weights,
            &"-o",
            &out,
        ],
        &dir,
        &["/dev/zero", "more than"],
    );
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let chunk = vec![b'#'; 1 << 16];
            // Endless, until the reader stops reading.
            while f.write_all(&chunk).is_ok() {}
        })
    };
    refused(
        &[
            &"import",
            &"--config",
            &fifo,
            &"--weights",
            &weights,
            &"-o",
            &out,
        ],
        &dir,
        &["w.fifo", "more than"],
    );
    writer.join().unwrap();
    assert!(!out.exists());
}
