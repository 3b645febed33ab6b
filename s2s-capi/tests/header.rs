//! `include/s2s.h` is what cbindgen makes of the crate now. The header is committed, so
//! that a C user needs neither cbindgen nor a Rust build step to read it; this test
//! regenerates it with the cbindgen library and fails on any difference
//! (`UPDATE_HEADER=1` rewrites it instead).

use std::path::Path;

#[test]
fn header_is_cbindgens_output() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let path = dir.join("include/s2s.h");
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("writing include/s2s.h");
    }
    let committed = std::fs::read(&path).expect("include/s2s.h");
    assert!(
        committed == generated,
        "{} is not cbindgen's output: run `UPDATE_HEADER=1 cargo test -p s2s-capi --test header`",
        path.display()
    );
}
