//! Readers for the weight files models are trained into, producing named `f32` tensors.
//!
//! [`read_weights`] picks the reader from the file's first bytes, not its extension:
//!
//! | content                                   | reader              | tensor names              |
//! |-------------------------------------------|---------------------|---------------------------|
//! | `\x89HDF\r\n\x1a\n` (Keras `.h5`)         | [`hdf5`]            | dataset path without `/`  |
//! | zip holding `*.npy` (NumPy `.npz`)        | [`zip`] + [`npy`]   | entry name without `.npy` |
//! | zip holding `model.weights.h5` (`.keras`) | [`zip`] + [`hdf5`]  | dataset path without `/`  |
//! | 8-byte length + JSON (`.safetensors`)     | [`safetensors`]     | key as stored             |
//! | `\x93NUMPY` (a single `.npy`)             | [`npy`]             | file stem                 |
//!
//! Only real floating-point tensors are returned: 16-, 32- and 64-bit IEEE floats (and
//! bfloat16) are converted to `f32`, while integer, boolean, string and complex data
//! (e.g. Keras' optimizer iteration counter) is skipped silently. Floats the readers
//! cannot convert (8-bit floats, long doubles) are errors. Results are sorted by name.
//!
//! Each reader is written for untrusted input: truncated or corrupt files give a
//! [`FormatError`] whose message is one line naming the file, the entry or dataset,
//! and the problem; they never panic.

mod convert;
pub mod hdf5;
pub mod npy;
pub mod safetensors;
pub mod zip;

use std::fmt;
use std::path::Path;

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

/// The zip entry Keras 3 stores its weights in, inside a `.keras` archive.
pub const KERAS_WEIGHTS_ENTRY: &str = "model.weights.h5";

/// Why a weights file could not be read. `Display` gives one line starting with the
/// file's name (its `origin`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// The file could not be read from disk.
    Io {
        /// The file's name.
        origin: String,
        /// The operating system's message.
        message: String,
    },
    /// The content matches none of the supported formats.
    UnknownFormat {
        /// The file's name.
        origin: String,
        /// A hex dump of the first bytes, to help identify the file.
        head: String,
    },
    /// A zip archive (`.npz`, `.keras`) is damaged or unsupported.
    Zip {
        /// The file's name.
        origin: String,
        /// What is wrong.
        error: zip::ZipError,
    },
    /// A zip archive holds neither `.npy` entries nor `model.weights.h5`.
    NoWeightsInZip {
        /// The file's name.
        origin: String,
    },
    /// An `.npy` array (alone or inside an `.npz`) is damaged or unsupported.
    Npy {
        /// The file's name.
        origin: String,
        /// The array's name (zip entry name, or the file stem for a lone `.npy`).
        entry: String,
        /// What is wrong.
        error: npy::NpyError,
    },
    /// An HDF5 file (alone or inside a `.keras`) is damaged or unsupported.
    Hdf5 {
        /// The file's name, followed by `: model.weights.h5` for a `.keras` archive.
        origin: String,
        /// What is wrong, and where.
        error: hdf5::Hdf5Error,
    },
    /// A safetensors file is damaged or unsupported.
    Safetensors {
        /// The file's name.
        origin: String,
        /// What is wrong, and where.
        error: safetensors::SafetensorsError,
    },
    /// Two tensors in one file have the same name.
    DuplicateName {
        /// The file's name.
        origin: String,
        /// The repeated name.
        name: String,
    },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Io { origin, message } => write!(f, "{origin}: cannot read: {message}"),
            FormatError::UnknownFormat { origin, head } => write!(
                f,
                "{origin}: unrecognised weights format (starts with {head}); \
                 expected safetensors, .npz, .keras, HDF5 or .npy"
            ),
            FormatError::Zip { origin, error } => write!(f, "{origin}: {error}"),
            FormatError::NoWeightsInZip { origin } => write!(
                f,
                "{origin}: zip archive holds neither .npy entries (.npz) nor \
                 {KERAS_WEIGHTS_ENTRY} (.keras)"
            ),
            FormatError::Npy {
                origin,
                entry,
                error,
            } => write!(f, "{origin}: array {entry}: {error}"),
            FormatError::Hdf5 { origin, error } => write!(f, "{origin}: {error}"),
            FormatError::Safetensors { origin, error } => write!(f, "{origin}: {error}"),
            FormatError::DuplicateName { origin, name } => {
                write!(f, "{origin}: tensor name {name} appears twice")
            }
        }
    }
}

impl std::error::Error for FormatError {}

