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
//! * `<out>/onnx/`: the ONNX graphs of `tests/fixtures/onnx/` (beside `models/`) and
//!   the shapes of issue 30's hostile graphs, written here (a chain of `Identity`
//!   nodes, many aliases of one initializer, external data of every kind);
//! * `<out>/safetensors/`, `<out>/npz/`: small files written here (float tensors of
//!   every dtype, an integer one, Fortran order, stored and deflated entries), the
//!   safetensors file of the PyTorch LSTM fixture, and g2p-en's `.npz` when
//!   `target/pkgs/` has it;
//! * `<out>/hdf5/`: the HDF5 files of `tests/fixtures/hdf5/` and the Keras 2 fixture;
//! * `<out>/keras/`: `.keras` archives written here around the small HDF5 fixtures,
//!   the Keras 3 fixture, and netra's `.keras` when `target/pkgs/` has it.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use s2s_kernels::PrecisionKind;

#[path = "../../../seq2seq/tests/common/mod.rs"]
mod common;

/// Real model files larger than this are left out of the seeds.
const MAX_SEED_BYTES: u64 = 512 * 1024;
/// Builder-made models per precision.
const SMALL_MODELS: u64 = 16;

/// Why the seeds could not be written.
#[derive(Debug)]
enum Error {
    /// A file or directory that could not be read, written or created.
    Io { path: PathBuf, source: io::Error },
    /// A file that could not be copied.
    Copy {
        from: PathBuf,
        to: PathBuf,
        source: io::Error,
    },
    /// No real model file small enough to be a seed in the models directory.
    NoModels(PathBuf),
    /// A zip archive that could not be made.
    Zip(zip::result::ZipError),
    /// An entry's bytes that could not be written into a zip archive.
    ZipWrite(io::Error),
}

impl Error {
    /// For `map_err`: the I/O error `source` on `path`.
    fn io(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
        move |source| Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Copy { from, to, source } => {
                write!(f, "{} -> {}: {source}", from.display(), to.display())
            }
            Error::NoModels(dir) => write!(
                f,
                "no model file of at most {MAX_SEED_BYTES} bytes in {} (run `cargo xtask models`)",
                dir.display()
            ),
            Error::Zip(e) => write!(f, "{e}"),
            Error::ZipWrite(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

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

fn run(models: &Path, configs: &Path, out: &Path) -> Result<(), Error> {
    let (model_dir, config_dir) = (out.join("model"), out.join("config"));
    let onnx_dir = out.join("onnx");
    for d in [&model_dir, &config_dir, &onnx_dir] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).map_err(Error::io(d))?;
    }
    let mut n = 0;
    for f in files(models, "s2s")? {
        let size = f.metadata().map_err(Error::io(&f))?.len();
        if size <= MAX_SEED_BYTES {
            copy(&f, &model_dir)?;
            n += 1;
        }
    }
    if n == 0 {
        return Err(Error::NoModels(models.to_path_buf()));
    }
    for kind in PrecisionKind::ALL {
        for seed in 0..SMALL_MODELS {
            let mut r = common::Rng::new(seed);
            let bytes = common::random_model(kind, &mut r);
            let p = model_dir.join(format!("small-{}-{seed}.s2s", kind.name()));
            std::fs::write(&p, bytes).map_err(Error::io(&p))?;
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
            std::fs::copy(&f, &to).map_err(|source| Error::Copy {
                from: f.clone(),
                to: to.clone(),
                source,
            })?;
            o += 1;
        }
    }
    for (name, bytes) in hostile_onnx() {
        let p = onnx_dir.join(name);
        std::fs::write(&p, bytes).map_err(Error::io(&p))?;
        o += 1;
    }
    println!("seeds: {o} ONNX graphs in {}", onnx_dir.display());
    weights_seeds(&configs.join(".."), models, out)?;
    data_seeds(models, out)?;
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
fn files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, Error> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(Error::io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    Ok(v)
}

fn copy(f: &Path, dir: &Path) -> Result<(), Error> {
    let to = dir.join(f.file_name().unwrap_or_default());
    std::fs::copy(f, &to)
        .map(drop)
        .map_err(|source| Error::Copy {
            from: f.to_path_buf(),
            to,
            source,
        })
}

/// The seeds of the training data and generator targets: the evaluation pairs that
/// `cargo xtask models` writes (`pairs`), and generator options of each task, small and
/// huge counts (`generate`: a task byte, then the seed and three counts as 8 bytes each).
fn data_seeds(models: &Path, out: &Path) -> Result<(), Error> {
    let dirs = ["pairs", "generate"].map(|d| out.join(d));
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).map_err(Error::io(d))?;
    }
    let [pairs, generate] = &dirs;
    for f in files(models, "tsv")? {
        if f.metadata().map_err(Error::io(&f))?.len() <= MAX_SEED_BYTES {
            copy(&f, pairs)?;
        }
    }
    for (i, (task, counts)) in [
        (0u8, [20u64, 5, 5]),
        (1, [20, 5, 5]),
        (2, [u64::MAX, 1, 0]),
        (3, [0, 0, 0]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut bytes = vec![task];
        bytes.extend_from_slice(&(i as u64).to_le_bytes());
        for c in counts {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
        let p = generate.join(format!("options-{i}"));
        std::fs::write(&p, bytes).map_err(Error::io(&p))?;
    }
    println!(
        "seeds: training pairs in {}, generator options in {}",
        pairs.display(),
        generate.display()
    );
    Ok(())
}

/// Real files larger than this are left out of the weights readers' seeds.
const MAX_WEIGHTS_SEED: u64 = 4 << 20;

/// The seeds of the weights readers' targets (see the module docs). `root` is the
/// repository; `target/pkgs` is found beside `models` (`target/models`).
fn weights_seeds(root: &Path, models: &Path, out: &Path) -> Result<(), Error> {
    let dirs = ["safetensors", "npz", "hdf5", "keras"].map(|d| out.join(d));
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).map_err(Error::io(d))?;
    }
    let [st, npz, hdf5, keras] = &dirs;
    let write = |p: PathBuf, bytes: &[u8]| std::fs::write(&p, bytes).map_err(Error::io(&p));
    write(st.join("small.safetensors"), &small_safetensors())?;
    for (i, bytes) in small_npz()?.into_iter().enumerate() {
        write(npz.join(format!("small-{i}.npz")), &bytes)?;
    }
    let fixtures = root.join("tests/fixtures");
    for f in files(&fixtures.join("hdf5"), "h5")? {
        copy(&f, hdf5)?;
        let name = f
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let h5 = std::fs::read(&f).map_err(Error::io(&f))?;
        let zip = zip_of(&[
            ("model.weights.h5", &h5, false),
            ("config.json", b"{}", true),
        ])?;
        write(keras.join(format!("{name}.keras")), &zip)?;
    }
    let pkgs = models.join("../pkgs");
    let real = [
        (fixtures.join("lstm/pytorch-g2p/model.safetensors"), st),
        (fixtures.join("lstm/keras2-g2p/model.h5"), hdf5),
        (fixtures.join("lstm/keras3-g2p/model.keras"), keras),
        (
            pkgs.join("g2p_en-2.1.0-py3-none-any/g2p_en/checkpoint20.npz"),
            npz,
        ),
        (
            pkgs.join("netra_transliterate-1.0.1-py3-none-any/khmer_transliterator/weights/bi_gru_attention_khmer_transliterator.keras"),
            keras,
        ),
    ];
    for (f, dir) in real {
        if f.metadata().is_ok_and(|m| m.len() <= MAX_WEIGHTS_SEED) {
            copy(&f, dir)?;
        }
    }
    for d in &dirs {
        let n = std::fs::read_dir(d).map(|r| r.count()).unwrap_or(0);
        println!("seeds: {n} files in {}", d.display());
    }
    Ok(())
}

