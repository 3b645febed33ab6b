//! The model description: sizes, the variant of each part, special tokens and the
//! activation formats. Stored in the model file as [`RawDesc`], a fixed little-endian
//! record; [`ModelDesc::from_raw`] validates every field.

use bytemuck::{Pod, Zeroable};
use rnn_core::{Masked, Recurrent, ResetMode};
use s2s_kernels::logprob::Alpha;
use s2s_kernels::{Fmt, Requant};

use crate::beam::{BeamRule, BeamVariant};
use crate::format::Role;
use crate::Error;

/// Most recurrent layers in the encoder or the decoder.
pub const MAX_LAYERS: usize = 4;
/// Most parts of the output layer's input.
pub const MAX_OUT_PARTS: usize = 4;
/// Most dense layers a model has (see [`ModelDesc::layer_specs`]).
pub const MAX_SPECS: usize = 48;

/// Range of the activation formats' fractional bits.
pub const MIN_FRAC: i8 = -8;
/// See [`MIN_FRAC`].
pub const MAX_FRAC: i8 = 30;
/// Most fractional bits of an LSTM cell-state format (`Q(15-f).f`, `0 <= f <= 15`).
pub const MAX_CELL_FRAC: i8 = 15;

/// Largest size of any dimension, vocabulary, step count or padded length.
pub const MAX_SIZE: usize = u16::MAX as usize;

/// "No such token" in the description.
pub const NO_TOKEN: u32 = u32::MAX;

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
    /// Gate blocks of the cell's matrices (3 or 4).
    pub fn gates(self) -> usize {
        match self {
            CellKind::Gru => 3,
            CellKind::Lstm => 4,
        }
    }
}

/// How the decoder uses attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Ordering {
    /// No attention: the decoder sees only its input token and state.
    None = 0,
    /// Bahdanau: score with `s_{t-1}`, context `c_t`, decoder input `[embedding; c_t]`.
    Bahdanau = 1,
    /// Luong: the decoder cell first, score with `s_t`, then context `c_t`.
    Luong = 2,
}

/// The attention score (see `attention_core::Score`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum ScoreKind {
    /// `v^T tanh(W q + U k)`, `W` and `U` each optional (Keras `AdditiveAttention`
    /// has neither).
    Additive = 0,
    /// `q . k`.
    Dot = 1,
    /// `q . k / sqrt(d)`.
    ScaledDot = 2,
    /// `q^T W k`.
    General = 3,
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
    fn from_id(v: u32) -> Option<Self> {
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

/// Most fixed tokens a source can start with.
pub const MAX_PREFIX: usize = 4;

/// The decoder's bridges, input feeding, attentional activation, output normalisation
/// and source prefix (model-file format 5). [`Extras::NONE`] is what a model without
/// them has.
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
}

impl Extras {
    /// No shared bridge, no input feeding, `tanh`, softmax, no prefix.
    pub const NONE: Extras = Extras {
        bridge_shared: false,
        input_feed: false,
        att_act: Activation::Tanh,
        fmt_attentional: Fmt { frac: 0 },
        logits: Logits::Softmax,
        src_prefix: [None; MAX_PREFIX],
    };

