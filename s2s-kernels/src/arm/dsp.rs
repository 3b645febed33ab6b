//! Armv7E-M and Armv8-M Mainline with the DSP extension (Cortex-M4, M7, M33): two
//! 16-bit multiply-accumulates per `SMLAD`.
//!
//! The input is prepared once per layer call into pairs that match what `SXTB16` makes
//! of four int8 weights: for each group of four activations `x0 x1 x2 x3`, the words
//! `(x0, x2)` and `(x1, x3)` (low half first). A word of weights `w0 w1 w2 w3` gives
//! `(w0, w2)` by `SXTB16` and `(w1, w3)` by `SXTB16 ..., ROR #8`, and two `SMLAD`s add
//! the four products. Eight columns of two rows cost 21 instructions (one `LDM` of the
//! input shared by both rows, then per row two `LDR`, four `SXTB16`, four `SMLAD`).

use core::arch::asm;
use core::mem::MaybeUninit;

/// Words of the prepared-input buffer: 512 activations (1024 bytes of stack).
pub(super) const BUF_WORDS: usize = 256;
/// The same: one size of buffer.
pub(super) const SMALL_WORDS: usize = BUF_WORDS;
/// The buffer holds the whole input (every part).
pub(super) const PER_PART: bool = false;

/// Rows go in pairs (both share the input loads).
pub(super) const PAIRS: bool = true;

/// Words that `n` prepared activations take (groups of four, the last one padded).
#[inline(always)]
pub(super) const fn words(n: usize) -> usize {
    n.div_ceil(4) * 2
}

/// Writes `x` as pairs `(x0, x2), (x1, x3)` per group of four into `dst`
/// (`words(x.len())` long; the last group padded with zeros).
pub(super) fn prepare(x: &[i16], dst: &mut [MaybeUninit<u32>]) {
    let u = |v: i16| v as u16 as u32;
    let mut groups = x.chunks_exact(4);
    let mut out = dst.chunks_exact_mut(2);
    for (g, d) in groups.by_ref().zip(out.by_ref()) {
        d[0].write(u(g[0]) | u(g[2]) << 16);
        d[1].write(u(g[1]) | u(g[3]) << 16);
    }
    let rest = groups.remainder();
    if let Some(d) = out.next() {
        let e = |i: usize| rest.get(i).map_or(0, |&v| u(v));
        d[0].write(e(0) | e(2) << 16);
        d[1].write(e(1) | e(3) << 16);
    }
}

/// The instruction set the templates need (`SMLAD` and `SXTB16` are DSP instructions,
/// which the Armv8-M Mainline target does not enable by default).
macro_rules! arch {
    () => {
        ".arch armv7e-m"
    };
}

/// Eight columns of one row, its input words already in `r4`, `r5`, `r8`, `r9`: weights
/// at `$w` (post-incremented), sum in `$acc`, scratch `r10`, `r11`.
#[rustfmt::skip]
macro_rules! eight_cols {
    ($w:literal, $acc:literal) => {
        concat!(
            "ldr r10, [", $w, "], #4\n",
            "sxtb16 r11, r10\n",
            "smlad ", $acc, ", r11, r4, ", $acc, "\n",
            "sxtb16 r10, r10, ror #8\n",
            "smlad ", $acc, ", r10, r5, ", $acc, "\n",
            "ldr r10, [", $w, "], #4\n",
            "sxtb16 r11, r10\n",
            "smlad ", $acc, ", r11, r8, ", $acc, "\n",
            "sxtb16 r10, r10, ror #8\n",
            "smlad ", $acc, ", r10, r9, ", $acc, "\n",
        )
    };
}

/// Eight columns of two rows: input `r0`, weights `r1` and `r2`, sums `r12` and `lr`.
macro_rules! eight_cols_two_rows {
    () => {
        concat!(
            "ldm r0!, {{r4, r5, r8, r9}}\n",
            eight_cols!("r1", "r12"),
            eight_cols!("r2", "lr"),
        )
    };
}

/// Eight columns of one row: input `r0`, weights `r1`, sum `r12`.
macro_rules! eight_cols_one_row {
    () => {
        concat!("ldm r0!, {{r4, r5, r8, r9}}\n", eight_cols!("r1", "r12"))
    };
}

row_dots!(
    8,
    eight_cols_two_rows,
    eight_cols_one_row,
    arch!(),
    ["r11"],
    #[inline(always)]
);

/// `tanh_q15` from the full-range table (`fulltable.rs`, whose safe version the host
/// tests exhaustively against `lut.rs`): seven instructions, no branch, five registers.
#[inline(always)]
pub(crate) fn tanh_q15(x: i32) -> i16 {
    let (ta, td) = crate::fulltable::middles();
    let v: i32;
    // SAFETY: reads the tables at the signed interval `j = clamp(x >> 9, -512, 511)`
    // around their middles (512 entries on either side): inside both. Writes nothing.
    unsafe {
        asm!(
            arch!(),
            "ssat {j}, #10, {x}, asr #9",
            "ldr {a}, [{ta}, {j}, lsl #2]",
            "ldrh {j}, [{td}, {j}, lsl #1]",
            "ubfx {x}, {x}, #0, #9",
            "lsl {x}, {x}, #1",
            "mla {a}, {j}, {x}, {a}",
            "asr {a}, {a}, #10",
            x = inout(reg) x => _,
            ta = in(reg) ta,
            td = in(reg) td,
            j = out(reg) _,
            a = out(reg) v,
            options(pure, readonly, nostack),
        );
    }
    v as i16
}

