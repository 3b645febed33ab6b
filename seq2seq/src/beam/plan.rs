//! The sizes of a beam search's workspace ([`BeamPlan`]) and the widest search
//! ([`MAX_WIDTH`]).

use s2s_kernels::Precision;

use crate::desc::{CellKind, ModelDesc};

/// Sizes of a beam search's buffers for a width, beside the greedy [`crate::Plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BeamPlan {
    /// The widest search the buffers hold.
    pub width: usize,
    /// Activations of one saved decoder state: the decoder's states (and cell states),
    /// and for an input-fed model the attentional vector it feeds to the next step.
    pub state: usize,
    /// Tokens of one hypothesis (the model's step cap).
    pub steps: usize,
    /// Target vocabulary (one row of log-probabilities).
    pub vocab: usize,
    pub(super) act: usize,
    pub(super) wide: usize,
}

/// Slices of the beam workspace, in arena order.
const SLICES: usize = 14;

impl BeamPlan {
    /// The buffers of searches up to `width` wide for model `d` at precision `P`.
    pub fn new<P: Precision>(d: &ModelDesc, width: usize) -> BeamPlan {
        let lstm = |c: CellKind| 1 + c.is_lstm() as usize;
        BeamPlan {
            width,
            state: lstm(d.cells.dec)
                .saturating_mul(d.dec_layers)
                .saturating_mul(d.dec_hidden)
                .saturating_add(if d.extras.input_feed {
                    d.attentional.unwrap_or(0)
                } else {
                    0
                }),
            steps: d.max_steps,
            vocab: d.tgt_vocab,
            act: core::mem::size_of::<P::Act>(),
            wide: core::mem::size_of::<P::Wide>(),
        }
    }

    /// Elements and element sizes of each slice.
    pub(super) fn slices(&self) -> [(usize, usize); SLICES] {
        let k = self.width;
        let k2 = k.saturating_mul(2);
        [
            (k2.saturating_mul(self.state), self.act), // states: current, expanded
            (k2.saturating_mul(self.steps), 2),        // tokens: current, next
            (k2, self.wide),                           // scores
            (k2, 2),                                   // lengths
            (k2, 2),                                   // finished flags
            (k.saturating_mul(self.steps), 2),         // finished set: tokens
            (k, self.wide),                            // finished set: scores
            (k, 2),                                    // finished set: lengths
            (k, 2),                                    // finished set: ended flags
            (k, 4),                                    // finished set: offer order
            (k2, self.wide),                           // candidates: scores
            (k2, 4),                                   // candidates: token and parent
            (k2, 2),                                   // the ranked results
            (self.vocab, self.wide),                   // log-probabilities
        ]
    }

    /// Bytes of the beam workspace (each slice rounded up to whole 32-bit words): what
    /// [`crate::Runner::with_beam`] takes from the arena after [`crate::Plan::bytes`].
    pub fn bytes(&self) -> usize {
        self.slices().iter().fold(0usize, |sum, &(n, e)| {
            sum.saturating_add(n.saturating_mul(e).div_ceil(4).saturating_mul(4))
        })
    }

    /// Bytes one more hypothesis of width adds (the workspace grows linearly with the
    /// width, up to word rounding: this is the step from 1 to 2).
    pub fn bytes_per_beam<P: Precision>(d: &ModelDesc) -> usize {
        BeamPlan::new::<P>(d, 2)
            .bytes()
            .saturating_sub(BeamPlan::new::<P>(d, 1).bytes())
    }
}

/// Most tokens netra's variant takes from one hypothesis (its width): searches of
/// this width at most.
pub(super) const MAX_NETRA_TOP: usize = 16;

/// The largest beam width any variant supports.
pub const MAX_WIDTH: usize = MAX_NETRA_TOP;
