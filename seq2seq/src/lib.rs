//! GRU encoder-decoder models with attention, for microcontrollers: the model file,
//! the static workspace and greedy decoding, generic over the number format.
//!
//! * [`ModelFile::parse`] checks a `.s2s` file (magic, version, CRC, description,
//!   vocabularies, every tensor) and gives views into it without copying;
//! * [`Net::bind`] turns it into typed layers for one [`Precision`];
//! * [`Plan`] says how many bytes of workspace a model needs for a given source length,
//!   before anything runs;
//! * [`Runner`] carves that workspace out of a caller-owned arena and runs sources to
//!   outputs, reporting each step to an [`Observer`].
//!
//! The decoder variant is data ([`ModelDesc`]): no attention (the decoder starts from
//! the encoder's last state), Bahdanau ordering (score with `s_{t-1}`, GRU input
//! `[embedding; c_t]`) or Luong ordering (GRU first, score with `s_t`, optional
//! attentional layer), any score of `attention_core`, initial state zeros / last
//! encoder state / `tanh(W x + b)`, and an output layer over any concatenation of state,
//! context, embedding and attentional vector. One build runs any model within its
//! capacities.
//!
//! ```no_run
//! use seq2seq::{ModelFile, Net, Runner};
//! use s2s_kernels::W8A16;
//!
//! # fn main() -> Result<(), seq2seq::Error> {
//! # let bytes: &[u8] = &[];
//! let file = ModelFile::parse(bytes)?; // 8-byte aligned, e.g. a flash region
//! let net = Net::<W8A16>::bind(&file)?;
//! let mut arena = [0u32; 4096]; // at least Plan::new::<W8A16>(file.desc(), 32).bytes()
//! let mut runner = Runner::new(&net, &mut arena, 32)?;
//! let mut out = [0u16; 64];
//! runner.translate_line::<seq2seq::Error>("hello", &mut out, &mut (), |s| {
//!     // write s to the UART
//!     Ok(())
//! })?;
//! # Ok(())
//! # }
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

#[cfg(feature = "alloc")]
extern crate alloc;

#[cfg(feature = "alloc")]
pub mod builder;
pub mod desc;
pub mod format;
pub mod net;
pub mod plan;
pub mod run;
pub mod vocab;

pub use desc::{Init, ModelDesc, Ordering, Part, ScoreKind, Split};
pub use format::{ModelFile, TensorId};
pub use net::{ModelPrecision, Net};
pub use plan::Plan;
pub use run::{Observer, Probe, Runner, Step, Values};
pub use s2s_kernels::{Precision, PrecisionKind};
pub use vocab::Vocab;

use format::DType;
use s2s_kernels::ShapeError;

