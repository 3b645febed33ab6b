//! A description's attention, [`AttentionDesc`]: how the decoder uses it
//! ([`Ordering`]), its score ([`ScoreKind`]) with the score's sizes, scale and key
//! format, and what they imply: the rules they keep, the dense layers they call for,
//! the keys stored per source position, the cargo feature they need and their stored
//! fields. Everything the description says of attention is here; the recipe in
//! docs/ARCHITECTURE.md ("Adding an attention kind") starts in this file.

use s2s_kernels::{Fmt, Requant};

use super::limits::{MAX_CHUNK, MAX_FRAC, MAX_WINDOW, MIN_FRAC};
use super::record::{code, flag, RawDesc};
use super::role::Role;
use crate::features::Feature;
use crate::Error;

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
    /// Hard monotonic alignment (Raffel et al., 2017) in Bahdanau's order: from the
    /// position attended at the previous step (the first at the first), the first
    /// position whose energy, the additive score with `v`'s bias as its offset, is at
    /// least 0 is attended, its memory row being `c_t`; none: `c_t = 0`. Decoded
    /// online, never looking back (`attention_core::Attention::monotonic_marked`).
    /// With a [`AttentionDesc::chunk`] of `w > 1` this is MoChA (Chiu and Raffel,
    /// 2018): the context is the softmax over the chunk of the `w` positions ending at
    /// the one attended (fewer at the source's start) of the same energies.
    Monotonic = 3,
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

impl Ordering {
    /// Every ordering, indexed by its stored code.
    pub const ALL: [Ordering; 4] = [
        Ordering::None,
        Ordering::Bahdanau,
        Ordering::Luong,
        Ordering::Monotonic,
    ];

    /// Its name in a model's configuration: `none`, `bahdanau`, `luong` or
    /// `monotonic`.
    pub fn name(self) -> &'static str {
        match self {
            Ordering::None => "none",
            Ordering::Bahdanau => "bahdanau",
            Ordering::Luong => "luong",
            Ordering::Monotonic => "monotonic",
        }
    }

    /// True when a model of this ordering decodes greedily only: a beam hypothesis's
    /// state is its decoder state, and a monotonic attention's position is not part of
    /// it (a beam search is refused with `Error::GreedyOnly`).
    pub fn greedy_only(self) -> bool {
        self == Ordering::Monotonic
    }

    /// True when the context is computed before the decoder cell, from `s_{t-1}`, and
    /// is part of the cell's input (Bahdanau's order).
    pub fn context_first(self) -> bool {
        matches!(self, Ordering::Bahdanau | Ordering::Monotonic)
    }
}

impl ScoreKind {
    /// Every score, indexed by its stored code.
    pub const ALL: [ScoreKind; 4] = [
        ScoreKind::Additive,
        ScoreKind::Dot,
        ScoreKind::ScaledDot,
        ScoreKind::General,
    ];

    /// Its name in a model's configuration: `additive`, `dot`, `scaled-dot` or
    /// `general`.
    pub fn name(self) -> &'static str {
        match self {
            ScoreKind::Additive => "additive",
            ScoreKind::Dot => "dot",
            ScoreKind::ScaledDot => "scaled-dot",
            ScoreKind::General => "general",
        }
    }

    /// True when the score is multiplied by [`AttentionDesc::scale`] (on the integer
    /// path by [`AttentionDesc::scale_q`]).
    pub fn scaled(self) -> bool {
        match self {
            ScoreKind::Additive => false,
            ScoreKind::Dot | ScoreKind::ScaledDot | ScoreKind::General => true,
        }
    }

    /// The feature that compiles this score.
    pub fn feature(self) -> Feature {
        match self {
            ScoreKind::Additive => Feature::Additive,
            ScoreKind::Dot | ScoreKind::ScaledDot | ScoreKind::General => Feature::Multiplicative,
        }
    }
}

