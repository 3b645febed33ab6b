//! Board layer and line-protocol application for running seq2seq models on Cortex-M
//! microcontrollers (under QEMU or on the real boards).
//!
//! The board is chosen at build time by `S2S_BOARD` (see `build.rs`): [`BOARD`] is its
//! entry in the board table of `s2s-device` and [`board`] its driver. Everything outside
//! `boards/` is generic: the application talks to the UART through `embedded_io::{Read,
//! Write}` and never touches registers, and writes the protocol's lines with
//! `s2s_device::protocol`.
#![no_std]
#![warn(missing_docs)]

/// A defmt log call, `log!(info, "...", args)`: compiled only with the `defmt` feature
/// (a default), without which the firmware has no log call and no logger.
#[macro_export]
macro_rules! log {
    ($level:ident, $($arg:tt)+) => {{
        #[cfg(feature = "defmt")]
        defmt::$level!($($arg)+);
    }};
}

pub mod app;
pub mod boards;
pub mod capacity;
pub mod fault;
#[cfg(feature = "kernel-suite")]
pub mod heap;
#[cfg(feature = "defmt")]
mod log;
pub mod measure;
pub mod model;

pub use boards::{board, BOARD};