    /// The prefix tokens.
    pub fn prefix(&self) -> impl Iterator<Item = u16> + '_ {
        self.src_prefix.iter().flatten().copied()
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

/// The description record as stored: 32-bit little-endian fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
#[allow(missing_docs)]
pub struct RawDesc {
    pub src_vocab: u32,
    pub tgt_vocab: u32,
    pub enc_emb: u32,
    pub dec_emb: u32,
    pub enc_layers: u32,
    pub enc_hidden: u32,
    pub enc_bidir: u32,
    pub enc_reset: u32,
    pub memory_proj: u32,
    pub ordering: u32,
    pub score: u32,
    pub attn_dim: u32,
    pub attn_query_proj: u32,
    pub attn_key_proj: u32,
    pub mask_padding: u32,
    pub src_pad_to: u32,
    pub init: u32,
    pub dec_layers: u32,
    pub dec_hidden: u32,
    pub dec_reset: u32,
    pub attentional: u32,
    pub out_parts: [u8; 4],
    pub src_pad: u32,
    pub src_unk: u32,
    pub src_eos: u32,
    pub tgt_start: u32,
    pub tgt_end: u32,
    pub max_steps: u32,
    pub split: u32,
    pub lowercase: u32,
    /// Activation formats (fractional bits) of the integer path:
    /// `[src embedding, target embedding, memory, keys]`.
    pub fmts: [i8; 4],
    /// Score scale as f32 bits (float precisions).
    pub score_scale: u32,
    /// Score scale as a requantizer (integer precision).
    pub score_scale_q: Requant,
    /// Encoder cell: 0 GRU, 1 LSTM.
    pub enc_cell: u32,
    /// Decoder cell: 0 GRU, 1 LSTM.
    pub dec_cell: u32,
    /// Encoder gates' activation (`Recurrent` id).
    pub enc_recurrent: u32,
    /// Decoder gates' activation (`Recurrent` id).
    pub dec_recurrent: u32,
    /// Masked encoder steps: 0 none (padding runs like any token), else a `Masked` id.
    pub enc_mask: u32,
    /// Initial cell state of an LSTM decoder (an `Init` code; 0 for a GRU decoder).
    pub init_cell: u32,
    /// Parts of the attentional layer's input, like `out_parts` (all 0 without it).
    pub att_parts: [u8; 4],
    /// Cell-state formats (fractional bits) of the integer path: `[encoder, decoder,
    /// 0, 0]`, 0 for a GRU stack.
    pub cell_fmts: [i8; 4],
    /// Beam search: `[variant (a BeamVariant id), alpha in halves, 0, 0]`.
    pub beam: [u8; 4],
    // ---- Format 5 (issue 12: ONNX-style decoders), kept together at the end. ----
    /// One bridge for every decoder layer: 0 or 1.
    pub bridge_shared: u32,
    /// Input feeding: 0 or 1.
    pub input_feed: u32,
    /// The attentional layer's activation (`Activation` code).
    pub att_act: u32,
    /// The output's normalisation (`Logits` code).
    pub logits: u32,
    /// Source prefix token ids, then `NO_TOKEN`.
    pub src_prefix: [u32; MAX_PREFIX],
    /// Formats (fractional bits) of the integer path: `[attentional vector, 0, 0, 0]`.
    pub extra_fmts: [i8; 4],
}

/// The validated model description.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ModelDesc {
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
    /// How the decoder uses attention.
    pub ordering: Ordering,
    /// The score (meaningless without attention).
    pub score: ScoreKind,
    /// Additive attention size (`v` length).
    pub attn_dim: usize,
    /// Additive score has a query matrix `W`.
    pub attn_query_proj: bool,
    /// Additive score has a key matrix `U`.
    pub attn_key_proj: bool,
    /// Attend to padding positions too (models trained without a mask).
    pub mask_padding: bool,
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
    /// Format of precomputed keys.
    pub fmt_keys: Fmt,
    /// Score scale, float precisions.
    pub score_scale: f32,
    /// Score scale, integer precision.
    pub score_scale_q: Requant,
    /// The recurrent cells of both stacks and their settings.
    pub cells: Cells,
    /// Parts of the attentional layer's input, in order (all `None` without one).
    pub att_parts: [Option<Part>; MAX_OUT_PARTS],
    /// How a beam search decodes this model (greedy decoding ignores it).
    pub beam: BeamRule,
    /// Bridges, input feeding, attentional activation, output, source prefix.
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

/// A list of parts as stored: codes `1..=4`, then zeros.
fn parts_of(name: &'static str, raw: &[u8; 4]) -> Result<[Option<Part>; MAX_OUT_PARTS], Error> {
    let mut parts = [None; MAX_OUT_PARTS];
    let mut ended = false;
    for (o, &p) in parts.iter_mut().zip(raw) {
        *o = match p {
            0 => {
                ended = true;
                None
            }
            _ if ended => return Err(Error::BadField(name)),
            1 => Some(Part::State),
            2 => Some(Part::Context),
            3 => Some(Part::Embedding),
            4 => Some(Part::Attentional),
            _ => return Err(Error::BadField(name)),
        };
    }
    Ok(parts)
}

fn parts_raw(parts: &[Option<Part>; MAX_OUT_PARTS]) -> [u8; 4] {
    let mut raw = [0u8; 4];
    for (o, p) in raw.iter_mut().zip(parts) {
        *o = p.map_or(0, |p| p as u8);
    }
    raw
}

fn cell_kind(name: &'static str, v: u32) -> Result<CellKind, Error> {
    code(name, v, |v| match v {
        0 => Some(CellKind::Gru),
        1 => Some(CellKind::Lstm),
        _ => None,
    })
}

fn recurrent(name: &'static str, v: u32) -> Result<Recurrent, Error> {
    code(name, v, |v| {
        u8::try_from(v).ok().and_then(Recurrent::from_id)
    })
}

/// A code field: `decode` maps the whole stored value (not just its low byte).
fn code<T>(name: &'static str, v: u32, decode: impl FnOnce(u32) -> Option<T>) -> Result<T, Error> {
    decode(v).ok_or(Error::BadField(name))
}

fn flag(name: &'static str, v: u32) -> Result<bool, Error> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::BadField(name)),
    }
}

/// A token id (its range is checked by [`ModelDesc::check`]).
fn token(name: &'static str, v: u32, vocab: u32) -> Result<u16, Error> {
    u16::try_from(v).map_err(|_| Error::TokenOutOfRange {
        what: name,
        id: v,
        vocab: vocab as usize,
    })
}

fn opt_token(name: &'static str, v: u32, vocab: u32) -> Result<Option<u16>, Error> {
    if v == NO_TOKEN {
        Ok(None)
    } else {
        token(name, v, vocab).map(Some)
    }
}

