//! The one definition of the `s2s` boards and of the line protocol between the firmware
//! and its host, shared by the firmware (and its `build.rs`), the `s2s` host tool and
//! `xtask`.
//!
//! * [`board`]: the board table, [`BOARDS`]: what the firmware is built for and how
//!   much the model runner holds there;
//! * [`qemu`]: what only QEMU needs (machine, CPU, instruction counting);
//! * [`protocol`]: the lines on the UART, each with one writer and one parser;
//! * [`exit`]: the firmware's exit statuses.
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
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod board;
pub mod exit;
pub mod protocol;
pub mod qemu;

pub use board::{Board, BOARDS};
