//! Beam search over a caller-owned workspace, in the three variants published models
//! use, with the same results on the host and the device at every precision.
//!
//! A hypothesis is a token sequence with its `score`, the sum of the natural-log
//! probabilities of its tokens ([`s2s_kernels::logprob`] defines them exactly, in f32
//! and in integers), and its `length`, the tokens the decoder produced for it, the end
//! token included. The encoder runs once; each step expands every live hypothesis by
//! one decoder step from its own state.
//!
//! The candidates of a step are ranked by higher score, then lower token id, then the
//! earlier parent (slot order); slots are kept in ranking order. The variants
//! ([`BeamVariant`]):
//!
//! * **in-slot**: `K` slots; a finished hypothesis stays in its slot and is proposed
//!   again, extended by the padding id 0 at no cost with its length frozen; the `K`
//!   best proposals fill the slots. The search ends at the step cap or when every slot
//!   has finished; the slot with the best `score / length^alpha` wins (ties: the
//!   earlier slot), unfinished slots included.
//! * **finished-set**: `K` live hypotheses and a set of at most `K` finished ones. The
//!   ranked candidates are walked in order: an end-token candidate of rank below `K` is
//!   offered to the set, others fill the next live beam up to `K`. A full set replaces
//!   its worst entry (lowest `score / length^alpha`, ties: the later one is worse) only
//!   with a strictly better one. Once the set is full, the search stops when no live
//!   hypothesis, normalised at its current length, is above the worst finished one. At
//!   the cap the live hypotheses are offered, in slot order. The best entry wins (ties:
//!   the earlier offered).
//! * **netra**: netra-transliterate's own search: each live hypothesis proposes its `K`
//!   most probable tokens, those of probability at most `1e-8` are dropped, a proposal
//!   ending with the end token or reaching the step cap is finished (every one of them,
//!   without competing for a slot); the other proposals are ranked and cut to `K`. The
//!   search stops once `K` hypotheses have finished, or none is live. The best score
//!   among the finished ones (in the order they finished) and then the live ones wins:
//!   a live, unfinished hypothesis can win. No length normalisation (`alpha` is not
//!   used). The `K` best finished hypotheses are kept (for `nbest`); which one wins
//!   only ever depends on the best.
//!
//! With `K = 1` every variant is greedy decoding.
//!
//! The workspace ([`BeamPlan`]) grows linearly with `K`: per hypothesis two decoder
//! states, two token rows of `max_steps` ids, a finished-set row, two candidates and a
//! few counters; plus one row of log-probabilities.

use core::cmp::Ordering;

use s2s_kernels::logprob::{Alpha, Score};
use s2s_kernels::Precision;

use crate::desc::ModelDesc;
use crate::Error;

/// The beam-search variant a model was published with (see the module docs).
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

/// The padding id a finished in-slot hypothesis is extended by (it only decides ties).
const PAD: u16 = 0;

/// Sizes of a beam search's buffers for a width, beside the greedy [`crate::Plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BeamPlan {
    /// The widest search the buffers hold.
    pub width: usize,
    /// Activations of one saved decoder state: the decoder's states (and cell states),
    /// and for an input-fed model the attentional vector it feeds to the next step.
    pub state: usize,
    /// Tokens of one hypothesis (the model's step cap).
    pub steps: usize,
    /// Target vocabulary (one row of log-probabilities).
    pub vocab: usize,
    act: usize,
    wide: usize,
}

/// Slices of the beam workspace, in arena order.
const SLICES: usize = 14;

impl BeamPlan {
    /// The buffers of searches up to `width` wide for model `d` at precision `P`.
    pub fn new<P: Precision>(d: &ModelDesc, width: usize) -> BeamPlan {
        let lstm = |c: crate::desc::CellKind| 1 + (c == crate::desc::CellKind::Lstm) as usize;
        BeamPlan {
            width,
            state: lstm(d.cells.dec)
                .saturating_mul(d.dec_layers)
                .saturating_mul(d.dec_hidden)
                .saturating_add(if d.extras.input_feed {
                    d.attentional.unwrap_or(0)
                } else {
                    0
                }),
            steps: d.max_steps,
            vocab: d.tgt_vocab,
            act: core::mem::size_of::<P::Act>(),
            wide: core::mem::size_of::<P::Wide>(),
        }
    }

