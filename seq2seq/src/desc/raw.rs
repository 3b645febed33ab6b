//! The stored description as a whole: [`ModelDesc::from_raw`] and
//! [`ModelDesc::to_raw`] over the record [`RawDesc`] (`record`), which compare every
//! code and flag whole.

use core::num::NonZeroU16;

use rnn_core::{Masked, Recurrent};
use s2s_kernels::logprob::Alpha;
use s2s_kernels::Fmt;

use super::attention::AttentionDesc;
use super::beam_rule::{BeamRule, BeamVariant};
use super::limits::{MAX_OUT_PARTS, MAX_PREFIX, MAX_SLOTS, NO_SLOT_TOKEN, NO_TOKEN};
use super::model::{
    Activation, CellKind, Cells, Extras, Init, Logits, ModelDesc, Part, PrefixSlot, Split,
};
use super::record::{code, flag, opt_token, reset, stored, token, RawDesc};
use crate::Error;

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

impl ModelDesc {
    /// Validates a stored description: every code and flag compared whole, then
    /// [`ModelDesc::check`] (ranges and consistency).
    pub fn from_raw(r: &RawDesc) -> Result<Self, Error> {
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
            attention: AttentionDesc::from_raw(r)?,
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
        let mut r = RawDesc {
            src_vocab: stored("src_vocab", self.src_vocab)?,
            tgt_vocab: stored("tgt_vocab", self.tgt_vocab)?,
            enc_emb: stored("enc_emb", self.enc_emb)?,
            dec_emb: stored("dec_emb", self.dec_emb)?,
            enc_layers: stored("enc_layers", self.enc_layers)?,
            enc_hidden: stored("enc_hidden", self.enc_hidden)?,
            enc_bidir: self.enc_bidir as u32,
            enc_reset: self.enc_reset as u32,
            memory_proj: stored("memory_proj", self.memory_proj.unwrap_or(0))?,
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
                0,
            ],
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
            ..RawDesc::default()
        };
        self.attention.store(&mut r)?;
        Ok(r)
    }
}
