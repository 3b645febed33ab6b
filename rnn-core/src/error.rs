//! The crate's error type: what a cell, a pass or a stack refuses, and why.

use s2s_kernels::text::{Describe, Sink};
use s2s_kernels::{say, ShapeError};

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
