//! The description's record as stored, [`RawDesc`] (32-bit little-endian fields), and
//! how one field is read and written: a code or flag compared whole, a token id, a size
//! refused when it does not fit. `raw` converts the whole record; `attention` its own
//! fields.

use bytemuck::{Pod, Zeroable};
use rnn_core::ResetMode;
use s2s_kernels::Requant;

use super::limits::{MAX_PREFIX, MAX_SLOTS, NO_TOKEN};
use crate::Error;

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
    // ---- Format 7 (issue 31: per-call prefix tokens, a minimum output length). ----
    /// Fewest output tokens before the end token can be chosen.
    pub min_steps: u32,
    /// Each prefix slot's number of tokens, then 0 (their ids and names are stored with
    /// the vocabularies).
    pub slot_sizes: [u16; MAX_SLOTS],
    /// Each prefix slot's default source token id, or `NO_SLOT_TOKEN` (0 past the last
    /// slot).
    pub slot_defaults: [u16; MAX_SLOTS],
    // ---- Format 8 (issue 29: MoChA). ----
    /// Monotonic attention's chunk width (0 for the other orderings).
    pub attn_chunk: u32,
    // ---- Format 9 (issue 29: local attention). ----
    /// Local attention's half-width `D` (0: global attention).
    pub attn_window: u32,
    // ---- Format 10 (issue 29: local-p attention). ----
    /// Local-p attention's position predictor size (rows of `W_p`; 0: local-m, or no
    /// local attention).
    pub attn_predict: u32,
}

/// A code field: `decode` maps the whole stored value (not just its low byte).
pub(super) fn code<T>(
    name: &'static str,
    v: u32,
    decode: impl FnOnce(u32) -> Option<T>,
) -> Result<T, Error> {
    decode(v).ok_or(Error::BadField(name))
}

pub(super) fn flag(name: &'static str, v: u32) -> Result<bool, Error> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::BadField(name)),
    }
}

/// A token id (its range is checked by [`ModelDesc::check`](super::ModelDesc::check)).
pub(super) fn token(name: &'static str, v: u32, vocab: u32) -> Result<u16, Error> {
    u16::try_from(v).map_err(|_| Error::TokenOutOfRange {
        what: name,
        id: v,
        vocab: vocab as usize,
    })
}

pub(super) fn opt_token(name: &'static str, v: u32, vocab: u32) -> Result<Option<u16>, Error> {
    if v == NO_TOKEN {
        Ok(None)
    } else {
        token(name, v, vocab).map(Some)
    }
}

pub(super) fn reset(name: &'static str, v: u32) -> Result<ResetMode, Error> {
    code(name, v, |v| {
        u8::try_from(v).ok().and_then(ResetMode::from_id)
    })
}

/// A size as its stored `u32`, refused (not truncated) when it does not fit.
pub(super) fn stored(field: &'static str, v: usize) -> Result<u32, Error> {
    u32::try_from(v).map_err(|_| Error::FieldOverflow { field, value: v })
}
