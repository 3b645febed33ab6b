//! Running a model: the encoder, bridge and attention, then greedy decoding or a beam
//! search, over a caller-owned arena, with an observer that sees every step.
//!
//! The files, bottom up: `observe` (the [`Observer`] and what it sees), `lane` (one
//! sequence's share of the workspace and its buffers), `encode` (the encoder pass),
//! `step` (one decoder step), `greedy` (greedy decoding), `runner` (the [`Runner`]
//! and its entry points), `search` (the runner's beam search) and `stream` (a source
//! streamed through a window of encoder states). This file only names them.

mod encode;
mod greedy;
mod lane;
mod observe;
mod runner;
mod search;
mod step;
mod stream;

pub use observe::{Observer, Probe, Step, Values};
pub use runner::Runner;
pub use stream::{StreamLimits, Streamed};
