//! A one-model library: with `S2S_EMBED` (the module `s2s embed MODEL --board BOARD -o
//! FILE` wrote) the model is compiled in (`cfg(s2s_embedded)`, the module's path as
//! `S2S_EMBED_RS`) and no model-file parser is linked.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=S2S_EMBED");
    println!("cargo::rustc-check-cfg=cfg(s2s_embedded)");
    if let Some(module) = env::var_os("S2S_EMBED") {
        let module = PathBuf::from(module);
        if !module.is_file() {
            panic!(
                "S2S_EMBED={}: no such file (write it with `s2s embed MODEL --board BOARD -o FILE`)",
                module.display()
            );
        }
        println!("cargo:rerun-if-changed={}", module.display());
        println!("cargo:rustc-env=S2S_EMBED_RS={}", module.display());
        println!("cargo:rustc-cfg=s2s_embedded");
    }
}