fn reset(name: &'static str, v: u32) -> Result<ResetMode, Error> {
    code(name, v, |v| {
        u8::try_from(v).ok().and_then(ResetMode::from_id)
    })
}

/// A size as its stored `u32`, refused (not truncated) when it does not fit.
fn stored(field: &'static str, v: usize) -> Result<u32, Error> {
    u32::try_from(v).map_err(|_| Error::FieldOverflow { field, value: v })
}

impl ModelDesc {
    /// Validates a stored description: every code and flag compared whole, then
    /// [`ModelDesc::check`] (ranges and consistency).
    pub fn from_raw(r: &RawDesc) -> Result<Self, Error> {
        let ordering = code("ordering", r.ordering, |v| match v {
            0 => Some(Ordering::None),
            1 => Some(Ordering::Bahdanau),
            2 => Some(Ordering::Luong),
            _ => None,
        })?;
        let score = code("score", r.score, |v| match v {
            0 => Some(ScoreKind::Additive),
            1 => Some(ScoreKind::Dot),
            2 => Some(ScoreKind::ScaledDot),
            3 => Some(ScoreKind::General),
            _ => None,
        })?;
        let init = code("init", r.init, Init::from_id)?;
        let init_cell = code("init_cell", r.init_cell, Init::from_id)?;
        let enc_mask = match r.enc_mask {
            0 => None,
            v => Some(code("enc_mask", v, |v| {
                u8::try_from(v).ok().and_then(Masked::from_id)
            })?),
        };
        let split = code("split", r.split, |v| match v {
            0 => Some(Split::Chars),
            1 => Some(Split::Whitespace),
            _ => None,
        })?;
        let out_parts = parts_of("out_parts", &r.out_parts)?;
        let att_parts = parts_of("att_parts", &r.att_parts)?;
        if r.cell_fmts[2..] != [0, 0] {
            return Err(Error::BadField("cell_fmts"));
        }
        let beam = match r.beam {
            [v, halves, 0, 0] => BeamVariant::from_id(v)
                .zip(Alpha::from_halves(halves))
                .map(|(variant, alpha)| BeamRule { variant, alpha }),
            _ => None,
        }
        .ok_or(Error::BadField("beam"))?;
        if r.extra_fmts[1..] != [0, 0, 0] {
            return Err(Error::BadField("extra_fmts"));
        }
        let mut src_prefix = [None; MAX_PREFIX];
        let mut ended = false;
        for (o, &v) in src_prefix.iter_mut().zip(&r.src_prefix) {
            *o = match v {
                NO_TOKEN => {
                    ended = true;
                    None
                }
                _ if ended => return Err(Error::BadField("src_prefix")),
                v => Some(token("src_prefix", v, r.src_vocab)?),
            };
        }
        let extras = Extras {
            bridge_shared: flag("bridge_shared", r.bridge_shared)?,
            input_feed: flag("input_feed", r.input_feed)?,
            att_act: code("att_act", r.att_act, |v| match v {
                0 => Some(Activation::Tanh),
                1 => Some(Activation::Relu),
                2 => Some(Activation::Identity),
                _ => None,
            })?,
            fmt_attentional: Fmt {
                frac: r.extra_fmts[0],
            },
            logits: code("logits", r.logits, |v| match v {
                0 => Some(Logits::Softmax),
                1 => Some(Logits::LogSoftmax),
                _ => None,
            })?,
            src_prefix,
        };
        let d = ModelDesc {
            src_vocab: r.src_vocab as usize,
            tgt_vocab: r.tgt_vocab as usize,
            enc_emb: r.enc_emb as usize,
            dec_emb: r.dec_emb as usize,
            enc_layers: r.enc_layers as usize,
            enc_hidden: r.enc_hidden as usize,
            enc_bidir: flag("enc_bidir", r.enc_bidir)?,
            enc_reset: reset("enc_reset", r.enc_reset)?,
            memory_proj: (r.memory_proj != 0).then_some(r.memory_proj as usize),
            ordering,
            score,
            attn_dim: r.attn_dim as usize,
            attn_query_proj: flag("attn_query_proj", r.attn_query_proj)?,
            attn_key_proj: flag("attn_key_proj", r.attn_key_proj)?,
            mask_padding: flag("mask_padding", r.mask_padding)?,
            src_pad_to: r.src_pad_to as usize,
            init,
            dec_layers: r.dec_layers as usize,
            dec_hidden: r.dec_hidden as usize,
            dec_reset: reset("dec_reset", r.dec_reset)?,
            attentional: (r.attentional != 0).then_some(r.attentional as usize),
            out_parts,
            src_pad: token("src_pad", r.src_pad, r.src_vocab)?,
            src_unk: opt_token("src_unk", r.src_unk, r.src_vocab)?,
            src_eos: opt_token("src_eos", r.src_eos, r.src_vocab)?,
            tgt_start: token("tgt_start", r.tgt_start, r.tgt_vocab)?,
            tgt_end: token("tgt_end", r.tgt_end, r.tgt_vocab)?,
            max_steps: r.max_steps as usize,
            split,
            lowercase: flag("lowercase", r.lowercase)?,
            fmt_src_emb: Fmt { frac: r.fmts[0] },
            fmt_dec_emb: Fmt { frac: r.fmts[1] },
            fmt_memory: Fmt { frac: r.fmts[2] },
            fmt_keys: Fmt { frac: r.fmts[3] },
            score_scale: f32::from_bits(r.score_scale),
            score_scale_q: r.score_scale_q,
            cells: Cells {
                enc: cell_kind("enc_cell", r.enc_cell)?,
                dec: cell_kind("dec_cell", r.dec_cell)?,
                enc_recurrent: recurrent("enc_recurrent", r.enc_recurrent)?,
                dec_recurrent: recurrent("dec_recurrent", r.dec_recurrent)?,
                enc_mask,
                init_cell,
                fmt_enc: Fmt {
                    frac: r.cell_fmts[0],
                },
                fmt_dec: Fmt {
                    frac: r.cell_fmts[1],
                },
            },
            att_parts,
            beam,
            extras,
        };
        d.check()?;
        Ok(d)
    }