/// A model's attention: how the decoder uses it, its score with the score's sizes,
/// scale and key format, and which source positions it attends
/// ([`AttentionDesc::NONE`]: none, with the neutral scale and key format).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
// Laid out as written, and first in `ModelDesc`: the Cortex-M0's loads reach only small
// offsets, and the minimal micro:bit build measured 56,548 bytes of runtime flash this
// way (as with the loose fields before) against 56,660 with the default layout, when
// the value came (56,396 since it is this module's).
#[repr(C)]
pub struct AttentionDesc {
    /// How the decoder uses attention ([`Ordering::None`]: not at all, and the score's
    /// fields are zero; see [`AttentionDesc::attends`]).
    pub ordering: Ordering,
    /// The score.
    pub score: ScoreKind,
    /// Monotonic attention's chunk width `w`: 1 attends the one position the scan stops
    /// at (hard monotonic), more the softmax over the `w` positions ending there
    /// (MoChA). 0 for the other orderings. (A `u16` in the two bytes after the codes:
    /// the fields after it keep their offsets, and the Cortex-M0's counts theirs.)
    pub chunk: u16,
    /// Additive attention size (`v` length; at most `MAX_SIZE`, a `u16`).
    pub dim: u16,
    /// Local attention's half-width `D` (Luong et al., 2015, local-m): the step of index
    /// `i` attends the `2D + 1` positions centred on `min(i, n - 1)` (`n` the positions
    /// it may attend), those past the source's ends left out; 0: every position (global
    /// attention). Bahdanau and Luong orderings only. (A `u16` beside `dim`: the fields
    /// after them keep their offsets.)
    pub window: u16,
    /// Local-p attention's position predictor size `P` (Luong et al., 2015): the window
    /// is centred on the position nearest `p = n sigmoid(v_p . tanh(W_p q))` instead of
    /// on the step's index (`W_p`: `P` x query size, `v_p`: 1 x `P`, each with a bias),
    /// and each of its softmax weights is multiplied by `exp(-(s - p)^2 / (2 sigma^2))`,
    /// `sigma = D / 2`. 0: local-m (or no local attention).
    pub predict: u16,
    /// Additive score has a query matrix `W`.
    pub query_proj: bool,
    /// Additive score has a key matrix `U`.
    pub key_proj: bool,
    /// Attend to padding positions too (models trained without a mask).
    pub mask_padding: bool,
    /// Format of precomputed keys (integer path).
    pub fmt_keys: Fmt,
    /// Score scale, float precisions.
    pub scale: f32,
    /// Score scale, integer precision.
    pub scale_q: Requant,
}

impl AttentionDesc {
    /// No attention.
    pub const NONE: AttentionDesc = AttentionDesc {
        ordering: Ordering::None,
        score: ScoreKind::Additive,
        chunk: 0,
        dim: 0,
        window: 0,
        predict: 0,
        query_proj: false,
        key_proj: false,
        mask_padding: false,
        fmt_keys: Fmt { frac: 0 },
        scale: 1.0,
        scale_q: Requant::ONE,
    };

    /// True when the decoder attends.
    pub fn attends(&self) -> bool {
        self.ordering != Ordering::None
    }

    /// Size of the keys per position (when stored apart from the memory), for a
    /// decoder state of `query` and a memory of `memory` values per position.
    pub fn key_dim(&self, query: usize, memory: usize) -> usize {
        match self.score {
            ScoreKind::Additive if self.key_proj => usize::from(self.dim),
            ScoreKind::General => query,
            _ => memory,
        }
    }

    /// True when keys are computed once per source and stored apart from the memory.
    pub fn keys_stored(&self) -> bool {
        self.attends()
            && match self.score {
                ScoreKind::Additive => self.key_proj,
                ScoreKind::General => true,
                _ => false,
            }
    }

    /// Length of the score's own vectors per query: the additive score's `W q` and
    /// `tanh`, and local-p's `W_p q` and its `tanh` (computed before the scores, in the
    /// same scratch). A checked description's `dim` is 0 for the other scores and
    /// without attention ([`ModelDesc::check`](super::ModelDesc::check)).
    pub fn score_dim(&self) -> usize {
        usize::from(self.dim.max(self.predict))
    }

    /// True for local attention ([`AttentionDesc::window`] more than 0).
    pub fn local(&self) -> bool {
        self.window > 0
    }

    /// True for local-p attention: a local attention whose centre is predicted
    /// ([`AttentionDesc::predict`] more than 0).
    pub fn predicted(&self) -> bool {
        self.predict > 0
    }

    /// The positions a local attention's step centred on `centre` attends out of `n`,
    /// as a range (the whole `0..n` for other attentions): the `2D + 1` centred on
    /// `min(centre, n - 1)`, cut at the source's ends. Local-m's centre is the step's
    /// index, local-p's the predicted position.
    #[inline(always)]
    pub fn reach(&self, centre: usize, n: usize) -> core::ops::Range<usize> {
        if !self.local() {
            return 0..n;
        }
        let d = usize::from(self.window);
        let centre = centre.min(n.saturating_sub(1));
        centre.saturating_sub(d)..centre.saturating_add(d + 1).min(n)
    }

    /// The dense layers of the score, in file order, as `(role, rows, cols)`, for a
    /// decoder state of `query` and a memory of `memory` values per position (none
    /// without attention).
    pub(super) fn for_each_layer(
        &self,
        query: usize,
        memory: usize,
        mut add: impl FnMut(Role, usize, usize),
    ) {
        if !self.attends() {
            return;
        }
        let (q, m, a) = (query, memory, usize::from(self.dim));
        match self.score {
            ScoreKind::Additive => {
                if self.query_proj {
                    add(Role::AttnQuery, a, q);
                }
                if self.key_proj {
                    add(Role::AttnKey, a, m);
                }
                add(Role::AttnV, 1, a);
            }
            ScoreKind::General => add(Role::AttnGeneral, q, m),
            ScoreKind::Dot | ScoreKind::ScaledDot => {}
        }
        if self.predicted() {
            let p = usize::from(self.predict);
            add(Role::AttnPosW, p, q);
            add(Role::AttnPosV, 1, p);
        }
    }

