//! Picks the board from `S2S_BOARD` (default: the first board of the target in
//! `s2s_device::BOARDS`), checks the target, writes the board's `memory.x` to OUT_DIR
//! (where `cortex-m-rt`'s `link.x` finds it, also for a HAL board's crate that uses this
//! one) from the board table, writes `board.rs` (the board's table entry and, for a
//! board with a register driver, its driver module `src/boards/<name>.rs` and
//! `cfg(s2s_registers)`), sets `cfg(s2s_semihosting)` for the boards QEMU runs, and sets
//! `cfg(precision = "...")` for each model precision the firmware compiles: the board's
//! own (feature `board-precisions`, a default) plus any asked for with the `f32` /
//! `w8f32` / `w8a16` features; links defmt's linker script with the `defmt` feature.

use std::{env, fs, path::PathBuf};

use s2s_device::{board, BOARDS};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=S2S_BOARD");
    println!("cargo::rustc-check-cfg=cfg(precision, values(\"f32\", \"w8f32\", \"w8a16\"))");

    let target = env::var("TARGET").unwrap_or_default();
    let names: Vec<&str> = board::names().collect();
    let b = match env::var("S2S_BOARD") {
        Ok(name) => board::find(&name)
            .unwrap_or_else(|| panic!("S2S_BOARD={name} is not a board: use one of {names:?}")),
        Err(_) => board::default_for_target(&target).unwrap_or_else(|| {
            panic!("no board is built for `{target}`: set S2S_BOARD to one of {names:?}")
        }),
    };
    if target != b.target {
        panic!(
            "board `{}` must be built with `--target {}` (this build: `{target}`)",
            b.name, b.target
        );
    }
    let index = BOARDS.iter().position(|o| o == b).expect("a table entry");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let mut memory = String::new();
    // A one-model build: the module `s2s embed` wrote, with the model in FLASH beside
    // the runtime (no model region).
    if s2s_device::embed::module(None).is_some() {
        // The model's statics in a section of their own: the "model region" of the
        // measurements.
        b.write_one_model_memory_x(&mut memory)
            .expect("formatting memory.x");
    } else {
        b.write_memory_x(&mut memory).expect("formatting memory.x");
    }
    fs::write(out.join("memory.x"), memory).expect("writing memory.x");
    println!("cargo:rustc-link-search={}", out.display());

    // The board's entry; with a register driver (the QEMU boards of this crate) also
    // that driver module. A HAL board's crate (`firmware/boards/<dir>`) drives the board
    // itself and uses this crate as a library.
    println!("cargo::rustc-check-cfg=cfg(s2s_registers)");
    println!("cargo::rustc-check-cfg=cfg(s2s_semihosting)");
    let rs = format!(
        "/// The board this firmware is built for (`S2S_BOARD`).\n\
         pub const BOARD: &s2s_device::Board = &s2s_device::BOARDS[{index}];\n"
    );
    if b.driver == board::Driver::Registers {
        let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
        let driver = dir.join("src/boards").join(b.module_file().to_string());
        println!("cargo:rerun-if-changed={}", driver.display());
        let module = format!(
            "/// The driver of [`BOARD`](crate::BOARD): its UART and tick counter.\n\
             #[path = {:?}]\npub mod board;\n",
            driver.display().to_string()
        );
        fs::write(out.join("driver.rs"), module).expect("writing driver.rs");
        println!("cargo:rustc-cfg=s2s_registers");
    }
    // Under QEMU the run ends with a semihosting exit and defmt goes out over
    // semihosting; a real board logs over RTT (src/log/rtt.rs) and serves session after session.
    if b.qemu.is_some() {
        println!("cargo:rustc-cfg=s2s_semihosting");
    }
    fs::write(out.join("board.rs"), rs).expect("writing board.rs");

    let feature = |name: &str| {
        let var = format!("CARGO_FEATURE_{}", name.to_uppercase().replace('-', "_"));
        env::var_os(var).is_some()
    };
    for precision in ["f32", "w8f32", "w8a16"] {
        if (feature("board-precisions") && b.precisions.contains(&precision)) || feature(precision)
        {
            println!("cargo:rustc-cfg=precision=\"{precision}\"");
        }
    }
    // defmt's script names the logger's symbols: only a build that logs links it.
    if feature("defmt") {
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
}
