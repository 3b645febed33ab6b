//! The workspace of a beam search, carved out of the runner's arena, and the search
//! loop over it.

use core::cmp::Ordering;

use s2s_kernels::logprob::{Alpha, Score};
use s2s_kernels::{Precision, ShapeError};

use super::cands::{better, place, shift_in, Cands};
use super::hyps::{chunk, chunk_mut, offer_done, put, short, worst_done, Hyps};
use super::plan::{BeamPlan, MAX_NETRA_TOP, MAX_WIDTH};
use super::search::{Search, Stepper};
use crate::desc::{BeamVariant, ModelDesc};
use crate::Error;

/// The padding id a finished in-slot hypothesis is extended by (it only decides ties).
const PAD: u16 = 0;
/// The name of the saved decoder states in errors.
const STATES: &str = "beam: decoder states";

/// The workspace of a beam search, carved out of the runner's arena.
pub(crate) struct BeamWork<'w, P: Precision> {
    pub(crate) plan: BeamPlan,
    /// Saved decoder states: `width` current ones, then `width` expanded ones.
    pub(super) states: &'w mut [P::Act],
    /// Current and next hypotheses (swapped each step).
    pub(super) cur: Hyps<'w, P::Wide>,
    pub(super) next: Hyps<'w, P::Wide>,
    /// The finished set (finished-set and netra variants).
    pub(super) done: Hyps<'w, P::Wide>,
    /// When each entry of `done` was offered.
    pub(super) done_order: &'w mut [u32],
    pub(super) cands: Cands<'w, P::Wide>,
    /// The results, best first: `i` for hypothesis `i` of `done`, `width + i` for
    /// hypothesis `i` of `cur`.
    pub(super) ranked: &'w mut [u16],
    pub(super) n_ranked: usize,
    /// One row of log-probabilities.
    pub(super) lp: &'w mut [P::Wide],
}

/// Splits `n` elements of `T` of `elem` bytes off the front of `rest` (rounded up to
/// whole words); fewer if `rest` is shorter ([`BeamWork::check`] finds out).
fn take<'w, T: bytemuck::Pod>(rest: &mut &'w mut [u32], (n, elem): (usize, usize)) -> &'w mut [T] {
    let all = core::mem::take(rest);
    let words = n.saturating_mul(elem).div_ceil(4).min(all.len());
    let (head, tail) = all.split_at_mut_checked(words).unwrap_or_default();
    *rest = tail;
    let head: &mut [T] = bytemuck::try_cast_slice_mut(head).unwrap_or_default();
    let n = n.min(head.len());
    head.get_mut(..n).unwrap_or_default()
}

/// `s` split at `at` (at its end if shorter).
fn split<T>(s: &mut [T], at: usize) -> (&mut [T], &mut [T]) {
    let at = at.min(s.len());
    s.split_at_mut_checked(at).unwrap_or_default()
}

impl<'w, P: Precision> BeamWork<'w, P> {
    /// Carves the buffers of `plan` out of `rest` (which holds at least
    /// [`BeamPlan::bytes`]; a shorter one makes every search an error).
    pub(crate) fn new(plan: BeamPlan, rest: &mut &'w mut [u32]) -> Self {
        let [states, tokens, scores, lens, ended, d_tokens, d_scores, d_lens, d_ended, d_order, c_scores, c_ids, ranked, lp] =
            plan.slices();
        let states = take(rest, states);
        let tokens: &mut [u16] = take(rest, tokens);
        let scores: &mut [P::Wide] = take(rest, scores);
        let lens: &mut [u16] = take(rest, lens);
        let ended: &mut [u16] = take(rest, ended);
        let (k, m) = (plan.width, plan.steps);
        let (t0, t1) = split(tokens, k.saturating_mul(m));
        let (s0, s1) = split(scores, k);
        let (l0, l1) = split(lens, k);
        let (e0, e1) = split(ended, k);
        let hyps = |tokens, scores, lens, ended| Hyps {
            tokens,
            scores,
            lens,
            ended,
            steps: m,
            n: 0,
        };
        BeamWork {
            plan,
            states,
            cur: hyps(t0, s0, l0, e0),
            next: hyps(t1, s1, l1, e1),
            done: hyps(
                take(rest, d_tokens),
                take(rest, d_scores),
                take(rest, d_lens),
                take(rest, d_ended),
            ),
            done_order: take(rest, d_order),
            cands: Cands {
                scores: take(rest, c_scores),
                ids: take(rest, c_ids),
                n: 0,
            },
            ranked: take(rest, ranked),
            n_ranked: 0,
            lp: take(rest, lp),
        }
    }