    /// Elements and element sizes of each slice.
    fn slices(&self) -> [(usize, usize); SLICES] {
        let k = self.width;
        let k2 = k.saturating_mul(2);
        [
            (k2.saturating_mul(self.state), self.act), // states: current, expanded
            (k2.saturating_mul(self.steps), 2),        // tokens: current, next
            (k2, self.wide),                           // scores
            (k2, 2),                                   // lengths
            (k2, 2),                                   // finished flags
            (k.saturating_mul(self.steps), 2),         // finished set: tokens
            (k, self.wide),                            // finished set: scores
            (k, 2),                                    // finished set: lengths
            (k, 2),                                    // finished set: ended flags
            (k, 4),                                    // finished set: offer order
            (k2, self.wide),                           // candidates: scores
            (k2, 4),                                   // candidates: token and parent
            (k2, 2),                                   // the ranked results
            (self.vocab, self.wide),                   // log-probabilities
        ]
    }

    /// Bytes of the beam workspace (each slice rounded up to whole 32-bit words): what
    /// [`crate::Runner::with_beam`] takes from the arena after [`crate::Plan::bytes`].
    pub fn bytes(&self) -> usize {
        self.slices().iter().fold(0usize, |sum, &(n, e)| {
            sum.saturating_add(n.saturating_mul(e).div_ceil(4).saturating_mul(4))
        })
    }

    /// Bytes one more hypothesis of width adds (the workspace grows linearly with the
    /// width, up to word rounding: this is the step from 1 to 2).
    pub fn bytes_per_beam<P: Precision>(d: &ModelDesc) -> usize {
        BeamPlan::new::<P>(d, 2)
            .bytes()
            .saturating_sub(BeamPlan::new::<P>(d, 1).bytes())
    }
}

/// A set of hypotheses: token rows, scores, lengths and finished flags.
pub(crate) struct Hyps<'w, W> {
    tokens: &'w mut [u16],
    scores: &'w mut [W],
    lens: &'w mut [u16],
    ended: &'w mut [u16],
    steps: usize,
    /// Hypotheses held.
    n: usize,
}

impl<W: Score> Hyps<'_, W> {
    fn row(&self, i: usize) -> &[u16] {
        &self.tokens[i * self.steps..][..self.steps]
    }
    fn len(&self, i: usize) -> usize {
        self.lens[i] as usize
    }
    fn finished(&self, i: usize) -> bool {
        self.ended[i] != 0
    }
    /// The last token of hypothesis `i`, or `start` for the empty one.
    fn last(&self, i: usize, start: u16) -> u16 {
        match self.len(i) {
            0 => start,
            n => self.row(i)[n - 1],
        }
    }
}

/// Copies hypothesis `i` of `from` into slot `j` of `to`, extended by `token` (unless
/// `None`) with `score`; `ended` marks it finished.
fn put<W: Score>(
    to: &mut Hyps<'_, W>,
    j: usize,
    from: (&[u16], usize),
    token: Option<u16>,
    score: W,
    ended: bool,
) {
    let (row, len) = from;
    let steps = to.steps;
    let dst = &mut to.tokens[j * steps..][..steps];
    dst[..len].copy_from_slice(&row[..len]);
    let len = match token {
        Some(t) if len < steps => {
            dst[len] = t;
            len + 1
        }
        _ => len,
    };
    to.scores[j] = score;
    to.lens[j] = len as u16;
    to.ended[j] = ended as u16;
}

/// Candidates of a step, kept ranked: higher score, lower token, earlier parent.
pub(crate) struct Cands<'w, W> {
    scores: &'w mut [W],
    /// `token | parent << 16`.
    ids: &'w mut [u32],
    n: usize,
}

