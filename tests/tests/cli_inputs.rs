//! Issue 10, items 4 to 8: `s2s` on odd inputs and outputs. One output line per input
//! line with `file:line` errors and a failing exit; eval/check keep the other lines;
//! a closed standard output ends quietly and a full one fails with one line; a tall
//! heatmap is refused; reads stay bounded (peak memory measured with getrusage by
//! `peak-rss`); `check` and `quantize` validate their inputs; outputs follow symlinks
//! and write through FIFOs; tensors of other element types are named. Issue 35, item
//! 5: `run` and `quantize --calib` take a line's first tab-separated column as its
//! source, so a `source<TAB>target` file gives what its sources alone give.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use s2s_tests::pytorch::{self, Tensor};
use s2s_tests::{
    assert_one_error, assert_only, import, model_file, s2s, s2s_bin, s2s_ok, scratch_dir,
};

/// The PyTorch example's weights and model file, built once.
fn example() -> &'static (PathBuf, PathBuf) {
    static EXAMPLE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    EXAMPLE.get_or_init(|| pytorch::build_model(&scratch_dir("cli-inputs-example")))
}

fn stdout_lines(r: &Output) -> Vec<String> {
    String::from_utf8(r.stdout.clone())
        .expect("UTF-8 output")
        .lines()
        .map(String::from)
        .collect()
}

fn stderr_lines(r: &Output) -> Vec<String> {
    String::from_utf8_lossy(&r.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

/// `s2s run MODEL` of each line alone: what the batch must print for it.
fn alone(model: &Path, line: &str) -> String {
    s2s_ok(&[&"run", &model], &format!("{line}\n"))
        .trim_end_matches('\n')
        .to_string()
}

// ------------------------------------------------------------------- run: item 4

#[test]
fn run_gives_one_line_per_input_line_and_names_the_bad_ones() {
    let (_, model) = example();
    // 'z' is outside the example's vocabulary (no unk).
    let r = s2s(&[&"run", model], "abc\nabzd\n\nhag\n");
    let errors = stderr_lines(&r);
    assert!(!r.status.success());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("error: <stdin>:2: ") && errors[0].contains("'z'"),
        "{errors:?}"
    );
    let out = stdout_lines(&r);
    assert_eq!(
        out,
        [
            alone(model, "abc"),
            String::new(),
            String::new(),
            alone(model, "hag")
        ]
    );
    // With --tsv the bad line has an error column; an empty line is an empty source.
    let r = s2s(&[&"run", model, &"--tsv"], "abc\nabzd\n\n");
    let out = stdout_lines(&r);
    assert_eq!(out.len(), 3, "{out:?}");
    assert!(
        out[1].starts_with("abzd\t\t") && out[1].contains("'z'"),
        "{out:?}"
    );
    assert_eq!(out[2], "\t");
    // The bad line last, after many good ones: all of them are written.
    let mut input = "abc\n".repeat(300);
    input += "zzz\n";
    let r = s2s(&[&"run", model], &input);
    assert_eq!(stdout_lines(&r).len(), 301);
    assert_eq!(stderr_lines(&r).len(), 1);
    assert!(stderr_lines(&r)[0].contains("<stdin>:301:"));
}

#[test]
fn run_numbers_lines_of_a_file_and_keeps_bad_bytes_on_their_line() {
    let (_, model) = example();
    let dir = scratch_dir("run-file-lines");
    let input = dir.join("in.txt");
    // A BOM (dropped), a `#` line (decoded like any other: '#' is outside the
    // vocabulary), a line that is not UTF-8, a CRLF line.
    std::fs::write(&input, b"\xef\xbb\xbfabc\n# c\n\xff\xfe\nhag\r\n").unwrap();
    let r = s2s(&[&"run", model, &"--input", &input], "");
    let errors = stderr_lines(&r);
    let path = input.display().to_string();
    assert!(!r.status.success());
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].starts_with(&format!("error: {path}:2: ")),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with(&format!("error: {path}:3: not UTF-8")),
        "{errors:?}"
    );
    assert_eq!(
        stdout_lines(&r),
        [
            alone(model, "abc"),
            String::new(),
            String::new(),
            alone(model, "hag")
        ]
    );
}