/// Reads every float tensor of a weights file, choosing the reader by content (magic
/// bytes), not only extension: PyTorch safetensors (.safetensors), NumPy .npz (zip of
/// .npy), a Keras 3 `.keras` file (a zip holding `model.weights.h5`), or a bare HDF5
/// `.h5` file. Errors name the file by its path as given.
pub fn read_weights(path: &Path) -> Result<Vec<Tensor>, FormatError> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| FormatError::Io {
        origin: origin.clone(),
        message: error.to_string(),
    })?;
    read_weights_bytes(&bytes, &origin)
}

/// Like [`read_weights`] for bytes already in memory; `origin` names them in errors
/// (and, for a lone `.npy`, its file stem names the tensor).
pub fn read_weights_bytes(bytes: &[u8], origin: &str) -> Result<Vec<Tensor>, FormatError> {
    // Formats identified by their first bytes come first; an HDF5 signature further in
    // (after a user block) is looked for last.
    let mut tensors = if bytes.starts_with(hdf5::SIGNATURE) {
        read_hdf5_in(bytes, origin.to_string())?
    } else if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        read_zip(bytes, origin)?
    } else if npy::is_npy(bytes) {
        read_lone_npy(bytes, origin)?
    } else if safetensors::is_safetensors(bytes) {
        safetensors::read_safetensors(bytes).map_err(|error| FormatError::Safetensors {
            origin: origin.to_string(),
            error,
        })?
    } else if hdf5::is_hdf5(bytes) {
        read_hdf5_in(bytes, origin.to_string())?
    } else {
        return Err(FormatError::UnknownFormat {
            origin: origin.to_string(),
            head: hex_head(bytes),
        });
    };
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = tensors.windows(2).find(|pair| pair[0].name == pair[1].name) {
        return Err(FormatError::DuplicateName {
            origin: origin.to_string(),
            name: pair[0].name.clone(),
        });
    }
    Ok(tensors)
}

fn read_hdf5_in(bytes: &[u8], origin: String) -> Result<Vec<Tensor>, FormatError> {
    hdf5::read_hdf5(bytes).map_err(|error| FormatError::Hdf5 { origin, error })
}

/// A zip is an `.npz` if it holds `.npy` entries, else a `.keras` if it holds
/// `model.weights.h5` (which must be HDF5: nested zips are not followed).
fn read_zip(bytes: &[u8], origin: &str) -> Result<Vec<Tensor>, FormatError> {
    let zip_error = |error| FormatError::Zip {
        origin: origin.to_string(),
        error,
    };
    let archive = zip::ZipArchive::parse(bytes).map_err(zip_error)?;
    let arrays: Vec<&zip::ZipEntry> = archive
        .entries()
        .iter()
        .filter(|entry| entry.name.ends_with(".npy"))
        .collect();
    if !arrays.is_empty() {
        let mut tensors = Vec::new();
        for entry in arrays {
            let data = archive.read(entry).map_err(zip_error)?;
            let name = entry.name.trim_end_matches(".npy");
            tensors.extend(read_npy_named(&data, origin, name)?);
        }
        return Ok(tensors);
    }
    let Some(entry) = archive.find(KERAS_WEIGHTS_ENTRY) else {
        return Err(FormatError::NoWeightsInZip {
            origin: origin.to_string(),
        });
    };
    let data = archive.read(entry).map_err(zip_error)?;
    let inner = format!("{origin}: {KERAS_WEIGHTS_ENTRY}");
    if !hdf5::is_hdf5(&data) {
        return Err(FormatError::Hdf5 {
            origin: inner,
            error: hdf5::Hdf5Error {
                object: None,
                message: "not an HDF5 file (no signature)".into(),
            },
        });
    }
    read_hdf5_in(&data, inner)
}

/// A lone `.npy` file: the tensor is named after the file stem.
fn read_lone_npy(bytes: &[u8], origin: &str) -> Result<Vec<Tensor>, FormatError> {
    let stem = Path::new(origin)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| origin.to_string());
    Ok(read_npy_named(bytes, origin, &stem)?.into_iter().collect())
}

fn read_npy_named(bytes: &[u8], origin: &str, name: &str) -> Result<Option<Tensor>, FormatError> {
    let array = npy::read_npy(bytes).map_err(|error| FormatError::Npy {
        origin: origin.to_string(),
        entry: name.to_string(),
        error,
    })?;
    Ok(array.map(|array| Tensor {
        name: name.to_string(),
        shape: array.shape,
        data: array.data,
    }))
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
