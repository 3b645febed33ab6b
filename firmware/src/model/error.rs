//! Why a line or the model failed ([`LineError`], [`ServeError`]): their texts, and their
//! codes (`s2s_device::protocol::code`) written alone with the `error-codes` feature.

use core::fmt;

use s2s_device::protocol::code::{DeviceCode, ErrorCode};
use s2s_kernels::say;
use s2s_kernels::text::{Describe, Sink};
use seq2seq::Error;

use crate::app::HandlerError;
use crate::capacity::{ARENA_BYTES, MAX_POSITIONS, MAX_STEPS};
use crate::BOARD;

/// Why an input line failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LineError {
    /// The line is not UTF-8.
    NotUtf8,
    /// A line the session refuses (too long, an unknown command).
    Session(HandlerError),
    /// Writing the output failed.
    Output,
    /// The model rejected the input (unknown symbol, too long, empty, ...).
    Model(Error),
}

impl LineError {
    /// A fixed text for this kind of error (the defmt log's).
    pub fn as_str(&self) -> &'static str {
        match self {
            LineError::NotUtf8 => DeviceCode::NotUtf8.as_str(),
            LineError::Session(e) => e.as_str(),
            LineError::Output => DeviceCode::OutputFailed.as_str(),
            LineError::Model(e) => e.as_str(),
        }
    }

    /// The error's code (`protocol::code`): the core's for the model's errors, else the
    /// firmware's own.
    pub fn code(&self) -> u16 {
        match self {
            LineError::NotUtf8 => DeviceCode::NotUtf8.code(),
            LineError::Session(e) => e.code(),
            LineError::Output => DeviceCode::OutputFailed.code(),
            LineError::Model(e) => e.code(),
        }
    }
}

impl Describe for LineError {
    /// The text of `ERR <reason>`; with the `error-codes` feature `E<code>` alone.
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        if cfg!(feature = "error-codes") {
            return ErrorCode(self.code()).describe(out);
        }
        match self {
            LineError::Session(e) => e.describe(out),
            LineError::Model(e) => e.describe(out),
            LineError::NotUtf8 | LineError::Output => out.put(self.as_str()),
        }
    }
}

impl defmt::Format for LineError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.as_str())
    }
}

impl From<Error> for LineError {
    fn from(e: Error) -> Self {
        LineError::Model(e)
    }
}

impl From<HandlerError> for LineError {
    fn from(e: HandlerError) -> Self {
        LineError::Session(e)
    }
}

impl From<fmt::Error> for LineError {
    fn from(_: fmt::Error) -> Self {
        LineError::Output
    }
}

/// Why the model cannot be served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ServeError {
    /// No model, a bad model file, or a precision this build leaves out.
    Model(Error),
    /// A valid model beyond this board's [capacities](crate::capacity).
    Capacity(Error),
    /// Binding the model (nearly) exhausted the stack: the statics may be corrupted, so
    /// nothing more is attempted (see `measure::stack_exhausted`).
    StackOverflow {
        /// Bytes of stack the board has.
        stack: usize,
    },
}

impl ServeError {
    /// A fixed text for this kind of error (the defmt log's).
    pub fn as_str(&self) -> &'static str {
        match self {
            ServeError::Model(e) => e.as_str(),
            ServeError::Capacity(e) => e.as_str(),
            ServeError::StackOverflow { .. } => DeviceCode::StackExhausted.as_str(),
        }
    }

    /// The error's code (`protocol::code`): the core's for a refused model, else the
    /// firmware's own (beyond the board's capacities, the stack exhausted).
    pub fn code(&self) -> u16 {
        match self {
            ServeError::Model(e) => e.code(),
            ServeError::Capacity(_) => DeviceCode::BeyondCapacity.code(),
            ServeError::StackOverflow { .. } => DeviceCode::StackExhausted.code(),
        }
    }
}

impl Describe for ServeError {
    /// The text of `ERR model: <reason>`; with the `error-codes` feature `E<code>` alone.
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        if cfg!(feature = "error-codes") {
            return ErrorCode(self.code()).describe(out);
        }
        match *self {
            ServeError::Model(e) => e.describe(out),
            ServeError::Capacity(e) => say!(out;
                e, " (capacities of ", BOARD.name, ": arena ", ARENA_BYTES, " bytes, ",
                MAX_POSITIONS, " positions, ", MAX_STEPS, " steps)"
            ),
            ServeError::StackOverflow { stack } => say!(out;
                "binding the model exhausted the ", stack, "-byte stack of ", BOARD.name,
                " (statics may be corrupted)"
            ),
        }
    }
}

impl defmt::Format for ServeError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.as_str())
    }
}

impl From<Error> for ServeError {
    fn from(e: Error) -> Self {
        ServeError::Model(e)
    }
}