#[test]
fn an_empty_line_is_an_empty_output_for_every_model() {
    for name in ["netra.s2s", "g2p-en.s2s"] {
        let model = model_file(name);
        let r = s2s(&[&"run", &model], "phnom\n\npenh\n");
        assert!(
            r.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let out = stdout_lines(&r);
        assert_eq!(out.len(), 3, "{name}: {out:?}");
        assert!(!out[0].is_empty() && out[1].is_empty() && !out[2].is_empty());
    }
}

/// Output comes before the input ends: the first line's output is read while the
/// input is still open (greedy and beam). The wait is a guard against a hang, not a
/// timing assertion.
#[test]
fn run_streams_its_output() {
    let (_, model) = example();
    for extra in [&[][..], &["--beam", "2"][..]] {
        let mut child = Command::new(s2s_bin())
            .arg("run")
            .arg(model)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting s2s");
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        stdin.write_all(b"abc\n").unwrap();
        stdin.flush().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let first = rx.recv_timeout(std::time::Duration::from_secs(120));
        drop(stdin);
        let status = child.wait().unwrap();
        let first = first.expect("no output while the input was open");
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", model];
        args.extend(extra.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        let whole = s2s_ok(&args, "abc\n");
        assert_eq!(first, whole, "{extra:?}");
        assert!(status.success());
    }
}

// ------------------------------------------------------------ eval/check: item 4

#[test]
fn eval_and_check_report_bad_lines_and_keep_the_others() {
    let model = model_file("netra.s2s");
    let dir = scratch_dir("eval-lines");
    let data = dir.join("data.tsv");
    // netra has 25 positions: line 6's source is too long. Line 4 has no tab.
    let long = "a".repeat(40);
    std::fs::write(
        &data,
        format!("# a comment\nphnom\tx\n\nno tab here\npenh\ty\n{long}\tz\nangkor\tw\n"),
    )
    .unwrap();
    let path = data.display().to_string();
    let r = s2s(&[&"eval", &model, &"--data", &data], "");
    assert!(!r.status.success());
    let errors = stderr_lines(&r);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].starts_with(&format!("error: {path}:4: expected source<TAB>reference")));
    assert!(
        // netra pads its sources to 25: --positions cannot help, and is not offered.
        errors[1].starts_with(&format!("error: {path}:6: "))
            && errors[1].ends_with("exceeds the capacity of 25"),
        "{errors:?}"
    );
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("(3 sequences, 1 not decoded)"), "{out}");
    // check: sources alone, the long one on line 4.
    let input = dir.join("in.txt");
    std::fs::write(&input, format!("# c\nphnom\n\n{long}\npenh\n")).unwrap();
    let path = input.display().to_string();
    let r = s2s(
        &[&"check", &model, &"--reference", &model, &"--input", &input],
        "",
    );
    assert!(!r.status.success());
    let errors = stderr_lines(&r);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with(&format!("error: {path}:4: ")),
        "{errors:?}"
    );
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        out.contains("sequence agreement  100.00 % (2 of 2)"),
        "{out}"
    );
}

// ------------------------------------------------- closed and full stdout: item 5

/// Runs `s2s args` with a standard output whose reader is already gone.
fn with_closed_stdout(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(s2s_bin())
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("running s2s")
}

fn with_full_stdout(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    Command::new(s2s_bin())
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("running s2s")
}

