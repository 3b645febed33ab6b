//! The results of a search: ranked once it ends, read by rank.

use core::cmp::Ordering;

use s2s_kernels::logprob::{Alpha, Score};
use s2s_kernels::{Precision, ShapeError};

use super::cands::shift_in;
use super::hyps::short;
use super::view::Hypothesis;
use super::work::BeamWork;
use crate::desc::BeamVariant;

impl<P: Precision> BeamWork<'_, P> {
    /// Orders the results: in-slot, the slots by normalised score (ties: the earlier);
    /// finished-set, the set (ties: the earlier offered); netra, the finished set by
    /// score then the live hypotheses, a finished one first on ties.
    pub(super) fn rank(&mut self, variant: BeamVariant, alpha: Alpha) -> Result<(), crate::Error> {
        // Result codes offset the current hypotheses by the workspace's width.
        let k = self.plan.width;
        let mut n = 0;
        let sets: [(bool, usize); 2] = match variant {
            BeamVariant::InSlot => [(false, self.cur.n), (true, 0)],
            BeamVariant::FinishedSet => [(true, self.done.n), (false, 0)],
            BeamVariant::Netra => [(true, self.done.n), (false, self.cur.n)],
        };
        let alpha = match variant {
            BeamVariant::Netra => Alpha::ZERO,
            _ => alpha,
        };
        for (is_done, count) in sets {
            for i in 0..count {
                let code = if is_done { i } else { k + i } as u16;
                if n >= self.ranked.len() {
                    return Err(short("beam: results", n + 1, self.ranked.len()).into());
                }
                // Insertion after every entry that ranks before or equal to it.
                let mut at = n;
                for &prev in self.ranked.iter().take(n).rev() {
                    if !self.ranks_before(code, prev, alpha, k)? {
                        break;
                    }
                    at -= 1;
                }
                shift_in(self.ranked.iter_mut().skip(at).take(n - at + 1), code);
                n += 1;
            }
        }
        self.n_ranked = n;
        Ok(())
    }

    /// Whether result `a` ranks strictly before the result `b` already ranked (codes
    /// as in `ranked`; `b` was inserted earlier, so only a strictly better `a` or, in
    /// the finished set, an earlier offer goes first).
    fn ranks_before(&self, a: u16, b: u16, alpha: Alpha, k: usize) -> Result<bool, ShapeError> {
        let (ha, hb) = (self.result(a, k)?, self.result(b, k)?);
        let c = ha
            .score
            .cmp_normalised(ha.len.max(1), hb.score, hb.len.max(1), alpha);
        Ok(match c {
            Ordering::Greater => true,
            Ordering::Less => false,
            // Two finished entries: the earlier offered first.
            Ordering::Equal => match (a as usize, b as usize) {
                (a, b) if a < k && b < k => self.offered(a)? < self.offered(b)?,
                _ => false,
            },
        })
    }

    /// When entry `i` of the finished set was offered.
    fn offered(&self, i: usize) -> Result<u32, ShapeError> {
        let found = self.done_order.len();
        let order = self.done_order.get(i);
        order
            .copied()
            .ok_or(short("beam: finished order", i + 1, found))
    }

    /// The result of code `code` (as in `ranked`).
    fn result(&self, code: u16, k: usize) -> Result<Hypothesis<'_, P::Wide>, ShapeError> {
        let code = code as usize;
        let (set, i) = if code < k {
            (&self.done, code)
        } else {
            (&self.cur, code - k)
        };
        let hyp = set.get(i)?;
        hyp.hypothesis()
            .ok_or(short("beam: hypothesis length", 1, 0))
    }

    /// Results of the last search, best first.
    pub(crate) fn ranked(&self) -> usize {
        self.n_ranked
    }

    /// Result `rank` of the last search (0 is the best).
    pub(crate) fn hypothesis(&self, rank: usize) -> Option<Hypothesis<'_, P::Wide>> {
        let code = *self.ranked.get(rank).filter(|_| rank < self.n_ranked)?;
        self.result(code, self.plan.width).ok()
    }
}
