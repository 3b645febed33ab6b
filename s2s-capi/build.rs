//! A one-model library: with `S2S_EMBED` (the module `s2s embed MODEL --board BOARD -o
//! FILE` wrote) the model is compiled in (`cfg(s2s_embedded)`, the module's path as
//! `S2S_EMBED_RS`: `s2s_device::embed::module`) and no model-file parser is linked.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    s2s_device::embed::module(None);
}