/// A safetensors file (8-byte header length, JSON header, data) with one tensor of
/// every float dtype and an integer one.
fn small_safetensors() -> Vec<u8> {
    let tensors: [(&str, &str, &[usize], Vec<u8>); 5] = [
        (
            "w",
            "F32",
            &[2, 3],
            f32s(&[0.5, -1.0, 2.0, 0.0, 1.5, -0.25]),
        ),
        (
            "b",
            "F64",
            &[2],
            [1.0f64, -2.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        ("h", "F16", &[2], vec![0x00, 0x3c, 0x00, 0xb8]),
        ("g", "BF16", &[1, 2], vec![0x80, 0x3f, 0x40, 0xc0]),
        ("step", "I64", &[], 7i64.to_le_bytes().to_vec()),
    ];
    let (mut json, mut data) = (String::from("{"), Vec::new());
    for (i, (name, dtype, shape, bytes)) in tensors.iter().enumerate() {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let (start, end) = (data.len(), data.len() + bytes.len());
        if i > 0 {
            json.push(',');
        }
        json += &format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{start},{end}]}}",
            dims.join(",")
        );
        data.extend_from_slice(bytes);
    }
    json.push('}');
    while json.len() % 8 != 0 {
        json.push(' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out.extend(data);
    out
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A version-1.0 `.npy`.
fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| format!("{d},")).collect();
    let fortran = if fortran { "True" } else { "False" };
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': ({}), }}",
        dims.join(" ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Small `.npz` archives: float arrays of every size, Fortran order, an integer one,
/// stored and deflated.
fn small_npz() -> Result<Vec<Vec<u8>>, Error> {
    let w = npy(
        "<f4",
        false,
        &[2, 3],
        &f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    );
    let f = npy("<f4", true, &[2, 2], &f32s(&[1.0, 3.0, 2.0, 4.0]));
    let d = npy(
        "<f8",
        false,
        &[2],
        &[1.0f64, 2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    let h = npy("<f2", false, &[1], &[0x00, 0x3c]);
    let i = npy("<i4", false, &[1], &[1, 0, 0, 0]);
    let entries: [(&str, &[u8], bool); 5] = [
        ("enc/w.npy", &w, true),
        ("f.npy", &f, false),
        ("d.npy", &d, true),
        ("h.npy", &h, false),
        ("i.npy", &i, false),
    ];
    Ok(vec![zip_of(&entries)?, zip_of(&entries[..1])?])
}

/// A zip archive of `(name, bytes, deflated)` entries.
fn zip_of(entries: &[(&str, &[u8], bool)]) -> Result<Vec<u8>, Error> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, bytes, deflate) in entries {
        let method = if *deflate {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        };
        let options = zip::write::SimpleFileOptions::default().compression_method(method);
        w.start_file(*name, options).map_err(Error::Zip)?;
        w.write_all(bytes).map_err(Error::ZipWrite)?;
    }
    Ok(w.finish().map_err(Error::Zip)?.into_inner())
}

/// Protobuf writing for [`hostile_onnx`]: a varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field.
fn int_field(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, v);
}

/// A length-delimited field (bytes, string or message).
fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// An `Identity` node (`NodeProto`).
fn identity(name: &str, input: &str, output: &str) -> Vec<u8> {
    let mut n = Vec::new();
    bytes_field(&mut n, 1, input.as_bytes());
    bytes_field(&mut n, 2, output.as_bytes());
    bytes_field(&mut n, 3, name.as_bytes());
    bytes_field(&mut n, 4, b"Identity");
    n
}

/// A float `TensorProto` with `raw_data`, or with external data (`location`, `offset`,
/// `length`).
fn onnx_tensor(name: &str, dims: &[u64], raw: &[u8], external: Option<[&str; 3]>) -> Vec<u8> {
    let mut t = Vec::new();
    for &d in dims {
        int_field(&mut t, 1, d);
    }
    int_field(&mut t, 2, 1);
    bytes_field(&mut t, 8, name.as_bytes());
    if !raw.is_empty() {
        bytes_field(&mut t, 9, raw);
    }
    if let Some(values) = external {
        for (key, value) in ["location", "offset", "length"].iter().zip(values) {
            let mut e = Vec::new();
            bytes_field(&mut e, 1, key.as_bytes());
            bytes_field(&mut e, 2, value.as_bytes());
            bytes_field(&mut t, 13, &e);
        }
        int_field(&mut t, 14, 1);
    }
    t
}

/// A `ModelProto` (IR 8, opset 17) of one graph.
fn onnx_model(nodes: &[Vec<u8>], initializers: &[Vec<u8>]) -> Vec<u8> {
    let mut g = Vec::new();
    for n in nodes {
        bytes_field(&mut g, 1, n);
    }
    bytes_field(&mut g, 2, b"seed");
    for t in initializers {
        bytes_field(&mut g, 5, t);
    }
    let mut m = Vec::new();
    int_field(&mut m, 1, 8);
    bytes_field(&mut m, 7, &g);
    let mut opset = Vec::new();
    int_field(&mut opset, 2, 17);
    bytes_field(&mut m, 8, &opset);
    m
}

/// Small graphs of the shapes of issue 30's hostile ONNX files (their sizes cut down,
/// so that every execution stays fast): a chain of 500 `Identity` nodes, 100 aliases
/// of one initializer, a cycle of `Identity` nodes, and tensors with external data
/// (inside the folder, outside it, of a size beyond any read, at an offset that
/// overflows), which the fuzz target, reading from memory, refuses after the parse.
fn hostile_onnx() -> Vec<(&'static str, Vec<u8>)> {
    let w = onnx_tensor("w", &[4], &f32s(&[1.0, -2.0, 0.5, 4.0]), None);
    let chain: Vec<Vec<u8>> = (1..=500)
        .map(|i| {
            let input = if i == 1 {
                "w".into()
            } else {
                format!("a{}", i - 1)
            };
            identity(&format!("n{i}"), &input, &format!("a{i}"))
        })
        .collect();
    let aliases: Vec<Vec<u8>> = (0..100)
        .map(|i| identity(&format!("n{i}"), "w", &format!("alias{i}")))
        .collect();
    let cycle = vec![
        identity("c1", "c2", "c1"),
        identity("c2", "c1", "c2"),
        identity("b", "c1", "b"),
    ];
    let external = [
        onnx_tensor("e1", &[2], &[], Some(["w.data", "4", "8"])),
        onnx_tensor(
            "e2",
            &[1 << 30, 6],
            &[],
            Some(["big.data", "0", "25769803776"]),
        ),
        onnx_tensor("e3", &[2], &[], Some(["../w.data", "0", "8"])),
        onnx_tensor(
            "e4",
            &[2],
            &[],
            Some(["w.data", "18446744073709551615", "8"]),
        ),
    ];
    vec![
        (
            "identity-chain.onnx",
            onnx_model(&chain, std::slice::from_ref(&w)),
        ),
        (
            "aliases.onnx",
            onnx_model(&aliases, std::slice::from_ref(&w)),
        ),
        (
            "identity-cycle.onnx",
            onnx_model(&cycle, std::slice::from_ref(&w)),
        ),
        ("external-data.onnx", onnx_model(&[], &external)),
    ]
}