    /// The stored form. A size too large for its 32-bit field is an error naming the
    /// field ([`Error::FieldOverflow`]), never a truncated value; the ranges themselves
    /// are checked by [`ModelDesc::from_raw`], which a writer runs on the result.
    pub fn to_raw(&self) -> Result<RawDesc, Error> {
        let out_parts = parts_raw(&self.out_parts);
        let tok = |t: Option<u16>| t.map_or(NO_TOKEN, u32::from);
        Ok(RawDesc {
            src_vocab: stored("src_vocab", self.src_vocab)?,
            tgt_vocab: stored("tgt_vocab", self.tgt_vocab)?,
            enc_emb: stored("enc_emb", self.enc_emb)?,
            dec_emb: stored("dec_emb", self.dec_emb)?,
            enc_layers: stored("enc_layers", self.enc_layers)?,
            enc_hidden: stored("enc_hidden", self.enc_hidden)?,
            enc_bidir: self.enc_bidir as u32,
            enc_reset: self.enc_reset as u32,
            memory_proj: stored("memory_proj", self.memory_proj.unwrap_or(0))?,
            ordering: self.ordering as u32,
            score: self.score as u32,
            attn_dim: stored("attn_dim", self.attn_dim)?,
            attn_query_proj: self.attn_query_proj as u32,
            attn_key_proj: self.attn_key_proj as u32,
            mask_padding: self.mask_padding as u32,
            src_pad_to: stored("src_pad_to", self.src_pad_to)?,
            init: self.init as u32,
            dec_layers: stored("dec_layers", self.dec_layers)?,
            dec_hidden: stored("dec_hidden", self.dec_hidden)?,
            dec_reset: self.dec_reset as u32,
            attentional: stored("attentional", self.attentional.unwrap_or(0))?,
            out_parts,
            src_pad: self.src_pad as u32,
            src_unk: tok(self.src_unk),
            src_eos: tok(self.src_eos),
            tgt_start: self.tgt_start as u32,
            tgt_end: self.tgt_end as u32,
            max_steps: stored("max_steps", self.max_steps)?,
            split: self.split as u32,
            lowercase: self.lowercase as u32,
            fmts: [
                self.fmt_src_emb.frac,
                self.fmt_dec_emb.frac,
                self.fmt_memory.frac,
                self.fmt_keys.frac,
            ],
            score_scale: self.score_scale.to_bits(),
            score_scale_q: self.score_scale_q,
            enc_cell: self.cells.enc as u32,
            dec_cell: self.cells.dec as u32,
            enc_recurrent: self.cells.enc_recurrent as u32,
            dec_recurrent: self.cells.dec_recurrent as u32,
            enc_mask: self.cells.enc_mask.map_or(0, |m| m as u32),
            init_cell: self.cells.init_cell as u32,
            att_parts: parts_raw(&self.att_parts),
            cell_fmts: [self.cells.fmt_enc.frac, self.cells.fmt_dec.frac, 0, 0],
            beam: [self.beam.variant as u8, self.beam.alpha.halves(), 0, 0],
            bridge_shared: self.extras.bridge_shared as u32,
            input_feed: self.extras.input_feed as u32,
            att_act: self.extras.att_act as u32,
            logits: self.extras.logits as u32,
            src_prefix: self.extras.src_prefix.map(tok),
            extra_fmts: [self.extras.fmt_attentional.frac, 0, 0, 0],
        })
    }