impl<W: Score> Cands<'_, W> {
    fn token(&self, i: usize) -> u16 {
        self.ids[i] as u16
    }
    fn parent(&self, i: usize) -> usize {
        (self.ids[i] >> 16) as usize
    }
    /// Inserts a candidate if it ranks among the first `cap` (at most the buffer).
    fn offer(&mut self, score: W, token: u16, parent: usize, cap: usize) {
        let cap = cap.min(self.scores.len());
        let id = u32::from(token) | (parent as u32) << 16;
        // Position: after every candidate that ranks before or equal to it (candidates
        // arrive by parent, then token, so an equal score ranks after those present).
        let mut at = self.n;
        while at > 0 && better(score, id, self.scores[at - 1], self.ids[at - 1]) {
            at -= 1;
        }
        if at >= cap {
            return;
        }
        let end = self.n.min(cap - 1);
        for i in (at..end).rev() {
            self.scores[i + 1] = self.scores[i];
            self.ids[i + 1] = self.ids[i];
        }
        self.scores[at] = score;
        self.ids[at] = id;
        self.n = (self.n + 1).min(cap);
    }
}

/// Whether candidate `a` ranks strictly before `b` (ids `token | parent << 16`).
fn better<W: Score>(sa: W, ida: u32, sb: W, idb: u32) -> bool {
    match sa.partial_cmp(&sb) {
        Some(Ordering::Greater) => true,
        Some(Ordering::Equal) => (ida as u16, ida >> 16) < (idb as u16, idb >> 16),
        _ => false,
    }
}

/// The workspace of a beam search, carved out of the runner's arena.
pub(crate) struct BeamWork<'w, P: Precision> {
    pub(crate) plan: BeamPlan,
    /// Saved decoder states: `width` current ones, then `width` expanded ones.
    states: &'w mut [P::Act],
    /// Current and next hypotheses (swapped each step).
    cur: Hyps<'w, P::Wide>,
    next: Hyps<'w, P::Wide>,
    /// The finished set (finished-set and netra variants).
    done: Hyps<'w, P::Wide>,
    done_order: &'w mut [u32],
    cands: Cands<'w, P::Wide>,
    /// The results, best first: `i` for hypothesis `i` of `done`, `width + i` for
    /// hypothesis `i` of `cur`.
    ranked: &'w mut [u16],
    n_ranked: usize,
    lp: &'w mut [P::Wide],
}

/// Splits `n` elements of `T` off the front of `rest` (rounded up to whole words).
fn take<'w, T: bytemuck::Pod>(rest: &mut &'w mut [u32], n: usize, elem: usize) -> &'w mut [T] {
    let words = n.saturating_mul(elem).div_ceil(4);
    let (head, tail) = core::mem::take(rest).split_at_mut(words);
    *rest = tail;
    &mut bytemuck::cast_slice_mut(head)[..n]
}

impl<'w, P: Precision> BeamWork<'w, P> {
    /// Carves the buffers of `plan` out of `rest` (which holds at least
    /// [`BeamPlan::bytes`]).
    pub(crate) fn new(plan: BeamPlan, rest: &mut &'w mut [u32]) -> Self {
        let [states, tokens, scores, lens, ended, d_tokens, d_scores, d_lens, d_ended, d_order, c_scores, c_ids, ranked, lp] =
            plan.slices();
        let states = take(rest, states.0, states.1);
        let tokens: &mut [u16] = take(rest, tokens.0, tokens.1);
        let scores: &mut [P::Wide] = take(rest, scores.0, scores.1);
        let lens: &mut [u16] = take(rest, lens.0, lens.1);
        let ended: &mut [u16] = take(rest, ended.0, ended.1);
        let (k, m) = (plan.width, plan.steps);
        let (t0, t1) = tokens.split_at_mut(k * m);
        let (s0, s1) = scores.split_at_mut(k);
        let (l0, l1) = lens.split_at_mut(k);
        let (e0, e1) = ended.split_at_mut(k);
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
                take(rest, d_tokens.0, d_tokens.1),
                take(rest, d_scores.0, d_scores.1),
                take(rest, d_lens.0, d_lens.1),
                take(rest, d_ended.0, d_ended.1),
            ),
            done_order: take(rest, d_order.0, d_order.1),
            cands: Cands {
                scores: take(rest, c_scores.0, c_scores.1),
                ids: take(rest, c_ids.0, c_ids.1),
                n: 0,
            },
            ranked: take(rest, ranked.0, ranked.1),
            n_ranked: 0,
            lp: take(rest, lp.0, lp.1),
        }
    }
}

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
/// attentional vector fed to the next step ([`BeamPlan::state`] elements in all).
pub(crate) trait Stepper<P: Precision> {
    /// Copies the lane's state into `to` ([`BeamPlan::state`] elements).
    fn save(&mut self, to: &mut [P::Act]) -> Result<(), Error>;
    /// Makes `from` ([`BeamPlan::state`] elements) the lane's state.
    fn restore(&mut self, from: &[P::Act]) -> Result<(), Error>;
    /// Runs one decoder step from `token` and the current state; returns the logits.
    fn step(&mut self, token: u16) -> Result<&[P::Wide], Error>;
    /// A search step has expanded `expanded` hypotheses (for observers).
    fn searched(&mut self, index: usize, expanded: usize);
}

