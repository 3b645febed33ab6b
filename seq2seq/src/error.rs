//! The one error type of the crate: reading a model file, binding it, running it.
//!
//! Every variant has a fixed text, [`Error::as_str`], and some name what they are about
//! with a second fixed text, [`Error::subject`] (a description field, a section, a
//! vocabulary), so a device can report any failure with two `write_str` calls and no
//! `core::fmt` formatting code. On the host, `Display` adds the numbers and the tensor's
//! name. Every variant also has a stable numeric code, [`Error::code`] (1 to 99, by
//! section), for a device that keeps no texts; [`Error::explain`] tells a code back. Codes
//! and texts are one table, `codes!` below.

use s2s_kernels::text::Describe;
use s2s_kernels::{PrecisionKind, ShapeError};

use crate::format::DType;
use crate::Feature;

mod text;

/// Everything that can go wrong reading a model or running it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    // ----------------------------------------------------------- the file and header
    /// The file does not start with the model magic.
    BadMagic,
    /// The file is of another format version than the one this build reads.
    UnsupportedVersion {
        /// Version stored in the file.
        found: u16,
        /// The version this build reads ([`VERSION`](crate::format::VERSION)).
        supported: u16,
    },
    /// The file is shorter than its header or its stated length.
    Truncated {
        /// Bytes required.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// The stated file length cannot hold the header and the CRC.
    FileLength(u32),
    /// The CRC over the file does not match: the file is corrupted.
    CrcMismatch {
        /// CRC stored in the file.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
    /// The precision code is unknown.
    UnknownPrecision(u8),
    /// A reserved header field is not zero.
    ReservedNotZero,
    /// The weight layout code is unknown, or not one of the file's precision (only
    /// w8a16 has layouts other than row).
    BadLayout(u8),
    /// A section does not start where the layout puts it: the description right after
    /// the header, each further section at the first 8-byte boundary after the previous
    /// one (names the section).
    SectionMisplaced(&'static str),
    /// A section runs past the CRC at the end of the file (names the section).
    SectionOutOfFile(&'static str),
    /// A section has the wrong length for its contents (names the section).
    SectionLength(&'static str),
    /// A padding byte (between sections or tensors) is not zero.
    PaddingNotZero,

    // ------------------------------------------------------------------ description
    /// A description field is out of range or not a known code (names the field).
    BadField(&'static str),
    /// A value is too large for its field in the stored description (names the field):
    /// the writer refuses it instead of storing it truncated.
    FieldOverflow {
        /// The field.
        field: &'static str,
        /// The value given.
        value: usize,
    },
    /// Description fields disagree with each other (names the rule broken).
    Inconsistent(&'static str),
    /// A token id is outside its vocabulary.
    TokenOutOfRange {
        /// Which token.
        what: &'static str,
        /// The id.
        id: u32,
        /// Vocabulary size.
        vocab: usize,
    },

    // ----------------------------------------------------------------- vocabularies
    /// The vocabulary section holds another number of strings than the description's
    /// vocabularies and the separator.
    VocabCount {
        /// Strings stored.
        found: u32,
        /// Strings the description calls for.
        expected: usize,
    },
    /// The vocabulary index runs past its section, or a string does not follow the
    /// previous one, or bytes are left over after the last string.
    VocabIndex,
    /// A vocabulary string is not UTF-8.
    VocabNotUtf8,
    /// A vocabulary's stored order is not its ids sorted by their strings (names the
    /// vocabulary).
    VocabOrder {
        /// `"source"` or `"target"`.
        vocab: &'static str,
    },
    /// A token is the empty string (names the vocabulary).
    EmptyToken {
        /// `"source"` or `"target"`.
        vocab: &'static str,
        /// Its id.
        id: u16,
    },
    /// Two tokens of one vocabulary are the same string (names the vocabulary).
    DuplicateToken {
        /// `"source"` or `"target"`.
        vocab: &'static str,
        /// The first id.
        first: u16,
        /// The id that repeats it.
        second: u16,
    },

    // ---------------------------------------------------------------------- tensors
    /// The tensor table has more entries than any model has tensors.
    TooManyTensors(u32),
    /// The header's bias mask names a layer the description does not have, or an
    /// embedding (which has no bias).
    BiasMask,
    /// A table entry is not a tensor of this model at this precision (an invalid id, a
    /// layer the description does not have, quantization data in a float model, a bias
    /// the bias mask does not list). Id as stored; see [`TensorId`](crate::format::TensorId).
    UnknownTensor(u32),
    /// Two table entries name the same tensor.
    DuplicateTensor(u32),
    /// A tensor the description calls for is missing.
    MissingTensor(u32),
    /// A tensor's element type code is unknown.
    UnknownDType {
        /// Stored tensor id.
        id: u32,
        /// The code.
        code: u32,
    },
    /// A tensor has the wrong element type for its slot at the model's precision.
    TensorType {
        /// Stored tensor id.
        id: u32,
        /// Element type present.
        found: DType,
    },
    /// A tensor's length is not rows x columns x element size.
    TensorLength(u32),
    /// A tensor has the wrong shape.
    TensorShape {
        /// Stored tensor id.
        id: u32,
        /// Rows and columns required (columns per weight plane for weights).
        expected: (usize, usize),
        /// Rows and columns present.
        found: (usize, usize),
    },
    /// A tensor does not start at the first 8-byte boundary after the previous one (the
    /// first one at the start of the data section).
    TensorMisplaced(u32),
    /// A tensor runs past the end of the data section.
    TensorOutsideData(u32),
    /// The data section holds bytes after the last tensor.
    TrailingData,
    /// Quantization data a kernel cannot apply (a shift out of range, a negative or
    /// non-finite scale).
    BadRowQ(u32),
    /// A weight, bias or scale is not finite (NaN or infinite). Found by
    /// [`ModelFile::check_finite`](crate::ModelFile::check_finite), which the host tools
    /// and the writer run; the firmware skips that scan.
    NonFinite(u32),
    /// A tensor is not aligned in memory: load the file at an 8-byte aligned address.
    Misaligned(u32),

    // ---------------------------------------------------------------------- running
    /// The model's precision is not the one it is bound to.
    PrecisionMismatch {
        /// Precision of the model file.
        model: PrecisionKind,
        /// Precision asked for.
        runtime: PrecisionKind,
    },
    /// This build cannot run models of this precision.
    UnsupportedPrecision(PrecisionKind),
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
    /// A prefix names a slot the model does not have.
    NoSuchSlot,
    /// A prefix chooses a token that is not one of its slot's (or chooses one for a
    /// slot past the model's last).
    NotInSlot {
        /// The slot, counting from 0.
        slot: usize,
    },
    /// A prefix slot without a default was given no token.
    NoPrefixToken {
        /// The slot, counting from 0.
        slot: usize,
    },
    /// A prefix field is not `name=token`.
    PrefixField,
    /// A prefix slot's token is typed in the source text (it is chosen as a prefix).
    SlotTokenInSource {
        /// Where, counting from 1 (in characters or words).
        position: usize,
    },
    /// A MoChA chunk as wide as a stream's window or wider: the window keeps the
    /// chunk's last `chunk - 1` rows when it is filled again, and needs a new one.
    ChunkOverWindow {
        /// The model's chunk width.
        chunk: usize,
        /// The window's positions.
        window: usize,
    },
    /// A local attention's `2D + 1` positions more than a stream's window holds: a step
    /// reads them all.
    LocalOverWindow {
        /// The positions a step attends, `2D + 1`.
        positions: usize,
        /// The window's positions.
        window: usize,
    },
    /// A beam search wider than the workspace holds (or zero wide).
    BeamTooWide {
        /// The width asked for.
        width: usize,
        /// The widest search the workspace holds.
        max: usize,
    },
    /// A beam search of a model that decodes greedily only (monotonic attention: the
    /// position it has reached is not part of a hypothesis's state).
    GreedyOnly,
    /// A source streamed through a model that cannot take one ([`crate::ModelDesc::streams`]):
    /// why.
    NotStreamable(&'static str),
    /// The output buffer is shorter than the model's maximum number of steps.
    OutputTooSmall {
        /// Tokens the model may produce.
        needed: usize,
        /// Tokens the buffer holds.
        available: usize,
    },
    /// A recurrent-layer error (a shape that the binding should have caught).
    Rnn(rnn_core::Error),
    /// An attention error.
    Attention(attention_core::Error),
    /// A kernel shape error.
    Shape(ShapeError),
    /// The model needs a part this build leaves out (a cargo feature; see
    /// [`ModelDesc::features`](crate::ModelDesc::features)).
    NotCompiled(Feature),
}

/// The one table of the errors' numeric codes and fixed texts: generates
/// [`Error::as_str`], [`Error::code`] and [`Error::explain`]. Every variant is in it (the
/// generated matches have no catch-all, so a variant left out does not compile), and a
/// code given twice is an unreachable pattern of `explain`, which is denied.
macro_rules! codes {
    ($($name:ident = $code:literal => $text:literal,)+) => {
        impl Error {
            /// A fixed text for this kind of error, for devices that print errors without
            /// `core::fmt` (see also [`Error::subject`]).
            pub fn as_str(&self) -> &'static str {
                match self {
                    $(Error::$name { .. } => $text,)+
                }
            }

            /// This kind of error's stable numeric code, 1 to 99 ([`Error::explain`] tells
            /// it back): what a device without error texts reports (`ERR E<code>` on the
            /// line protocol) for the host to look up.
            pub fn code(&self) -> u16 {
                match self {
                    $(Error::$name { .. } => $code,)+
                }
            }

            /// The variant's name and its fixed text ([`Error::as_str`]) for a code of
            /// [`Error::code`]; `None` for a code that is none of this type's.
            #[deny(unreachable_patterns)]
            pub fn explain(code: u16) -> Option<(&'static str, &'static str)> {
                match code {
                    $($code => Some((stringify!($name), $text)),)+
                    _ => None,
                }
            }
        }
    };
}

// The codes by section. They are stable: a code keeps its meaning and is never reused;
// a new variant takes a free code of its section.
codes! {
    // the file and header (1-19)
    BadMagic = 1 => "not a model file (bad magic)",
    UnsupportedVersion = 2 => "model file of another format version",
    Truncated = 3 => "truncated model file",
    FileLength = 4 => "stated file length too small",
    CrcMismatch = 5 => "corrupted model file (CRC mismatch)",
    UnknownPrecision = 6 => "unknown precision code",
    ReservedNotZero = 7 => "reserved header field not zero",
    BadLayout = 8 => "unknown weight layout, or not for this precision",
    SectionMisplaced = 9 => "section not where the layout puts it",
    SectionOutOfFile = 10 => "section runs past the end of the file",
    SectionLength = 11 => "section of the wrong length",
    PaddingNotZero = 12 => "padding byte not zero",
    // the description (20-29)
    BadField = 20 => "description field out of range",
    FieldOverflow = 21 => "value too large for its description field",
    Inconsistent = 22 => "inconsistent model description",
    TokenOutOfRange = 23 => "token id outside its vocabulary",
    // the vocabularies (30-39)
    VocabCount = 30 => "wrong number of vocabulary strings",
    VocabIndex = 31 => "bad vocabulary index",
    VocabNotUtf8 = 32 => "vocabulary string not UTF-8",
    VocabOrder = 33 => "vocabulary order not sorted",
    EmptyToken = 34 => "empty token",
    DuplicateToken = 35 => "duplicate token",
    // the tensors (40-59)
    TooManyTensors = 40 => "too many tensors",
    BiasMask = 41 => "bias mask names a layer without a bias slot",
    UnknownTensor = 42 => "tensor not part of this model",
    DuplicateTensor = 43 => "tensor appears twice",
    MissingTensor = 44 => "tensor missing",
    UnknownDType = 45 => "unknown element type",
    TensorType = 46 => "tensor of the wrong element type",
    TensorLength = 47 => "tensor length differs from its shape",
    TensorShape = 48 => "tensor of the wrong shape",
    TensorMisplaced = 49 => "tensor not where the layout puts it",
    TensorOutsideData = 50 => "tensor outside the data section",
    TrailingData = 51 => "bytes after the last tensor",
    BadRowQ = 52 => "quantization data out of range",
    NonFinite = 53 => "non-finite weight or scale",
    Misaligned = 54 => "model not loaded at an 8-byte aligned address",
    // running a model (60-89): the binding and the workspace (60-63), the source
    // (64-66), the beam (67-68), streaming (69, 75-76), prefixes (70-74)
    PrecisionMismatch = 60 => "model bound at another precision",
    UnsupportedPrecision = 61 => "precision not supported by this build",
    ArenaTooSmall = 62 => "arena too small for the workspace",
    OutputTooSmall = 63 => "output buffer shorter than the most steps",
    InputTooLong = 64 => "input too long",
    EmptyInput = 65 => "empty input",
    UnknownSymbol = 66 => "symbol not in the source vocabulary",
    BeamTooWide = 67 => "beam width over the workspace's capacity",
    GreedyOnly = 68 => "a monotonic model decodes greedily only: no beam search",
    NotStreamable = 69 => "model cannot stream",
    NoSuchSlot = 70 => "no prefix slot of that name",
    NotInSlot = 71 => "token not one of its prefix slot's",
    NoPrefixToken = 72 => "prefix slot without a token",
    PrefixField = 73 => "prefix field not name=token",
    SlotTokenInSource = 74 => "prefix slot token typed in the source",
    ChunkOverWindow = 75 => "chunk not narrower than the stream's window",
    LocalOverWindow = 76 => "local attention wider than the stream's window",
    // the layers' errors, and a part this build leaves out (90-99)
    Rnn = 90 => "recurrent layer shape error",
    Attention = 91 => "attention shape error",
    Shape = 92 => "kernel shape error",
    NotCompiled = 93 => "model part not compiled in this build",
}

impl Error {
    /// The fixed name this error is about, when it carries one: a description field, a
    /// section, the rule broken, a vocabulary.
    pub fn subject(&self) -> Option<&'static str> {
        match *self {
            Error::SectionMisplaced(s)
            | Error::SectionOutOfFile(s)
            | Error::SectionLength(s)
            | Error::BadField(s)
            | Error::FieldOverflow { field: s, .. }
            | Error::Inconsistent(s)
            | Error::TokenOutOfRange { what: s, .. }
            | Error::VocabOrder { vocab: s }
            | Error::EmptyToken { vocab: s, .. }
            | Error::DuplicateToken { vocab: s, .. }
            | Error::NotStreamable(s) => Some(s),
            Error::NotCompiled(f) => Some(f.name()),
            _ => None,
        }
    }

    /// The stored id of the tensor this error is about, if any.
    pub fn tensor(&self) -> Option<u32> {
        match *self {
            Error::UnknownTensor(id)
            | Error::DuplicateTensor(id)
            | Error::MissingTensor(id)
            | Error::UnknownDType { id, .. }
            | Error::TensorType { id, .. }
            | Error::TensorLength(id)
            | Error::TensorShape { id, .. }
            | Error::TensorMisplaced(id)
            | Error::TensorOutsideData(id)
            | Error::BadRowQ(id)
            | Error::NonFinite(id)
            | Error::Misaligned(id) => Some(id),
            _ => None,
        }
    }
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

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.describe(f)
    }
}

impl core::error::Error for Error {}

#[cfg(test)]
mod tests;
