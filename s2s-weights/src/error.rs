//! The crate's error type: every failure is one line that names the file (as given),
//! the place in it (tensor, array, archive entry, HDF5 object, ONNX node) and what is
//! wrong, one variant per kind of failure; and [`Problem`], the one-line message the
//! readers' inner checks return before the file and the place are known.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a file a problem is (a weights file here; host-tools names places in its
/// other files, configurations and data, with the same type).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Place {
    /// The file as a whole.
    File,
    /// A line, from 1 (`file:line: ...`): a text file's (host-tools' configurations and
    /// data files); the weights readers name no lines.
    Line(usize),
    /// A named tensor (`file: tensor x: ...`).
    Tensor(String),
    /// Something else inside the file, as `kind name` (`zip entry a.npy`,
    /// `dataset layers/gru/vars/0`, `node /Constant_3`...).
    Inside(String),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::File => Ok(()),
            Place::Line(n) => write!(f, ":{n}"),
            Place::Tensor(t) => write!(f, ": tensor {t}"),
            Place::Inside(what) => write!(f, ": {what}"),
        }
    }
}

/// Everything that can go wrong reading a weights file. `file` is the file's name as
/// given (for a Keras 3 `.keras`, followed by `: model.weights.h5` when the HDF5 inside
/// it is wrong).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not one that is read: not a regular file (a weights file must be
    /// one), or larger than the bound of its kind.
    #[error("{file}: {message}")]
    Input {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The bytes are none of the formats read.
    #[error(
        "{file}: unrecognised weights format (starts with {head}); \
         expected safetensors, .npz, .keras, HDF5, .npy or ONNX"
    )]
    UnknownFormat {
        /// The file.
        file: String,
        /// Its first bytes in hex, or that it is empty.
        head: String,
    },
    /// Two tensors of the file have the same name.
    #[error("{file}: tensor name {name} appears twice")]
    DuplicateName {
        /// The file.
        file: String,
        /// The name.
        name: String,
    },
    /// A zip archive (`.npz`, `.keras`) is damaged, holds neither `.npy` entries nor
    /// Keras weights, or an entry cannot be inflated or is too large.
    #[error("{file}{place}: {message}")]
    Zip {
        /// The file.
        file: String,
        /// The archive, or the entry.
        place: Place,
        /// What is wrong.
        message: String,
    },
    /// A NumPy `.npy` array (alone or in an `.npz`) is damaged or of a kind not read
    /// (structured, 16-byte floats, a shape too large).
    #[error("{file}: array {array}: {message}")]
    Npy {
        /// The file.
        file: String,
        /// The array's name.
        array: String,
        /// What is wrong.
        message: String,
    },
    /// A safetensors file is damaged, or a tensor is of an unsupported float type or
    /// has the wrong number of bytes.
    #[error("{file}{place}: {message}")]
    Safetensors {
        /// The file.
        file: String,
        /// The file, or the tensor.
        place: Place,
        /// What is wrong.
        message: String,
    },
    /// An HDF5 file (`.h5`, or what a `.keras` holds) is damaged or uses a part of
    /// HDF5 the reader does not read.
    #[error("{file}{place}: {message}")]
    Hdf5 {
        /// The file.
        file: String,
        /// The file, or the object (`group x`, `dataset x/y`, `object x`).
        place: Place,
        /// What is wrong.
        message: String,
    },
    /// An ONNX model is damaged, or a tensor of it cannot be read (its element type,
    /// shape, data or external data file).
    #[error("{file}{place}: {message}")]
    Onnx {
        /// The file.
        file: String,
        /// The file, the tensor or the node.
        place: Place,
        /// What is wrong.
        message: String,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl AsRef<Path>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.as_ref().to_path_buf();
        move |source| Error::Io { path, source }
    }

    /// A zip archive error in `file` at `place`.
    pub(crate) fn zip(file: impl fmt::Display, place: Place, message: impl Into<String>) -> Error {
        Error::Zip {
            file: file.to_string(),
            place,
            message: message.into(),
        }
    }

    /// The error of array `array` of `file`.
    pub(crate) fn npy(file: &str, array: &str, message: Problem) -> Error {
        Error::Npy {
            file: file.to_string(),
            array: array.to_string(),
            message: message.0,
        }
    }

    /// A safetensors error in `file` at `place`.
    pub(crate) fn safetensors(file: &str, place: Place, message: impl Into<String>) -> Error {
        Error::Safetensors {
            file: file.to_string(),
            place,
            message: message.into(),
        }
    }

    /// An ONNX error in `file` at `place`.
    pub(crate) fn onnx(file: &str, place: Place, message: impl Into<String>) -> Error {
        Error::Onnx {
            file: file.to_string(),
            place,
            message: message.into(),
        }
    }
}

/// What is wrong, as one line, where the readers' inner checks find it (a truncated
/// structure, an address outside the file, a header that does not parse): the file
/// and the place in it are added to make an [`Error`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem(pub(crate) String);

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::ops::Deref for Problem {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Problem {
    fn from(message: String) -> Problem {
        Problem(message)
    }
}

impl From<&str> for Problem {
    fn from(message: &str) -> Problem {
        Problem(message.to_string())
    }
}
