//! Armv7-M without the DSP extension (Cortex-M3): one `MLA` per product.
//!
//! The input is widened to `i32` once per layer call; four columns of two rows then
//! cost 17 instructions (one `LDM` of four activations shared by both rows, then per
//! row four `LDRSB` with post-increment and four `MLA`).

use core::arch::asm;
use core::mem::MaybeUninit;

/// Words of the prepared-input buffer: 512 activations (2048 bytes of stack).
pub(super) const BUF_WORDS: usize = 512;
/// The same: one size of buffer.
pub(super) const SMALL_WORDS: usize = BUF_WORDS;

/// Rows go in pairs (both share the input loads).
pub(super) const PAIRS: bool = true;

/// Words that `n` prepared activations take: one each.
#[inline(always)]
pub(super) const fn words(n: usize) -> usize {
    n
}

/// Writes `x` widened to `i32` into `dst` (`x.len()` long), two at a time.
pub(super) fn prepare(x: &[i16], dst: &mut [MaybeUninit<u32>]) {
    let mut pairs = x.chunks_exact(2);
    let mut out = dst.chunks_exact_mut(2);
    for (p, d) in pairs.by_ref().zip(out.by_ref()) {
        d[0].write(p[0] as i32 as u32);
        d[1].write(p[1] as i32 as u32);
    }
    if let (Some(&v), Some(d)) = (pairs.remainder().first(), out.into_remainder().first_mut()) {
        d.write(v as i32 as u32);
    }
}

/// Four columns of two rows: input `r0`, weights `r1` and `r2`, sums `r12` and `lr`.
macro_rules! four_cols_two_rows {
    () => {
        concat!(
            "ldm r0!, {{r4, r5, r8, r9}}\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r4, r12\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r5, r12\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r8, r12\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r9, r12\n",
            "ldrsb r10, [r2], #1\n",
            "mla lr, r10, r4, lr\n",
            "ldrsb r10, [r2], #1\n",
            "mla lr, r10, r5, lr\n",
            "ldrsb r10, [r2], #1\n",
            "mla lr, r10, r8, lr\n",
            "ldrsb r10, [r2], #1\n",
            "mla lr, r10, r9, lr\n",
        )
    };
}

/// Four columns of one row: input `r0`, weights `r1`, sum `r12`.
macro_rules! four_cols_one_row {
    () => {
        concat!(
            "ldm r0!, {{r4, r5, r8, r9}}\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r4, r12\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r5, r12\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r8, r12\n",
            "ldrsb r10, [r1], #1\n",
            "mla r12, r10, r9, r12\n",
        )
    };
}

/// `(w0 . x, w1 . x)` over `n <= RUN` columns (exact in `i32`); `xp` is `x` widened.
///
/// # Safety
/// `w0` and `w1` must be valid for reads of `n` bytes, `x` of `n` activations and `xp`
/// of `n` words.
#[inline(always)]
pub(super) unsafe fn dot2(
    w0: *const i8,
    w1: *const i8,
    xp: *const u32,
    x: *const i16,
    n: usize,
) -> (i32, i32) {
    let u = n / 4;
    let (mut a0, mut a1) = (0i32, 0i32);
    if u > 0 {
        // SAFETY: reads `4 * u <= n` bytes from each of `w0` and `w1` and `4 * u <= n`
        // words from `xp` (the caller's contract), writes no memory, touches only the
        // declared registers (`lr` is saved by the compiler).
        unsafe {
            asm!(
                // u = 2k + odd: one unit first if odd (C), Z = (k == 0) kept through it.
                "lsrs r3, r3, #1",
                "bcc 2f",
                four_cols_two_rows!(),
                "2:",
                "beq 4f",
                "3:",
                four_cols_two_rows!(),
                four_cols_two_rows!(),
                "subs r3, r3, #1",
                "bne 3b",
                "4:",
                inout("r0") xp => _,
                inout("r1") w0 => _,
                inout("r2") w1 => _,
                inout("r3") u => _,
                out("r4") _,
                out("r5") _,
                out("r8") _,
                out("r9") _,
                out("r10") _,
                inout("r12") a0,
                inout("lr") a1,
                options(nostack, readonly),
            );
        }
    }
    for k in 4 * u..n {
        // SAFETY: `k < n`: inside all three inputs (the caller's contract).
        let (p, q, v) = unsafe { (*w0.add(k) as i32, *w1.add(k) as i32, *x.add(k) as i32) };
        a0 = a0.wrapping_add(p * v);
        a1 = a1.wrapping_add(q * v);
    }
    (a0, a1)
}

/// `w . x` over `n <= RUN` columns (exact in `i32`); `xp` is `x` widened. Not inlined:
/// the Cortex-M3 board has little flash, and single rows are the rare case.
///
/// # Safety
/// As [`dot2`], for one row.
#[inline(never)]
pub(super) unsafe fn dot1(w: *const i8, xp: *const u32, x: *const i16, n: usize) -> i32 {
    let u = n / 4;
    let mut a = 0i32;
    if u > 0 {
        // SAFETY: reads `4 * u <= n` bytes from `w` and `4 * u <= n` words from `xp`,
        // writes no memory, touches only the declared registers.
        unsafe {
            asm!(
                "lsrs r3, r3, #1",
                "bcc 2f",
                four_cols_one_row!(),
                "2:",
                "beq 4f",
                "3:",
                four_cols_one_row!(),
                four_cols_one_row!(),
                "subs r3, r3, #1",
                "bne 3b",
                "4:",
                inout("r0") xp => _,
                inout("r1") w => _,
                inout("r3") u => _,
                out("r4") _,
                out("r5") _,
                out("r8") _,
                out("r9") _,
                out("r10") _,
                inout("r12") a,
                options(nostack, readonly),
            );
        }
    }
    for k in 4 * u..n {
        // SAFETY: `k < n`: inside both inputs (the caller's contract).
        let (p, v) = unsafe { (*w.add(k) as i32, *x.add(k) as i32) };
        a = a.wrapping_add(p * v);
    }
    a
}
