//! What the model runner holds on each board, fixed at build time: the workspace arena
//! (a static buffer, no heap), the longest source and the longest output.
//!
//! A model is served only if its workspace for the source positions it needs (its fixed
//! length, else [`MAX_POSITIONS`]) fits the arena (`seq2seq::Plan::bytes`), its fixed
//! length is at most [`MAX_POSITIONS`] and its step cap at most [`MAX_STEPS`].
//!
//! The line buffer of the protocol ([`MAX_LINE`]) is on the stack.
//!
//! | board | RAM | `ARENA_BYTES` | `MAX_POSITIONS` | `MAX_STEPS` | `MAX_LINE` | sized for |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | microbit | 16 KiB | 10,240 | 25 | 32 | 256 | netra w8a16 (10,064 bytes at 25 positions) |
//! | lm3s6965evb | 64 KiB | 40,960 | 64 | 64 | 1,024 | netra w8a16; small models of up to 64 positions |
//! | mps2-an386, mps2-an505 | 4 MiB | 1 MiB | 256 | 256 | 1,024 | g2p-en (f32: 274,216 bytes at 256 positions) and larger |

/// Bytes of the workspace arena (a multiple of 4).
#[cfg(board = "microbit")]
pub const ARENA_BYTES: usize = 10 * 1024;
/// Source positions (end token and padding included) the runner accepts.
#[cfg(board = "microbit")]
pub const MAX_POSITIONS: usize = 25;
/// Output steps (end token included) the output buffer holds.
#[cfg(board = "microbit")]
pub const MAX_STEPS: usize = 32;

/// Bytes of the workspace arena (a multiple of 4).
#[cfg(board = "lm3s6965evb")]
pub const ARENA_BYTES: usize = 40 * 1024;
/// Source positions (end token and padding included) the runner accepts.
#[cfg(board = "lm3s6965evb")]
pub const MAX_POSITIONS: usize = 64;
/// Output steps (end token included) the output buffer holds.
#[cfg(board = "lm3s6965evb")]
pub const MAX_STEPS: usize = 64;

/// Bytes of the workspace arena (a multiple of 4).
#[cfg(any(board = "mps2-an386", board = "mps2-an505"))]
pub const ARENA_BYTES: usize = 1024 * 1024;
/// Source positions (end token and padding included) the runner accepts.
#[cfg(any(board = "mps2-an386", board = "mps2-an505"))]
pub const MAX_POSITIONS: usize = 256;
/// Output steps (end token included) the output buffer holds.
#[cfg(any(board = "mps2-an386", board = "mps2-an505"))]
pub const MAX_STEPS: usize = 256;

/// Longest input line in bytes (the protocol's line buffer, on the stack).
#[cfg(board = "microbit")]
pub const MAX_LINE: usize = 256;
/// Longest input line in bytes (the protocol's line buffer, on the stack).
#[cfg(not(board = "microbit"))]
pub const MAX_LINE: usize = 1024;

/// The arena in 32-bit words.
pub const ARENA_WORDS: usize = ARENA_BYTES / 4;

const _: () = assert!(ARENA_BYTES % 4 == 0);
