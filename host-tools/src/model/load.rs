//! Model files on the host: a file read into aligned memory and checked
//! ([`LoadedModel`]), bound as a net of its precision ([`AnyNet`], [`dispatch!`]).

use std::path::{Path, PathBuf};

use s2s_kernels::{PrecisionKind, W8F32};
use seq2seq::{ModelFile, Net};

use crate::error::{Error, Result};
use crate::model::hostf32::HostF32;
use crate::model::hostw8a16::HostW8A16;
use crate::model::limits::Limits;

/// The largest model file the host tools read: 256 MiB (the largest model file a
/// microcontroller holds is a few MiB; g2p-en in f32 is 3.3 MB).
pub const MAX_MODEL_BYTES: u64 = 256 << 20;

/// A model file read into 8-byte aligned memory.
pub struct LoadedModel {
    /// Where it came from.
    pub path: PathBuf,
    words: Vec<u64>,
    len: usize,
    /// What it runs with instead of its own settings ([`LoadedModel::with_limits`]).
    limits: Limits,
    /// The source positions the host plans for.
    positions: usize,
}

impl LoadedModel {
    /// Reads and checks a model file; errors name the file. The header is read first:
    /// a file that does not start with the magic and this build's version, or that is
    /// larger than [`MAX_MODEL_BYTES`], is refused before the rest is read.
    pub fn load(path: &Path) -> Result<Self> {
        use seq2seq::format::HEADER_LEN;
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(Error::io(path))?;
        let size = file.metadata().map_err(Error::io(path))?.len();
        let mut reader = file.take(MAX_MODEL_BYTES + 1);
        let mut bytes = Vec::new();
        (&mut reader)
            .take(HEADER_LEN as u64)
            .read_to_end(&mut bytes)
            .map_err(Error::io(path))?;
        match ModelFile::parse(&bytes) {
            Err(e @ (seq2seq::Error::BadMagic | seq2seq::Error::UnsupportedVersion { .. })) => {
                return Err(Error::model(path)(e))
            }
            _ if size > MAX_MODEL_BYTES => {
                return Err(Error::invalid(
                    path.display(),
                    crate::error::Place::File,
                    format!(
                        "{size} bytes: larger than the largest model file the host tools read ({MAX_MODEL_BYTES} bytes)"
                    ),
                ))
            }
            _ => {}
        }
        reader.read_to_end(&mut bytes).map_err(Error::io(path))?;
        Self::from_bytes(path, &bytes)
    }

    /// Checks model bytes (`path` only names them in errors).
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Self> {
        let m = LoadedModel {
            path: path.to_path_buf(),
            words: seq2seq::builder::aligned(bytes),
            len: bytes.len(),
            limits: Limits::default(),
            positions: 0,
        };
        // The host also refuses non-finite weights and scales (the firmware skips that
        // scan).
        ModelFile::parse(m.bytes())
            .and_then(|f| f.check_finite())
            .map_err(Error::model(path))?;
        m.with_net(|_| Ok(()))?;
        m.with_limits(Limits::default())
    }

    /// The model run with `limits` instead of its own settings (`--positions`,
    /// `--max-steps`), checked against it first: errors name the file and the option.
    pub fn with_limits(mut self, limits: Limits) -> Result<Self> {
        let file = self.file();
        let desc = limits.apply(&self.path, file.desc())?;
        self.positions = limits.positions(&self.path, &desc, file.precision())?;
        self.limits = limits;
        Ok(self)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// The parsed file (checked, CRC included, at load).
    pub fn file(&self) -> ModelFile<'_> {
        ModelFile::parse_verified(self.bytes()).expect("checked at load")
    }

    /// Binds the model at its precision and hands it to `f`.
    pub fn with_net<R>(&self, f: impl FnOnce(AnyNet<'_>) -> Result<R>) -> Result<R> {
        let file = self.file();
        let ctx = Error::model(&self.path);
        let desc = self.limits.apply(&self.path, file.desc())?;
        let mut net = match file.precision() {
            PrecisionKind::F32 => AnyNet::F32(Net::bind(&file).map_err(ctx)?),
            PrecisionKind::W8F32 => AnyNet::W8F32(Net::bind(&file).map_err(ctx)?),
            PrecisionKind::W8A16 => AnyNet::W8A16(Net::bind(&file).map_err(ctx)?),
        };
        match &mut net {
            AnyNet::F32(n) => n.desc = desc,
            AnyNet::W8F32(n) => n.desc = desc,
            AnyNet::W8A16(n) => n.desc = desc,
        }
        f(net)
    }

    /// Source positions the host plans for: the model's fixed length, `--positions`,
    /// or [`HOST_MAX_POSITIONS`](crate::model::HOST_MAX_POSITIONS).
    pub fn positions(&self) -> usize {
        self.positions
    }
}

/// A bound model of any precision.
pub enum AnyNet<'a> {
    /// f32 (computed by the host's fast batched layers, bit for bit as the core's F32).
    F32(Net<'a, HostF32>),
    /// int8 weights, f32 math.
    W8F32(Net<'a, W8F32>),
    /// int8 weights, int16 activations (computed by the host's fast batched layers, to
    /// the same integers as the core's W8A16).
    W8A16(Net<'a, HostW8A16>),
}

/// Runs `$body` with `$net` bound to the concrete `Net<P>` (and `$p` to `P`).
#[macro_export]
macro_rules! dispatch {
    ($any:expr, |$net:ident: $p:ident| $body:expr) => {
        match $any {
            $crate::model::AnyNet::F32($net) => {
                type $p = $crate::model::hostf32::HostF32;
                $body
            }
            $crate::model::AnyNet::W8F32($net) => {
                type $p = s2s_kernels::W8F32;
                $body
            }
            $crate::model::AnyNet::W8A16($net) => {
                type $p = $crate::model::hostw8a16::HostW8A16;
                $body
            }
        }
    };
}
