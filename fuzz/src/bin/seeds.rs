//! Writes the seed corpora of the fuzz targets (run by `cargo xtask fuzz`):
//!
//! ```text
//! seeds <target/models> <models> <out>
//! ```
//!
//! * `<out>/model/`: the real model files of `target/models/` up to 512 KiB (netra in
//!   every precision; g2p-en's are larger and would only slow every execution down)
//!   and small models of every variant and precision made by the builder (the same
//!   generator as seq2seq's property tests);
//! * `<out>/config/`: every configuration in `models/` and `models/examples/`;
//! * `<out>/onnx/`: the ONNX graphs of `tests/fixtures/onnx/` (beside `models/`).

use std::path::{Path, PathBuf};

use s2s_kernels::PrecisionKind;

#[path = "../../../seq2seq/tests/common/mod.rs"]
mod common;

/// Real model files larger than this are left out of the seeds.
const MAX_SEED_BYTES: u64 = 512 * 1024;
/// Builder-made models per precision.
const SMALL_MODELS: u64 = 16;

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [models, configs, out] = &args[..] else {
        eprintln!("usage: seeds <target/models> <models> <out>");
        std::process::exit(2);
    };
    if let Err(e) = run(models, configs, out) {
        eprintln!("seeds: {e}");
        std::process::exit(1);
    }
}

fn run(models: &Path, configs: &Path, out: &Path) -> Result<(), String> {
    let (model_dir, config_dir) = (out.join("model"), out.join("config"));
    let onnx_dir = out.join("onnx");
    for d in [&model_dir, &config_dir, &onnx_dir] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut n = 0;
    for f in files(models, "s2s")? {
        let size = f
            .metadata()
            .map_err(|e| format!("{}: {e}", f.display()))?
            .len();
        if size <= MAX_SEED_BYTES {
            copy(&f, &model_dir)?;
            n += 1;
        }
    }
    if n == 0 {
        return Err(format!(
            "no model file of at most {MAX_SEED_BYTES} bytes in {} (run `cargo xtask models`)",
            models.display()
        ));
    }
    for kind in PrecisionKind::ALL {
        for seed in 0..SMALL_MODELS {
            let mut r = common::Rng::new(seed);
            let bytes = common::random_model(kind, &mut r);
            let p = model_dir.join(format!("small-{}-{seed}.s2s", kind.name()));
            std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    let mut c = 0;
    for dir in [configs.to_path_buf(), configs.join("examples")] {
        for f in files(&dir, "toml")? {
            copy(&f, &config_dir)?;
            c += 1;
        }
    }
    let mut o = 0;
    let fixtures = configs.join("../tests/fixtures/onnx");
    for variant in ["gru", "lstm"] {
        for f in files(&fixtures.join(variant), "onnx")? {
            let to = onnx_dir.join(format!(
                "{variant}-{}",
                f.file_name().unwrap_or_default().to_string_lossy()
            ));
            std::fs::copy(&f, &to)
                .map_err(|e| format!("{} -> {}: {e}", f.display(), to.display()))?;
            o += 1;
        }
    }
    println!("seeds: {o} ONNX graphs in {}", onnx_dir.display());
    println!(
        "seeds: {} model files ({n} real, {} builder-made) in {}, {c} configurations in {}",
        n + 3 * SMALL_MODELS as usize,
        3 * SMALL_MODELS,
        model_dir.display(),
        config_dir.display()
    );
    Ok(())
}

/// The files of `dir` ending in `.ext`, sorted.
fn files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    Ok(v)
}

fn copy(f: &Path, dir: &Path) -> Result<(), String> {
    let to = dir.join(f.file_name().unwrap_or_default());
    std::fs::copy(f, &to)
        .map(drop)
        .map_err(|e| format!("{} -> {}: {e}", f.display(), to.display()))
}
