//! The one error type of the host tools: every failure is one line that names the file
//! and the place in it (line, tensor, archive entry or dataset, input position).

use std::fmt;
use std::path::{Path, PathBuf};

/// The name standard output has in messages.
pub const STDOUT_NAME: &str = "<stdout>";

/// Where in a file a problem is: the weights readers' type, one definition for every
/// file the host tools read.
pub use s2s_weights::Place;

/// Everything that can go wrong in the host tools.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file (`<stdin>`, `<stdout>` for those).
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is wrong: a weights file, a configuration, a data file.
    #[error("{file}{place}: {message}")]
    Invalid {
        /// The file, as given (possibly followed by the archive entry it came from).
        file: String,
        /// Where in it.
        place: Place,
        /// What is wrong.
        message: String,
    },
    /// The core refused a model file, or a model an input.
    #[error("{}{place}: {source}{}", path.display(), crate::model::positions_hint(*positions))]
    Model {
        /// The model file (or the input file for [`Place::Line`]).
        path: PathBuf,
        /// Where: the file, or an input line.
        place: Place,
        /// The core's error.
        #[source]
        source: seq2seq::Error,
        /// For an input line longer than planned for, the `--positions` that takes it
        /// ([`crate::model::positions_for`]), said after the error.
        positions: Option<std::num::NonZeroUsize>,
    },
    /// A model file of another format version: says how to re-create it.
    #[error(
        "{}: model file format version {found}, this build reads version {supported}; \
         re-create it from its weights with `s2s import --config MODEL.toml --weights WEIGHTS \
         -o {0}` (then `s2s quantize` for w8a16 or w8f32), or a trained one with its `s2s train` \
         command plus `--resume` (written again from its checkpoint)",
        path.display()
    )]
    ModelVersion {
        /// The model file.
        path: PathBuf,
        /// Its version.
        found: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// An input line that a model rejects (numbered from 1).
    #[error("input line {line}: {source}")]
    Input {
        /// The line, from 1.
        line: usize,
        /// The core's error.
        #[source]
        source: seq2seq::Error,
    },
    /// An option or a combination of inputs that cannot work.
    #[error("{0}")]
    Usage(String),
    /// A program the tools run is missing or failed (QEMU, cargo, defmt-print).
    #[error("{program}: {message}")]
    Tool {
        /// The program.
        program: String,
        /// What went wrong, with how to fix it where there is a way.
        message: String,
    },
    /// The tensor library failed while training (a shape or numeric failure).
    #[error("training: {0}")]
    Training(String),
    /// A weights file could not be read, or its content is wrong (the `s2s-weights`
    /// readers' error: one line naming the file and the place in it).
    #[error(transparent)]
    Weights(#[from] s2s_weights::Error),
    /// A device run failed or disagreed with the host.
    #[error("{board}: {message}")]
    Device {
        /// The board.
        board: String,
        /// What happened.
        message: String,
    },
}

/// Checks a percentage option (`--min-agreement`, `--target-agreement`): a number from 0
/// to 100, or above 0 when `above_zero`; NaN and infinities are refused. The error
/// names the option.
pub fn percentage(option: &str, value: f64, above_zero: bool) -> Result<f64> {
    let low_ok = if above_zero {
        value > 0.0
    } else {
        value >= 0.0
    };
    if low_ok && value <= 100.0 {
        Ok(value)
    } else {
        let range = if above_zero {
            "above 0 and at most 100"
        } else {
            "0 to 100"
        };
        Err(Error::usage(format!(
            "{option} {value}: a percentage {range} is needed"
        )))
    }
}

/// `Result` with [`Error`].
pub type Result<T = (), E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.as_ref().to_path_buf();
        move |source| Error::Io { path, source }
    }

    /// Wrong content in `file` at `place`.
    pub fn invalid(file: impl fmt::Display, place: Place, message: impl Into<String>) -> Error {
        Error::Invalid {
            file: file.to_string(),
            place,
            message: message.into(),
        }
    }

    /// The core refused the model file `path` (a file of another format version gets
    /// [`Error::ModelVersion`], which says how to re-create it).
    pub fn model(path: impl AsRef<Path>) -> impl FnOnce(seq2seq::Error) -> Error {
        let path = path.as_ref().to_path_buf();
        move |source| match source {
            seq2seq::Error::UnsupportedVersion { found, supported } => Error::ModelVersion {
                path,
                found,
                supported,
            },
            source => Error::Model {
                path,
                place: Place::File,
                source,
                positions: None,
            },
        }
    }

    /// Whether this is a write to standard output that failed because its reader has
    /// gone (`EPIPE`): the commands then end quietly, with success.
    pub fn is_closed_stdout(&self) -> bool {
        matches!(self, Error::Io { path, source }
            if path.as_os_str() == STDOUT_NAME
                && source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// A usage error.
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// A device error on `board`.
    pub fn device(board: &str, message: impl Into<String>) -> Error {
        Error::Device {
            board: board.to_string(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_place() {
        let e = Error::invalid("w.npz", Place::Inside("array b".into()), "short");
        assert_eq!(e.to_string(), "w.npz: array b: short");
        let e = Error::invalid("data.tsv", Place::Line(3), "expected source<TAB>reference");
        assert_eq!(e.to_string(), "data.tsv:3: expected source<TAB>reference");
        let e = Error::invalid("m.safetensors", Place::Tensor("x".into()), "bad");
        assert_eq!(e.to_string(), "m.safetensors: tensor x: bad");
        let e = Error::io("missing/file")(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(e.to_string().starts_with("missing/file: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn percentages_are_checked() {
        assert_eq!(percentage("--x", 0.0, false).unwrap(), 0.0);
        assert_eq!(percentage("--x", 100.0, true).unwrap(), 100.0);
        for bad in [f64::NAN, -1.0, 100.5, f64::INFINITY] {
            let e = percentage("--x", bad, false).unwrap_err().to_string();
            assert!(e.starts_with("--x "), "{e}");
        }
        assert!(percentage("--y", 0.0, true).is_err());
    }
}
