//! The one definition of the `s2s` boards and of the line protocol between the firmware
//! and its host, shared by the firmware (and its `build.rs`), the `s2s` host tool and
//! `xtask`.
//!
//! * [`board`]: the board table, [`BOARDS`]: what the firmware is built for and how
//!   much the model runner holds there;
//! * [`qemu`]: what only QEMU needs (machine, CPU, instruction counting);
//! * [`protocol`]: the lines on the UART, each with one writer and one parser;
//! * [`exit`]: the firmware's exit statuses;
//! * `embed` (feature `build`, std): a build script's reading of [`EMBED_VAR`].
//!
//! ```
//! use s2s_device::{board, protocol::Reply};
//!
//! let b = board::find("microbit").unwrap();
//! assert_eq!(b.target, "thumbv6m-none-eabi");
//! let mut line = String::new();
//! s2s_device::protocol::write_ready(&mut line, b.name).unwrap();
//! assert_eq!(s2s_device::protocol::parse_reply(line.trim_end()), Ok(Reply::Ready("microbit")));
//! ```
#![cfg_attr(not(any(test, feature = "build")), no_std)]
#![forbid(unsafe_code)]

pub mod board;
#[cfg(feature = "build")]
pub mod embed;
pub mod exit;
pub mod protocol;
pub mod qemu;

pub use board::{Board, BOARDS};

/// The environment variable naming the model module `s2s embed` wrote, at the build of a
/// one-model firmware, C API or program (`embed::module`, feature `build`).
pub const EMBED_VAR: &str = "S2S_EMBED";