    /// Checks every range (sizes up to [`MAX_SIZE`], token ids, formats, scales) and
    /// that the parts fit together (sizes that must agree, options that need others,
    /// fields a variant does not use left at zero). Called by [`ModelDesc::from_raw`];
    /// call it after building one by hand.
    pub fn check(&self) -> Result<(), Error> {
        let sizes = [
            ("src_vocab", self.src_vocab),
            ("tgt_vocab", self.tgt_vocab),
            ("enc_emb", self.enc_emb),
            ("dec_emb", self.dec_emb),
            ("enc_layers", self.enc_layers),
            ("enc_hidden", self.enc_hidden),
            ("dec_layers", self.dec_layers),
            ("dec_hidden", self.dec_hidden),
            ("max_steps", self.max_steps),
        ];
        let optional = [
            ("memory_proj", self.memory_proj.unwrap_or(0)),
            ("attn_dim", self.attn_dim),
            ("src_pad_to", self.src_pad_to),
            ("attentional", self.attentional.unwrap_or(0)),
        ];
        for (name, v) in sizes {
            if v == 0 || v > MAX_SIZE {
                return Err(Error::BadField(name));
            }
        }
        for (name, v) in optional {
            if v > MAX_SIZE {
                return Err(Error::BadField(name));
            }
        }
        // `Some(0)` for an optional layer: stored as 0 it would read back as none.
        if self.memory_proj == Some(0) {
            return Err(Error::BadField("memory_proj"));
        }
        if self.attentional == Some(0) {
            return Err(Error::BadField("attentional"));
        }
        let tokens = [
            ("src_pad", Some(self.src_pad), self.src_vocab),
            ("src_unk", self.src_unk, self.src_vocab),
            ("src_eos", self.src_eos, self.src_vocab),
            ("tgt_start", Some(self.tgt_start), self.tgt_vocab),
            ("tgt_end", Some(self.tgt_end), self.tgt_vocab),
            ("src_prefix", self.extras.src_prefix[0], self.src_vocab),
            ("src_prefix", self.extras.src_prefix[1], self.src_vocab),
            ("src_prefix", self.extras.src_prefix[2], self.src_vocab),
            ("src_prefix", self.extras.src_prefix[3], self.src_vocab),
        ];
        for (what, t, vocab) in tokens {
            if let Some(id) = t.filter(|&t| t as usize >= vocab) {
                return Err(Error::TokenOutOfRange {
                    what,
                    id: id as u32,
                    vocab,
                });
            }
        }
        for (name, f) in [
            ("fmt_src_emb", self.fmt_src_emb),
            ("fmt_dec_emb", self.fmt_dec_emb),
            ("fmt_memory", self.fmt_memory),
            ("fmt_keys", self.fmt_keys),
        ] {
            if !(MIN_FRAC..=MAX_FRAC).contains(&f.frac) {
                return Err(Error::BadField(name));
            }
        }
        for (name, f, cell) in [
            ("fmt_enc_cell", self.cells.fmt_enc, self.cells.enc),
            ("fmt_dec_cell", self.cells.fmt_dec, self.cells.dec),
        ] {
            let ok = match cell {
                CellKind::Lstm => (0..=MAX_CELL_FRAC).contains(&f.frac),
                // A GRU stack has no cell state: the field is not used.
                CellKind::Gru => f.frac == 0,
            };
            if !ok {
                return Err(Error::BadField(name));
            }
        }
        if !self.score_scale.is_finite() {
            return Err(Error::BadField("score_scale"));
        }
        if !self.score_scale_q.is_valid() {
            return Err(Error::BadField("score_scale_q"));
        }

        let bad = |rule| Err(Error::Inconsistent(rule));
        if self.enc_layers > MAX_LAYERS || self.dec_layers > MAX_LAYERS {
            return bad("layers: at most 4 per stack");
        }
        let attention = self.ordering != Ordering::None;
        if !attention && (self.memory_proj.is_some() || self.attentional.is_some()) {
            return bad("memory projection or attentional layer without attention");
        }
        if !attention
            && (self.score != ScoreKind::Additive
                || self.attn_dim != 0
                || self.attn_query_proj
                || self.attn_key_proj
                || self.mask_padding)
        {
            return bad("score, attn_dim, attn_query_proj, attn_key_proj, mask_padding: set without attention");
        }
        if attention {
            let (q, m) = (self.dec_hidden, self.memory_dim());
            match self.score {
                ScoreKind::Additive => {
                    let a = self.attn_dim;
                    if a == 0
                        || (!self.attn_query_proj && a != q)
                        || (!self.attn_key_proj && a != m)
                    {
                        return bad(
                            "attn_dim: without a matrix, query or memory size must equal it",
                        );
                    }
                }
                _ if self.attn_dim != 0 || self.attn_query_proj || self.attn_key_proj => {
                    return bad(
                        "attn_dim, attn_query_proj, attn_key_proj: only for the additive score",
                    );
                }
                ScoreKind::Dot | ScoreKind::ScaledDot if q != m => {
                    return bad("dot score: decoder hidden size must equal memory size");
                }
                _ => {}
            }
        }
        if self.init == Init::Last {
            if self.dec_layers > self.enc_layers {
                return bad("init last: more decoder than encoder layers");
            }
            if self.enc_output() != self.dec_hidden {
                return bad("init last: encoder state size differs from decoder hidden size");
            }
        }
        if self.cells.enc == CellKind::Lstm && self.enc_reset != ResetMode::After {
            return bad("enc_reset: set for an LSTM encoder (a GRU field)");
        }
        if self.cells.dec == CellKind::Lstm && self.dec_reset != ResetMode::After {
            return bad("dec_reset: set for an LSTM decoder (a GRU field)");
        }
        if self.cells.init_cell == Init::Mean {
            return bad("init_cell mean: the mean bridge is for the state only");
        }
        if self.cells.dec == CellKind::Gru && self.cells.init_cell != Init::Zeros {
            return bad("init_cell: a cell state for a GRU decoder");
        }
        if self.cells.init_cell == Init::Last {
            if self.cells.enc != CellKind::Lstm {
                return bad("init_cell last: the encoder has no cell state (GRU)");
            }
            if self.dec_layers > self.enc_layers {
                return bad("init_cell last: more decoder than encoder layers");
            }
            if self.enc_output() != self.dec_hidden {
                return bad("init_cell last: encoder state size differs from decoder hidden size");
            }
        }
        if self.cells.enc_mask.is_some() && self.src_pad_to == 0 {
            return bad("enc_mask: a mask without source padding (src_pad_to)");
        }
        self.check_extras()?;
        check_parts(&self.out_parts, OUT_PARTS_RULES, |p| match p {
            Part::State | Part::Embedding => true,
            Part::Context => attention,
            Part::Attentional => self.attentional.is_some(),
        })?;
        match self.attentional {
            Some(_) => check_parts(&self.att_parts, ATT_PARTS_RULES, |p| {
                !matches!(p, Part::Attentional)
            })?,
            None if self.att_parts != [None; MAX_OUT_PARTS] => {
                return bad("att_parts: set without an attentional layer");
            }
            None => {}
        }
        Ok(())
    }

