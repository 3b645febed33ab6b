//! For build scripts (feature `build`, std): the model module `s2s embed MODEL --board
//! BOARD -o FILE` wrote, named by [`EMBED_VAR`], handed to the crate being built. One
//! definition for the firmware, the C API and the Rust example.

use std::path::{Path, PathBuf};

pub use crate::EMBED_VAR;

/// Reads [`EMBED_VAR`] (else `default`, if given) and, when it names a module, tells
/// cargo to rebuild when it changes, sets `S2S_EMBED_RS` to its path (for
/// `include!(env!("S2S_EMBED_RS"))`) and `cfg(s2s_embedded)`, and returns the path.
/// Declares the cfg either way. Panics with one line saying how to write the module when
/// the file is not there (a build script's way to fail).
pub fn module(default: Option<&Path>) -> Option<PathBuf> {
    println!("cargo:rerun-if-env-changed={EMBED_VAR}");
    println!("cargo::rustc-check-cfg=cfg(s2s_embedded)");
    let module = std::env::var_os(EMBED_VAR)
        .map(PathBuf::from)
        .or_else(|| default.map(Path::to_path_buf))?;
    let module = std::fs::canonicalize(&module).unwrap_or_else(|e| {
        panic!(
            "{EMBED_VAR}={}: {e} (write it with `s2s embed MODEL --board BOARD -o FILE`)",
            module.display()
        )
    });
    println!("cargo:rerun-if-changed={}", module.display());
    println!("cargo:rustc-env=S2S_EMBED_RS={}", module.display());
    println!("cargo:rustc-cfg=s2s_embedded");
    Some(module)
}
