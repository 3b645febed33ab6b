//! Reading a weights file or bytes: the reader chosen by the first bytes (or named,
//! for the fuzz targets), the results sorted by name and checked for repeated names.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::tensor::{Tensor, Weights, MAX_FILE_BYTES};
use crate::{archive, hdf5, npy, onnx, safetensors};

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
    let bytes = read_weights_bytes_of(path)?;
    read_weights_in(
        &bytes,
        &path.display().to_string(),
        Some(&model_folder(path)),
        wanted,
    )
}

/// The bytes of the weights file at `path`: a regular file (a FIFO, a device or a
/// directory is refused before it is opened) of at most [`MAX_FILE_BYTES`].
pub(crate) fn read_weights_bytes_of(path: &Path) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(Error::io(path))?;
    if !meta.is_file() {
        return Err(Error::Input {
            file: path.display().to_string(),
            message: format!(
                "not a regular file ({}): a weights file is read from a file",
                file_kind(&meta.file_type())
            ),
        });
    }
    read_bounded(path, MAX_FILE_BYTES)
}

/// The bytes of the file at `path`, at most `max` of them: the one bounded read of
/// the files a user names (weights, and host-tools' configurations). A regular file
/// larger than `max` is refused by its size before it is opened; whatever it is (a
/// FIFO, a device, a file that grows), the read stops at `max + 1` bytes, which is an
/// error: `/dev/zero` or an endless pipe costs `max` bytes, not all memory.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>> {
    let too_large = |len: String| Error::Input {
        file: path.display().to_string(),
        message: format!("{len} bytes, more than the largest file read ({max} bytes)"),
    };
    let meta = std::fs::metadata(path).map_err(Error::io(path))?;
    if meta.is_file() && meta.len() > max {
        return Err(too_large(meta.len().to_string()));
    }
    let file = std::fs::File::open(path).map_err(Error::io(path))?;
    let mut bytes = Vec::with_capacity(if meta.is_file() {
        usize::try_from(meta.len()).unwrap_or(0)
    } else {
        0
    });
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Error::io(path))?;
    if bytes.len() as u64 > max {
        return Err(too_large(format!("at least {}", bytes.len())));
    }
    Ok(bytes)
}

/// What a file that is not a regular file is, for errors: `a FIFO`, `a directory`...
pub(crate) fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The folder a weights file is in (`.` for a bare file name).
pub(crate) fn model_folder(path: &Path) -> std::path::PathBuf {
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
/// lists it as `s2s tensors --graph` does, subgraphs included (the ONNX fuzz target's
/// entry point): its float tensors. External data cannot be found from memory and is
/// an error.
pub fn read_onnx_bytes(bytes: &[u8], origin: &str) -> Result<Vec<Tensor>> {
    onnx::list_onnx(bytes, origin)?;
    onnx::graph_onnx(bytes, origin)?;
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
        Reader::Hdf5 => hdf5::read_hdf5_in(bytes, origin),
    }
}

/// [`read_weights_bytes`] with the folder of the file, for ONNX external data, and the
/// names asked for.
pub(crate) fn read_weights_in(
    bytes: &[u8],
    origin: &str,
    folder: Option<&Path>,
    wanted: Option<&BTreeSet<String>>,
) -> Result<Weights> {
    // Formats identified by their first bytes come first; an HDF5 signature further in
    // (after a user block) is looked for last.
    let mut w = if bytes.starts_with(hdf5::SIGNATURE) {
        hdf5::read_hdf5_in(bytes, origin)?
    } else if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        archive::read_zip(bytes, origin, wanted)?
    } else if npy::is_npy(bytes) {
        read_lone_npy(bytes, origin)?
    } else if safetensors::is_safetensors(bytes) {
        safetensors::read_safetensors(bytes, origin)?
    } else if hdf5::is_hdf5(bytes) {
        hdf5::read_hdf5_in(bytes, origin)?
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

/// A lone `.npy` file: the tensor is named after the file stem.
fn read_lone_npy(bytes: &[u8], origin: &str) -> Result<Weights> {
    let stem = Path::new(origin)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| origin.to_string());
    let read = npy::read_npy(bytes).map_err(|m| Error::npy(origin, &stem, m))?;
    let mut w = Weights::default();
    npy::add_npy(&mut w, &stem, read);
    Ok(w)
}

/// The first bytes of a file as hex, for the unknown-format error.
fn hex_head(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "nothing: the file is empty".into();
    }
    let hex: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}
