//! The embed examples (`examples/`, README "Use it in your firmware"): the Rust program
//! (`examples/rust`, the `seq2seq` API) and the C program (`examples/c`, the `s2s-capi`
//! static library and header), each with netra w8a16 embedded at build time by `s2s
//! embed` (the one-model build: no model-file parser), are built for the micro:bit and
//! the AN386, run under QEMU, and must print exactly what the host prints for their
//! fixed input (`s2s run --tsv`). Each example prints `source<TAB>output`: the source is
//! read back from its output, so the input is defined once, in the example.
//!
//! Needs `qemu-system-arm`, the thumb targets, `make` and `arm-none-eabi-gcc`
//! (`cargo xtask setup`), and `target/models/netra-w8a16.s2s` (`cargo xtask models`).

use std::path::{Path, PathBuf};
use std::process::Command;

use s2s_device::board::{find, Board};
use s2s_device::qemu::COMMON_ARGS;
use s2s_tests::{model_file, repo_root, s2s_bin, s2s_ok, target_dir};

/// The model both examples link in.
const MODEL: &str = "netra-w8a16.s2s";

/// Seconds before a QEMU run is killed (a run takes well under one).
const TIMEOUT_SECS: &str = "60";

fn board(name: &str) -> &'static Board {
    find(name).unwrap_or_else(|| panic!("{name} is in the board table"))
}

/// Runs `cmd`; panics with its output unless it succeeds.
fn run(cmd: &mut Command) -> String {
    run_both(cmd).0
}

/// Runs `cmd`; panics with its output unless it succeeds; its standard output and error.
fn run_both(cmd: &mut Command) -> (String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        String::from_utf8(out.stderr).expect("UTF-8 errors"),
    )
}

/// Runs `elf` on `board` under QEMU and requires its output to be the host's; returns
/// its standard error.
fn prints_the_hosts_output(board: &Board, elf: &Path) -> String {
    let q = board.qemu.expect("a QEMU board");
    let (stdout, stderr) = run_both(
        Command::new("timeout")
            .arg(TIMEOUT_SECS)
            // The QEMU `s2s qemu` runs (a private copy when setup made one).
            .arg(host_tools::device::qemu::program())
            .args(["-machine", q.machine, "-cpu", q.cpu])
            .args(COMMON_ARGS)
            .arg(elf),
    );
    let (source, output) = stdout
        .strip_suffix('\n')
        .and_then(|l| l.split_once('\t'))
        .unwrap_or_else(|| {
            panic!(
                "{}: not one `source<TAB>output` line: {stdout:?}",
                elf.display()
            )
        });
    assert!(!source.is_empty() && !output.is_empty(), "{stdout:?}");
    let host = s2s_ok(
        &[&"run", &"--tsv", &model_file(MODEL)],
        &format!("{source}\n"),
    );
    assert_eq!(stdout, host, "{} on {}", elf.display(), board.name);
    stderr
}

/// Builds the Rust example for `board` (its own workspace, like the firmware) with the
/// model module `s2s embed` writes for the board.
fn rust_example(board: &Board) -> PathBuf {
    let dir = repo_root().join("examples/rust");
    let module = target_dir().join(format!("embed-rust/netra-w8a16-{}.rs", board.name));
    std::fs::create_dir_all(target_dir().join("embed-rust")).expect("embed-rust/");
    s2s_ok(
        &[
            &"embed",
            &model_file(MODEL),
            &"--board",
            &board.name,
            &"-o",
            &module,
        ],
        "",
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(cargo)
        .args(["build", "--release", "--target", board.target])
        .env("S2S_BOARD", board.name)
        .env(s2s_device::EMBED_VAR, &module)
        .current_dir(&dir));
    dir.join("target")
        .join(board.target)
        .join("release/s2s-embed-example")
}

/// Builds the C example for `board` with its Makefile, the model embedded in the library
/// by `s2s embed` (with `STACK_REPORT=1`, the build that reports its stack peak).
fn c_example(board: &Board, stack_report: bool) -> PathBuf {
    let target = target_dir();
    run(Command::new("make")
        .arg("-C")
        .arg(repo_root().join("examples/c"))
        .arg(format!("BOARD={}", board.name))
        .arg(format!("TARGET_DIR={}", target.display()))
        .arg(format!("S2S_MODEL={}", model_file(MODEL).display()))
        .arg(format!("S2S={}", s2s_bin().display()))
        .arg(format!("STACK_REPORT={}", u8::from(stack_report))));
    let dir = match stack_report {
        true => format!("{}-stack", board.name),
        false => board.name.to_string(),
    };
    target.join("embed-c").join(dir).join("s2s-c-example")
}

#[test]
fn rust_example_on_microbit_prints_the_hosts_output() {
    let b = board("microbit");
    prints_the_hosts_output(b, &rust_example(b));
}

#[test]
fn rust_example_on_mps2_an386_prints_the_hosts_output() {
    let b = board("mps2-an386");
    prints_the_hosts_output(b, &rust_example(b));
}

#[test]
fn c_example_on_microbit_prints_the_hosts_output() {
    let b = board("microbit");
    prints_the_hosts_output(b, &c_example(b, false));
}

#[test]
fn c_example_on_mps2_an386_prints_the_hosts_output() {
    let b = board("mps2-an386");
    prints_the_hosts_output(b, &c_example(b, false));
}

/// The C example's stack (at the bottom of RAM, so that an overflow faults) holds its
/// peak on the micro:bit, where it is all the RAM the workspace leaves.
#[test]
fn c_example_on_microbit_reports_a_stack_peak_within_its_stack() {
    let b = board("microbit");
    let stderr = prints_the_hosts_output(b, &c_example(b, true));
    let numbers: Vec<usize> = stderr
        .strip_prefix("stack peak ")
        .and_then(|r| r.strip_suffix(" bytes\n"))
        .and_then(|r| r.split_once(" of "))
        .and_then(|(peak, size)| Some(vec![peak.parse().ok()?, size.parse().ok()?]))
        .unwrap_or_else(|| panic!("no `stack peak N of M bytes` line: {stderr:?}"));
    assert!(
        numbers[0] > 0 && numbers[0] < numbers[1],
        "stack peak {} of {} bytes",
        numbers[0],
        numbers[1]
    );
}

/// `examples/c/boards/B/memory.x` is `Board::write_app_memory_x` of the board table
/// (`UPDATE_MEMORY_X=1` rewrites them).
#[test]
fn c_example_memory_maps_are_the_board_tables() {
    for name in ["microbit", "mps2-an386"] {
        let mut expected = String::new();
        board(name)
            .write_app_memory_x(&mut expected)
            .expect("formatting");
        let path = repo_root()
            .join("examples/c/boards")
            .join(name)
            .join("memory.x");
        if std::env::var_os("UPDATE_MEMORY_X").is_some() {
            std::fs::write(&path, &expected).expect("writing memory.x");
        }
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            committed,
            expected,
            "{} is not the board table's: run `UPDATE_MEMORY_X=1 cargo test -p s2s-tests --test embed`",
            path.display()
        );
    }
}
