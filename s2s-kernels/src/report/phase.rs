//! Phases of a model run, for profiling: where the instructions of an encoder pass or a
//! decoder step go.
//!
//! The model crates call [`Marks::mark`] at the boundaries of the phases (the cells'
//! matrix products, the attention's scores, softmax and context, the output layer);
//! whatever runs between a mark and the next belongs to the marked phase, and each
//! phase ends with a mark of [`Phase::Rest`]. The marks go to a generic `&mut impl
//! Marks`: with `()` (or an observer whose mark does nothing) they compile to nothing.

/// A phase of a model run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Phase {
    /// The recurrent cells' matrix products (input and recurrent layers).
    Recurrent = 0,
    /// Attention scores (in the encoder pass: the precomputed keys).
    Scores = 1,
    /// The attention's softmax.
    Softmax = 2,
    /// The attention's context (the weighted sum of the memory).
    Context = 3,
    /// The output layer (the logits).
    Output = 4,
    /// Everything else: embeddings, the cells' gates and state updates, the attentional
    /// layer, bridges, the memory projection, the choice of the token.
    Rest = 5,
}

impl Phase {
    /// Every phase, in the order of their numbers.
    pub const ALL: [Phase; 6] = [
        Phase::Recurrent,
        Phase::Scores,
        Phase::Softmax,
        Phase::Context,
        Phase::Output,
        Phase::Rest,
    ];

    /// A short lowercase name.
    pub const fn name(self) -> &'static str {
        match self {
            Phase::Recurrent => "recurrent",
            Phase::Scores => "scores",
            Phase::Softmax => "softmax",
            Phase::Context => "context",
            Phase::Output => "output",
            Phase::Rest => "rest",
        }
    }
}

/// Receives the phase boundaries of a run.
pub trait Marks {
    /// From here on, the run is in `phase`.
    fn mark(&mut self, phase: Phase);
}

/// Marks nothing.
impl Marks for () {
    #[inline(always)]
    fn mark(&mut self, _phase: Phase) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phases_are_numbered_in_order() {
        for (i, p) in Phase::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i, "{}", p.name());
        }
    }
}
