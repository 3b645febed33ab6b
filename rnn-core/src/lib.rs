//! GRU and LSTM cells and sequence passes for microcontrollers, generic over the number
//! format ([`Precision`](s2s_kernels::Precision)), without heap: every buffer is passed in by the caller.
//!
//! * [`GruCell`]: one step, with separate input and recurrent biases and both forms of
//!   the candidate gate ([`ResetMode`]). Gates are stacked in the canonical order
//!   `[r, z, n]` (reset, update, candidate), as in PyTorch; importers reorder others.
//! * [`LstmCell`]: one step of an LSTM, gates stacked `[i, f, g, o]` (PyTorch's order,
//!   and Keras' `[i, f, c, o]`), its cell state in a format of its own.
//! * [`Recurrent`]: the gates' activation, the logistic sigmoid or one of the two hard
//!   sigmoids of Keras.
//! * [`Cell`]: either cell, so that passes and stacks are written once.
//! * [`RnnLayer::run`]: a pass over a sequence, uni- or bidirectional; bidirectional
//!   outputs are `[forward; backward]` per position.
//! * [`run_stack`]: stacked layers, each reading the previous one's outputs;
//!   [`fill_masked`] gives masked (padded) positions their output as Keras does.
//!
//! ```
//! use rnn_core::{CellScratch, GruCell, ResetMode};
//! use s2s_kernels::{Linear, F32};
//!
//! // A GRU with one input and one hidden unit; all weights 0.5, no biases.
//! let w = [0.5f32; 3];
//! let w_ih = Linear::<F32>::new(3, 1, 1, &w, &[], None).unwrap();
//! let w_hh = Linear::<F32>::new(3, 1, 1, &w, &[], None).unwrap();
//! let cell = GruCell::new(w_ih, w_hh, ResetMode::After).unwrap();
//! let (mut wide, mut act) = ([0.0f32; 6], [0.0f32; 1]);
//! let mut scratch = CellScratch::with_hidden(1, &mut wide, &mut act).unwrap();
//! let mut h = [0.0f32];
//! cell.step(&[&[1.0]], &mut h, &mut scratch).unwrap();
//! // r = z = sigmoid(0.5), n = tanh(0.5 + r * 0), h = (1 - z) * n
//! let z = 1.0 / (1.0 + (-0.5f32).exp());
//! assert!((h[0] - (1.0 - z) * 0.5f32.tanh()).abs() < 1e-6);
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
// A build without any cell: every step is unreachable.
#![cfg_attr(
    not(any(feature = "gru", feature = "lstm")),
    allow(unused_variables, unreachable_code)
)]

// Floors, bottom up: `error`, `recurrent`; `scratch`, `gates`; `gru`, `lstm`; `cell`;
// `pass`; this file re-exports them (`cargo xtask floors`).
mod cell;
mod error;
mod gates;
mod gru;
mod lstm;
mod pass;
mod recurrent;
mod scratch;

pub use cell::Cell;
pub use error::Error;
pub use gru::{GruCell, ResetMode};
pub use lstm::LstmCell;
pub use pass::{
    fill_masked, run_stack, run_stack_batch, Masked, RnnLayer, Rows, SeqInput, SeqLane,
};
pub use recurrent::Recurrent;
pub use scratch::CellScratch;

#[cfg(test)]
mod tests;
