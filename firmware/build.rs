//! Picks the board from the enabled board features, checks that the target fits it, copies
//! `boards/<board>/memory.x` to OUT_DIR (where `cortex-m-rt`'s `link.x` finds it) and sets
//! `cfg(board = "<board>")` for the sources, and `cfg(precision = "...")` for each model
//! precision the firmware compiles: the board's own (see [`PRECISIONS`]) plus any asked
//! for with the `f32` / `w8f32` / `w8a16` features.
//!
//! `mps2-an386` is the default feature, so it only counts when no other board is enabled:
//! `--features microbit` works with or without `--no-default-features`.

use std::{env, fs, path::PathBuf};

/// (board feature, the target it must be built for)
const BOARDS: [(&str, &str); 4] = [
    ("mps2-an386", "thumbv7em-none-eabihf"),
    ("lm3s6965evb", "thumbv7m-none-eabi"),
    ("microbit", "thumbv6m-none-eabi"),
    ("mps2-an505", "thumbv8m.main-none-eabihf"),
];

/// (board, the model precisions it compiles by default). Boards without an FPU run only
/// the integer precision: the float code would fill their 80 KiB of runtime flash for
/// models that do not fit their RAM anyway.
const PRECISIONS: [(&str, &[&str]); 4] = [
    ("mps2-an386", &["f32", "w8f32", "w8a16"]),
    ("lm3s6965evb", &["w8a16"]),
    ("microbit", &["w8a16"]),
    ("mps2-an505", &["f32", "w8f32", "w8a16"]),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let names: Vec<&str> = BOARDS.iter().map(|(b, _)| *b).collect();
    let quoted: Vec<String> = names.iter().map(|b| format!("\"{b}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(board, values({}))",
        quoted.join(", ")
    );
    println!("cargo::rustc-check-cfg=cfg(precision, values(\"f32\", \"w8f32\", \"w8a16\"))");

    let enabled: Vec<(&str, &str)> = BOARDS
        .iter()
        .copied()
        .filter(|(b, _)| {
            let var = format!("CARGO_FEATURE_{}", b.to_uppercase().replace('-', "_"));
            env::var_os(var).is_some()
        })
        .collect();
    let explicit: Vec<(&str, &str)> = enabled
        .iter()
        .copied()
        .filter(|(b, _)| *b != BOARDS[0].0)
        .collect();
    let (board, want_target) = match (explicit.as_slice(), enabled.as_slice()) {
        ([one], _) => *one,
        ([], [one]) => *one,
        ([], []) => panic!("no board feature enabled: use one of {names:?}"),
        _ => panic!("more than one board feature enabled: {enabled:?}"),
    };
    let target = env::var("TARGET").unwrap_or_default();
    if target != want_target {
        panic!(
            "board `{board}` must be built with `--target {want_target}` (this build: `{target}`)"
        );
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let src = PathBuf::from(format!("boards/{board}/memory.x"));
    fs::copy(&src, out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rustc-cfg=board=\"{board}\"");

    let defaults = PRECISIONS
        .iter()
        .find(|(b, _)| *b == board)
        .map_or(&[][..], |(_, p)| *p);
    for precision in ["f32", "w8f32", "w8a16"] {
        let feature = format!("CARGO_FEATURE_{}", precision.to_uppercase());
        if defaults.contains(&precision) || env::var_os(feature).is_some() {
            println!("cargo:rustc-cfg=precision=\"{precision}\"");
        }
    }
}
