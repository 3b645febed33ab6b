//! The one-run dot product the layer and the attention scores both call: [`RUN`], which
//! layouts this instruction set reads ([`reads`]), the offset-binary [`correction`] and
//! [`dot1`] over either layout.

use super::pick::isa;
use crate::layout::Layout;

/// Longest run of columns summed in one `i32` accumulator: at most
/// [`I32_EXACT_RUN`](crate::precision::I32_EXACT_RUN) (511), and a multiple of 16 so that
/// every run starts on a group of the prepared input.
pub(super) const RUN: usize = 496;

/// Whether this instruction set's kernels read `layout` (else `portable::linear`).
#[inline(always)]
pub(super) fn reads(layout: Layout) -> bool {
    layout == Layout::Row || layout == Layout::NATIVE
}

/// `128 * sum x` modulo `2^32`: the correction of an offset-binary dot product over `x`
/// ([`Layout::V6m`]), when `OFFSET`; 0 otherwise.
#[inline(always)]
pub(super) fn correction<const OFFSET: bool>(x: &[i16]) -> i32 {
    if OFFSET {
        x.iter()
            .fold(0i32, |s, &v| s.wrapping_add(v as i32))
            .wrapping_mul(128)
    } else {
        0
    }
}

/// `w . x` over `n <= RUN` columns of weights in [`Layout::V6m`] when `OFFSET` (the
/// M0's offset-binary kernel, less `corr = 128 * sum x`), in [`Layout::Row`] otherwise.
///
/// # Safety
/// As `isa::dot1`.
#[inline(always)]
pub(super) unsafe fn dot1<const OFFSET: bool>(
    w: *const i8,
    xp: *const u32,
    x: *const i16,
    n: usize,
    corr: i32,
) -> i32 {
    #[cfg(s2s_isa = "v6m")]
    if OFFSET {
        // SAFETY: the caller's contract.
        return unsafe { isa::dot1_offset(w, xp, x, n) }.wrapping_sub(corr);
    }
    let _ = corr;
    // SAFETY: the caller's contract.
    unsafe { isa::dot1(w, xp, x, n) }
}
