//! The stored description, [`RawDesc`]: its record, and [`ModelDesc::from_raw`] /
//! [`ModelDesc::to_raw`], which compare every code and flag whole.

use core::num::NonZeroU16;

use bytemuck::{Pod, Zeroable};
use rnn_core::{Masked, Recurrent, ResetMode};
use s2s_kernels::logprob::Alpha;
use s2s_kernels::{Fmt, Requant};

use super::beam_rule::{BeamRule, BeamVariant};
use super::limits::{MAX_OUT_PARTS, MAX_PREFIX, MAX_SLOTS, NO_SLOT_TOKEN, NO_TOKEN};
use super::model::{
    Activation, AttentionDesc, CellKind, Cells, Extras, Init, Logits, ModelDesc, Ordering, Part,
    PrefixSlot, ScoreKind, Split,
};
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
        let mut slots = [None; MAX_SLOTS];
        let mut ended = false;
        for ((o, &size), &default) in slots.iter_mut().zip(&r.slot_sizes).zip(&r.slot_defaults) {
            *o = match (NonZeroU16::new(size), default) {
                (None, 0) => {
                    ended = true;
                    None
                }
                (None, _) => return Err(Error::BadField("slot_defaults")),
                _ if ended => return Err(Error::BadField("slot_sizes")),
                (Some(size), default) => Some(PrefixSlot {
                    size,
                    default: (default != NO_SLOT_TOKEN).then_some(default),
                }),
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
            slots,
            min_steps: r.min_steps as usize,
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
            attention: AttentionDesc {
                ordering,
                score,
                dim: r.attn_dim as usize,
                query_proj: flag("attn_query_proj", r.attn_query_proj)?,
                key_proj: flag("attn_key_proj", r.attn_key_proj)?,
                mask_padding: flag("mask_padding", r.mask_padding)?,
                fmt_keys: Fmt { frac: r.fmts[3] },
                scale: f32::from_bits(r.score_scale),
                scale_q: r.score_scale_q,
            },
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
        let a = &self.attention;
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
            ordering: a.ordering as u32,
            score: a.score as u32,
            attn_dim: stored("attn_dim", a.dim)?,
            attn_query_proj: a.query_proj as u32,
            attn_key_proj: a.key_proj as u32,
            mask_padding: a.mask_padding as u32,
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
                a.fmt_keys.frac,
            ],
            score_scale: a.scale.to_bits(),
            score_scale_q: a.scale_q,
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
            min_steps: stored("min_steps", self.extras.min_steps)?,
            slot_sizes: self.extras.slots.map(|s| s.map_or(0, |s| s.size.get())),
            slot_defaults: self
                .extras
                .slots
                .map(|s| s.map_or(0, |s| s.default.unwrap_or(NO_SLOT_TOKEN))),
        })
    }
}