    /// The rules of [`Extras`] (part of [`ModelDesc::check`]).
    fn check_extras(&self) -> Result<(), Error> {
        let bad = |rule| Err(Error::Inconsistent(rule));
        let x = &self.extras;
        if x.bridge_shared && !self.init.is_bridge() {
            return bad("bridge_shared: without a bridge (init dense or mean)");
        }
        if x.input_feed && (self.ordering != Ordering::Luong || self.attentional.is_none()) {
            return bad("input_feed: needs the Luong ordering and an attentional layer");
        }
        if self.attentional.is_none()
            && (x.att_act != Activation::Tanh || x.fmt_attentional.frac != 0)
        {
            return bad("att_act, fmt_attentional: set without an attentional layer");
        }
        match x.att_act {
            Activation::Tanh if x.fmt_attentional.frac != 0 => {
                return Err(Error::BadField("fmt_attentional"));
            }
            Activation::Relu | Activation::Identity
                if !(MIN_FRAC..=MAX_FRAC).contains(&x.fmt_attentional.frac) =>
            {
                return Err(Error::BadField("fmt_attentional"));
            }
            _ => {}
        }
        let mut ended = false;
        for p in &x.src_prefix {
            match p {
                None => ended = true,
                Some(_) if ended => return bad("src_prefix: a token after an empty slot"),
                Some(_) => {}
            }
        }
        if self.src_pad_to > 0 && x.prefix().count() >= self.src_pad_to {
            return bad("src_prefix: no room for a source token within src_pad_to");
        }
        Ok(())
    }

