//! The workspace of a beam search, carved out of the runner's arena, and the search
//! loop over it.

use core::cmp::Ordering;

use s2s_kernels::logprob::{Alpha, Score};
use s2s_kernels::{Precision, ShapeError};

use super::cands::{better, place, shift_in, Cands};
use super::hyps::{chunk, chunk_mut, offer_done, put, short, worst_done, Hyps};
use super::plan::{BeamPlan, MAX_NETRA_TOP, MAX_WIDTH};
use super::search::{Search, Stepper};
use super::view::BeamView;
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
    /// Where the search is ([`BeamWork::begin`]).
    at: Progress,
}

/// How far a search has got: its request, the step, the next hypothesis to expand and
/// the counters its stopping rules read.
#[derive(Clone, Copy, Default)]
struct Progress {
    search: Search,
    /// The target's start token (the last token of the empty hypothesis).
    start: u16,
    /// The step (from 0).
    index: usize,
    /// The current hypotheses before it have been expanded or proposed this step.
    cursor: usize,
    /// Hypotheses expanded this step.
    expanded: usize,
    /// Candidates kept per step.
    cap: usize,
    /// Offers to the finished set so far (their order decides ties).
    offers: u32,
    /// Netra: hypotheses finished so far.
    finished: usize,
    /// A stopping rule has ended the search.
    stopped: bool,
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
            at: Progress::default(),
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
    /// has run), expanding one hypothesis after the other. Leaves the results ranked.
    pub(crate) fn search(
        &mut self,
        d: &ModelDesc,
        s: Search,
        stepper: &mut impl Stepper<P>,
    ) -> Result<(), Error> {
        let mut going = self.begin(d, s)?;
        stepper.save(self.state_mut(0)?)?;
        while going {
            while let Some((i, y)) = self.next_live()? {
                // Expand hypothesis i from its saved state.
                stepper.restore(self.state(i)?)?;
                let logits = stepper.step(y, self.at.index)?;
                self.expand(d, i, logits)?;
                stepper.save(self.expanded_state(i)?)?;
            }
            let (index, expanded) = self.step_counts();
            stepper.searched(index, expanded);
            going = self.end_step(d)?;
            stepper.beamed(&self.view());
        }
        Ok(())
    }

    /// Starts a search of `s` (the encoder has run): the caller saves the initial
    /// decoder state into [`BeamWork::state_mut`] `(0)`; then, step by step, each
    /// hypothesis [`BeamWork::next_live`] names is expanded from its
    /// [`BeamWork::state`] ([`BeamWork::expand`] with its logits, the new state saved
    /// into [`BeamWork::expanded_state`]) and the step is closed by
    /// [`BeamWork::end_step`], until it says the search has ended. The hypotheses of
    /// one search are expanded in order, so that searches running side by side (each
    /// in its own workspace and lane) give what each gives alone. Generic over the
    /// precision only: one copy of the search per precision, whatever the steppers.
    /// Returns whether there is a step to run.
    #[inline(never)]
    pub(crate) fn begin(&mut self, d: &ModelDesc, s: Search) -> Result<bool, Error> {
        self.n_ranked = 0;
        let k = s.width;
        if k == 0 || k > self.plan.width.min(MAX_WIDTH) {
            return Err(Error::BeamTooWide {
                width: k,
                max: self.plan.width.min(MAX_WIDTH),
            });
        }
        self.check()?;
        // The start: one live hypothesis, empty (its state saved by the caller).
        put(&mut self.cur, 0, &[], None, P::Wide::default(), false)?;
        self.cur.n = 1;
        self.done.n = 0;
        self.at = Progress {
            search: s,
            start: d.tgt_start,
            ..Progress::default()
        };
        self.start_step(d)
    }

    /// The next hypothesis of this step to expand, and the token it was extended by
    /// (`None` once every live one has been).
    pub(crate) fn next_live(&self) -> Result<Option<(usize, u16)>, Error> {
        for i in self.at.cursor..self.cur.n {
            let hyp = self.cur.get(i)?;
            if !hyp.finished {
                return Ok(Some((i, hyp.last(self.at.start))));
            }
        }
        Ok(None)
    }

    /// Where current hypothesis `i`'s decoder state is saved.
    pub(crate) fn state_mut(&mut self, i: usize) -> Result<&mut [P::Act], Error> {
        Ok(chunk_mut(self.states, i, self.plan.state, STATES)?)
    }

    /// The step and the hypotheses expanded in it so far (for observers).
    pub(crate) fn step_counts(&self) -> (usize, usize) {
        (self.at.index, self.at.expanded)
    }

    /// The saved decoder state of current hypothesis `i`.
    pub(crate) fn state(&self, i: usize) -> Result<&[P::Act], Error> {
        Ok(chunk(self.states, i, self.plan.state, STATES)?)
    }

    /// Where the state after expanding hypothesis `i` is kept.
    pub(crate) fn expanded_state(&mut self, i: usize) -> Result<&mut [P::Act], Error> {
        let slot = self.at.search.width + i;
        Ok(chunk_mut(self.states, slot, self.plan.state, STATES)?)
    }