#[test]
fn a_closed_stdout_ends_quietly_and_a_full_one_fails_in_one_line() {
    let netra = model_file("netra.s2s");
    let dir = scratch_dir("closed-stdout");
    let data = dir.join("data.tsv");
    std::fs::write(&data, "phnom\tx\n").unwrap();
    let input = dir.join("in.txt");
    std::fs::write(&input, "phnom\npenh\n").unwrap();
    let onnx = s2s_tests::repo_root().join("tests/fixtures/onnx/gru/encoder.onnx");
    let expect = s2s_tests::repo_root().join("tests/fixtures/verify/netra.jsonl");
    let commands: Vec<Vec<&dyn AsRef<std::ffi::OsStr>>> = vec![
        vec![&"inspect", &netra],
        vec![&"run", &netra, &"--input", &input],
        vec![&"run", &netra, &"--input", &input, &"--beam", &"2"],
        vec![&"eval", &netra, &"--data", &data],
        vec![&"check", &netra, &"--reference", &netra, &"--input", &input],
        vec![&"tensors", &onnx],
        vec![&"heatmap", &netra, &"phnom"],
        vec![&"verify", &netra, &"--expect", &expect],
    ];
    for args in &commands {
        let name = args[0].as_ref().to_string_lossy().into_owned();
        let r = with_closed_stdout(args);
        assert_eq!(
            r.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert!(
            r.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let r = with_full_stdout(args);
        let line = assert_one_error(&r, &["<stdout>"]);
        assert!(line.contains("No space left"), "{name}: {line}");
    }
}

// ------------------------------------------------------------ tall heatmap: item 5

#[test]
fn a_heatmap_too_tall_for_a_picture_is_refused() {
    let dir = scratch_dir("tall-heatmap");
    let text = std::fs::read_to_string(pytorch::config()).unwrap();
    let config = dir.join("tall.toml");
    std::fs::write(
        &config,
        text.replacen("max_steps = 10", "max_steps = 65535", 1),
    )
    .unwrap();
    // The end token never wins: every decode runs the 65,535 steps.
    let mut tensors = pytorch::state_dict(pytorch::SEED, pytorch::SCALE);
    let bias = tensors
        .iter_mut()
        .find(|(n, _, _)| n == "decoder.out.bias")
        .expect("the example has an output bias");
    bias.2[pytorch::EOS] = -1e4;
    let weights = dir.join("w.safetensors");
    pytorch::write_safetensors(&weights, &tensors);
    let model = dir.join("tall.s2s");
    let r = import(&config, &weights, &model);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for name in ["x.png", "x.svg"] {
        let out = dir.join(name);
        let r = s2s(&[&"heatmap", &model, &"abc", &"-o", &out], "");
        assert_ne!(r.status.code(), Some(101), "a panic");
        assert_one_error(&r, &[name, "output steps", "16384 pixels"]);
    }
    assert_only(&dir, &["tall.s2s", "tall.toml", "w.safetensors"]);
}

// ------------------------------------------------------- bounded reads: item 6

/// Runs `s2s args` under `peak-rss`: what it did and its peak resident memory in MiB.
fn s2s_peak(args: &[&dyn AsRef<std::ffi::OsStr>], dir: &Path) -> (Output, u64) {
    let rss = dir.join("peak-rss.txt");
    let r = Command::new(env!("CARGO_BIN_EXE_peak-rss"))
        .arg(&rss)
        .arg(s2s_bin())
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(Stdio::null())
        .output()
        .expect("running peak-rss");
    let kib: u64 = std::fs::read_to_string(&rss)
        .expect("peak-rss wrote its file")
        .trim()
        .parse()
        .expect("a number");
    std::fs::remove_file(&rss).unwrap();
    (r, kib / 1024)
}

/// Far below the gigabytes each case took before, far above `s2s`'s own few MiB.
const BOUND_MIB: u64 = 128;

#[test]
fn an_endless_line_stays_bounded() {
    let (_, model) = example();
    let dir = scratch_dir("dev-zero");
    let (r, mib) = s2s_peak(&[&"run", model, &"--input", &"/dev/zero"], &dir);
    assert_one_error(&r, &["/dev/zero:1:", "longer than 65536 bytes"]);
    assert!(mib < BOUND_MIB, "peak {mib} MiB");
}

#[test]
fn a_huge_model_file_is_refused_before_it_is_read() {
    let dir = scratch_dir("huge-model");
    // 2 GiB, sparse: bad magic.
    let big = dir.join("big.s2s");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let (r, mib) = s2s_peak(&[&"inspect", &big], &dir);
    assert_one_error(&r, &["big.s2s", "magic"]);
    assert!(mib < BOUND_MIB, "peak {mib} MiB");
    // The same size behind a valid header: refused by its size.
    let header = std::fs::read(model_file("netra.s2s")).unwrap();
    let mut f = std::fs::File::create(&big).unwrap();
    f.write_all(&header[..seq2seq::format::HEADER_LEN]).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    let (r, mib) = s2s_peak(&[&"run", &big], &dir);
    assert_one_error(&r, &["big.s2s", "larger than the largest model file"]);
    assert!(mib < BOUND_MIB, "peak {mib} MiB");
}

/// A version-1.0 `.npy` of little-endian f32 (or another `descr` for `data`).
fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| format!("{d},")).collect();
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}), }}",
        dims.join(" ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The example's tensors as `.npz` entries, plus `extra` entries of raw bytes.
fn write_npz(
    path: &Path,
    tensors: &[Tensor],
    extra: &mut dyn FnMut(&mut zip::ZipWriter<std::fs::File>),
) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, shape, data) in tensors {
        w.start_file(format!("{name}.npy"), options).unwrap();
        w.write_all(&npy("<f4", shape, &f32_bytes(data))).unwrap();
    }
    extra(&mut w);
    w.finish().unwrap();
}