impl<P: Precision> BeamWork<'_, P> {
    /// Runs a search of `s` from the initial decoder state in `stepper` (the encoder
    /// has run). Leaves the results ranked.
    pub(crate) fn search(
        &mut self,
        d: &ModelDesc,
        s: Search,
        stepper: &mut impl Stepper<P>,
    ) -> Result<(), Error> {
        let k = s.width;
        if k == 0 || k > self.plan.width.min(MAX_WIDTH) {
            return Err(Error::BeamTooWide {
                width: k,
                max: self.plan.width.min(MAX_WIDTH),
            });
        }
        let ss = self.plan.state;
        // The start: one live hypothesis, empty, with the initial state.
        stepper.save(&mut self.states[..ss])?;
        put(&mut self.cur, 0, (&[], 0), None, P::Wide::default(), false);
        self.cur.n = 1;
        self.done.n = 0;
        let mut offers = 0u32;
        let mut finished_count = 0usize;
        let (variant, alpha) = (s.rule.variant, s.rule.alpha);
        let mut stopped = false;
        for index in 0..d.max_steps {
            if variant == BeamVariant::InSlot && (0..self.cur.n).all(|i| self.cur.finished(i)) {
                break;
            }
            if self.cur.n == 0 {
                break;
            }
            self.cands.n = 0;
            let cap = match variant {
                BeamVariant::FinishedSet => 2 * k,
                _ => k,
            };
            let mut expanded = 0;
            for i in 0..self.cur.n {
                if self.cur.finished(i) {
                    // In-slot only: the finished slot proposes itself.
                    self.cands.offer(self.cur.scores[i], PAD, i, cap);
                    continue;
                }
                // Expand hypothesis i from its saved state.
                let y = self.cur.last(i, d.tgt_start);
                stepper.restore(&self.states[i * ss..][..ss])?;
                let logits = stepper.step(y)?;
                P::Wide::log_softmax(logits, self.lp);
                expanded += 1;
                let base = self.cur.scores[i];
                match variant {
                    BeamVariant::InSlot | BeamVariant::FinishedSet => {
                        for (v, &lp) in self.lp.iter().enumerate() {
                            self.cands.offer(base.plus(lp), v as u16, i, cap);
                        }
                    }
                    BeamVariant::Netra => {
                        self.netra_expand(d, i, k, &mut offers, &mut finished_count);
                    }
                }
                // Keep the expanded state (slot `k + i`).
                let (_, after) = self.states.split_at_mut(k * ss);
                stepper.save(&mut after[i * ss..][..ss])?;
            }
            stepper.searched(index, expanded);
            // The next hypotheses from the ranked candidates.
            self.next.n = 0;
            for r in 0..self.cands.n {
                let (tok, parent, score) = (
                    self.cands.token(r),
                    self.cands.parent(r),
                    self.cands.scores[r],
                );
                let row = (self.cur.row(parent), self.cur.len(parent));
                match variant {
                    BeamVariant::InSlot => {
                        let j = self.next.n;
                        if self.cur.finished(parent) {
                            // Never expanded again: no state to keep.
                            put(&mut self.next, j, row, None, score, true);
                        } else {
                            put(&mut self.next, j, row, Some(tok), score, tok == d.tgt_end);
                            self.take_state(k, ss, parent, j);
                        }
                        self.next.n += 1;
                    }
                    BeamVariant::FinishedSet => {
                        if tok == d.tgt_end {
                            if r < k {
                                let len = row.1 + 1;
                                offer_done(
                                    &mut self.done,
                                    self.done_order,
                                    (row, Some(tok), score, len, true),
                                    k,
                                    alpha,
                                    &mut offers,
                                );
                            }
                        } else if self.next.n < k {
                            let j = self.next.n;
                            put(&mut self.next, j, row, Some(tok), score, false);
                            self.take_state(k, ss, parent, j);
                            self.next.n += 1;
                        }
                        if r >= k && self.next.n == k {
                            break;
                        }
                    }
                    BeamVariant::Netra => {
                        let j = self.next.n;
                        put(&mut self.next, j, row, Some(tok), score, false);
                        self.take_state(k, ss, parent, j);
                        self.next.n += 1;
                    }
                }
            }
            core::mem::swap(&mut self.cur, &mut self.next);
            match variant {
                BeamVariant::InSlot => {}
                BeamVariant::FinishedSet => {
                    if self.done.n == k {
                        let worst = worst_done(&self.done, self.done_order, alpha);
                        let live_beats = (0..self.cur.n).any(|i| {
                            self.cur.scores[i].cmp_normalised(
                                self.cur.len(i).max(1),
                                self.done.scores[worst],
                                self.done.len(worst),
                                alpha,
                            ) == Ordering::Greater
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
                let row = (self.cur.row(i), self.cur.len(i));
                let (score, len) = (self.cur.scores[i], self.cur.len(i));
                offer_done(
                    &mut self.done,
                    self.done_order,
                    (row, None, score, len, false),
                    k,
                    alpha,
                    &mut offers,
                );
            }
            self.cur.n = 0;
        }
        self.rank(variant, alpha);
        Ok(())
    }

    /// Netra's expansion of hypothesis `i` at step `index`: its `k` most probable
    /// tokens above the pruning threshold; finished ones to the finished set, the
    /// others to the candidates.
    fn netra_expand(
        &mut self,
        d: &ModelDesc,
        i: usize,
        k: usize,
        offers: &mut u32,
        finished_count: &mut usize,
    ) {
        // The parent's own top k (ranked like candidates; the parent is 0 here) in the
        // second half of the candidate buffer.
        let base = self.cur.scores[i];
        let (len, row) = (self.cur.len(i), self.cur.row(i));
        let mut top = [(P::Wide::default(), 0u16); MAX_NETRA_TOP];
        let kk = k.min(MAX_NETRA_TOP);
        let mut n = 0;
        for (v, &lp) in self.lp.iter().enumerate() {
            let mut at = n;
            while at > 0 && better(lp, v as u32, top[at - 1].0, u32::from(top[at - 1].1)) {
                at -= 1;
            }
            if at < kk {
                let end = n.min(kk - 1);
                for j in (at..end).rev() {
                    top[j + 1] = top[j];
                }
                top[at] = (lp, v as u16);
                n = (n + 1).min(kk);
            }
        }
        for &(lp, v) in &top[..n] {
            if lp <= P::Wide::PRUNE {
                continue;
            }
            let score = base.plus(lp);
            if v == d.tgt_end || len + 1 >= d.max_steps {
                *finished_count += 1;
                offer_done(
                    &mut self.done,
                    self.done_order,
                    ((row, len), Some(v), score, len + 1, v == d.tgt_end),
                    k,
                    Alpha::ZERO,
                    offers,
                );
            } else {
                self.cands.offer(score, v, i, k);
            }
        }
    }

    /// Copies the expanded state of parent `parent` into current slot `j` (the current
    /// states are free once every parent has been expanded).
    fn take_state(&mut self, k: usize, ss: usize, parent: usize, j: usize) {
        let (cur, after) = self.states.split_at_mut(k * ss);
        cur[j * ss..][..ss].copy_from_slice(&after[parent * ss..][..ss]);
    }

    /// Orders the results: in-slot, the slots by normalised score (ties: the earlier);
    /// finished-set, the set (ties: the earlier offered); netra, the finished set by
    /// score then the live hypotheses, a finished one first on ties.
    fn rank(&mut self, variant: BeamVariant, alpha: Alpha) {
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
                // Insertion after every entry that ranks before or equal to it.
                let mut at = n;
                while at > 0 && self.ranks_before(code, self.ranked[at - 1], alpha, k) {
                    at -= 1;
                }
                for j in (at..n).rev() {
                    self.ranked[j + 1] = self.ranked[j];
                }
                self.ranked[at] = code;
                n += 1;
            }
        }
        self.n_ranked = n;
    }

    /// Whether result `a` ranks strictly before the result `b` already ranked (codes
    /// as in `ranked`; `b` was inserted earlier, so only a strictly better `a` or, in
    /// the finished set, an earlier offer goes first).
    fn ranks_before(&self, a: u16, b: u16, alpha: Alpha, k: usize) -> bool {
        let (ha, hb) = (self.result(a, k), self.result(b, k));
        match ha
            .score
            .cmp_normalised(ha.len.max(1), hb.score, hb.len.max(1), alpha)
        {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => {
                let (a, b) = (a as usize, b as usize);
                // Two finished entries: the earlier offered first.
                a < k && b < k && self.done_order[a] < self.done_order[b]
            }
        }
    }

    fn result(&self, code: u16, k: usize) -> Hypothesis<'_, P::Wide> {
        let code = code as usize;
        let (set, i) = if code < k {
            (&self.done, code)
        } else {
            (&self.cur, code - k)
        };
        let len = set.len(i);
        let ended = set.finished(i);
        let tokens = &set.row(i)[..len - ended as usize];
        Hypothesis {
            tokens,
            score: set.scores[i],
            len,
            ended,
        }
    }

    /// Results of the last search, best first.
    pub(crate) fn ranked(&self) -> usize {
        self.n_ranked
    }

    /// Result `rank` of the last search (0 is the best).
    pub(crate) fn hypothesis(&self, rank: usize) -> Option<Hypothesis<'_, P::Wide>> {
        let code = *self.ranked.get(rank).filter(|_| rank < self.n_ranked)?;
        Some(self.result(code, self.plan.width))
    }
}

