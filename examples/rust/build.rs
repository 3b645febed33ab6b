//! Writes the board's `memory.x` (the model linked into flash: `Board::write_app_memory_x`
//! of s2s-device's table) and `plan.rs`: the model file's path (`S2S_MODEL`, default
//! `target/models/netra-w8a16.s2s` of the repository) and its workspace plan, computed
//! here on the host with `seq2seq::Plan`, so that the static arena is exactly as large as
//! the model needs. Refuses, with the reason, a model that is not w8a16 or needs a model
//! part this build leaves out.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::{env, fs};

use s2s_device::board;
use seq2seq::{ModelFile, Plan, PrecisionKind};

/// Source positions planned for a model without a fixed source length.
const POSITIONS: usize = 64;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=S2S_BOARD");
    println!("cargo:rerun-if-env-changed=S2S_MODEL");
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
    b.write_app_memory_x(&mut memory)
        .expect("formatting memory.x");
    fs::write(out.join("memory.x"), memory).expect("writing memory.x");
    println!("cargo:rustc-link-search={}", out.display());

    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let model = match env::var_os("S2S_MODEL") {
        Some(p) => PathBuf::from(p),
        None => dir.join("../../target/models/netra-w8a16.s2s"),
    };
    println!("cargo:rerun-if-changed={}", model.display());
    let bytes = fs::read(&model).unwrap_or_else(|e| {
        panic!(
            "S2S_MODEL={}: {e} (`cargo xtask models` makes target/models/)",
            model.display()
        )
    });
    // An 8-byte aligned copy, as `ModelFile::parse` wants.
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    for (w, c) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        *w = u64::from_ne_bytes(b);
    }
    let aligned: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let file = ModelFile::parse(&aligned[..bytes.len()])
        .unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    assert_eq!(
        file.precision(),
        PrecisionKind::W8A16,
        "{}: the example runs w8a16 models",
        model.display()
    );
    let desc = file.desc();
    for part in file.features().iter() {
        let var = format!(
            "CARGO_FEATURE_{}",
            part.name().to_uppercase().replace('-', "_")
        );
        assert!(
            env::var_os(&var).is_some(),
            "{} needs the feature `{}`",
            model.display(),
            part.name()
        );
    }
    let positions = match desc.src_pad_to {
        0 => POSITIONS,
        n => n,
    };
    let plan = Plan::new::<s2s_kernels::W8A16>(desc, positions);
    let path = fs::canonicalize(&model).expect("the model's path");
    let mut rs = String::new();
    // `include_bytes!(env!("S2S_MODEL_PATH"))` in main.rs.
    println!("cargo:rustc-env=S2S_MODEL_PATH={}", path.display());
    writeln!(
        rs,
        "/// Source positions the workspace is planned for.\n\
         const POSITIONS: usize = {positions};\n\
         /// Workspace bytes for them (`seq2seq::Plan::bytes`).\n\
         const ARENA_BYTES: usize = {};\n\
         /// The model's most decoder steps.\n\
         const MAX_STEPS: usize = {};",
        plan.bytes(),
        desc.max_steps
    )
    .expect("formatting plan.rs");
    fs::write(out.join("plan.rs"), rs).expect("writing plan.rs");
}