    /// Number of bridges `bridge.l<l>` (0 without [`Init::Dense`] / [`Init::Mean`]).
    pub fn bridges(&self) -> usize {
        match (self.init.is_bridge(), self.extras.bridge_shared) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => self.dec_layers,
        }
    }

    /// Gate blocks of the encoder's cells (3 GRU, 4 LSTM).
    pub fn enc_gates(&self) -> usize {
        self.cells.enc.gates()
    }
    /// Gate blocks of the decoder's cells.
    pub fn dec_gates(&self) -> usize {
        self.cells.dec.gates()
    }
    /// The attentional layer's input parts.
    pub fn att_parts(&self) -> impl Iterator<Item = Part> + '_ {
        self.att_parts.iter().flatten().copied()
    }
    /// Input size of the attentional layer, and its number of parts.
    pub fn att_input(&self) -> (usize, usize) {
        self.att_parts()
            .fold((0, 0), |(d, n), p| (d + self.part_dim(p), n + 1))
    }

    /// Encoder output size per position (`H` or `2H`).
    pub fn enc_output(&self) -> usize {
        self.enc_hidden * (1 + self.enc_bidir as usize)
    }
    /// Memory (value) size per position.
    pub fn memory_dim(&self) -> usize {
        self.memory_proj.unwrap_or(self.enc_output())
    }
    /// True when the decoder attends.
    pub fn has_attention(&self) -> bool {
        self.ordering != Ordering::None
    }
    /// Input size of encoder layer `l`.
    pub fn enc_input(&self, l: usize) -> usize {
        if l == 0 {
            self.enc_emb
        } else {
            self.enc_output()
        }
    }
    /// Input size of decoder layer `l`, and its number of parts.
    pub fn dec_input(&self, l: usize) -> (usize, usize) {
        match (l, self.ordering) {
            (0, Ordering::Bahdanau) => (self.dec_emb + self.memory_dim(), 2),
            (0, _) if self.extras.input_feed => (self.dec_emb + self.attentional.unwrap_or(0), 2),
            (0, _) => (self.dec_emb, 1),
            _ => (self.dec_hidden, 1),
        }
    }
    /// Size of an output part.
    pub fn part_dim(&self, p: Part) -> usize {
        match p {
            Part::State => self.dec_hidden,
            Part::Context => self.memory_dim(),
            Part::Embedding => self.dec_emb,
            Part::Attentional => self.attentional.unwrap_or(0),
        }
    }
    /// The output layer's parts.
    pub fn out_parts(&self) -> impl Iterator<Item = Part> + '_ {
        self.out_parts.iter().flatten().copied()
    }
    /// Input size of the output layer, and its number of parts.
    pub fn out_input(&self) -> (usize, usize) {
        self.out_parts()
            .fold((0, 0), |(d, n), p| (d + self.part_dim(p), n + 1))
    }
    /// Size of the keys per position (when stored apart from the memory).
    pub fn key_dim(&self) -> usize {
        match self.score {
            ScoreKind::Additive if self.attn_key_proj => self.attn_dim,
            ScoreKind::General => self.dec_hidden,
            _ => self.memory_dim(),
        }
    }
    /// True when keys are computed and stored apart from the memory.
    pub fn keys_stored(&self) -> bool {
        self.has_attention()
            && match self.score {
                ScoreKind::Additive => self.attn_key_proj,
                ScoreKind::General => true,
                _ => false,
            }
    }

    /// Every dense layer (embeddings and recurrent matrices included) the description calls
    /// for, with its shape: the one list that binding, importing and quantizing follow.
    pub fn layer_specs(&self) -> heapless::Vec<LayerSpec, MAX_SPECS> {
        let mut v = heapless::Vec::new();
        // MAX_SPECS covers the largest description check() admits.
        self.for_each_layer(|s| {
            let _ = v.push(s);
        });
        v
    }

    /// The spec of one dense layer, if the description has it (without building the
    /// whole list: binding on a small device calls this for every layer).
    pub fn layer_spec(&self, role: Role, layer: usize, dir: usize) -> Option<LayerSpec> {
        let mut found = None;
        self.for_each_layer(|s| {
            if s.role == role && s.layer == layer && s.dir == dir {
                found = Some(s);
            }
        });
        found
    }

    /// Calls `f` with every dense layer, in [`ModelDesc::layer_specs`] order, without
    /// building the list.
    pub fn for_each_layer(&self, mut f: impl FnMut(LayerSpec)) {
        let mut index = 0;
        let mut add = |role, layer, dir, rows, cols, parts| {
            f(LayerSpec {
                index,
                role,
                layer,
                dir,
                rows,
                cols,
                parts,
            });
            index += 1;
        };
        add(Role::EncEmb, 0, 0, self.src_vocab, self.enc_emb, 1);
        for l in 0..self.enc_layers {
            for dir in 0..1 + self.enc_bidir as usize {
                let gh = self.enc_gates() * self.enc_hidden;
                add(Role::EncWih, l, dir, gh, self.enc_input(l), 1);
                add(Role::EncWhh, l, dir, gh, self.enc_hidden, 1);
            }
        }
        if let Some(m) = self.memory_proj {
            add(Role::MemoryProj, 0, 0, m, self.enc_output(), 1);
        }
        if self.has_attention() {
            let (q, m, a) = (self.dec_hidden, self.memory_dim(), self.attn_dim);
            match self.score {
                ScoreKind::Additive => {
                    if self.attn_query_proj {
                        add(Role::AttnQuery, 0, 0, a, q, 1);
                    }
                    if self.attn_key_proj {
                        add(Role::AttnKey, 0, 0, a, m, 1);
                    }
                    add(Role::AttnV, 0, 0, 1, a, 1);
                }
                ScoreKind::General => add(Role::AttnGeneral, 0, 0, q, m, 1),
                ScoreKind::Dot | ScoreKind::ScaledDot => {}
            }
        }
        for l in 0..self.bridges() {
            add(Role::Bridge, l, 0, self.dec_hidden, self.enc_output(), 1);
        }
        if self.cells.init_cell == Init::Dense {
            for l in 0..self.dec_layers {
                add(Role::BridgeC, l, 0, self.dec_hidden, self.enc_output(), 1);
            }
        }
        add(Role::DecEmb, 0, 0, self.tgt_vocab, self.dec_emb, 1);
        for l in 0..self.dec_layers {
            let (i, parts) = self.dec_input(l);
            let gh = self.dec_gates() * self.dec_hidden;
            add(Role::DecWih, l, 0, gh, i, parts);
            add(Role::DecWhh, l, 0, gh, self.dec_hidden, 1);
        }
        if let Some(c) = self.attentional {
            let (ai, ap) = self.att_input();
            add(Role::Attentional, 0, 0, c, ai, ap);
        }
        let (oi, op) = self.out_input();
        add(Role::Out, 0, 0, self.tgt_vocab, oi, op);
    }

    /// Format of the memory: the projection's calibrated format, or `Q0.15` when the
    /// memory is the encoder states themselves.
    pub fn memory_fmt(&self) -> Fmt {
        if self.memory_proj.is_some() {
            self.fmt_memory
        } else {
            Fmt::Q15
        }
    }

    /// Format of each input part of a dense layer on the integer path; for an
    /// embedding table, the format of the rows it produces. The quantizer folds these
    /// into the layer's requantizers.
    pub fn part_fmts(&self, s: &LayerSpec) -> heapless::Vec<Fmt, MAX_OUT_PARTS> {
        let q15 = Fmt::Q15;
        let mut v = heapless::Vec::new();
        let mut push = |f| {
            let _ = v.push(f);
        };
        match s.role {
            Role::EncEmb => push(self.fmt_src_emb),
            Role::DecEmb => push(self.fmt_dec_emb),
            Role::EncWih if s.layer == 0 => push(self.fmt_src_emb),
            Role::AttnKey | Role::AttnGeneral => push(self.memory_fmt()),
            Role::DecWih if s.layer == 0 => {
                push(self.fmt_dec_emb);
                if self.ordering == Ordering::Bahdanau {
                    push(self.memory_fmt());
                }
                if self.extras.input_feed {
                    push(self.part_fmt(Part::Attentional));
                }
            }
            Role::Attentional => {
                for p in self.att_parts() {
                    push(self.part_fmt(p));
                }
            }
            Role::Out => {
                for p in self.out_parts() {
                    push(self.part_fmt(p));
                }
            }
            // The cell states of an LSTM encoder, or a GRU encoder's states.
            Role::BridgeC => push(match self.cells.enc {
                CellKind::Lstm => self.cells.fmt_enc,
                CellKind::Gru => q15,
            }),
            // Recurrent states and outputs, tanh outputs: Q0.15.
            Role::EncWih
            | Role::EncWhh
            | Role::DecWih
            | Role::DecWhh
            | Role::MemoryProj
            | Role::AttnQuery
            | Role::AttnV
            | Role::Bridge => push(q15),
        }
        v
    }
}

