//! A model file for the explorer: read into 8-byte aligned memory, checked like the
//! host's (`ModelFile::parse` with its CRC, every weight finite, bound at its
//! precision), and bound again for each decode.

use seq2seq::{with_net, ModelFile};

/// The largest model file the page reads: 256 MiB, as the host tools (the largest a
/// microcontroller holds is a few MiB). A larger file is refused before it is read.
pub const MAX_MODEL_BYTES: usize = 256 << 20;

/// Why a model file cannot be used or a source decoded: one line naming the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The file, or the decode of a source with it, failed the core's checks.
    Model {
        /// The file's name.
        name: String,
        /// What the core found.
        source: seq2seq::Error,
    },
    /// The file is over [`MAX_MODEL_BYTES`].
    TooLarge {
        /// The file's name.
        name: String,
        /// Its size in bytes.
        bytes: usize,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Model { name, source } => write!(f, "{name}: {source}"),
            Error::TooLarge { name, bytes } => write!(
                f,
                "{name}: {bytes} bytes: larger than the largest model file the page reads ({MAX_MODEL_BYTES} bytes)"
            ),
        }
    }
}

impl core::error::Error for Error {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Error::Model { source, .. } => Some(source),
            Error::TooLarge { .. } => None,
        }
    }
}

/// A checked model file.
pub struct Model {
    /// The file's name, for messages.
    pub name: String,
    words: Vec<u64>,
    len: usize,
}

impl Model {
    /// Reads and checks `bytes`; an error is one line naming `name`.
    pub fn load(name: &str, bytes: &[u8]) -> Result<Model, Error> {
        if bytes.len() > MAX_MODEL_BYTES {
            return Err(Error::TooLarge {
                name: name.to_string(),
                bytes: bytes.len(),
            });
        }
        let m = Model {
            name: name.to_string(),
            words: seq2seq::builder::aligned(bytes),
            len: bytes.len(),
        };
        let fail = |source| Error::Model {
            name: name.to_string(),
            source,
        };
        let file = ModelFile::parse(m.bytes())
            .and_then(|f| f.check_finite().map(|()| f))
            .map_err(fail)?;
        with_net!(&file, |net: P| net.map(|_| ()).map_err(fail)?);
        Ok(m)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.words)[..self.len]
    }

    /// The parsed file (checked at load: the CRC is not computed again).
    pub fn file(&self) -> Result<ModelFile<'_>, Error> {
        ModelFile::parse_verified(self.bytes()).map_err(|e| self.error(e))
    }

    /// `source` as this file's error.
    pub fn error(&self, source: seq2seq::Error) -> Error {
        Error::Model {
            name: self.name.clone(),
            source,
        }
    }
}
