//! Beam search over a caller-owned workspace, in the three variants published models
//! use, with the same results on the host and the device at every precision.
//!
//! A hypothesis is a token sequence with its `score`, the sum of the natural-log
//! probabilities of its tokens ([`s2s_kernels::logprob`] defines them exactly, in f32
//! and in integers), and its `length`, the tokens the decoder produced for it, the end
//! token included. The encoder runs once; each step expands every live hypothesis by
//! one decoder step from its own state.
//!
//! The candidates of a step are ranked by higher score, then lower token id, then the
//! earlier parent (slot order); slots are kept in ranking order. The variants
//! ([`BeamVariant`]):
//!
//! * **in-slot**: `K` slots; a finished hypothesis stays in its slot and is proposed
//!   again, extended by the padding id 0 at no cost with its length frozen; the `K`
//!   best proposals fill the slots. The search ends at the step cap or when every slot
//!   has finished; the slot with the best `score / length^alpha` wins (ties: the
//!   earlier slot), unfinished slots included.
//! * **finished-set**: `K` live hypotheses and a set of at most `K` finished ones. The
//!   ranked candidates are walked in order: an end-token candidate of rank below `K` is
//!   offered to the set, others fill the next live beam up to `K`. A full set replaces
//!   its worst entry (lowest `score / length^alpha`, ties: the later one is worse) only
//!   with a strictly better one. Once the set is full, the search stops when no live
//!   hypothesis, normalised at its current length, is above the worst finished one. At
//!   the cap the live hypotheses are offered, in slot order. The best entry wins (ties:
//!   the earlier offered).
//! * **netra**: netra-transliterate's own search: each live hypothesis proposes its `K`
//!   most probable tokens, those of probability at most `1e-8` are dropped, a proposal
//!   ending with the end token or reaching the step cap is finished (every one of them,
//!   without competing for a slot); the other proposals are ranked and cut to `K`. The
//!   search stops once `K` hypotheses have finished, or none is live. The best score
//!   among the finished ones (in the order they finished) and then the live ones wins:
//!   a live, unfinished hypothesis can win. No length normalisation (`alpha` is not
//!   used). The `K` best finished hypotheses are kept (for `nbest`); which one wins
//!   only ever depends on the best.
//!
//! With `K = 1` every variant is greedy decoding.
//!
//! The workspace ([`BeamPlan`]) grows linearly with `K`: per hypothesis two decoder
//! states, two token rows of `max_steps` ids, a finished-set row, two candidates and a
//! few counters; plus one row of log-probabilities.
//!
//! No index of the search can panic: every buffer is reached through checked accessors,
//! and a workspace that does not hold what the plan says is an error
//! ([`s2s_kernels::ShapeError`]), so that the firmware's decode loop links without a
//! panic handler. The parts: `hyps` (sets of hypotheses and the finished set's rules),
//! `cands` (the ranked candidates of a step), `work` (the workspace and the search
//! loop) and `rank` (the results).

mod cands;
mod hyps;
mod rank;
mod work;

use s2s_kernels::{Precision, ShapeError};

use crate::desc::ModelDesc;
use crate::Error;

pub use crate::desc::{BeamRule, BeamVariant};
pub(crate) use work::BeamWork;

/// The padding id a finished in-slot hypothesis is extended by (it only decides ties).
const PAD: u16 = 0;

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
    act: usize,
    wide: usize,
}

/// Slices of the beam workspace, in arena order.
const SLICES: usize = 14;

/// The error of a workspace buffer `what` of `found` elements where `expected` were
/// needed (an inconsistent plan or arena, never a bad input).
fn short(what: &'static str, expected: usize, found: usize) -> ShapeError {
    ShapeError {
        what,
        expected,
        found,
    }
}

impl BeamPlan {
    /// The buffers of searches up to `width` wide for model `d` at precision `P`.
    pub fn new<P: Precision>(d: &ModelDesc, width: usize) -> BeamPlan {
        let lstm = |c: crate::desc::CellKind| 1 + c.is_lstm() as usize;
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
    fn slices(&self) -> [(usize, usize); SLICES] {
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

/// One result of a beam search (see [`crate::Runner::hypothesis`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hypothesis<'r, W> {
    /// The output ids, end token excluded.
    pub tokens: &'r [u16],
    /// The sum of the log-probabilities of its tokens (end token included).
    pub score: W,
    /// Its length: tokens produced, end token included.
    pub len: usize,
    /// Whether it ended with the end token (not cut at the step cap, not live).
    pub ended: bool,
}

/// A search request: its width and rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Search {
    /// Hypotheses kept per step (`K`), at least 1.
    pub width: usize,
    /// The variant and its `alpha`.
    pub rule: BeamRule,
}

impl Search {
    /// A search of `width` with the model's own rule.
    pub fn of(desc: &ModelDesc, width: usize) -> Search {
        Search {
            width,
            rule: desc.beam,
        }
    }
}

/// What the search needs of the runner: one decoder step of its single lane from a
/// token and the decoder state in place, leaving the logits; and the lane's decoder
/// state, to save and restore. The state is everything a step reads from the previous
/// one: the decoder's states (and cell states), and for an input-fed model the
/// attentional vector fed to the next step ([`BeamPlan::state`] elements in all).
pub(crate) trait Stepper<P: Precision> {
    /// Copies the lane's state into `to` ([`BeamPlan::state`] elements).
    fn save(&mut self, to: &mut [P::Act]) -> Result<(), Error>;
    /// Makes `from` ([`BeamPlan::state`] elements) the lane's state.
    fn restore(&mut self, from: &[P::Act]) -> Result<(), Error>;
    /// Runs one decoder step from `token` and the current state; returns the logits.
    fn step(&mut self, token: u16) -> Result<&[P::Wide], Error>;
    /// A search step has expanded `expanded` hypotheses (for observers).
    fn searched(&mut self, index: usize, expanded: usize);
}

/// Most tokens netra's variant takes from one hypothesis (its width): searches of
/// this width at most.
const MAX_NETRA_TOP: usize = 16;

/// The largest beam width any variant supports.
pub const MAX_WIDTH: usize = MAX_NETRA_TOP;
