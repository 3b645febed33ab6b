//! How a model is beam-searched, as its description stores it: the variant
//! ([`BeamVariant`]) and its length-normalisation exponent ([`BeamRule`]). The search
//! itself is [`crate::beam`].

use s2s_kernels::logprob::Alpha;

s2s_kernels::named_enum! {
    /// The beam-search variant a model was published with (see [`crate::beam`]); the id
    /// is the file's, the name the one configurations and the command line use.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum BeamVariant {
        /// Finished hypotheses stay in the slots, extended by padding.
        InSlot = 0 => "in-slot",
        /// Finished hypotheses move to a set of their own (Hugging Face, fairseq).
        FinishedSet = 1 => "finished-set",
        /// netra-transliterate 1.0.1's search: products of probabilities, pruning at
        /// `1e-8`, stop after `K` finished.
        Netra = 2 => "netra",
    }
}

/// How a model is beam-searched: the variant and its length-normalisation exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BeamRule {
    /// The variant.
    pub variant: BeamVariant,
    /// `alpha` of `score / length^alpha` (not used by [`BeamVariant::Netra`]).
    pub alpha: Alpha,
}

impl Default for BeamRule {
    /// In-slot with `alpha = 1`.
    fn default() -> Self {
        BeamRule {
            variant: BeamVariant::InSlot,
            alpha: Alpha::ONE,
        }
    }
}