/// Most tokens netra's variant takes from one hypothesis (its width): searches of
/// this width at most.
const MAX_NETRA_TOP: usize = 16;

/// The largest beam width any variant supports.
pub const MAX_WIDTH: usize = MAX_NETRA_TOP;

/// Index of the worst entry of a full finished set: lowest `score / len^alpha`, ties
/// to the later offered.
fn worst_done<W: Score>(done: &Hyps<'_, W>, order: &[u32], alpha: Alpha) -> usize {
    let mut worst = 0;
    for i in 1..done.n {
        let c =
            done.scores[i].cmp_normalised(done.len(i), done.scores[worst], done.len(worst), alpha);
        if c == Ordering::Less || (c == Ordering::Equal && order[i] > order[worst]) {
            worst = i;
        }
    }
    worst
}

/// A hypothesis offered to a finished set: `(row, token to append, score, length,
/// ended)`.
type Offer<'r, W> = ((&'r [u16], usize), Option<u16>, W, usize, bool);

/// Offers a hypothesis to a finished set of at most `k`: taken while there is room,
/// else it replaces the worst entry if strictly better.
fn offer_done<W: Score>(
    done: &mut Hyps<'_, W>,
    order: &mut [u32],
    (row, token, score, len, ended): Offer<'_, W>,
    k: usize,
    alpha: Alpha,
    offers: &mut u32,
) {
    let slot = if done.n < k {
        done.n += 1;
        Some(done.n - 1)
    } else {
        let w = worst_done(done, order, alpha);
        let beats = score.cmp_normalised(len.max(1), done.scores[w], done.len(w), alpha);
        (beats == Ordering::Greater).then_some(w)
    };
    if let Some(j) = slot {
        put(done, j, row, token, score, ended);
        order[j] = *offers;
    }
    *offers = offers.saturating_add(1);
}