/// `sigmoid_q15` from the full-range table: seven instructions, no branch, six
/// registers.
#[inline(always)]
pub(crate) fn sigmoid_q15(x: i32) -> i16 {
    let (ta, td) = crate::fulltable::middles();
    let v: i32;
    // SAFETY: reads the tables at `j = clamp(x >> 10, -512, 511)` around their middles:
    // inside both. Writes nothing.
    unsafe {
        asm!(
            arch!(),
            "ssat {j}, #10, {x}, asr #10",
            "ldr {a}, [{ta}, {j}, lsl #2]",
            "ldrh {j}, [{td}, {j}, lsl #1]",
            "ubfx {x}, {x}, #0, #10",
            "mla {a}, {j}, {x}, {a}",
            "add {a}, {a}, {k}",
            "usat {a}, #15, {a}, asr #11",
            x = inout(reg) x => _,
            ta = in(reg) ta,
            td = in(reg) td,
            k = in(reg) crate::fulltable::SIGMOID_BIAS,
            j = out(reg) _,
            a = out(reg) v,
            options(pure, readonly, nostack),
        );
    }
    v as i16
}

/// One exponential of the softmax's first pass: `r4` the score, `r9` the maximum,
/// `r10`/`r11` the tables, `r8` 2^14; adds `e` to `r3` and stores `max(e, 1) - 1` at
/// `r1` (post-incremented). `fulltable::exp_neg_q16`'s arithmetic, step for step.
macro_rules! softmax_exp {
    () => {
        concat!(
            "ldr r4, [r0], #4\n",
            "qsub r4, r9, r4\n",
            "usat r5, #5, r4, asr #15\n",
            "ldr r5, [r10, r5, lsl #2]\n",
            "ubfx lr, r4, #7, #8\n",
            "add lr, r11, lr, lsl #3\n",
            "ldrd lr, r12, [lr]\n",
            "and r4, r4, #127\n",
            "mla lr, r12, r4, lr\n",
            "asr lr, lr, #7\n",
            "mla lr, r5, lr, r8\n",
            "lsr lr, lr, #15\n",
            "add r3, r3, lr\n",
            "sub lr, lr, #1\n",
            "usat lr, #16, lr\n",
            "strh lr, [r1], #2\n",
        )
    };
}

/// One weight of the softmax's second pass: `r1` the stored exponential (rewritten in
/// place, post-incremented), `r3` the sum, `r12` the rounding term (as
/// `lut::softmax_with` makes it).
macro_rules! softmax_div {
    () => {
        concat!(
            "ldrh r4, [r1]\n",
            "add r4, r12, r4, lsl #15\n",
            "udiv r4, r4, r3\n",
            "usat r4, #15, r4\n",
            "strh r4, [r1], #2\n",
        )
    };
}

/// The integer softmax (`lut::softmax_q15`'s integers): a maximum, one pass of the
/// branch-free exponential of `fulltable.rs` (each kept in `out` as `lut::softmax_with`
/// keeps it), one pass of `UDIV`s.
pub(crate) fn softmax_q15(x: &[i32], out: &mut [i16]) -> u32 {
    let n = x.len().min(out.len()).min(1 << 15);
    if n == 0 {
        return 0;
    }
    let max = x[..n].iter().fold(i32::MIN, |m, &v| m.max(v));
    let (ti, tf) = crate::fulltable::exp_tables();
    let sum: u32;
    // SAFETY: reads `n` scores from `x` and the two tables at clamped indices (`n <= 31`,
    // `idx <= 255`: inside both), writes `n` halfwords to `out`; touches only the
    // declared registers.
    unsafe {
        asm!(
            arch!(),
            // n = 2k + odd: one element first if odd, Z = (k == 0) kept through it
            // (none of its instructions sets flags).
            odd_then_pairs!("r2", softmax_exp!()),
            inout("r0") x.as_ptr() => _,
            inout("r1") out.as_mut_ptr() => _,
            inout("r2") n => _,
            inout("r3") 0u32 => sum,
            out("r4") _,
            out("r5") _,
            out("lr") _,
            in("r8") 1u32 << 14,
            in("r9") max,
            in("r10") ti,
            in("r11") tf,
            out("r12") _,
            options(nostack),
        );
    }
    // e <= 2^16, e << 15 <= 2^31; plus sum / 2 < 2^31 for n <= 2^15: fits u32. The
    // quotients are at most 2^16, saturated to 32767.
    // SAFETY: reads and rewrites `n` halfwords of `out`; touches only the declared
    // registers.
    unsafe {
        asm!(
            arch!(),
            odd_then_pairs!("r2", softmax_div!()),
            inout("r1") out.as_mut_ptr() => _,
            inout("r2") n => _,
            in("r3") sum,
            out("r4") _,
            out("r5") _,
            in("r12") sum / 2 + if sum > 1 << 16 { 1 << 15 } else { 0 },
            options(nostack),
        );
    }
    sum
}
