//! The description's types: [`ModelDesc`] and the variant of each part ([`CellKind`],
//! [`Init`], [`Cells`], [`Extras`], ...), as plain data; the attention's own types are
//! in `attention`.

use core::num::NonZeroU16;

use rnn_core::{Masked, Recurrent, ResetMode};
use s2s_kernels::Fmt;

use super::attention::AttentionDesc;
use super::beam_rule::BeamRule;
use super::limits::{MAX_OUT_PARTS, MAX_PREFIX, MAX_SLOTS};

/// The recurrent cell of the encoder or the decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum CellKind {
    /// GRU: gates `[r, z, n]`, state `h`.
    Gru = 0,
    /// LSTM: gates `[i, f, g, o]`, state `h` and cell state `c`.
    Lstm = 1,
}

impl CellKind {
    /// Its name: `GRU` or `LSTM`.
    pub fn name(self) -> &'static str {
        match self {
            CellKind::Gru => "GRU",
            CellKind::Lstm => "LSTM",
        }
    }

    /// Gate blocks of the cell's matrices (3 or 4).
    pub fn gates(self) -> usize {
        match self {
            CellKind::Gru => 3,
            CellKind::Lstm => 4,
        }
    }
}

/// Initial decoder state (`h`, and separately the cell state `c` of an LSTM decoder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Init {
    /// All zeros.
    Zeros = 0,
    /// The final state of the encoder: decoder layer `l` of `L` takes the final state
    /// of encoder layer `l + (L_enc - L)` (`[forward; backward]` when bidirectional);
    /// for the cell state, that encoder layer's final cell state (an LSTM encoder).
    Last = 1,
    /// `tanh(W_l x + b_l)` for decoder layer `l`, where `x` is the top encoder layer's
    /// final state (layers `bridge.l<l>`); for the cell state, `x` is the top encoder
    /// layer's final cell state, or its final state for a GRU encoder (layers
    /// `bridge_c.l<l>`).
    Dense = 2,
    /// `tanh(W_l m + b_l)` for decoder layer `l`, where `m` is the mean of the top
    /// encoder layer's outputs over the valid (unpadded) source positions (layers
    /// `bridge.l<l>`, or the one `bridge.l0` of every layer when
    /// [`Extras::bridge_shared`]). Not for the cell state.
    Mean = 3,
}

impl Init {
    pub(super) fn from_id(v: u32) -> Option<Self> {
        match v {
            0 => Some(Init::Zeros),
            1 => Some(Init::Last),
            2 => Some(Init::Dense),
            3 => Some(Init::Mean),
            _ => None,
        }
    }

    /// Whether the initial state comes through `bridge.l<l>` layers.
    pub fn is_bridge(self) -> bool {
        matches!(self, Init::Dense | Init::Mean)
    }
}

/// The activation of Luong's attentional layer, `a_t = act(W_c [parts] + b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Activation {
    /// `tanh` (Luong's paper, OpenNMT): a unit value, `Q0.15` on the integer path.
    Tanh = 0,
    /// `max(0, x)`: stored in the calibrated format [`Extras::fmt_attentional`].
    Relu = 1,
    /// None (a linear layer): stored in the calibrated format.
    Identity = 2,
}

/// What the output layer's values are normalised by. The greedy argmax is the same;
/// what changes is what probabilities are reported and what a beam search sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Logits {
    /// Logits for a softmax (probabilities `softmax(z)`).
    Softmax = 0,
    /// Logits for a log-softmax (scores `log_softmax(z)`, as an ONNX `LogSoftmax`).
    LogSoftmax = 1,
}

/// A prefix slot of the description: a source token chosen per call from the slot's
/// own tokens (their ids and the slot's name are stored with the vocabularies, see
/// [`crate::vocab::Slots`]), put after the fixed prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PrefixSlot {
    /// How many tokens the slot offers (never none: with the niche of `NonZeroU16` an
    /// `Option<PrefixSlot>` takes 6 bytes, on a device's stack in every copy of the
    /// description).
    pub size: NonZeroU16,
    /// The source token id a call that does not choose takes (one of the slot's
    /// tokens), or none: such a call is refused.
    pub default: Option<u16>,
}

/// The decoder's bridges, input feeding, attentional activation, output normalisation
/// and source prefix (model-file format 5), the prefix slots and the minimum output
/// length (format 7). [`Extras::NONE`] is what a model without them has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Extras {
    /// One bridge (`bridge.l0`) for every decoder layer ([`Init::Dense`] or
    /// [`Init::Mean`]).
    pub bridge_shared: bool,
    /// Input feeding: decoder layer 0 reads `[embedding; a_{t-1}]`, the previous
    /// step's attentional vector (zeros at the first step), as OpenNMT does. Needs the
    /// Luong ordering and an attentional layer.
    pub input_feed: bool,
    /// The attentional layer's activation.
    pub att_act: Activation,
    /// Format of the attentional vector on the integer path: `Q0.15` (stored as 0)
    /// after `tanh`, calibrated otherwise.
    pub fmt_attentional: Fmt,
    /// What the output layer's values are normalised by.
    pub logits: Logits,
    /// Tokens put before every source (a language or domain tag), in order.
    pub src_prefix: [Option<u16>; MAX_PREFIX],
    /// Prefix slots, in order (then `None`): one token of each, chosen per call, comes
    /// after the fixed prefix ([`crate::vocab::Prefix`]).
    pub slots: [Option<PrefixSlot>; MAX_SLOTS],
    /// Fewest output tokens: before step `min_steps` the end token is never chosen by
    /// greedy decoding nor proposed by a beam search (0: no minimum).
    pub min_steps: usize,
}

