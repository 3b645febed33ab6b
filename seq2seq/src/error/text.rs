//! The errors' messages ([`Describe`] for [`Error`]), written without `core::fmt`: the
//! text of `Display`, which a device prints as the host does.

use s2s_kernels::say;
use s2s_kernels::text::{Describe, Hex32, QuotedChar, Sink};

use super::Error;
use crate::format::{self, TensorId};

/// Writes a stored tensor id by name, or the raw number when it is not a valid id.
struct IdName(u32);

impl Describe for IdName {
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        match TensorId::from_u32(self.0) {
            Some(id) => id.describe(out),
            None => say!(out; "#", Hex32(self.0)),
        }
    }
}

impl Describe for Error {
    /// The message of `Display`, written without `core::fmt` (see [`s2s_kernels::text`]):
    /// a device prints it as the host does.
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        match *self {
            // The errors of running a model: in full in every build, so that a device
            // writes them as the host does.
            Error::PrecisionMismatch { model, runtime } => say!(out;
                "model precision is ", model.name(), ", bound as ", runtime.name()
            ),
            Error::UnsupportedPrecision(p) => {
                say!(out; "precision ", p.name(), " is not supported by this build")
            }
            Error::NotCompiled(f) => say!(out;
                "the model needs the ", f.name(), " feature, which this build leaves out"
            ),
            Error::ArenaTooSmall { needed, available } => say!(out;
                "workspace needs ", needed, " bytes, the arena has ", available
            ),
            Error::InputTooLong { len, max } => {
                say!(out; "input of ", len, " positions exceeds the capacity of ", max)
            }
            Error::UnknownSymbol { position, ch } => say!(out;
                "symbol ", QuotedChar(ch), " at position ", position,
                " is not in the source vocabulary"
            ),
            Error::BeamTooWide { width, max } => say!(out;
                "beam width ", width, ": the workspace holds widths 1 to ", max
            ),
            Error::OutputTooSmall { needed, available } => say!(out;
                "output buffer holds ", available, " tokens, the model may produce ", needed
            ),
            Error::NotInSlot { slot } => say!(out;
                "the token is not one of those of prefix slot ", slot + 1
            ),
            Error::NoPrefixToken { slot } => say!(out;
                "prefix slot ", slot + 1, " has no default: choose its token"
            ),
            Error::PrefixField => out.put("a prefix is name=token fields separated by spaces"),
            Error::SlotTokenInSource { position } => say!(out;
                "a prefix slot's token is typed in the source at position ", position,
                ": choose it as the prefix instead"
            ),
            Error::ChunkOverWindow { chunk, window } => say!(out;
                "a chunk of ", chunk, " positions needs a window of more than ", chunk,
                ", this one has ", window
            ),
            Error::LocalOverWindow { positions, window } => say!(out;
                "local attention reads ", positions, " positions at a step: it needs a window of at least ",
                positions, ", this one has ", window
            ),
            Error::EmptyInput | Error::NoSuchSlot | Error::GreedyOnly => out.put(self.as_str()),
            // Without `error-text` (a smaller device build), the rest, a bad model file
            // or a shape the binding would have caught, is its fixed text and subject.
            _ if !cfg!(feature = "error-text") => match self.subject() {
                Some(s) => say!(out; self.as_str(), ": ", s),
                None => out.put(self.as_str()),
            },
            Error::NotStreamable(why) => say!(out; self.as_str(), ": ", why),
            Error::UnsupportedVersion { found, supported } => say!(out;
                "model file format version ", found, ", this build reads version ", supported
            ),
            Error::Truncated { needed, len } => {
                say!(out; "truncated: ", len, " bytes, ", needed, " needed")
            }
            Error::FileLength(n) => say!(out;
                "stated file length ", n, " is shorter than a header and a CRC (",
                format::HEADER_LEN + 4, " bytes)"
            ),
            Error::CrcMismatch { stored, computed } => say!(out;
                "corrupted: CRC ", Hex32(computed), " does not match the stored ", Hex32(stored)
            ),
            Error::UnknownPrecision(p) => say!(out; "unknown precision code ", p),
            Error::BadLayout(l) => say!(out;
                "weight layout code ", l, " is unknown or not for this precision"
            ),
            Error::SectionMisplaced(s) => say!(out;
                "the ", s, " section is not where the layout puts it (the first 8-byte boundary after the previous section)"
            ),
            Error::SectionOutOfFile(s) => {
                say!(out; "the ", s, " section runs past the end of the file")
            }
            Error::SectionLength(s) => say!(out; "the ", s, " section has the wrong length"),
            Error::BadField(s) => {
                say!(out; "bad model description: ", s, " is out of range or unknown")
            }
            Error::FieldOverflow { field, value } => say!(out;
                "bad model description: ", field, " = ", value, " does not fit in the model file"
            ),
            Error::Inconsistent(s) => say!(out; "bad model description: ", s),
            Error::TokenOutOfRange { what, id, vocab } => {
                say!(out; what, " ", id, " outside the vocabulary of ", vocab)
            }
            Error::VocabCount { found, expected } => say!(out;
                "the vocabulary section holds ", found, " strings, the description calls for ",
                expected
            ),
            Error::VocabIndex => out.put(
                "bad vocabulary index: a string outside the section, out of order, or bytes left over",
            ),
            Error::VocabOrder { vocab } => say!(out;
                "the ", vocab, " vocabulary's stored order is not its ids sorted by their strings"
            ),
            Error::EmptyToken { vocab, id } => say!(out; vocab, " token ", id, " is empty"),
            Error::DuplicateToken {
                vocab,
                first,
                second,
            } => say!(out; vocab, " tokens ", first, " and ", second, " are the same string"),
            Error::TooManyTensors(n) => say!(out;
                "the tensor table has ", n, " entries, more than any model has (",
                format::MAX_TENSORS, ")"
            ),
            Error::UnknownTensor(id) => say!(out;
                "tensor ", IdName(id), " is not part of this model at its precision"
            ),
            Error::DuplicateTensor(id) => say!(out; "tensor ", IdName(id), " appears twice"),
            Error::MissingTensor(id) => say!(out; "tensor ", IdName(id), " is missing"),
            Error::UnknownDType { id, code } => {
                say!(out; "tensor ", IdName(id), " has unknown element type ", code)
            }
            Error::TensorType { id, found } => say!(out;
                "tensor ", IdName(id), " has element type ", found.name(),
                ", wrong for this precision"
            ),
            Error::TensorLength(id) => say!(out;
                "tensor ", IdName(id), ": length differs from rows x columns x element size"
            ),
            Error::TensorShape {
                id,
                expected,
                found,
            } => say!(out;
                "tensor ", IdName(id), " has shape ", found.0, "x", found.1, ", expected ",
                expected.0, "x", expected.1
            ),
            Error::TensorMisplaced(id) => say!(out;
                "tensor ", IdName(id),
                " does not start at the first 8-byte boundary after the previous one"
            ),
            Error::TensorOutsideData(id) => say!(out;
                "tensor ", IdName(id), " runs past the end of the data section"
            ),
            Error::BadRowQ(id) => {
                say!(out; "tensor ", IdName(id), ": quantization data out of range")
            }
            Error::NonFinite(id) => say!(out;
                "tensor ", IdName(id), " holds a non-finite value (NaN or infinity)"
            ),
            Error::Misaligned(id) => say!(out;
                "tensor ", IdName(id),
                " is misaligned in memory (load the model at an 8-byte aligned address)"
            ),
            Error::Rnn(e) => e.describe(out),
            Error::Attention(e) => e.describe(out),
            Error::Shape(e) => e.describe(out),
            Error::BadMagic
            | Error::ReservedNotZero
            | Error::PaddingNotZero
            | Error::VocabNotUtf8
            | Error::BiasMask
            | Error::TrailingData => out.put(self.as_str()),
        }
    }
}
