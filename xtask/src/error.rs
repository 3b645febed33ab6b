//! Why a command of `cargo xtask` failed ([`Error`]), printed as `xtask: error: <it>`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// The result of every step.
pub(crate) type Result<T = (), E = Error> = std::result::Result<T, E>;

/// Why a step failed.
#[derive(Debug)]
pub(crate) enum Error {
    /// A command that could not be started.
    Start {
        /// The command line, as printed.
        line: String,
        /// Why it could not be started.
        source: io::Error,
    },
    /// A command that exited with a failure.
    Failed {
        /// The command line, as printed.
        line: String,
        /// How it exited.
        status: ExitStatus,
        /// Its standard error, trimmed, when it was run quietly.
        stderr: Option<String>,
    },
    /// A file or directory that could not be read, written, created or removed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error of the operation.
        source: io::Error,
    },
    /// Anything else, as printed.
    Msg(String),
}

impl Error {
    /// For `map_err`: the I/O error `source` on `path`.
    pub(crate) fn io(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
        move |source| Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Start { line, source } => write!(f, "could not start `{line}`: {source}"),
            Error::Failed {
                line,
                status,
                stderr,
            } => {
                write!(f, "`{line}` failed ({status})")?;
                match stderr {
                    Some(stderr) => write!(f, ": {stderr}"),
                    None => Ok(()),
                }
            }
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Msg(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Start { source, .. } | Error::Io { source, .. } => Some(source),
            Error::Failed { .. } | Error::Msg(_) => None,
        }
    }
}

impl From<String> for Error {
    fn from(m: String) -> Self {
        Error::Msg(m)
    }
}

impl From<&str> for Error {
    fn from(m: &str) -> Self {
        Error::Msg(m.to_string())
    }
}
