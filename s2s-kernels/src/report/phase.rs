//! Phases of a model run, for profiling: where the instructions of an encoder pass or a
//! decoder step go.
//!
//! The model crates call [`Marks::mark`] at the boundaries of the phases (the cells'
//! matrix products, the attention's scores, softmax and context, the output layer);
//! whatever runs between a mark and the next belongs to the marked phase, and each
//! phase ends with a mark of [`Phase::Rest`]. The marks go to a generic `&mut impl
//! Marks`: with `()` (or an observer whose mark does nothing) they compile to nothing.

crate::named_enum! {
    /// A phase of a model run, numbered in the order of a step, named in short
    /// lowercase.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum Phase {
        /// The recurrent cells' matrix products (input and recurrent layers).
        Recurrent = 0 => "recurrent",
        /// Attention scores (in the encoder pass: the precomputed keys).
        Scores = 1 => "scores",
        /// The attention's softmax.
        Softmax = 2 => "softmax",
        /// The attention's context (the weighted sum of the memory).
        Context = 3 => "context",
        /// The output layer (the logits).
        Output = 4 => "output",
        /// Everything else: embeddings, the cells' gates and state updates, the
        /// attentional layer, bridges, the memory projection, the choice of the token.
        Rest = 5 => "rest",
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
