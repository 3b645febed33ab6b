//! Armv6-M and Armv8-M Baseline (Cortex-M0, M0+, M1, M23): Thumb-1, no multiply-
//! accumulate, no unaligned loads.
//!
//! The input is widened to `i32` once per layer call. Each row then runs alone (Thumb-1
//! has six usable low registers): one `LDM` brings four int8 weights, two more bring four
//! activations, and each product costs its byte extraction (`SXTB`, or `LSLS` + `ASRS`),
//! a `MULS` and an `ADD`: 17 instructions per four columns, 70 per sixteen.
//!
//! Weights in the offset-binary layout ([`Layout::V6m`](crate::Layout::V6m)) are read
//! one `LDRB` each at immediate offsets, with no extraction: 3.5 instructions per column
//! ([`dot1_offset`]).

use core::arch::asm;

/// Words of the prepared-input buffer of layers with parts of up to 256 columns (1 KiB of
/// stack, reserved only by such layers).
pub(super) const BUF_WORDS: usize = 256;
/// Words of the buffer of layers whose parts have up to 64 columns (256 bytes of stack:
/// every layer of the micro:bit's netra), and of the attention's fused scores.
pub(super) const SMALL_WORDS: usize = 64;
/// The buffer holds one input part at a time, not the whole input: the M0's stack is
/// small (`prepared`). Its rows go one at a time (Thumb-1 has no registers to share
/// loads between two).
pub(super) const PER_PART: bool = true;

pub(super) use super::common::{one_word_each as words, widen as prepare};

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

/// `w . x` over `n <= RUN` columns (exact in `i32`); `xp` is `x` widened. Rows that
/// start on a word with a multiple of four columns (the usual shapes) run the loop
/// inline; others go through [`dot1_any`].
///
/// # Safety
/// `w` must be valid for reads of `n` bytes, `x` of `n` activations and `xp` of `n`
/// words.
#[inline(always)]
pub(super) unsafe fn dot1(w: *const i8, xp: *const u32, x: *const i16, n: usize) -> i32 {
    if (w as usize | n) & 3 == 0 {
        // SAFETY: the caller's contract; `w` is word-aligned and `n = 4 * (n / 4)`.
        unsafe { dot1_aligned(w, xp, n / 4, 0) }
    } else {
        // SAFETY: the caller's contract.
        unsafe { dot1_any(w, xp, x, n) }
    }
}