    /// Whether every buffer has the plan's length (an arena shorter than
    /// [`BeamPlan::bytes`] leaves some short).
    fn check(&self) -> Result<(), ShapeError> {
        let BeamPlan {
            width: k,
            state,
            steps,
            vocab,
            ..
        } = self.plan;
        let (k2, rows) = (k.saturating_mul(2), k.saturating_mul(steps));
        let hyps = |h: &Hyps<'_, P::Wide>| {
            [
                ("beam: token rows", h.tokens.len(), rows),
                ("beam: scores", h.scores.len(), k),
                ("beam: lengths", h.lens.len(), k),
                ("beam: finished flags", h.ended.len(), k),
            ]
        };
        let [a, b, c] = [hyps(&self.cur), hyps(&self.next), hyps(&self.done)];
        let states = [(STATES, self.states.len(), k2.saturating_mul(state))];
        let others = [
            ("beam: finished order", self.done_order.len(), k),
            ("beam: candidate scores", self.cands.scores.len(), k2),
            ("beam: candidate ids", self.cands.ids.len(), k2),
            ("beam: results", self.ranked.len(), k2),
            ("beam: log-probabilities", self.lp.len(), vocab),
        ];
        // The first short one is named (the states are the arena's first slice).
        let all = states.into_iter().chain(a).chain(b).chain(c).chain(others);
        match all
            .into_iter()
            .find(|&(_, found, expected)| found != expected)
        {
            Some((what, found, expected)) => Err(short(what, expected, found)),
            None => Ok(()),
        }
    }

    /// Runs a search of `s` from the initial decoder state in `stepper` (the encoder
    /// has run). Leaves the results ranked.
    pub(crate) fn search(
        &mut self,
        d: &ModelDesc,
        s: Search,
        stepper: &mut impl Stepper<P>,
    ) -> Result<(), Error> {
        self.n_ranked = 0;
        let k = s.width;
        if k == 0 || k > self.plan.width.min(MAX_WIDTH) {
            return Err(Error::BeamTooWide {
                width: k,
                max: self.plan.width.min(MAX_WIDTH),
            });
        }
        self.check()?;
        let ss = self.plan.state;
        // The start: one live hypothesis, empty, with the initial state.
        stepper.save(chunk_mut(self.states, 0, ss, STATES)?)?;
        put(&mut self.cur, 0, &[], None, P::Wide::default(), false)?;
        self.cur.n = 1;
        self.done.n = 0;
        let mut offers = 0u32;
        let mut finished_count = 0usize;
        let (variant, alpha) = (s.rule.variant, s.rule.alpha);
        let mut stopped = false;
        for index in 0..d.max_steps {
            if variant == BeamVariant::InSlot && self.cur.all_finished() {
                break;
            }
            if self.cur.n == 0 {
                break;
            }
            self.cands.n = 0;
            // Before `min_steps` the end token is not proposed.
            let banned = (index < d.extras.min_steps).then_some(usize::from(d.tgt_end));
            let cap = match variant {
                BeamVariant::FinishedSet => 2 * k,
                _ => k,
            };
            let mut expanded = 0;
            for i in 0..self.cur.n {
                let hyp = self.cur.get(i)?;
                let (base, y) = (hyp.score, hyp.last(d.tgt_start));
                if hyp.finished {
                    // In-slot only: the finished slot proposes itself.
                    self.cands.offer(base, PAD, i, cap);
                    continue;
                }
                // Expand hypothesis i from its saved state.
                stepper.restore(chunk(self.states, i, ss, STATES)?)?;
                let logits = stepper.step(y)?;
                P::Wide::log_softmax(logits, self.lp);
                expanded += 1;
                match variant {
                    BeamVariant::InSlot | BeamVariant::FinishedSet => {
                        // Every token but `banned`: the tokens before it, then after.
                        let (lp, cands) = (&*self.lp, &mut self.cands);
                        let (before, after) = unbanned(lp.len(), banned);
                        for (v, &lp) in lp.iter().enumerate().take(before) {
                            cands.offer(base.plus(lp), v as u16, i, cap);
                        }
                        for (v, &lp) in lp.iter().enumerate().skip(after) {
                            cands.offer(base.plus(lp), v as u16, i, cap);
                        }
                    }
                    BeamVariant::Netra => {
                        let counts = (&mut offers, &mut finished_count);
                        self.netra_expand(d, i, k, banned, counts)?;
                    }
                }
                // Keep the expanded state (slot `k + i`).
                stepper.save(chunk_mut(self.states, k + i, ss, STATES)?)?;
            }
            stepper.searched(index, expanded);
            // The next hypotheses from the ranked candidates.
            self.next.n = 0;
            for r in 0..self.cands.n {
                let (tok, parent, score) = self.cands.get(r).ok_or(short(
                    "beam: candidates",
                    r + 1,
                    self.cands.ids.len(),
                ))?;
                let from = self.cur.get(parent)?;
                match variant {
                    BeamVariant::InSlot => {
                        let j = self.next.n;
                        if from.finished {
                            // Never expanded again: no state to keep.
                            put(&mut self.next, j, from.tokens, None, score, true)?;
                        } else {
                            let ended = tok == d.tgt_end;
                            put(&mut self.next, j, from.tokens, Some(tok), score, ended)?;
                            take_state(self.states, k, ss, parent, j)?;
                        }
                        self.next.n += 1;
                    }
                    BeamVariant::FinishedSet => {
                        if tok == d.tgt_end {
                            if r < k {
                                let len = from.tokens.len() + 1;
                                offer_done(
                                    &mut self.done,
                                    self.done_order,
                                    (from.tokens, Some(tok), score, len, true),
                                    k,
                                    alpha,
                                    &mut offers,
                                )?;
                            }
                        } else if self.next.n < k {
                            let j = self.next.n;
                            put(&mut self.next, j, from.tokens, Some(tok), score, false)?;
                            take_state(self.states, k, ss, parent, j)?;
                            self.next.n += 1;
                        }
                        if r >= k && self.next.n == k {
                            break;
                        }
                    }
                    BeamVariant::Netra => {
                        let j = self.next.n;
                        put(&mut self.next, j, from.tokens, Some(tok), score, false)?;
                        take_state(self.states, k, ss, parent, j)?;
                        self.next.n += 1;
                    }
                }
            }
            core::mem::swap(&mut self.cur, &mut self.next);
            match variant {
                BeamVariant::InSlot => {}
                BeamVariant::FinishedSet => {
                    if self.done.n == k {
                        let (_, w_score, w_len) = worst_done(&self.done, self.done_order, alpha)?;
                        let live_beats = self.cur.scored().any(|(score, len)| {
                            score.cmp_normalised(len.max(1), w_score, w_len, alpha)
                                == Ordering::Greater
                        });
                        if !live_beats {
                            stopped = true;
                            break;
                        }
                    }
                }
                BeamVariant::Netra => {
                    if finished_count >= k {
                        stopped = true;
                        break;
                    }
                }
            }
        }
        if variant == BeamVariant::FinishedSet && !stopped {
            // At the cap: the live hypotheses are offered, unfinished, in slot order.
            for i in 0..self.cur.n {
                let hyp = self.cur.get(i)?;
                offer_done(
                    &mut self.done,
                    self.done_order,
                    (hyp.tokens, None, hyp.score, hyp.tokens.len(), false),
                    k,
                    alpha,
                    &mut offers,
                )?;
            }
            self.cur.n = 0;
        }
        self.rank(variant, alpha)
    }

    /// Netra's expansion of hypothesis `i`: its `k` most probable tokens (`banned` left
    /// out) above the pruning threshold; finished ones to the finished set, the others
    /// to the candidates. `offers` and `finished_count` count the finished set's offers
    /// and the finished proposals.
    fn netra_expand(
        &mut self,
        d: &ModelDesc,
        i: usize,
        k: usize,
        banned: Option<usize>,
        (offers, finished_count): (&mut u32, &mut usize),
    ) -> Result<(), Error> {
        // The parent's own top k, ranked like candidates (the parent is 0 here).
        let hyp = self.cur.get(i)?;
        let (base, tokens, len) = (hyp.score, hyp.tokens, hyp.tokens.len());
        let mut top = [(P::Wide::default(), 0u16); MAX_NETRA_TOP];
        let kk = k.min(MAX_NETRA_TOP);
        let mut n = 0;
        let (before, after) = unbanned(self.lp.len(), banned);
        let row = self.lp.iter().enumerate();
        for (v, &lp) in row.clone().take(before).chain(row.skip(after)) {
            let at = place(&top, n, |(s, t)| better(lp, v as u32, s, u32::from(t)));
            if at < kk {
                let slots = top.iter_mut().take(kk).skip(at).take(n - at + 1);
                shift_in(slots, (lp, v as u16));
                n = (n + 1).min(kk);
            }
        }
        for &(lp, v) in top.iter().take(n) {
            if lp <= P::Wide::PRUNE {
                continue;
            }
            let score = base.plus(lp);
            if v == d.tgt_end || len + 1 >= d.max_steps {
                *finished_count += 1;
                offer_done(
                    &mut self.done,
                    self.done_order,
                    (tokens, Some(v), score, len + 1, v == d.tgt_end),
                    k,
                    Alpha::ZERO,
                    offers,
                )?;
            } else {
                self.cands.offer(score, v, i, k);
            }
        }
        Ok(())
    }
}

