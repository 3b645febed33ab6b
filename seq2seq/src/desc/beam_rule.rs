//! How a model is beam-searched, as its description stores it: the variant
//! ([`BeamVariant`]) and its length-normalisation exponent ([`BeamRule`]). The search
//! itself is [`crate::beam`].

use s2s_kernels::logprob::Alpha;

/// The beam-search variant a model was published with (see [`crate::beam`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum BeamVariant {
    /// Finished hypotheses stay in the slots, extended by padding.
    InSlot = 0,
    /// Finished hypotheses move to a set of their own (Hugging Face, fairseq).
    FinishedSet = 1,
    /// netra-transliterate 1.0.1's search: products of probabilities, pruning at
    /// `1e-8`, stop after `K` finished.
    Netra = 2,
}

impl BeamVariant {
    /// All variants, in file-id order.
    pub const ALL: [BeamVariant; 3] = [Self::InSlot, Self::FinishedSet, Self::Netra];

    /// The variant with this file id.
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.get(id as usize).copied()
    }

    /// Its name in configurations and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::InSlot => "in-slot",
            Self::FinishedSet => "finished-set",
            Self::Netra => "netra",
        }
    }

    /// The variant of a name (see [`BeamVariant::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
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
