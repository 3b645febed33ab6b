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
//! Before step `min_steps` of the model ([`Extras::min_steps`](crate::desc::Extras)),
//! the end token is proposed by no hypothesis in any variant (as if its probability
//! were zero; the other tokens' log-probabilities are unchanged).
//!
//! With `K = 1` every variant is greedy decoding.
//!
//! The workspace ([`BeamPlan`]) grows linearly with `K`: per hypothesis two decoder
//! states, two token rows of `max_steps` ids, a finished-set row, two candidates and a
//! few counters; plus one row of log-probabilities.
//!
//! No index of the search can panic: every buffer is reached through checked accessors,
//! and a workspace that does not hold what the plan says is an error
//! ([`s2s_kernels::ShapeError`]), so that the firmware's decode loop links without a
//! panic handler. The parts: `hyps` (sets of hypotheses and the finished set's rules),
//! `cands` (the ranked candidates of a step), `work` (the workspace and the search
//! loop) and `rank` (the results).

//! The files, bottom up: `plan` (the workspace's sizes), `cands`, `hyps`, `view` (a
//! result, and the hypotheses between two steps for observers), `search` (the request,
//! what the search needs of the runner), `work`, `rank`. The
//! rule a model stores ([`BeamRule`], [`BeamVariant`]) is part of its description
//! ([`crate::desc`]), named here too. This file only names them.

mod cands;
mod hyps;
mod plan;
mod rank;
mod search;
mod view;
mod work;

pub use crate::desc::{BeamRule, BeamVariant};
pub use plan::{BeamPlan, MAX_WIDTH};
pub use search::Search;
pub(crate) use search::Stepper;
pub use view::{BeamView, Hypothesis};
pub(crate) use work::BeamWork;
