//! What a beam search takes and what it needs of the runner: the request ([`Search`])
//! and the `Stepper`.

use s2s_kernels::Precision;

use super::view::BeamView;
use crate::desc::{BeamRule, ModelDesc};
use crate::Error;

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
    /// Runs decoder step `index` (the tokens a hypothesis holds, which places a local
    /// attention's window) from `token` and the current state; returns the logits.
    fn step(&mut self, token: u16, index: usize) -> Result<&[P::Wide], Error>;
    /// A search step has expanded `expanded` hypotheses (for observers).
    fn searched(&mut self, index: usize, expanded: usize);
    /// A search step has closed: `beam` holds what goes on (for observers).
    fn beamed(&mut self, beam: &BeamView<'_, P::Wide>);
}
