//! Hypotheses as a search's readers see them: one result ([`Hypothesis`]), and the
//! search between two steps ([`BeamView`], handed to
//! [`Observer::beam`](crate::run::Observer::beam)).

use s2s_kernels::logprob::Score;

use super::hyps::{Entry, Hyps};

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

/// A beam search after step `index`: the hypotheses that go on to the next step (in
/// slot order; in-slot searches keep their finished ones among them) and the finished
/// set so far (finished-set and netra searches, else empty). Read-only, borrowed from
/// the search's workspace for the length of the call.
pub struct BeamView<'r, W> {
    /// The step just closed (from 0).
    pub index: usize,
    pub(super) live: &'r Hyps<'r, W>,
    pub(super) done: &'r Hyps<'r, W>,
}

impl<'r, W: Score> BeamView<'r, W> {
    /// Hypotheses going on to the next step.
    pub fn live(&self) -> usize {
        self.live.n
    }

    /// Hypothesis `i` going on (slot order), `None` past [`BeamView::live`].
    pub fn live_hypothesis(&self, i: usize) -> Option<Hypothesis<'_, W>> {
        read(self.live, i)
    }

    /// Hypotheses in the finished set.
    pub fn finished(&self) -> usize {
        self.done.n
    }

    /// Hypothesis `i` of the finished set (in set order), `None` past
    /// [`BeamView::finished`].
    pub fn finished_hypothesis(&self, i: usize) -> Option<Hypothesis<'_, W>> {
        read(self.done, i)
    }
}

/// Hypothesis `i` of `set`, if held.
fn read<'s, W: Score>(set: &'s Hyps<'_, W>, i: usize) -> Option<Hypothesis<'s, W>> {
    if i >= set.n {
        return None;
    }
    set.get(i).ok()?.hypothesis()
}

impl<'r, W: Copy> Entry<'r, W> {
    /// As a result: the output ids without the end token of a finished hypothesis.
    pub(super) fn hypothesis(self) -> Option<Hypothesis<'r, W>> {
        let tokens = match self.finished {
            true => self.tokens.split_last().map(|(_, t)| t)?,
            false => self.tokens,
        };
        Some(Hypothesis {
            tokens,
            score: self.score,
            len: self.tokens.len(),
            ended: self.finished,
        })
    }
}