impl Extras {
    /// No shared bridge, no input feeding, `tanh`, softmax, no prefix, no prefix slot,
    /// no minimum length.
    pub const NONE: Extras = Extras {
        bridge_shared: false,
        input_feed: false,
        att_act: Activation::Tanh,
        fmt_attentional: Fmt { frac: 0 },
        logits: Logits::Softmax,
        src_prefix: [None; MAX_PREFIX],
        slots: [None; MAX_SLOTS],
        min_steps: 0,
    };

    /// The prefix tokens.
    pub fn prefix(&self) -> impl Iterator<Item = u16> + '_ {
        self.src_prefix.iter().flatten().copied()
    }

    /// The prefix slots.
    pub fn slots(&self) -> impl Iterator<Item = PrefixSlot> + '_ {
        self.slots.iter().flatten().copied()
    }

    /// Tokens before a source's own: the fixed prefix and one per slot.
    pub fn prefix_len(&self) -> usize {
        self.prefix().count() + self.slots().count()
    }
}

/// A part of the output layer's (or attentional layer's) input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Part {
    /// The top decoder state `s_t`.
    State = 1,
    /// The context `c_t`.
    Context = 2,
    /// The embedding of the step's input token.
    Embedding = 3,
    /// Luong's attentional vector `tanh(W_c [s_t; c_t] + b)`.
    Attentional = 4,
}

/// How a source line becomes tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Split {
    /// Every character is a token.
    Chars = 0,
    /// Tokens are separated by white space.
    Whitespace = 1,
}

/// The validated model description.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ModelDesc {
    /// The attention between the decoder and the memory (first: see [`AttentionDesc`]).
    pub attention: AttentionDesc,
    /// Source vocabulary size.
    pub src_vocab: usize,
    /// Target vocabulary size.
    pub tgt_vocab: usize,
    /// Source embedding size.
    pub enc_emb: usize,
    /// Target embedding size.
    pub dec_emb: usize,
    /// Encoder layers.
    pub enc_layers: usize,
    /// Encoder hidden size per direction.
    pub enc_hidden: usize,
    /// Bidirectional encoder.
    pub enc_bidir: bool,
    /// Encoder candidate-gate form (GRU; `After` for an LSTM).
    pub enc_reset: ResetMode,
    /// Size of a dense projection of the encoder outputs into the memory (values), if any.
    pub memory_proj: Option<usize>,
    /// Fixed source length the input is padded to with `src_pad` (0: no padding).
    pub src_pad_to: usize,
    /// Initial decoder state.
    pub init: Init,
    /// Decoder layers.
    pub dec_layers: usize,
    /// Decoder hidden size.
    pub dec_hidden: usize,
    /// Decoder candidate-gate form (GRU; `After` for an LSTM).
    pub dec_reset: ResetMode,
    /// Size of Luong's attentional layer, if any.
    pub attentional: Option<usize>,
    /// Parts of the output layer's input, in order.
    pub out_parts: [Option<Part>; MAX_OUT_PARTS],
    /// Source padding token.
    pub src_pad: u16,
    /// Source unknown token, if any.
    pub src_unk: Option<u16>,
    /// Token appended to every source, if any.
    pub src_eos: Option<u16>,
    /// First decoder input.
    pub tgt_start: u16,
    /// Decoding stops when this is produced (it is not output).
    pub tgt_end: u16,
    /// Most decoder steps.
    pub max_steps: usize,
    /// Source tokenization.
    pub split: Split,
    /// ASCII-lowercase the source first.
    pub lowercase: bool,
    /// Format of source embeddings (integer path).
    pub fmt_src_emb: Fmt,
    /// Format of target embeddings.
    pub fmt_dec_emb: Fmt,
    /// Format of the memory (projected encoder outputs, or the states themselves).
    pub fmt_memory: Fmt,
    /// The recurrent cells of both stacks and their settings.
    pub cells: Cells,
    /// Parts of the attentional layer's input, in order (all `None` without one).
    pub att_parts: [Option<Part>; MAX_OUT_PARTS],
    /// How a beam search decodes this model (greedy decoding ignores it).
    pub beam: BeamRule,
    /// Bridges, input feeding, attentional activation, output, source prefix, prefix
    /// slots, minimum output length.
    pub extras: Extras,
}

/// The recurrent cells of a model: each stack's cell, gate activation and cell-state
/// format, the encoder's masking of padded positions and an LSTM decoder's initial cell
/// state. [`Cells::GRU`] is what a model without LSTMs or masking has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Cells {
    /// Encoder cell.
    pub enc: CellKind,
    /// Decoder cell.
    pub dec: CellKind,
    /// Activation of the encoder cells' gates.
    pub enc_recurrent: Recurrent,
    /// Activation of the decoder cells' gates.
    pub dec_recurrent: Recurrent,
    /// How padded source positions are masked in the encoder (`None`: they are not,
    /// the encoder runs over them like any token). Needs `src_pad_to`.
    pub enc_mask: Option<Masked>,
    /// Initial cell state of an LSTM decoder ([`Init::Zeros`] for a GRU decoder).
    pub init_cell: Init,
    /// Format of the encoder's cell states (integer path; 0 for a GRU encoder).
    pub fmt_enc: Fmt,
    /// Format of the decoder's cell states (integer path; 0 for a GRU decoder).
    pub fmt_dec: Fmt,
}

impl Cells {
    /// GRUs with the logistic sigmoid in both stacks, no mask.
    pub const GRU: Cells = Cells {
        enc: CellKind::Gru,
        dec: CellKind::Gru,
        enc_recurrent: Recurrent::Sigmoid,
        dec_recurrent: Recurrent::Sigmoid,
        enc_mask: None,
        init_cell: Init::Zeros,
        fmt_enc: Fmt { frac: 0 },
        fmt_dec: Fmt { frac: 0 },
    };
}
