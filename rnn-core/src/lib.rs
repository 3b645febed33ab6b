//! GRU and LSTM cells and sequence passes for microcontrollers, generic over the number
//! format ([`Precision`]), without heap: every buffer is passed in by the caller.
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

mod gru;
mod lstm;
mod pass;

pub use gru::{GruCell, ResetMode};
pub use lstm::LstmCell;
pub use pass::{
    fill_masked, run_stack, run_stack_batch, Masked, RnnLayer, Rows, SeqInput, SeqLane,
};

use s2s_kernels::text::{Describe, Sink};
use s2s_kernels::{say, Precision, ShapeError};

/// Errors of this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// A weight, input, state or buffer had the wrong length.
    Shape(ShapeError),
    /// The recurrent matrix is not `G H x H`, or the input matrix has not `G H` rows
    /// (`G` = 3 gates for a GRU, 4 for an LSTM).
    GateRows {
        /// Gates of the cell.
        gates: usize,
        /// Rows of the input matrix.
        input_rows: usize,
        /// Rows of the recurrent matrix.
        recurrent_rows: usize,
        /// Columns of the recurrent matrix (the hidden size).
        hidden: usize,
    },
    /// An LSTM cell-state format with fractional bits outside `0..=15`.
    CellFormat(i8),
    /// A sequence was longer than the buffers given for it.
    SequenceTooLong {
        /// Positions requested.
        len: usize,
        /// Positions the buffers hold.
        capacity: usize,
    },
    /// The two directions of a bidirectional layer differ in sizes or kind.
    DirectionMismatch,
}

impl From<ShapeError> for Error {
    fn from(e: ShapeError) -> Self {
        Error::Shape(e)
    }
}

impl Describe for Error {
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        match self {
            Error::Shape(e) => say!(out; "recurrent layer: ", e),
            Error::GateRows {
                gates,
                input_rows,
                recurrent_rows,
                hidden,
            } => say!(out;
                "recurrent layer: input matrix has ", input_rows, " rows and recurrent matrix ",
                recurrent_rows, "x", hidden, "; both need ", gates, " x hidden rows"
            ),
            Error::CellFormat(frac) => say!(out;
                "LSTM: cell-state format with ", frac, " fractional bits (0 to 15 allowed)"
            ),
            Error::SequenceTooLong { len, capacity } => say!(out;
                "recurrent layer: sequence of ", len, " positions, buffers hold ", capacity
            ),
            Error::DirectionMismatch => {
                out.put("recurrent layer: the two directions of a layer differ in sizes or kind")
            }
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.describe(f)
    }
}

impl core::error::Error for Error {}

/// The activation of a cell's gates (GRU `r`, `z`; LSTM `i`, `f`, `o`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Recurrent {
    /// The logistic sigmoid `1 / (1 + e^-x)` (PyTorch, Keras 3 default, tf.keras 2).
    Sigmoid = 0,
    /// `clip(0.2 x + 0.5, 0, 1)`: `hard_sigmoid` of Keras 2 and tf.keras (the default
    /// recurrent activation of Keras before 2.3).
    HardSigmoidKeras2 = 1,
    /// `clip(x / 6 + 0.5, 0, 1)`: `hard_sigmoid` of Keras 3.
    HardSigmoidKeras3 = 2,
}

impl Recurrent {
    /// The activation with this file id.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::Sigmoid),
            1 => Some(Self::HardSigmoidKeras2),
            2 => Some(Self::HardSigmoidKeras3),
            _ => None,
        }
    }

    /// The activation of a wide value, as a unit value.
    #[inline]
    pub fn apply<P: Precision>(self, x: P::Wide) -> P::Act {
        match self {
            Recurrent::Sigmoid => P::sigmoid(x),
            Recurrent::HardSigmoidKeras2 => P::hard_sigmoid_keras2(x),
            Recurrent::HardSigmoidKeras3 => P::hard_sigmoid_keras3(x),
        }
    }
}

/// Scratch buffers of one cell step: `6H` wide values and `H` activations for cells of
/// hidden size up to `H` (a GRU uses all of them, an LSTM the wide values only).
pub struct CellScratch<'s, P: Precision> {
    wide: &'s mut [P::Wide],
    act: &'s mut [P::Act],
}

impl<'s, P: Precision> CellScratch<'s, P> {
    /// Wide values cells of hidden size up to `h` need.
    pub const fn wide_len(h: usize) -> usize {
        6 * h
    }
    /// Activations cells of hidden size up to `h` need.
    pub const fn act_len(h: usize) -> usize {
        h
    }

    /// Scratch for cells of hidden size up to `h`, carved from the two buffers (which
    /// may be longer than needed).
    pub fn with_hidden(
        h: usize,
        wide: &'s mut [P::Wide],
        act: &'s mut [P::Act],
    ) -> Result<Self, Error> {
        if wide.len() < 6 * h || act.len() < h {
            return Err(Error::Shape(ShapeError {
                what: "cell scratch",
                expected: 6 * h,
                found: wide.len(),
            }));
        }
        Ok(CellScratch {
            wide: &mut wide[..6 * h],
            act: &mut act[..h],
        })
    }

    /// The same buffers, borrowed for a shorter time.
    pub fn reborrow(&mut self) -> CellScratch<'_, P> {
        CellScratch {
            wide: self.wide,
            act: self.act,
        }
    }
}

/// A GRU or an LSTM cell. Each variant exists with its crate feature (`gru`, `lstm`,
/// both by default): a build without one leaves that cell's code out of every pass.
pub enum Cell<'a, P: Precision> {
    /// A GRU: its state is `h`.
    #[cfg(feature = "gru")]
    Gru(GruCell<'a, P>),
    /// An LSTM: its state is `h` and the cell state `c`.
    #[cfg(feature = "lstm")]
    Lstm(LstmCell<'a, P>),
    /// A build without any cell: never made.
    #[cfg(not(any(feature = "gru", feature = "lstm")))]
    #[doc(hidden)]
    None(core::convert::Infallible, core::marker::PhantomData<&'a P>),
}

impl<P: Precision> Clone for Cell<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for Cell<'_, P> {}

impl<P: Precision> core::fmt::Debug for Cell<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.fmt(f),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.fmt(f),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
}

impl<'a, P: Precision> Cell<'a, P> {
    /// Hidden size `H`.
    pub fn hidden(&self) -> usize {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.hidden(),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.hidden(),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
    /// Input size (all parts).
    pub fn input(&self) -> usize {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.input(),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.input(),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
    /// Multiply-accumulates of one step.
    pub fn macs(&self) -> usize {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.macs(),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.macs(),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
    /// True for an LSTM, whose state includes a cell state.
    pub fn has_cell_state(&self) -> bool {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(_) => false,
            #[cfg(feature = "lstm")]
            Cell::Lstm(_) => true,
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }

    /// One step of up to `N` lanes (see [`GruCell::step_batch`],
    /// [`LstmCell::step_batch`]); `c` holds the lanes' cell states for an LSTM and is
    /// not read for a GRU.
    #[cfg_attr(not(all(feature = "gru", feature = "lstm")), allow(unused_variables))]
    pub fn step_batch<const N: usize>(
        &self,
        x: &[&[&[P::Act]]],
        h: &mut [&mut [P::Act]],
        c: &mut [&mut [P::Act]],
        s: &mut [&mut CellScratch<'_, P>],
    ) -> Result<(), Error> {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(cell) => cell.step_batch::<N>(x, h, s),
            #[cfg(feature = "lstm")]
            Cell::Lstm(cell) => cell.step_batch::<N>(x, h, c, s),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
}

#[cfg(test)]
mod tests;
