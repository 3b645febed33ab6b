//! What a beam search takes and gives: the request ([`Search`]), one result
//! ([`Hypothesis`]), and what it needs of the runner (`Stepper`).

use s2s_kernels::Precision;

use crate::desc::{BeamRule, ModelDesc};
use crate::Error;

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
/// attentional vector fed to the next step ([`BeamPlan::state`](crate::beam::BeamPlan::state) elements in all).
pub(crate) trait Stepper<P: Precision> {
    /// Copies the lane's state into `to` ([`BeamPlan::state`](crate::beam::BeamPlan::state) elements).
    fn save(&mut self, to: &mut [P::Act]) -> Result<(), Error>;
    /// Makes `from` ([`BeamPlan::state`](crate::beam::BeamPlan::state) elements) the lane's state.
    fn restore(&mut self, from: &[P::Act]) -> Result<(), Error>;
    /// Runs one decoder step from `token` and the current state; returns the logits.
    fn step(&mut self, token: u16) -> Result<&[P::Wide], Error>;
    /// A search step has expanded `expanded` hypotheses (for observers).
    fn searched(&mut self, index: usize, expanded: usize);
}