#[test]
fn an_unused_huge_npz_entry_is_not_inflated() {
    let dir = scratch_dir("huge-npz");
    let npz = dir.join("w.npz");
    let tensors = pytorch::state_dict(pytorch::SEED, pytorch::SCALE);
    write_npz(&npz, &tensors, &mut |w| {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file("unused.npy", options).unwrap();
        let n = (1usize << 30) / 4;
        w.write_all(&npy("<f4", &[n], &[])).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..1024 {
            w.write_all(&zeros).unwrap();
        }
    });
    assert!(std::fs::metadata(&npz).unwrap().len() < 16 << 20);
    let out = dir.join("m.s2s");
    let (r, mib) = s2s_peak(
        &[
            &"import",
            &"--config",
            &pytorch::config(),
            &"--weights",
            &npz,
            &"-o",
            &out,
        ],
        &dir,
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(mib < BOUND_MIB, "peak {mib} MiB");
    // Listing it reads the headers alone.
    let (r, mib) = s2s_peak(&[&"tensors", &npz], &dir);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let listing = String::from_utf8_lossy(&r.stdout);
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with("unused ") && l.contains("268435456")),
        "{listing}"
    );
    assert!(mib < BOUND_MIB, "peak {mib} MiB");
    // The same model as from the safetensors file.
    let (_, model) = example();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(model).unwrap());
}

// --------------------------------------------------------- check/quantize: item 7

#[test]
fn check_compares_only_the_same_model_with_valid_options() {
    let netra = model_file("netra.s2s");
    let g2p = model_file("g2p-en.s2s");
    let dir = scratch_dir("check-options");
    let input = dir.join("in.txt");
    std::fs::write(&input, "phnom\n").unwrap();
    let r = s2s(
        &[&"check", &netra, &"--reference", &g2p, &"--input", &input],
        "",
    );
    assert_one_error(&r, &["netra.s2s", "g2p-en.s2s", "not the same model"]);
    // Any pair of precisions of one model.
    let w8 = model_file("netra-w8a16.s2s");
    let ok = s2s(
        &[&"check", &netra, &"--reference", &w8, &"--input", &input],
        "",
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    for bad in ["NaN", "-1", "100.5"] {
        let r = s2s(
            &[
                &"check",
                &w8,
                &"--reference",
                &netra,
                &"--input",
                &input,
                &format!("--min-agreement={bad}"),
            ],
            "",
        );
        assert_one_error(&r, &["--min-agreement", "0 to 100"]);
    }
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "# only a comment\n\n").unwrap();
    let r = s2s(
        &[&"check", &w8, &"--reference", &netra, &"--input", &empty],
        "",
    );
    assert_one_error(&r, &["empty.txt", "no input lines"]);
}