    /// Checks its ranges and that the score fits a decoder state of `query` and a
    /// memory of `memory` values per position (part of [`super::ModelDesc::check`]).
    pub(super) fn check(&self, query: usize, memory: usize) -> Result<(), Error> {
        if usize::from(self.chunk) > MAX_CHUNK {
            return Err(Error::BadField("attn_chunk"));
        }
        if usize::from(self.window) > MAX_WINDOW {
            return Err(Error::BadField("attn_window"));
        }
        if !(MIN_FRAC..=MAX_FRAC).contains(&self.fmt_keys.frac) {
            return Err(Error::BadField("fmt_keys"));
        }
        if !self.scale.is_finite() {
            return Err(Error::BadField("score_scale"));
        }
        if !self.scale_q.is_valid() {
            return Err(Error::BadField("score_scale_q"));
        }
        let bad = |rule| Err(Error::Inconsistent(rule));
        if (self.ordering == Ordering::Monotonic) != (self.chunk > 0) {
            return bad("chunk: at least 1 for monotonic attention, 0 for the others");
        }
        if self.local() && !matches!(self.ordering, Ordering::Bahdanau | Ordering::Luong) {
            return bad("window: local attention needs the Bahdanau or Luong ordering");
        }
        if self.predicted() && !self.local() {
            return bad("predict: only for local attention (a window of at least 1)");
        }
        if !self.attends() {
            if self.score != ScoreKind::Additive
                || self.dim != 0
                || self.query_proj
                || self.key_proj
                || self.mask_padding
            {
                return bad("score, attn_dim, attn_query_proj, attn_key_proj, mask_padding: set without attention");
            }
            return Ok(());
        }
        let (q, m) = (query, memory);
        if self.ordering == Ordering::Monotonic && self.score != ScoreKind::Additive {
            return bad("monotonic: needs the additive score");
        }
        match self.score {
            ScoreKind::Additive => {
                let a = usize::from(self.dim);
                if a == 0 || (!self.query_proj && a != q) || (!self.key_proj && a != m) {
                    return bad("attn_dim: without a matrix, query or memory size must equal it");
                }
            }
            _ if self.dim != 0 || self.query_proj || self.key_proj => {
                return bad(
                    "attn_dim, attn_query_proj, attn_key_proj: only for the additive score",
                );
            }
            ScoreKind::Dot | ScoreKind::ScaledDot if q != m => {
                return bad("dot score: decoder hidden size must equal memory size");
            }
            _ => {}
        }
        Ok(())
    }

    /// Reads its stored fields, every code and flag compared whole (the ranges are
    /// [`AttentionDesc::check`]'s).
    // Inlined into `ModelDesc::from_raw`: built in place, without a copy on the stack.
    #[inline(always)]
    pub(super) fn from_raw(r: &RawDesc) -> Result<Self, Error> {
        Ok(AttentionDesc {
            ordering: code("ordering", r.ordering, |v| {
                Ordering::ALL.get(v as usize).copied()
            })?,
            score: code("score", r.score, |v| {
                ScoreKind::ALL.get(v as usize).copied()
            })?,
            chunk: u16::try_from(r.attn_chunk).map_err(|_| Error::BadField("attn_chunk"))?,
            dim: u16::try_from(r.attn_dim).map_err(|_| Error::BadField("attn_dim"))?,
            window: u16::try_from(r.attn_window).map_err(|_| Error::BadField("attn_window"))?,
            predict: u16::try_from(r.attn_predict).map_err(|_| Error::BadField("attn_predict"))?,
            query_proj: flag("attn_query_proj", r.attn_query_proj)?,
            key_proj: flag("attn_key_proj", r.attn_key_proj)?,
            mask_padding: flag("mask_padding", r.mask_padding)?,
            fmt_keys: Fmt { frac: r.fmts[3] },
            scale: f32::from_bits(r.score_scale),
            scale_q: r.score_scale_q,
        })
    }

    /// Writes its stored fields into `r` (part of [`super::ModelDesc::to_raw`]).
    pub(super) fn store(&self, r: &mut RawDesc) -> Result<(), Error> {
        r.ordering = self.ordering as u32;
        r.score = self.score as u32;
        r.attn_dim = u32::from(self.dim);
        r.attn_query_proj = self.query_proj as u32;
        r.attn_key_proj = self.key_proj as u32;
        r.mask_padding = self.mask_padding as u32;
        r.fmts[3] = self.fmt_keys.frac;
        r.score_scale = self.scale.to_bits();
        r.score_scale_q = self.scale_q;
        r.attn_chunk = u32::from(self.chunk);
        r.attn_window = u32::from(self.window);
        r.attn_predict = u32::from(self.predict);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_index_all_and_names_differ() {
        for (i, o) in Ordering::ALL.into_iter().enumerate() {
            assert_eq!(o as usize, i);
            assert_eq!(
                Ordering::ALL
                    .iter()
                    .filter(|p| p.name() == o.name())
                    .count(),
                1
            );
        }
        for (i, s) in ScoreKind::ALL.into_iter().enumerate() {
            assert_eq!(s as usize, i);
            assert_eq!(
                ScoreKind::ALL
                    .iter()
                    .filter(|t| t.name() == s.name())
                    .count(),
                1
            );
        }
    }
}