impl ModelDesc {
    /// Format of the attentional vector on the integer path: `Q0.15` after `tanh`,
    /// else the calibrated [`Extras::fmt_attentional`].
    pub fn attentional_fmt(&self) -> Fmt {
        match self.extras.att_act {
            Activation::Tanh => Fmt::Q15,
            Activation::Relu | Activation::Identity => self.extras.fmt_attentional,
        }
    }

    /// Format of an output or attentional part on the integer path.
    pub fn part_fmt(&self, p: Part) -> Fmt {
        match p {
            Part::Attentional => self.attentional_fmt(),
            Part::State => Fmt::Q15,
            Part::Context => self.memory_fmt(),
            Part::Embedding => self.fmt_dec_emb,
        }
    }
}

/// The rules a list of parts breaks, by list: a gap, a part it cannot have, none.
type PartsRules = [&'static str; 3];
const OUT_PARTS_RULES: PartsRules = [
    "out_parts: a part after an empty slot",
    "out_parts: part not produced by this decoder",
    "out_parts: empty",
];
const ATT_PARTS_RULES: PartsRules = [
    "att_parts: a part after an empty slot",
    "att_parts: part not available to the attentional layer",
    "att_parts: empty",
];

/// Checks a list of parts: no gap, not empty, and each part allowed by `ok`.
fn check_parts(
    parts: &[Option<Part>; MAX_OUT_PARTS],
    rules: PartsRules,
    ok: impl Fn(Part) -> bool,
) -> Result<(), Error> {
    let mut ended = false;
    for p in parts {
        let Some(p) = p else {
            ended = true;
            continue;
        };
        if ended {
            return Err(Error::Inconsistent(rules[0]));
        }
        if !ok(*p) {
            return Err(Error::Inconsistent(rules[1]));
        }
    }
    if parts[0].is_none() {
        return Err(Error::Inconsistent(rules[2]));
    }
    Ok(())
}

/// A dense layer of a model: where it is and its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LayerSpec {
    /// Position in [`ModelDesc::layer_specs`] (the layer's bit in a model file's bias
    /// mask).
    pub index: usize,
    /// Which layer.
    pub role: Role,
    /// Index in its stack.
    pub layer: usize,
    /// Direction (0 forward, 1 backward).
    pub dir: usize,
    /// Output size.
    pub rows: usize,
    /// Input size.
    pub cols: usize,
    /// Parts of the input (concatenations).
    pub parts: usize,
}

impl LayerSpec {
    /// Whether its input may carry a bias slot: embeddings have none.
    pub fn is_embedding(&self) -> bool {
        matches!(self.role, Role::EncEmb | Role::DecEmb)
    }
}