/// `s2s quantize MODEL --scheme w8a16 --calib CALIB --planes none -o OUT`.
fn quantize_one_plane(model: &Path, calib: &Path, out: &Path) -> Output {
    s2s(
        &[
            &"quantize",
            &model,
            &"--scheme",
            &"w8a16",
            &"--calib",
            &calib,
            &"--planes",
            &"none",
            &"-o",
            &out,
        ],
        "",
    )
}

#[test]
fn quantize_checks_its_target_and_reports_skipped_calibration_lines() {
    let netra = model_file("netra.s2s");
    let dir = scratch_dir("quantize-options");
    let calib = dir.join("calib.txt");
    let out = dir.join("q.s2s");
    std::fs::write(&calib, format!("phnom\n{}\npenh\n", "a".repeat(600))).unwrap();
    for bad in ["NaN", "0", "101"] {
        let r = s2s(
            &[
                &"quantize",
                &netra,
                &"--scheme",
                &"w8a16",
                &"--calib",
                &calib,
                &format!("--target-agreement={bad}"),
                &"-o",
                &out,
            ],
            "",
        );
        assert_one_error(&r, &["--target-agreement"]);
    }
    assert_only(&dir, &["calib.txt"]);
    // The long line is skipped and said so, by its line number.
    let r = quantize_one_plane(&netra, &calib, &out);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let report = String::from_utf8_lossy(&r.stderr);
    assert!(report.contains("(1 lines skipped: line 2: "), "{report}");
}

// ----------------------------------------------- symlinks and FIFOs: item 7

