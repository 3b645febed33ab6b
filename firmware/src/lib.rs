//! Board layer and line-protocol application for running seq2seq models on Cortex-M
//! microcontrollers (under QEMU or on the real boards).
//!
//! The board is chosen at build time by exactly one board feature (see `build.rs`), which
//! sets `cfg(board = "...")`; [`board`] is then that board's module. Everything outside
//! `boards/` is generic: the application talks to the UART through `embedded_io::{Read,
//! Write}` and never touches registers.
#![no_std]
#![warn(missing_docs)]

pub mod app;
pub mod boards;
pub mod capacity;
pub mod fault;
#[cfg(feature = "kernel-suite")]
pub mod heap;
pub mod measure;
pub mod model;

pub use boards::board;

// Links the `defmt` global logger (frames go out over semihosting; decode them with
// `defmt-print -e <elf>`).
use defmt_semihosting as _;
