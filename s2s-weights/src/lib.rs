//! Readers of trained weights files (safetensors, npz/npy, HDF5 `.h5` and `.keras`,
//! ONNX) into named `f32` tensors, bounded by the bytes given: what `s2s import` reads a
//! model's weights with and `s2s tensors` lists (in host-tools, as `host_tools::formats`),
//! and what the weights readers' fuzz targets run.
//!
//! [`read_weights`] picks the reader from the file's first bytes, not its extension:
//!
//! | content                                   | reader                      | tensor names              |
//! |-------------------------------------------|-----------------------------|---------------------------|
//! | `\x89HDF\r\n\x1a\n` (Keras `.h5`)         | `hdf5` (our own)            | dataset path without `/`  |
//! | zip holding `*.npy` (NumPy `.npz`)        | `zip` crate + `npyz` crate  | entry name without `.npy` |
//! | zip holding `model.weights.h5` (`.keras`) | `zip` crate + `hdf5`        | dataset path without `/`  |
//! | 8-byte length + JSON (`.safetensors`)     | `safetensors` crate         | key as stored             |
//! | `\x93NUMPY` (a single `.npy`)             | `npyz` crate                | file stem                 |
//! | protobuf `ModelProto` (`.onnx`)           | `prost` (our `onnx` module) | initializer, `Constant` or `Identity` output |
//!
//! [`list_tensors`] lists a file's tensors with their stored element types (and, for
//! ONNX, the node inputs each feeds); [`read_weights_bytes`] and [`read_bytes_as`] read
//! bytes already in memory.
//!
//! Only real floating-point tensors are returned: 16-, 32- and 64-bit IEEE floats (and
//! bfloat16) are converted to `f32`. Integer, boolean, string and complex data (e.g.
//! Keras' optimizer iteration counter) is not read: every reader lists such tensors
//! with their element type in [`Weights::skipped`], so that `s2s import` says "tensor X
//! has dtype Y, expected float" when a configuration names one. Floats the readers
//! cannot convert (8-bit floats, long doubles) are errors. Results are sorted by name.
//!
//! Reads are bounded: of an `.npz`, only the entries asked for are inflated (every
//! entry when no names are given), each after its `.npy` header was read and checked
//! against the entry's stated size, and at most [`MAX_TENSOR_BYTES`]; `.npy` headers
//! are at most 64 KiB (checked before `npyz` sees them).
//!
//! Each reader is written for untrusted input: truncated or corrupt files give an
//! [`Error`] whose variant says which reader refused what, and whose message is one
//! line naming the file, the entry, tensor or dataset, and the problem; they never
//! panic. Parsers of untrusted formats are maintained crates where
//! one fits (`zip`, `npyz`, `safetensors`, `half`); HDF5 is read by our own reader
//! (see the `hdf5` module for why).

#![forbid(unsafe_code)]

mod archive;
mod convert;
mod error;
mod hdf5;
mod listing;
mod npy;
mod onnx;
mod safetensors;

use std::collections::BTreeSet;
use std::path::Path;

pub use error::{Error, Place, Result};
pub use listing::{list_tensors, Listing};

/// One named float tensor read from a weights file, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The tensor's name in the file (see the module docs for each format).
    pub name: String,
    /// Dimensions, outermost first; empty for a scalar.
    pub shape: Vec<usize>,
    /// The elements in row-major order; `shape.iter().product()` of them.
    pub data: Vec<f32>,
}

/// What a weights file holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Weights {
    /// Its float tensors, sorted by name.
    pub tensors: Vec<Tensor>,
    /// The tensors that are not floats, `(name, element type)`.
    pub skipped: Vec<(String, String)>,
}

/// The largest tensor read from a weights file, in stored bytes: 1 GiB (twice the
/// f32 bytes of the largest model file, for f64 tensors, with room to spare).
pub const MAX_TENSOR_BYTES: u64 = 1 << 30;

/// The zip entry Keras 3 stores its weights in, inside a `.keras` archive.
pub const KERAS_WEIGHTS_ENTRY: &str = "model.weights.h5";

/// Reads every float tensor of a weights file, choosing the reader by content (magic
/// bytes), not only extension: PyTorch safetensors (.safetensors), NumPy .npz (zip of
/// .npy), a Keras 3 `.keras` file (a zip holding `model.weights.h5`), or a bare HDF5
/// `.h5` file, or an ONNX model (`.onnx`, whose external data files are read from the
/// model's folder). Errors name the file by its path as given.
pub fn read_weights(path: &Path) -> Result<Vec<Tensor>> {
    Ok(read_weights_file(path, None)?.tensors)
}

/// [`read_weights`] of the tensors named in `wanted` (all when `None`; a name that is
/// not in the file is no error here), with the tensors that are not floats named.
pub fn read_weights_file(path: &Path, wanted: Option<&BTreeSet<String>>) -> Result<Weights> {
    let bytes = std::fs::read(path).map_err(Error::io(path))?;
    read_weights_in(
        &bytes,
        &path.display().to_string(),
        Some(&model_folder(path)),
        wanted,
    )
}