#[test]
fn outputs_follow_symlinks_and_write_through_fifos() {
    let netra = model_file("netra.s2s");
    let dir = scratch_dir("special-outputs");
    let target = dir.join("target.s2s");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.join("link.s2s");
    std::os::unix::fs::symlink("target.s2s", &link).unwrap();
    let r = s2s(
        &[&"quantize", &netra, &"--scheme", &"w8f32", &"-o", &link],
        "",
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let written = std::fs::read(&target).unwrap();
    assert_eq!(&written[..4], b"S2SM");
    assert_only(&dir, &["link.s2s", "target.s2s"]);
    // A FIFO gets the bytes and stays a FIFO.
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let r = s2s(
        &[&"quantize", &netra, &"--scheme", &"w8f32", &"-o", &fifo],
        "",
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(reader.join().unwrap(), written);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

// ---------------------------------------------------- other dtypes: item 8

#[test]
fn a_tensor_of_another_dtype_is_named_with_its_dtype() {
    let dir = scratch_dir("dtypes");
    let tensors = pytorch::state_dict(pytorch::SEED, pytorch::SCALE);
    let victim = "decoder.out.weight";
    let rest: Vec<Tensor> = tensors.iter().filter(|t| t.0 != victim).cloned().collect();
    let shape = tensors.iter().find(|t| t.0 == victim).unwrap().1.clone();
    let n: usize = shape.iter().product();
    let out = dir.join("m.s2s");
    for (descr, size) in [("<i4", 4), ("|u1", 1)] {
        let npz = dir.join("w.npz");
        write_npz(&npz, &rest, &mut |w| {
            let options = zip::write::SimpleFileOptions::default();
            w.start_file(format!("{victim}.npy"), options).unwrap();
            w.write_all(&npy(descr, &shape, &vec![0u8; n * size]))
                .unwrap();
        });
        let r = import(&pytorch::config(), &npz, &out);
        assert_one_error(&r, &[victim, &format!("has dtype {descr}, expected float")]);
    }
    // safetensors I32.
    let st = dir.join("w.safetensors");
    let floats: Vec<Vec<u8>> = rest.iter().map(|t| f32_bytes(&t.2)).collect();
    let ints = vec![0u8; n * 4];
    let mut views: Vec<(String, safetensors::tensor::TensorView<'_>)> = rest
        .iter()
        .zip(&floats)
        .map(|(t, b)| {
            let v = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, t.1.clone(), b);
            (t.0.clone(), v.unwrap())
        })
        .collect();
    views.push((
        victim.to_string(),
        safetensors::tensor::TensorView::new(safetensors::Dtype::I32, shape.clone(), &ints)
            .unwrap(),
    ));
    std::fs::write(&st, safetensors::serialize(views, None).unwrap()).unwrap();
    let r = import(&pytorch::config(), &st, &out);
    assert_one_error(&r, &[victim, "has dtype I32, expected float"]);
    assert!(!out.exists());
}

// ------------------------------------------------------------------ qemu: item 4

#[test]
fn qemu_runs_the_other_lines_when_one_cannot_be_sent() {
    let model = model_file("netra-w8a16.s2s");
    let dir = scratch_dir("cli-inputs-qemu");
    let input = dir.join("in.txt");
    // Line 2 starts with the command byte, line 3 is not UTF-8, line 4 is empty.
    std::fs::write(&input, b"phnom\n\x01beam 2\n\xff\xfe\n\npenh\n").unwrap();
    let r = s2s(
        &[
            &"qemu",
            &"--board",
            &"lm3s6965evb",
            &model,
            &"--input",
            &input,
        ],
        "",
    );
    let errors = stderr_lines(&r);
    let name = input.display().to_string();
    assert!(!r.status.success(), "{errors:?}");
    let failed: Vec<&String> = errors.iter().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(failed.len(), 2, "{errors:?}");
    assert!(
        failed[0].starts_with(&format!("error: {name}:2: cannot be sent")),
        "{errors:?}"
    );
    assert!(
        failed[1].starts_with(&format!("error: {name}:3: ")),
        "{errors:?}"
    );
    // The two good lines ran and agreed.
    let report = String::from_utf8_lossy(&r.stdout);
    assert!(report.contains("inputs          2 (0 rejected"), "{report}");
    assert!(report.contains("mismatches      0"), "{report}");
}

// ------------------------------------------------------------------ qemu: rejected inputs

/// An input the board cannot take (netra is padded to 25 positions) is reported with
/// its reason, in the report and on standard error naming the file and line, and the
/// exit status is non-zero unless `--allow-rejects`; the other lines are decoded.
#[test]
fn qemu_says_why_each_input_was_rejected() {
    let model = model_file("netra-w8a16.s2s");
    let dir = scratch_dir("cli-inputs-qemu-rejects");
    let input = dir.join("in.txt");
    let long = "a".repeat(40);
    // Line 3 is empty (not sent): the rejected input is on line 4.
    std::fs::write(&input, format!("phnom\npenh\n\n{long}\nkampuchea\n")).unwrap();
    let name = input.display().to_string();
    let run = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"qemu",
            &"--board",
            &"lm3s6965evb",
            &model,
            &"--input",
            &input,
        ];
        args.extend_from_slice(extra);
        s2s(&args, "")
    };
    let reason = "input of 40 positions exceeds the capacity of 25";
    let r = run(&[]);
    let errors = stderr_lines(&r);
    let report = String::from_utf8_lossy(&r.stdout);
    assert!(!r.status.success(), "{errors:?}");
    let failed: Vec<&String> = errors.iter().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(
        failed,
        [&format!(
            "error: {name}:4: rejected by lm3s6965evb (and by the host at its 25 positions): {reason}"
        )],
        "{errors:?}"
    );
    assert!(
        report.contains("inputs          4 (1 rejected: the device's reason, the same as the host's at the device's 25 positions)\n"),
        "{report}"
    );
    assert!(
        report.contains(&format!("\n  line 4 {long:?}: {reason}\n")),
        "{report}"
    );
    assert!(report.contains("mismatches      0"), "{report}");
    // `s2s inspect` says the positions and workspace the firmware served it with.
    let served = report
        .lines()
        .find_map(|l| l.strip_prefix("RAM "))
        .and_then(|l| l.split(", workspace ").nth(1))
        .and_then(|l| l.strip_suffix(" positions)"))
        .unwrap_or_else(|| panic!("no workspace in {report}"));
    let (bytes, rest) = served.split_once(" of the ").unwrap();
    let (arena, positions) = rest.split_once(" byte arena (").unwrap();
    let inspect = s2s_ok(&[&"inspect", &model], "");
    let want = format!("lm3s6965evb {positions} ({bytes} of {arena} bytes)");
    assert!(inspect.contains(&want), "no {want:?} in\n{inspect}");

    let r = run(&[&"--allow-rejects"]);
    let errors = stderr_lines(&r);
    assert!(r.status.success(), "{errors:?}");
    assert!(
        errors.contains(&format!(
            "note: {name}:4: rejected by lm3s6965evb (and by the host at its 25 positions): {reason}"
        )),
        "{errors:?}"
    );
}

// ------------------------------------- a line's source: issue 35, item 5

/// Writes `pairs.tsv` (the first `n` pairs of netra's evaluation file, then one line of
/// three columns) and `sources.txt` (their first columns alone) to `dir`.
fn pairs_and_sources(dir: &Path, n: usize) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(model_file("netra-eval.tsv")).unwrap();
    let mut pairs: Vec<&str> = text.lines().take(n).collect();
    pairs.push("phnom\tផ្នម\ta third column");
    assert!(pairs.iter().all(|l| l.contains('\t')), "{pairs:?}");
    let sources: Vec<&str> = pairs
        .iter()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    let (p, s) = (dir.join("pairs.tsv"), dir.join("sources.txt"));
    std::fs::write(&p, pairs.join("\n") + "\n").unwrap();
    std::fs::write(&s, sources.join("\n") + "\n").unwrap();
    (p, s)
}