/// `a + w . x` over `4 * units` columns from word-aligned weights.
///
/// # Safety
/// `w` must be word-aligned and valid for reads of `4 * units` bytes, `xp` of `4 *
/// units` words.
#[inline(always)]
unsafe fn dot1_aligned(w: *const i8, xp: *const u32, units: usize, a: i32) -> i32 {
    let mut a = a;
    if units > 0 {
        // SAFETY: the template reads `4 * units` bytes from `w` (word-aligned) and `4 *
        // units` words from `xp`; both end pointers stay inside (or one past) the
        // weights. It writes no memory and touches only the declared registers.
        unsafe {
            let end16 = w.add(16 * (units / 4));
            let end4 = w.add(4 * units);
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
                inout("r0") w => _,
                inout("r1") xp => _,
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
    a
}

/// [`dot1`] for any alignment and length: the columns before the first word boundary
/// and after the last group of four go one by one. Not inlined (rare, and the M0
/// boards have little flash).
///
/// # Safety
/// As [`dot1`].
#[inline(never)]
unsafe fn dot1_any(w: *const i8, xp: *const u32, x: *const i16, n: usize) -> i32 {
    let head = ((4 - (w as usize & 3)) & 3).min(n);
    let units = (n - head) / 4;
    // SAFETY: the caller's contract; `head + 4 * units <= n` and the weights from `head`
    // on are word-aligned.
    unsafe {
        let a = super::common::tail1(w, x, 0, head, 0);
        let a = dot1_aligned(w.add(head), xp.add(head), units, a);
        super::common::tail1(w, x, head + 4 * units, n, a)
    }
}

/// Two columns of offset-binary weights ([`Layout::V6m`](crate::Layout::V6m)) at byte
/// offsets `$k0` and `$k1` from `r0`: the next two widened inputs from `r1`
/// (post-incremented), the products of the stored bytes (read unsigned) added to `r8`;
/// `r2`-`r5` scratch.
#[rustfmt::skip]
macro_rules! two_cols_offset {
    ($k0:literal, $k1:literal) => {
        concat!(
            "ldm r1!, {{r3, r4}}\n",
            "ldrb r2, [r0, #", $k0, "]\n",
            "muls r2, r3, r2\n",
            "add r8, r2\n",
            "ldrb r5, [r0, #", $k1, "]\n",
            "muls r5, r4, r5\n",
            "add r8, r5\n",
        )
    };
}

/// `sum (w_k + 128) x_k` modulo `2^32` over `n <= RUN` columns of offset-binary weights
/// (the stored bytes read unsigned, any alignment); `xp` is `x` widened. The caller
/// subtracts `128 * sum x_k` (modulo `2^32`) to get the exact `w . x`. Each column
/// costs an `LDRB` at an immediate offset (Thumb-1 has none for signed bytes), a
/// `MULS` and an `ADD`, two columns share an `LDM` of their inputs: 115 instructions
/// per 32 columns.
///
/// # Safety
/// `w` must be valid for reads of `n` bytes, `x` of `n` activations and `xp` of `n`
/// words.
#[inline(always)]
pub(super) unsafe fn dot1_offset(w: *const i8, xp: *const u32, x: *const i16, n: usize) -> i32 {
    let (n32, n4) = (n / 32 * 32, n / 4 * 4);
    let mut a = 0i32;
    if n4 > 0 {
        // SAFETY: the template reads the `n4 <= n` bytes from `w` (its pointer stops at
        // `w + n32`, then at `w + n4`) and `n4` words from `xp`. It writes no memory and
        // touches only the declared registers.
        unsafe {
            let end32 = w.add(n32);
            let end4 = w.add(n4);
            asm!(
                // Thumb-1 takes high registers as clobbers only: the sum and the two end
                // pointers move there (ADD and CMP can read them).
                "mov r9, r2",
                "mov r10, r3",
                "mov r8, r4",
                "cmp r0, r9",
                "beq 3f",
                "2:",
                two_cols_offset!("0", "1"),
                two_cols_offset!("2", "3"),
                two_cols_offset!("4", "5"),
                two_cols_offset!("6", "7"),
                two_cols_offset!("8", "9"),
                two_cols_offset!("10", "11"),
                two_cols_offset!("12", "13"),
                two_cols_offset!("14", "15"),
                two_cols_offset!("16", "17"),
                two_cols_offset!("18", "19"),
                two_cols_offset!("20", "21"),
                two_cols_offset!("22", "23"),
                two_cols_offset!("24", "25"),
                two_cols_offset!("26", "27"),
                two_cols_offset!("28", "29"),
                two_cols_offset!("30", "31"),
                "adds r0, #32",
                "cmp r0, r9",
                "bne 2b",
                "3:",
                "cmp r0, r10",
                "beq 5f",
                "4:",
                two_cols_offset!("0", "1"),
                two_cols_offset!("2", "3"),
                "adds r0, #4",
                "cmp r0, r10",
                "bne 4b",
                "5:",
                "mov r4, r8",
                inout("r0") w => _,
                inout("r1") xp => _,
                inout("r2") end32 => _,
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
    for k in n4..n {
        // SAFETY: `k < n`: inside both (the caller's contract).
        let (p, v) = unsafe { (*w.add(k) as u8 as i32, *x.add(k) as i32) };
        a = a.wrapping_add(p * v);
    }
    a
}

/// The integer softmax (`lut::softmax_q15`'s integers) without a division per element:
/// [`Divider`](crate::lut::Divider).
pub(crate) fn softmax_q15(x: &[i32], out: &mut [i16]) -> u32 {
    crate::lut::softmax_with(x, out, crate::lut::exp_neg_q16, |d| {
        let div = crate::lut::Divider::new(d);
        move |n| div.div(n)
    })
}