/// The folder a weights file is in (`.` for a bare file name).
fn model_folder(path: &Path) -> std::path::PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    }
}

/// Like [`read_weights`] for bytes already in memory; `origin` names them in errors
/// (and, for a lone `.npy`, its file stem names the tensor). An ONNX model's external
/// data cannot be found from memory: such a tensor is an error.
pub fn read_weights_bytes(bytes: &[u8], origin: &str) -> Result<Vec<Tensor>> {
    Ok(read_weights_in(bytes, origin, None, None)?.tensors)
}

/// Reads an ONNX model from memory with the ONNX reader whatever its first bytes, and
/// lists it as `s2s tensors` does (the ONNX fuzz target's entry point): its float
/// tensors. External data cannot be found from memory and is an error.
pub fn read_onnx_bytes(bytes: &[u8], origin: &str) -> Result<Vec<Tensor>> {
    onnx::list_onnx(bytes, origin)?;
    Ok(onnx::read_onnx(bytes, origin, None)?.tensors)
}

/// One of the weights readers, for [`read_bytes_as`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reader {
    /// PyTorch safetensors.
    Safetensors,
    /// A zip archive: a NumPy `.npz` or a Keras 3 `.keras`.
    Zip,
    /// A lone NumPy `.npy`.
    Npy,
    /// HDF5 (a Keras 2 `.h5`, or what a `.keras` holds).
    Hdf5,
}

/// Reads bytes with `reader` whatever their first bytes (the fuzz targets' entry
/// points: each reader meets every mutation, not only those that keep its magic).
pub fn read_bytes_as(reader: Reader, bytes: &[u8], origin: &str) -> Result<Weights> {
    match reader {
        Reader::Safetensors => safetensors::read_safetensors(bytes, origin),
        Reader::Zip => archive::read_zip(bytes, origin, None),
        Reader::Npy => read_lone_npy(bytes, origin),
        Reader::Hdf5 => read_hdf5_in(bytes, origin),
    }
}

/// [`read_weights_bytes`] with the folder of the file, for ONNX external data, and the
/// names asked for.
fn read_weights_in(
    bytes: &[u8],
    origin: &str,
    folder: Option<&Path>,
    wanted: Option<&BTreeSet<String>>,
) -> Result<Weights> {
    // Formats identified by their first bytes come first; an HDF5 signature further in
    // (after a user block) is looked for last.
    let mut w = if bytes.starts_with(hdf5::SIGNATURE) {
        read_hdf5_in(bytes, origin)?
    } else if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        archive::read_zip(bytes, origin, wanted)?
    } else if npy::is_npy(bytes) {
        read_lone_npy(bytes, origin)?
    } else if safetensors::is_safetensors(bytes) {
        safetensors::read_safetensors(bytes, origin)?
    } else if hdf5::is_hdf5(bytes) {
        read_hdf5_in(bytes, origin)?
    } else if onnx::is_onnx(bytes) || origin.ends_with(".onnx") {
        onnx::read_onnx(bytes, origin, folder)?
    } else {
        return Err(Error::UnknownFormat {
            file: origin.to_string(),
            head: hex_head(bytes),
        });
    };
    w.tensors.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = w
        .tensors
        .windows(2)
        .find(|pair| pair[0].name == pair[1].name)
    {
        return Err(Error::DuplicateName {
            file: origin.to_string(),
            name: pair[0].name.clone(),
        });
    }
    w.skipped.sort();
    Ok(w)
}

/// Reads HDF5 bytes; errors name `origin` and the object.
fn read_hdf5_in(bytes: &[u8], origin: &str) -> Result<Weights> {
    hdf5::read_hdf5(bytes).map_err(|e| {
        let place = e.object.map_or(Place::File, Place::Inside);
        Error::Hdf5 {
            file: origin.to_string(),
            place,
            message: e.message,
        }
    })
}

/// A lone `.npy` file: the tensor is named after the file stem.
fn read_lone_npy(bytes: &[u8], origin: &str) -> Result<Weights> {
    let stem = Path::new(origin)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| origin.to_string());
    let read = npy::read_npy(bytes).map_err(|m| Error::npy(origin, &stem, m))?;
    let mut w = Weights::default();
    add_npy(&mut w, &stem, read);
    Ok(w)
}

/// Adds an array read as `name` to `w`.
fn add_npy(w: &mut Weights, name: &str, read: npy::Npy) {
    match read {
        npy::Npy::Float(array) => w.tensors.push(Tensor {
            name: name.to_string(),
            shape: array.shape,
            data: array.data,
        }),
        npy::Npy::Other(dtype) => w.skipped.push((name.to_string(), dtype)),
    }
}

/// The first bytes of a file as hex, for the unknown-format error.
fn hex_head(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "nothing: the file is empty".into();
    }
    let hex: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}

#[cfg(test)]
mod tests;
