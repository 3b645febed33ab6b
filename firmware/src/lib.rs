//! Board layer and line-protocol application for running seq2seq models on Cortex-M
//! microcontrollers (under QEMU or on the real boards).
//!
//! The board is chosen at build time by `S2S_BOARD` (see `build.rs`): [`BOARD`] is its
//! entry in the board table of `s2s-device`. The library is generic: the model runner
//! ([`run`], [`model`]), the line protocol's session ([`app`]) and the measurements
//! ([`measure`]) talk to the link through `embedded_io::{Read, Write}`, time with a
//! [`Counter`] and raise an `embedded_hal` `OutputPin` around each decode, and write
//! the protocol's lines with `s2s_device::protocol`. The QEMU boards' register drivers
//! live in `boards/` (`board`, with `cfg(s2s_registers)`); a real board's crate
//! (`firmware/boards/<crate>`) brings its HAL's UART, counter and pin instead.
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
#[cfg(s2s_registers)]
pub mod boards;
pub mod capacity;
pub mod counter;
/// The model embedded at build time in a one-model build: the module `s2s embed MODEL
/// --board BOARD -o FILE` wrote, FILE given as `S2S_EMBED` (see `build.rs`).
#[cfg(s2s_embedded)]
#[allow(missing_docs, clippy::all)] // written by `s2s embed`
pub mod embedded {
    include!(env!("S2S_EMBED_RS"));
}
#[cfg(s2s_semihosting)]
pub mod fault;
#[cfg(feature = "kernel-suite")]
pub mod heap;
#[cfg(feature = "hal-link")]
pub mod link;
#[cfg(feature = "defmt")]
mod log;
pub mod measure;
mod meter;
pub mod model;
#[cfg(feature = "no-panic")]
mod no_panic;
pub mod run;

include!(concat!(env!("OUT_DIR"), "/board.rs"));

pub use counter::Counter;
pub use run::NoPin;
