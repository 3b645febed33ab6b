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

// The module was checked against this board by `s2s embed`; a module of another board,
// or a model that does not fit this one beside the runtime, fails the build here.
#[cfg(s2s_embedded)]
const _: () = {
    use crate::embedded;
    assert!(
        s2s_device::board::same(embedded::BOARD, BOARD.name),
        "the embedded model was written for another board: run `s2s embed MODEL --board <this board>`"
    );
    let runtime = BOARD.one_model();
    assert!(
        embedded::ARENA_BYTES + runtime.statics as usize + runtime.stack as usize
            <= BOARD.memory.ram.length as usize,
        "the embedded model's workspace does not fit this board's RAM beside the runtime's statics and stack"
    );
    assert!(
        embedded::EMBEDDED_BYTES + runtime.flash as usize <= BOARD.app_flash().length as usize,
        "the embedded model does not fit this board's flash beside the runtime"
    );
};
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
