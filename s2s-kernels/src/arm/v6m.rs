//! Armv6-M and Armv8-M Baseline (Cortex-M0, M0+, M1, M23): Thumb-1, no multiply-
//! accumulate, no unaligned loads.
//!
//! The input is widened to `i32` once per layer call. Each row then runs alone (Thumb-1
//! has six usable low registers): one `LDM` brings four int8 weights, two more bring four
//! activations, and each product costs its byte extraction (`SXTB`, or `LSLS` + `ASRS`),
//! a `MULS` and an `ADD`: 17 instructions per four columns, 70 per sixteen.

use core::arch::asm;

/// Words of the prepared-input buffer: 256 activations (1 KiB of stack).
pub(super) const BUF_WORDS: usize = 256;

/// Words that `n` prepared activations take: one each.
#[inline(always)]
pub(super) const fn words(n: usize) -> usize {
    n
}

/// Writes `x` widened to `i32` into `dst` (`x.len()` long).
pub(super) fn prepare(x: &[i16], dst: &mut [u32]) {
    for (d, &v) in dst.iter_mut().zip(x) {
        *d = v as i32 as u32;
    }
}

/// Four columns: weights `r0` (word-aligned), input `r1`, sum `r8`; `r2`-`r5` scratch.
macro_rules! four_cols {
    () => {
        concat!(
            "ldm r0!, {{r2}}\n",
            "ldm r1!, {{r3, r4}}\n",
            "sxtb r5, r2\n",
            "muls r5, r3, r5\n",
            "add r8, r5\n",
            "lsls r5, r2, #16\n",
            "asrs r5, r5, #24\n",
            "muls r5, r4, r5\n",
            "add r8, r5\n",
            "ldm r1!, {{r3, r4}}\n",
            "lsls r5, r2, #8\n",
            "asrs r5, r5, #24\n",
            "muls r5, r3, r5\n",
            "add r8, r5\n",
            "asrs r5, r2, #24\n",
            "muls r5, r4, r5\n",
            "add r8, r5\n",
        )
    };
}

/// `w . x` over `n <= RUN` columns (exact in `i32`); `xp` is `x` widened.
///
/// # Safety
/// `w` must be valid for reads of `n` bytes, `x` of `n` activations and `xp` of `n`
/// words.
#[inline(always)]
pub(super) unsafe fn dot1(w: *const i8, xp: *const u32, x: *const i16, n: usize) -> i32 {
    // `LDM` needs word-aligned weights: the first columns up to the boundary go alone.
    let head = ((4 - (w as usize & 3)) & 3).min(n);
    let mut a = 0i32;
    for k in 0..head {
        // SAFETY: `k < n`: inside both inputs (the caller's contract).
        let (p, v) = unsafe { (*w.add(k) as i32, *x.add(k) as i32) };
        a = a.wrapping_add(p * v);
    }
    let units = (n - head) / 4;
    if units > 0 {
        // SAFETY: `head + 4 * units <= n`: the weights from `head` on (word-aligned) and
        // the widened input from `head` on hold `4 * units` columns, and both end
        // pointers stay inside (or one past) the weights. The template reads only
        // those, writes no memory and touches only the declared registers.
        unsafe {
            let wp = w.add(head);
            let end16 = wp.add(16 * (units / 4));
            let end4 = wp.add(4 * units);
            asm!(
                // Thumb-1 takes high registers as clobbers only: the sum and the two end
                // pointers move there (ADD and CMP can read them).
                "mov r9, r2",
                "mov r10, r3",
                "mov r8, r4",
                "cmp r0, r9",
                "beq 3f",
                "2:",
                four_cols!(),
                four_cols!(),
                four_cols!(),
                four_cols!(),
                "cmp r0, r9",
                "bne 2b",
                "3:",
                "cmp r0, r10",
                "beq 5f",
                "4:",
                four_cols!(),
                "cmp r0, r10",
                "bne 4b",
                "5:",
                "mov r4, r8",
                inout("r0") wp => _,
                inout("r1") xp.add(head) => _,
                inout("r2") end16 => _,
                inout("r3") end4 => _,
                inout("r4") a,
                out("r5") _,
                out("r8") _,
                out("r9") _,
                out("r10") _,
                options(nostack, readonly),
            );
        }
    }
    for k in head + 4 * units..n {
        // SAFETY: `k < n`: inside both inputs (the caller's contract).
        let (p, v) = unsafe { (*w.add(k) as i32, *x.add(k) as i32) };
        a = a.wrapping_add(p * v);
    }
    a
}

/// `(w0 . x, w1 . x)`: one row after the other.
///
/// # Safety
/// As [`dot1`], for both rows.
#[inline(always)]
pub(super) unsafe fn dot2(
    w0: *const i8,
    w1: *const i8,
    xp: *const u32,
    x: *const i16,
    n: usize,
) -> (i32, i32) {
    // SAFETY: the caller's contract covers both rows.
    unsafe { (dot1(w0, xp, x, n), dot1(w1, xp, x, n)) }
}
