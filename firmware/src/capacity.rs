//! What the model runner holds on this board, fixed at build time from its entry in the
//! board table (`s2s_device::BOARDS`): the workspace arena (a static buffer, no heap), the
//! longest source and the longest output, and the protocol's line buffer (on the stack).
//!
//! A model is served only if its workspace for the source positions it needs (its fixed
//! length, else [`MAX_POSITIONS`]) fits the arena (`seq2seq::Plan::bytes`), its fixed
//! length is at most [`MAX_POSITIONS`] and its step cap at most [`MAX_STEPS`].

use crate::BOARD;

/// Bytes of the workspace arena (a multiple of 4).
pub const ARENA_BYTES: usize = BOARD.capacities.arena_bytes;
/// Source positions (end token and padding included) the runner accepts.
pub const MAX_POSITIONS: usize = BOARD.capacities.max_positions;
/// Output steps (end token included) the output buffer holds.
pub const MAX_STEPS: usize = BOARD.capacities.max_steps;
/// Longest input line in bytes (the protocol's line buffer, on the stack).
pub const MAX_LINE: usize = BOARD.capacities.max_line;
/// Widest beam search: the board's, or 0 (greedy only) without the `beam` feature; the
/// beam code is then left out of the image.
pub const MAX_BEAM: usize = if cfg!(feature = "beam") {
    BOARD.capacities.max_beam
} else {
    0
};

/// The arena in 32-bit words.
pub const ARENA_WORDS: usize = ARENA_BYTES / 4;

const _: () = assert!(ARENA_BYTES.is_multiple_of(4));
