//! The static workspace: every buffer a run needs, sized from the model description
//! and the number of source positions, before anything runs.

use core::mem::size_of;

use s2s_kernels::Precision;

use crate::desc::{CellKind, Init, ModelDesc};

/// The buffers of a run, in arena order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[allow(missing_docs)]
pub enum Buf {
    SrcIds,
    EncA,
    EncB,
    Memory,
    Keys,
    EncLast,
    XBuf,
    CellAct,
    DecState,
    DecEmb,
    Context,
    Weights,
    Tanh,
    Attentional,
    CellWide,
    Proj,
    Scores,
    Query,
    Logits,
}

/// Number of buffers.
pub const BUFS: usize = 19;

impl Buf {
    /// All buffers in arena order.
    pub const ALL: [Buf; BUFS] = [
        Buf::SrcIds,
        Buf::EncA,
        Buf::EncB,
        Buf::Memory,
        Buf::Keys,
        Buf::EncLast,
        Buf::XBuf,
        Buf::CellAct,
        Buf::DecState,
        Buf::DecEmb,
        Buf::Context,
        Buf::Weights,
        Buf::Tanh,
        Buf::Attentional,
        Buf::CellWide,
        Buf::Proj,
        Buf::Scores,
        Buf::Query,
        Buf::Logits,
    ];

    /// A short description for reports.
    pub fn name(self) -> &'static str {
        match self {
            Buf::SrcIds => "source ids",
            Buf::EncA => "encoder outputs",
            Buf::EncB => "encoder outputs (2nd buffer)",
            Buf::Memory => "memory (projected)",
            Buf::Keys => "attention keys",
            Buf::EncLast => "encoder final states (and cell states, and mean)",
            Buf::XBuf => "encoder input row",
            Buf::CellAct => "recurrent cell scratch",
            Buf::DecState => "decoder states (and cell states)",
            Buf::DecEmb => "decoder input embedding",
            Buf::Context => "context",
            Buf::Weights => "attention weights",
            Buf::Tanh => "additive score row",
            Buf::Attentional => "attentional vector",
            Buf::CellWide => "recurrent cell gates",
            Buf::Proj => "projection scratch",
            Buf::Scores => "attention scores",
            Buf::Query => "projected query",
            Buf::Logits => "logits",
        }
    }
}

/// Sizes of every buffer of a run: element counts and element sizes. The arena holds
/// them one after the other, each rounded up to whole 32-bit words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Plan {
    /// Source positions the plan holds.
    pub positions: usize,
    /// Elements of each buffer, indexed like [`Buf::ALL`].
    pub len: [usize; BUFS],
    /// Bytes per element of each buffer.
    pub elem: [usize; BUFS],
}

impl Plan {
    /// The plan of a model (a checked description, [`ModelDesc::check`]) at precision `P`
    /// for sources of up to `positions` tokens
    /// (after the end token and padding are added; a model padded to a fixed length
    /// needs at least that many). Sizes saturate at `usize::MAX` instead of wrapping
    /// (a 32-bit target planning a huge model gets a workspace no arena holds, and
    /// [`crate::Runner::new`] says so).
    pub fn new<P: Precision>(d: &ModelDesc, positions: usize) -> Plan {
        let t = positions;
        // `t` times a size, saturating.
        let per = |n: usize| t.saturating_mul(n);
        let att = d.has_attention();
        // The mean bridge averages the encoder outputs with uniform weights: a softmax
        // of zeros over the valid positions, into the attention's buffers.
        let mean = d.init == Init::Mean;
        let weighs = att || mean;
        let a = d.attention.score_dim();
        let h = d.enc_hidden.max(d.dec_hidden);
        let (act, wide) = (size_of::<P::Act>(), size_of::<P::Wide>());
        // State vectors per unit: `h`, and `c` for an LSTM.
        let states = |c: CellKind| 1 + c.is_lstm() as usize;
        let (enc_states, dec_states) = (states(d.cells.enc), states(d.cells.dec));
        let proj = [
            d.memory_proj.unwrap_or(0),
            if d.keys_stored() { d.key_dim() } else { 0 },
            if d.init.is_bridge() || d.cells.init_cell == Init::Dense {
                d.dec_hidden
            } else {
                0
            },
            d.attentional.unwrap_or(0),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let len_of = |b: Buf| -> (usize, usize) {
            match b {
                Buf::SrcIds => (t, 2),
                Buf::EncA => (per(d.enc_output()), act),
                Buf::EncB => ((d.enc_layers > 1) as usize * per(d.enc_output()), act),
                // A projection no wider than the encoder output is written in place.
                Buf::Memory => (
                    d.memory_proj.filter(|&m| m > d.enc_output()).map_or(0, per),
                    act,
                ),
                Buf::Keys => (d.keys_stored() as usize * per(d.key_dim()), act),
                // (LSTM) the final cell states of every layer, then the final states,
                // then (mean bridge) the mean of the top layer's outputs.
                Buf::EncLast => (
                    (enc_states * d.enc_layers + mean as usize) * d.enc_output(),
                    act,
                ),
                Buf::XBuf => (d.enc_emb.max(d.enc_output()), act),
                Buf::CellAct => (h, act),
                // The decoder's recurrent state: (LSTM) the layers' cell states, then
                // their states (the top layer's last).
                Buf::DecState => (dec_states * d.dec_layers * d.dec_hidden, act),
                Buf::DecEmb => (d.dec_emb, act),
                Buf::Context => (att as usize * d.memory_dim(), act),
                Buf::Weights => (weighs as usize * t, act),
                Buf::Tanh => (a, act),
                Buf::Attentional => (d.attentional.unwrap_or(0), act),
                // A GRU step needs 6H (both gate products), an LSTM step 4H + 2H.
                Buf::CellWide => (6 * h, wide),
                Buf::Proj => (proj, wide),
                Buf::Scores => (weighs as usize * t, wide),
                Buf::Query => (a, wide),
                Buf::Logits => (d.tgt_vocab, wide),
            }
        };
        let mut plan = Plan {
            positions,
            len: [0; BUFS],
            elem: [0; BUFS],
        };
        for (i, b) in Buf::ALL.iter().enumerate() {
            (plan.len[i], plan.elem[i]) = len_of(*b);
        }
        plan
    }

    /// 32-bit words of buffer `i` (0 past the last buffer).
    pub fn words(&self, i: usize) -> usize {
        match (self.len.get(i), self.elem.get(i)) {
            (Some(&len), Some(&elem)) => len.saturating_mul(elem).div_ceil(4),
            _ => 0,
        }
    }

    /// Bytes of buffer `b`, rounded up to whole words.
    pub fn bytes_of(&self, b: Buf) -> usize {
        self.words(b as usize).saturating_mul(4)
    }

    /// Bytes of the whole workspace: exactly what [`crate::Runner::new`] takes from the
    /// arena.
    pub fn bytes(&self) -> usize {
        (0..BUFS).fold(0, |sum, i| {
            sum.saturating_add(self.words(i).saturating_mul(4))
        })
    }
}
