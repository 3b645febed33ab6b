//! Checks the board (`S2S_BOARD`, which the firmware library's build script reads for
//! the board table), writes `model.x` (the `.model` section at the model region) and
//! `model.rs`: the model file named by `S2S_MODEL`, if set, as a static in that section
//! (nothing otherwise: the region is left erased and the runner answers
//! `ERR model: not a model file`).

use std::path::{Path, PathBuf};
use std::{env, fs};

use s2s_device::board::{self, Driver};

fn main() {
    println!("cargo:rerun-if-env-changed=S2S_BOARD");
    println!("cargo:rerun-if-env-changed=S2S_MODEL");
    let name = env::var("S2S_BOARD").unwrap_or_default();
    let b = board::find(&name).unwrap_or_else(|| panic!("S2S_BOARD={name:?} is not a board"));
    assert_eq!(
        b.driver,
        Driver::Hal { dir: "rp2040" },
        "{name}: not a board of this crate (set S2S_BOARD=rp-pico)"
    );
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    // At the region's address, not `> MODEL`: the linker reads this script before
    // link.x, which includes memory.x. (build.rs checks that the file fits.)
    fs::write(
        out.join("model.x"),
        format!(
            "/* The model file linked in (S2S_MODEL), at the model region of {name}. */\n\
             SECTIONS {{\n  .model {:#010x} : {{ KEEP(*(.model)); }} > MODEL\n}} INSERT AFTER .rodata;\n",
            b.memory.model.origin
        ),
    )
    .expect("writing model.x");
    println!("cargo:rustc-link-search={}", out.display());

    let rs = match env::var_os("S2S_MODEL") {
        None => String::from("// No model linked in (S2S_MODEL unset).\n"),
        Some(path) => {
            let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));
            let path = dir.join(Path::new(&path));
            println!("cargo:rerun-if-changed={}", path.display());
            let len = fs::metadata(&path)
                .unwrap_or_else(|e| panic!("S2S_MODEL={}: {e}", path.display()))
                .len();
            let region = u64::from(b.memory.model.length);
            if len > region {
                panic!(
                    "S2S_MODEL={}: {len} bytes do not fit the {region}-byte model region of {name}",
                    path.display()
                );
            }
            format!(
                "/// The model file (S2S_MODEL), at the model region.\n\
                 // SAFETY: `.model` is model.x's section at the MODEL region, made for it.\n\
                 #[allow(unsafe_code)]\n#[link_section = \".model\"]\n#[used]\n\
                 static MODEL: Aligned<[u8; {len}]> = Aligned(*include_bytes!({:?}));\n",
                path.display().to_string()
            )
        }
    };
    fs::write(out.join("model.rs"), rs).expect("writing model.rs");
}