/// Everything that can go wrong reading a model or running it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The file does not start with the model magic.
    BadMagic,
    /// The file is shorter than its header or its stated length.
    Truncated {
        /// Bytes required.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// The format version is not the one this build reads.
    UnsupportedVersion(u16),
    /// The CRC over the file does not match: the file is corrupted.
    CrcMismatch {
        /// CRC stored in the file.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
    /// A section lies outside the file or is misaligned.
    BadSection(&'static str),
    /// A description field is invalid or inconsistent; names the field.
    BadDescription(&'static str),
    /// The vocabulary section is malformed.
    BadVocab(&'static str),
    /// The precision code is unknown.
    UnknownPrecision(u8),
    /// The model's precision is not the one it is bound to.
    PrecisionMismatch {
        /// Precision of the model file.
        model: PrecisionKind,
        /// Precision asked for.
        runtime: PrecisionKind,
    },
    /// This build cannot run models of this precision.
    UnsupportedPrecision(PrecisionKind),
    /// A tensor table entry is invalid (id as stored; see [`TensorId`]).
    BadTensor {
        /// Stored tensor id.
        id: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// Two table entries name the same tensor.
    DuplicateTensor(u32),
    /// A tensor the description calls for is missing.
    MissingTensor(u32),
    /// A tensor has the wrong shape.
    TensorShape {
        /// Stored tensor id.
        id: u32,
        /// Rows and columns required.
        expected: (usize, usize),
        /// Rows and columns present.
        found: (usize, usize),
    },
    /// A tensor has the wrong element type for the model's precision.
    TensorType {
        /// Stored tensor id.
        id: u32,
        /// Element type present.
        found: DType,
    },
    /// A tensor is not aligned in memory: load the file at an 8-byte aligned address.
    Misaligned(u32),
    /// A token id is outside its vocabulary.
    TokenOutOfRange {
        /// Which token.
        what: &'static str,
        /// The id.
        id: u32,
        /// Vocabulary size.
        vocab: usize,
    },
    /// The arena is smaller than the model's workspace.
    ArenaTooSmall {
        /// Bytes the workspace needs.
        needed: usize,
        /// Bytes the arena has.
        available: usize,
    },
    /// The source is longer than the capacity (positions include the end token).
    InputTooLong {
        /// Source positions.
        len: usize,
        /// Positions the workspace holds.
        max: usize,
    },
    /// The source has no token.
    EmptyInput,
    /// A source symbol is not in the vocabulary and the model has no unknown token.
    UnknownSymbol {
        /// Position of the symbol in the line, counting from 1 (in characters or words).
        position: usize,
        /// The symbol (its first character for words).
        ch: char,
    },
    /// The output buffer is shorter than the model's maximum number of steps.
    OutputTooSmall {
        /// Tokens the model may produce.
        needed: usize,
        /// Tokens the buffer holds.
        available: usize,
    },
    /// A GRU error (a shape that the binding should have caught).
    Rnn(rnn_core::Error),
    /// An attention error.
    Attention(attention_core::Error),
    /// A kernel shape error.
    Shape(ShapeError),
}

impl From<rnn_core::Error> for Error {
    fn from(e: rnn_core::Error) -> Self {
        Error::Rnn(e)
    }
}
impl From<attention_core::Error> for Error {
    fn from(e: attention_core::Error) -> Self {
        Error::Attention(e)
    }
}
impl From<ShapeError> for Error {
    fn from(e: ShapeError) -> Self {
        Error::Shape(e)
    }
}

/// Writes a stored tensor id by name, or the raw number when it is not a valid id.
struct IdName(u32);

impl core::fmt::Display for IdName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match TensorId::from_u32(self.0) {
            Some(id) => write!(f, "{id}"),
            None => write!(f, "#{:#010x}", self.0),
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Error::BadMagic => f.write_str("not a model file (bad magic)"),
            Error::Truncated { needed, len } => {
                write!(f, "truncated: {len} bytes, {needed} needed")
            }
            Error::UnsupportedVersion(v) => write!(
                f,
                "format version {v} not supported (this build reads version {})",
                format::VERSION
            ),
            Error::CrcMismatch { stored, computed } => write!(
                f,
                "corrupted: CRC {computed:#010x} does not match the stored {stored:#010x}"
            ),
            Error::BadSection(s) => write!(f, "bad section: {s}"),
            Error::BadDescription(s) => write!(f, "bad model description: {s}"),
            Error::BadVocab(s) => write!(f, "bad vocabulary section: {s}"),
            Error::UnknownPrecision(p) => write!(f, "unknown precision code {p}"),
            Error::PrecisionMismatch { model, runtime } => write!(
                f,
                "model precision is {}, bound as {}",
                model.name(),
                runtime.name()
            ),
            Error::UnsupportedPrecision(p) => {
                write!(f, "precision {} is not supported by this build", p.name())
            }
            Error::BadTensor { id, reason } => write!(f, "tensor {}: {reason}", IdName(id)),
            Error::DuplicateTensor(id) => write!(f, "tensor {} appears twice", IdName(id)),
            Error::MissingTensor(id) => write!(f, "tensor {} is missing", IdName(id)),
            Error::TensorShape {
                id,
                expected,
                found,
            } => write!(
                f,
                "tensor {} has shape {}x{}, expected {}x{}",
                IdName(id),
                found.0,
                found.1,
                expected.0,
                expected.1
            ),
            Error::TensorType { id, found } => write!(
                f,
                "tensor {} has element type {}, wrong for this precision",
                IdName(id),
                found.name()
            ),
            Error::Misaligned(id) => write!(
                f,
                "tensor {} is misaligned in memory (load the model at an 8-byte aligned address)",
                IdName(id)
            ),
            Error::TokenOutOfRange { what, id, vocab } => {
                write!(f, "{what} {id} outside the vocabulary of {vocab}")
            }
            Error::ArenaTooSmall { needed, available } => write!(
                f,
                "workspace needs {needed} bytes, the arena has {available}"
            ),
            Error::InputTooLong { len, max } => {
                write!(f, "input of {len} positions exceeds the capacity of {max}")
            }
            Error::EmptyInput => f.write_str("empty input"),
            Error::UnknownSymbol { position, ch } => write!(
                f,
                "symbol {ch:?} at position {position} is not in the source vocabulary"
            ),
            Error::OutputTooSmall { needed, available } => write!(
                f,
                "output buffer holds {available} tokens, the model may produce {needed}"
            ),
            Error::Rnn(e) => write!(f, "{e}"),
            Error::Attention(e) => write!(f, "{e}"),
            Error::Shape(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for Error {}
