//! What the model runner holds on this board, fixed at build time from its entry in the
//! board table (`s2s_device::BOARDS`): the workspace arena (a static buffer, no heap), the
//! longest source and the longest output, and the protocol's line buffer (on the stack).
//!
//! A model is served only if its workspace for the source positions it needs (its fixed
//! length, else [`MAX_POSITIONS`]) fits the arena (`seq2seq::Plan::bytes`), its fixed
//! length is at most [`MAX_POSITIONS`] and its step cap at most [`MAX_STEPS`].

use crate::BOARD;

/// Bytes of the workspace arena (a multiple of 4).
#[cfg(not(s2s_embedded))]
pub const ARENA_BYTES: usize = BOARD.capacities.arena_bytes;
/// Source positions (end token and padding included) the runner accepts.
#[cfg(not(s2s_embedded))]
pub const MAX_POSITIONS: usize = BOARD.capacities.max_positions;
/// Output steps (end token included) the output buffer holds.
#[cfg(not(s2s_embedded))]
pub const MAX_STEPS: usize = BOARD.capacities.max_steps;

// A one-model build holds exactly what its model needs, as `s2s embed` planned it.
/// Bytes of the workspace arena: the embedded model's plan.
#[cfg(s2s_embedded)]
pub const ARENA_BYTES: usize = crate::embedded::ARENA_BYTES;
/// Source positions the embedded model is planned for.
#[cfg(s2s_embedded)]
pub const MAX_POSITIONS: usize = crate::embedded::POSITIONS;
/// The embedded model's most output steps.
#[cfg(s2s_embedded)]
pub const MAX_STEPS: usize = crate::embedded::MODEL.desc.max_steps;

// The module was checked against this board's memory by `s2s embed`.
#[cfg(s2s_embedded)]
const _: () = assert!(
    same(crate::embedded::BOARD.as_bytes(), BOARD.name.as_bytes()),
    "the embedded model was written for another board: run `s2s embed` with this board"
);

/// Byte strings equal, in a constant.
#[cfg(s2s_embedded)]
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
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