    /// Expands hypothesis `i` (the one [`BeamWork::next_live`] named) by the `logits`
    /// of its step: its candidates are offered, after the self-proposals of the
    /// finished hypotheses before it.
    #[inline(never)]
    pub(crate) fn expand(
        &mut self,
        d: &ModelDesc,
        i: usize,
        logits: &[P::Wide],
    ) -> Result<(), Error> {
        self.offer_finished(i)?;
        let Progress { search, cap, .. } = self.at;
        let base = self.cur.get(i)?.score;
        P::Wide::log_softmax(logits, self.lp);
        self.at.expanded += 1;
        // Before `min_steps` the end token is not proposed.
        let banned = (self.at.index < d.extras.min_steps).then_some(usize::from(d.tgt_end));
        match search.rule.variant {
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
                let (mut offers, mut finished) = (self.at.offers, self.at.finished);
                let counts = (&mut offers, &mut finished);
                self.netra_expand(d, i, search.width, banned, counts)?;
                (self.at.offers, self.at.finished) = (offers, finished);
            }
        }
        self.at.cursor = i + 1;
        Ok(())
    }

    /// In-slot only: the finished hypotheses from the cursor up to `to` propose
    /// themselves, unchanged.
    fn offer_finished(&mut self, to: usize) -> Result<(), Error> {
        for i in self.at.cursor..to.min(self.cur.n) {
            let hyp = self.cur.get(i)?;
            if hyp.finished {
                self.cands.offer(hyp.score, PAD, i, self.at.cap);
            }
        }
        self.at.cursor = to;
        Ok(())
    }

    /// The start of a step: whether there is one (below the step cap, a live
    /// hypothesis left); else the search ends and its results are ranked.
    fn start_step(&mut self, d: &ModelDesc) -> Result<bool, Error> {
        let variant = self.at.search.rule.variant;
        let over = self.at.index >= d.max_steps
            || (variant == BeamVariant::InSlot && self.cur.all_finished())
            || self.cur.n == 0;
        if self.at.stopped || over {
            self.finish()?;
            return Ok(false);
        }
        self.cands.n = 0;
        let k = self.at.search.width;
        self.at.cap = match variant {
            BeamVariant::FinishedSet => 2 * k,
            _ => k,
        };
        (self.at.cursor, self.at.expanded) = (0, 0);
        Ok(true)
    }

    /// Closes a step once every live hypothesis is expanded: the next hypotheses from
    /// the ranked candidates, and the variant's stopping rule. Returns whether the
    /// search goes on (else its results are ranked).
    #[inline(never)]
    pub(crate) fn end_step(&mut self, d: &ModelDesc) -> Result<bool, Error> {
        self.offer_finished(self.cur.n)?;
        let Progress { search, .. } = self.at;
        let (k, variant, alpha) = (search.width, search.rule.variant, search.rule.alpha);
        let ss = self.plan.state;
        let mut offers = self.at.offers;
        // The next hypotheses from the ranked candidates.
        self.next.n = 0;
        for r in 0..self.cands.n {
            let (tok, parent, score) =
                self.cands
                    .get(r)
                    .ok_or(short("beam: candidates", r + 1, self.cands.ids.len()))?;
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
                        score.cmp_normalised(len.max(1), w_score, w_len, alpha) == Ordering::Greater
                    });
                    if !live_beats {
                        self.at.stopped = true;
                    }
                }
            }
            BeamVariant::Netra => {
                if self.at.finished >= k {
                    self.at.stopped = true;
                }
            }
        }
        self.at.offers = offers;
        self.at.index += 1;
        self.start_step(d)
    }

    /// The end of a search: at the cap, finished-set offers its live hypotheses; the
    /// results are ranked.
    #[inline(never)]
    fn finish(&mut self) -> Result<(), Error> {
        let Progress {
            search, stopped, ..
        } = self.at;
        let (k, variant, alpha) = (search.width, search.rule.variant, search.rule.alpha);
        if variant == BeamVariant::FinishedSet && !stopped {
            // At the cap: the live hypotheses are offered, unfinished, in slot order.
            let mut offers = self.at.offers;
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
            self.at.offers = offers;
            self.cur.n = 0;
        }
        self.rank(variant, alpha)
    }

    /// Netra's expansion of hypothesis `i`: its `k` most probable tokens (`banned` left
    /// out) above the pruning threshold; finished ones to the finished set, the others
    /// to the candidates. `offers` and `finished_count` count the finished set's offers
    /// and the finished proposals.
    #[inline(never)]
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

impl<P: Precision> BeamWork<'_, P> {
    /// The search as it stands after its last closed step.
    pub(crate) fn view(&self) -> BeamView<'_, P::Wide> {
        BeamView {
            index: self.step_counts().0.saturating_sub(1),
            live: &self.cur,
            done: &self.done,
        }
    }
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
