//! The instruction-set kernels on each QEMU board: the shared kernel suite passes there
//! (tolerances, and bit for bit against the portable kernels), the kernel benchmark runs
//! (its native and portable results agree on every kernel), and the model runner links
//! the kernel written for its instruction set (checked in its disassembly).
//!
//! Needs `qemu-system-arm`, the thumb targets and `llvm-objdump` (`rustup component add
//! llvm-tools`, which `cargo xtask setup` installs; a missing one fails the test with
//! that hint). The instruction counts the benchmark prints are reported, never asserted.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use host_tools::device::bench::{self, has_fpu};
use host_tools::device::{qemu, Firmware};
use s2s_device::board::{find, Board};
use s2s_tests::scratch_dir;

/// A whole suite run takes about 20 s of QEMU on the slowest board.
const SUITE_TIMEOUT: Duration = Duration::from_secs(900);
const BENCH_TIMEOUT: Duration = Duration::from_secs(300);

/// The board table's entry for `name`.
fn board(name: &str) -> &'static Board {
    find(name).unwrap_or_else(|| panic!("{name} is not in the board table"))
}

/// The boards QEMU runs with a register driver (every binary of the firmware crate).
fn qemu_boards() -> impl Iterator<Item = &'static Board> {
    s2s_device::board::register_boards()
}