/// The tokens of a row of `n` to propose: those before the returned first bound and
/// those from the second on (`banned` left out; all of them without one).
fn unbanned(n: usize, banned: Option<usize>) -> (usize, usize) {
    match banned {
        Some(b) if b < n => (b, b + 1),
        _ => (n, n),
    }
}

/// Copies the expanded state of parent `parent` (slot `k + parent` of `states`, of `ss`
/// elements each) into current slot `j` (the current states are free once every parent
/// has been expanded).
fn take_state<A: Copy>(
    states: &mut [A],
    k: usize,
    ss: usize,
    parent: usize,
    j: usize,
) -> Result<(), ShapeError> {
    let found = states.len();
    let (cur, expanded) = states
        .split_at_mut_checked(k.saturating_mul(ss))
        .ok_or(short(STATES, k.saturating_mul(ss), found))?;
    chunk_mut(cur, j, ss, STATES)?.copy_from_slice(chunk(expanded, parent, ss, STATES)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of 2 hypotheses of 5 steps, 3 state values, 7 tokens, f32.
    fn plan() -> BeamPlan {
        BeamPlan {
            width: 2,
            state: 3,
            steps: 5,
            vocab: 7,
            act: 4,
            wide: 4,
        }
    }

    #[test]
    fn a_workspace_of_the_plan_checks_and_a_short_one_is_a_shape_error() {
        let p = plan();
        let mut arena = vec![0u32; p.bytes() / 4];
        let mut rest = &mut arena[..];
        let work = BeamWork::<s2s_kernels::F32>::new(p, &mut rest);
        assert_eq!(work.check(), Ok(()));
        assert!(rest.is_empty());
        // One word short: the log-probabilities, the last slice, are short.
        let mut short = vec![0u32; p.bytes() / 4 - 1];
        let work = BeamWork::<s2s_kernels::F32>::new(p, &mut &mut short[..]);
        let e = work.check().unwrap_err();
        assert_eq!(
            (e.what, e.expected, e.found),
            ("beam: log-probabilities", 7, 6)
        );
        // Nothing at all: every slice empty, no panic.
        let work = BeamWork::<s2s_kernels::F32>::new(p, &mut &mut [][..]);
        assert_eq!(work.check().unwrap_err().what, STATES);
    }
}
