//! Armv7-M without the DSP extension (Cortex-M3): one `MLA` per product.
//!
//! The input is widened to `i32` once per layer call; four columns of two rows then
//! cost 17 instructions (one `LDM` of four activations shared by both rows, then per
//! row four `LDRSB` with post-increment and four `MLA`).

/// Words of the prepared-input buffer: 512 activations (2048 bytes of stack).
pub(super) const BUF_WORDS: usize = 512;
/// The same: one size of buffer.
pub(super) const SMALL_WORDS: usize = BUF_WORDS;
/// The buffer holds the whole input (every part).
pub(super) const PER_PART: bool = false;

/// Rows go in pairs (both share the input loads).
pub(super) const PAIRS: bool = true;

pub(super) use super::common::{one_word_each as words, widen as prepare};

/// Four columns of one row, its widened inputs already in `r4`, `r5`, `r8`, `r9`:
/// weights at `$w` (post-incremented), sum in `$acc`, scratch `r10`.
#[rustfmt::skip]
macro_rules! four_cols {
    ($w:literal, $acc:literal) => {
        concat!(
            "ldrsb r10, [", $w, "], #1\n",
            "mla ", $acc, ", r10, r4, ", $acc, "\n",
            "ldrsb r10, [", $w, "], #1\n",
            "mla ", $acc, ", r10, r5, ", $acc, "\n",
            "ldrsb r10, [", $w, "], #1\n",
            "mla ", $acc, ", r10, r8, ", $acc, "\n",
            "ldrsb r10, [", $w, "], #1\n",
            "mla ", $acc, ", r10, r9, ", $acc, "\n",
        )
    };
}

/// Four columns of two rows: input `r0`, weights `r1` and `r2`, sums `r12` and `lr`.
macro_rules! four_cols_two_rows {
    () => {
        concat!(
            "ldm r0!, {{r4, r5, r8, r9}}\n",
            four_cols!("r1", "r12"),
            four_cols!("r2", "lr"),
        )
    };
}

/// Four columns of one row: input `r0`, weights `r1`, sum `r12`.
macro_rules! four_cols_one_row {
    () => {
        concat!("ldm r0!, {{r4, r5, r8, r9}}\n", four_cols!("r1", "r12"))
    };
}

// The single-row product is out of line: the Cortex-M3 board has little flash, and
// single rows are the rare case.
row_dots!(
    4,
    four_cols_two_rows,
    four_cols_one_row,
    "",
    [],
    #[inline(never)]
);