#[test]
fn run_reads_the_source_column_of_a_tsv() {
    let model = model_file("netra.s2s");
    let dir = scratch_dir("run-tsv-input");
    let (pairs, sources) = pairs_and_sources(&dir, 12);
    for extra in [&[][..], &["--tsv"][..]] {
        let run = |input: &Path| {
            let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
                vec![&"run", &model, &"--input", &input];
            args.extend(extra.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
            s2s_ok(&args, "")
        };
        let want = run(&sources);
        assert_eq!(want.lines().count(), 13, "{want}");
        assert!(want.lines().all(|l| !l.is_empty()), "{want}");
        assert_eq!(run(&pairs), want, "{extra:?}");
    }
}

#[test]
fn quantize_calibrates_on_the_source_column_of_a_tsv() {
    let netra = model_file("netra.s2s");
    let dir = scratch_dir("quantize-tsv-calib");
    let (pairs, sources) = pairs_and_sources(&dir, 40);
    let quantize = |calib: &Path, out: &Path| {
        let r = quantize_one_plane(&netra, calib, out);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        std::fs::read(out).unwrap()
    };
    let want = quantize(&sources, &dir.join("from-sources.s2s"));
    let got = quantize(&pairs, &dir.join("from-pairs.s2s"));
    assert!(got == want, "the TSV calibration gave another file");
}

// ------------------------------------------------------------------ run --ids (issue 31)

/// `s2s run --ids` prints each output's target token ids: the text output is their
/// tokens joined, line for line (an empty line stays empty), with `--tsv` too.
#[test]
fn run_prints_the_output_token_ids_with_ids() {
    let model = model_file("netra.s2s");
    let words = "phnom\npenh\n\nangkor\n";
    let text = s2s_ok(&[&"run", &model], words);
    let ids = s2s_ok(&[&"run", &model, &"--ids"], words);
    let m = host_tools::model::LoadedModel::load(&model).unwrap();
    let (file, vocab) = (m.file(), m.file().tgt_vocab());
    assert_eq!(ids.lines().count(), 4, "{ids}");
    for (t, i) in text.lines().zip(ids.lines()) {
        let tokens: Vec<&str> = i
            .split_whitespace()
            .map(|id| vocab.get(id.parse().unwrap()).unwrap())
            .collect();
        assert_eq!(tokens.join(file.separator()), t, "ids {i:?}");
    }
    assert!(ids.lines().next().unwrap().split(' ').count() > 2, "{ids}");
    let tsv = s2s_ok(&[&"run", &model, &"--ids", &"--tsv"], words);
    assert_eq!(
        tsv.lines().next().unwrap(),
        format!("phnom\t{}", ids.lines().next().unwrap())
    );
}