/// Builds one firmware binary for `board` (release).
fn build(board: &Board, bin: &str) -> PathBuf {
    Firmware::locate(None)
        .and_then(|f| f.build(board, bin, true))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The suite's tests, as `kernel-suite` names them.
const SUITE_TESTS: [&str; 12] = [
    "linear",
    "embed",
    "sigmoid",
    "tanh",
    "add",
    "gate",
    "blend",
    "widen_narrow",
    "dot",
    "softmax",
    "weighted_sum",
    "additive_scores",
];

/// Builds `kernel-suite` for `board` (release): as `Firmware::build` builds the other
/// binaries, with the `kernel-suite` feature that this one requires.
fn build_kernel_suite(board: &Board) -> PathBuf {
    let firmware = Firmware::locate(None).unwrap_or_else(|e| panic!("{e}"));
    let (dir, target_dir) = (firmware.crate_dir(board), firmware.target_dir(board));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&dir)
        .args(["build", "--release", "--bin", "kernel-suite"])
        .args(["--target", board.target, "--features", "kernel-suite"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("S2S_BOARD", board.name);
    // Flags meant for the calling (host) build would replace the firmware's link flags.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("running cargo build");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target_dir
        .join(board.target)
        .join("release")
        .join("kernel-suite")
}

fn suite_passes_on(name: &str) {
    let board = board(name);
    let elf = build_kernel_suite(board);
    let run = qemu::run(board, &elf, None, &[], SUITE_TIMEOUT)
        .unwrap_or_else(|e| panic!("kernel-suite on {name}: {e}"));
    let lines = &run.uart_lines;
    assert_eq!(
        run.exit_code,
        Some(0),
        "kernel-suite on {name} failed: {lines:?}\n{}",
        run.stderr
    );
    let precisions: &[&str] = if has_fpu(board) {
        &["w8a16", "f32"]
    } else {
        &["w8a16"]
    };
    for p in precisions {
        for t in SUITE_TESTS {
            let want = format!("SUITE {p} {t} ok");
            assert!(lines.contains(&want), "{name}: no `{want}` in {lines:?}");
        }
    }
    // Every weight layout read by the native kernels as the row layout.
    let want = "SUITE w8a16 layouts ok".to_string();
    assert!(lines.contains(&want), "{name}: no `{want}` in {lines:?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("SUITE PASS"),
        "{lines:?}"
    );
}

#[test]
fn kernel_suite_passes_on_mps2_an386() {
    suite_passes_on("mps2-an386");
}

#[test]
fn kernel_suite_passes_on_mps2_an505() {
    suite_passes_on("mps2-an505");
}

#[test]
fn kernel_suite_passes_on_lm3s6965evb() {
    suite_passes_on("lm3s6965evb");
}

#[test]
fn kernel_suite_passes_on_mps2_an385() {
    suite_passes_on("mps2-an385");
}

#[test]
fn kernel_suite_passes_on_microbit() {
    suite_passes_on("microbit");
}

/// Every board QEMU runs has its suite test above.
#[test]
fn every_qemu_board_runs_the_suite() {
    let tested = [
        "mps2-an386",
        "mps2-an505",
        "lm3s6965evb",
        "mps2-an385",
        "microbit",
    ];
    for b in qemu_boards() {
        assert!(
            tested.contains(&b.name),
            "{}: add a kernel_suite_passes_on test",
            b.name
        );
    }
}

/// [`bench::weights`] of `board` in a file.
fn bench_weights(board: &Board) -> PathBuf {
    let path = scratch_dir("kernel-bench").join(format!("weights-{}.bin", board.name));
    std::fs::write(&path, bench::weights(board))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

#[test]
fn kernel_bench_runs_on_every_board() {
    for board in qemu_boards() {
        let name = board.name;
        let elf = build(board, "kernel-bench");
        let weights = bench_weights(board);
        let run = qemu::run(board, &elf, Some(&weights), &[], BENCH_TIMEOUT)
            .unwrap_or_else(|e| panic!("kernel-bench on {name}: {e}"));
        let lines = &run.uart_lines;
        assert_eq!(run.exit_code, Some(0), "kernel-bench on {name}: {lines:?}");
        let bench: Vec<&String> = lines.iter().filter(|l| l.starts_with("BENCH ")).collect();
        let kernels = [
            "linear_w8a16",
            "tanh_q15",
            "sigmoid_q15",
            "softmax_q15",
            "weighted_sum",
        ];
        for k in kernels {
            for side in ["native", "portable"] {
                assert!(
                    bench
                        .iter()
                        .any(|l| l.starts_with(&format!("BENCH {k} {side} "))),
                    "{name}: no {k} {side} line in {lines:?}"
                );
            }
        }
        // Where the region does not hold its weights, the firmware runs fewer rows.
        assert_eq!(
            board.memory.model.length as usize >= 768 * 256,
            bench
                .iter()
                .any(|l| l.starts_with("BENCH linear_w8a16 native 768x256 ")),
            "{name}: the 768x256 int8 product exactly where the region holds it"
        );
        assert_eq!(
            has_fpu(board),
            bench.iter().any(|l| l.starts_with("BENCH linear_f32 ")),
            "{name}: f32 lines exactly on the FPU boards"
        );
        // The weight layout of the M0's own kernel, next to the row layout.
        assert_eq!(
            board.target.starts_with("thumbv6m"),
            bench
                .iter()
                .any(|l| l.starts_with("BENCH linear_w8a16_v6m native ")),
            "{name}: v6m layout lines exactly on the Cortex-M0 boards"
        );
        assert_eq!(lines.last().map(String::as_str), Some("DONE"), "{lines:?}");
        println!("{name}:");
        for l in bench {
            println!("  {l}");
        }
    }
}

// ------------------------------------------------------------------ which kernel is linked

/// `llvm-objdump`: rustup's `llvm-tools` component, else one on `PATH`.
fn objdump() -> PathBuf {
    let sysroot = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| PathBuf::from(s.trim()));
    let host = Command::new("rustc")
        .arg("-vV")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| {
            v.lines()
                .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        });
    if let (Some(root), Some(host)) = (sysroot, host) {
        let p = root.join("lib/rustlib").join(host).join("bin/llvm-objdump");
        if p.is_file() {
            return p;
        }
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("llvm-objdump"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| {
        panic!("llvm-objdump not found: install it with `rustup component add llvm-tools`")
    })
}

/// The disassembly of `elf`, with the DSP extension's and the FPU's instructions decoded
/// (Armv8-M Mainline ELFs announce neither to every `llvm-objdump`).
fn disassemble(elf: &Path) -> String {
    let out = Command::new(objdump())
        .args(["-d", "--demangle", "--no-show-raw-insn"])
        .arg("--mattr=+dsp,+fp-armv8d16sp")
        .arg(elf)
        .output()
        .expect("running llvm-objdump");
    assert!(out.status.success(), "llvm-objdump {}", elf.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The instruction mnemonics of the first function whose demangled name contains
/// `name`, in a disassembly.
fn mnemonics_of<'a>(asm: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = asm.lines();
    let start = lines
        .by_ref()
        .position(|l| l.ends_with(">:") && l.contains(name));
    assert!(start.is_some(), "no function {name} in the disassembly");
    lines
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split('\t').nth(1).map(str::trim))
        .collect()
}

#[test]
fn each_board_links_the_kernel_of_its_instruction_set() {
    for board in qemu_boards() {
        let name = board.name;
        let asm = disassemble(&build(board, "firmware"));
        // The integer matrix product's rows: `s2s_kernels::arm::prepared`.
        let ops = mnemonics_of(&asm, "s2s_kernels::arm::prepared");
        let has = |m: &str| ops.contains(&m);
        // As `s2s-kernels/build.rs` picks the kernels, from the target.
        match board.target.split('-').next() {
            Some("thumbv7em" | "thumbv8m.main") => {
                assert!(has("smlad") && has("sxtb16"), "{name}: {ops:?}");
                // The f32 dot product's VLDM + VMLA loop (`arm/fpu.rs`), by its registers.
                assert!(
                    !has_fpu(board) || asm.contains("vmla.f32\ts24, s8, s16"),
                    "{name}: the f32 kernel is not linked"
                );
            }
            Some("thumbv7m") => {
                assert!(
                    has("mla") && has("ldrsb") && !has("smlad"),
                    "{name}: {ops:?}"
                );
            }
            Some("thumbv6m") => {
                assert!(has("muls") && has("ldm") && !has("mla"), "{name}: {ops:?}");
                // The offset-binary (`v6m` layout) loop: byte loads at immediate
                // offsets up to 31 (`arm/v6m.rs`, `dot1_offset`; objdumps print the
                // offset in decimal or hex).
                assert!(
                    ["#31]", "#0x1f]"]
                        .iter()
                        .any(|o| asm.contains(&format!("ldrb\tr5, [r0, {o}"))),
                    "{name}: the v6m layout's kernel is not linked"
                );
            }
            _ => panic!("{name}: no kernel expected for {}", board.target),
        }
    }
}
