//! Writes the board's `memory.x` (`Board::write_one_model_memory_x` of s2s-device's table:
//! the model's statics linked into flash in a section of their own) and points
//! `src/main.rs` at the model module `s2s embed` wrote (`S2S_EMBED`, default
//! `target/models/netra-w8a16-<board>.rs` of the repository). The module was checked
//! against the board by `s2s embed`; it carries the model's workspace plan.

use std::path::PathBuf;
use std::{env, fs};

use s2s_device::board;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=S2S_BOARD");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));

    let target = env::var("TARGET").unwrap_or_default();
    let b = match env::var("S2S_BOARD") {
        Ok(name) => board::find(&name).unwrap_or_else(|| panic!("S2S_BOARD={name} is not a board")),
        Err(_) => board::default_for_target(&target)
            .unwrap_or_else(|| panic!("no board is built for `{target}`: set S2S_BOARD")),
    };
    assert_eq!(
        b.target, target,
        "board `{}` is built for {}",
        b.name, b.target
    );
    let mut memory = String::new();
    b.write_one_model_memory_x(&mut memory)
        .expect("formatting memory.x");
    fs::write(out.join("memory.x"), memory).expect("writing memory.x");
    println!("cargo:rustc-link-search={}", out.display());

    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    // `include!(env!("S2S_EMBED_RS"))` in main.rs.
    let default = dir.join(format!("../../target/models/netra-w8a16-{}.rs", b.name));
    s2s_device::embed::module(Some(&default));
}
