//! What the instruction sets' kernels share, below all of them: the assembly loop
//! macros (`odd_then_pairs!`, `row_dots!`), the scalar tails of the assembly loops
//! ([`tail1`], [`tail2`]) and the widened input of the M0 and M3 ([`widen`],
//! [`one_word_each`]). Declared first in `arm/mod.rs` (`#[macro_use]`), so that the
//! macros are seen by the instruction sets' files.

#[cfg(not(s2s_isa = "dsp"))]
use core::mem::MaybeUninit;

/// The loop of an assembly kernel over a count of units held in register `$count`: one
/// unit first when the count is odd (`LSRS` moves its low bit to C and leaves Z for the
/// halved count, which the unit must not disturb: no instruction of a unit sets flags),
/// then two units per iteration. Local labels 2-4. (The Thumb-1 loop of the M0 counts
/// by end pointers instead.)
#[cfg(not(s2s_isa = "v6m"))]
macro_rules! odd_then_pairs {
    ($count:literal, $unit:expr) => {
        concat!(
            "lsrs ", $count, ", ", $count, ", #1\n", "bcc 2f\n", $unit, "2:\n", "beq 4f\n", "3:\n",
            $unit, $unit, "subs ", $count, ", ", $count, ", #1\n", "bne 3b\n", "4:\n",
        )
    };
}

/// `dot2` and `dot1` of an instruction set whose row loop handles `$cols` columns per
/// unit with the templates `$two` (two rows: input `r0`, weights `r1`/`r2`, sums
/// `r12`/`lr`) and `$one` (one row: input `r0`, weights `r1`, sum `r12`), scratch
/// `r4`, `r5`, `r8`-`r10` and the registers named in `$scratch`; `$arch` is the
/// assembler directive the templates need. The columns left after the last unit go
/// through [`tail2`] / [`tail1`].
#[cfg(not(s2s_isa = "v6m"))]
macro_rules! row_dots {
    (
        $cols:literal,
        $two:ident,
        $one:ident,
        $arch:expr,
        [$($scratch:tt),*],
        #[$dot1_inline:meta]
    ) => {
        /// `(w0 . x, w1 . x)` over `n <= RUN` columns (exact in `i32`); `xp` is `x`
        /// prepared.
        ///
        /// # Safety
        /// `w0` and `w1` must be valid for reads of `n` bytes, `x` of `n` activations
        /// and `xp` of `words(n)` words.
        #[inline(always)]
        pub(super) unsafe fn dot2(
            w0: *const i8,
            w1: *const i8,
            xp: *const u32,
            x: *const i16,
            n: usize,
        ) -> (i32, i32) {
            let u = n / $cols;
            let (mut a0, mut a1) = (0i32, 0i32);
            if u > 0 {
                // SAFETY: reads `$cols * u <= n` bytes from each of `w0` and `w1` and
                // the prepared words of those columns from `xp` (the caller's
                // contract), writes no memory, and touches only the registers declared
                // here (`lr` is saved by the compiler).
                unsafe {
                    core::arch::asm!(
                        $arch,
                        odd_then_pairs!("r3", $two!()),
                        inout("r0") xp => _,
                        inout("r1") w0 => _,
                        inout("r2") w1 => _,
                        inout("r3") u => _,
                        out("r4") _,
                        out("r5") _,
                        out("r8") _,
                        out("r9") _,
                        out("r10") _,
                        $(out($scratch) _,)*
                        inout("r12") a0,
                        inout("lr") a1,
                        options(nostack, readonly),
                    );
                }
            }
            // SAFETY: the caller's contract.
            unsafe { super::common::tail2(w0, w1, x, $cols * u, n, (a0, a1)) }
        }

        /// `w . x` over `n <= RUN` columns (exact in `i32`); `xp` is `x` prepared.
        ///
        /// # Safety
        /// As [`dot2`], for one row.
        #[$dot1_inline]
        pub(super) unsafe fn dot1(w: *const i8, xp: *const u32, x: *const i16, n: usize) -> i32 {
            let u = n / $cols;
            let mut a = 0i32;
            if u > 0 {
                // SAFETY: reads `$cols * u <= n` bytes from `w` and the prepared words
                // of those columns from `xp`, writes no memory, touches only the
                // declared registers.
                unsafe {
                    core::arch::asm!(
                        $arch,
                        odd_then_pairs!("r3", $one!()),
                        inout("r0") xp => _,
                        inout("r1") w => _,
                        inout("r3") u => _,
                        out("r4") _,
                        out("r5") _,
                        out("r8") _,
                        out("r9") _,
                        out("r10") _,
                        $(out($scratch) _,)*
                        inout("r12") a,
                        options(nostack, readonly),
                    );
                }
            }
            // SAFETY: the caller's contract.
            unsafe { super::common::tail1(w, x, $cols * u, n, a) }
        }
    };
}

/// Words that `n` widened activations take: one each (the M0's and M3's input).
#[cfg(not(s2s_isa = "dsp"))]
pub(super) const fn one_word_each(n: usize) -> usize {
    n
}

/// `a + w[k] x[k]` summed over `k` in `from..n`: the columns an assembly loop leaves.
///
/// # Safety
/// `w` and `x` must be valid for reads of `n` elements.
#[inline(always)]
pub(super) unsafe fn tail1(w: *const i8, x: *const i16, from: usize, n: usize, mut a: i32) -> i32 {
    for k in from..n {
        // SAFETY: `k < n`: inside both (the caller's contract).
        let (p, v) = unsafe { (*w.add(k) as i32, *x.add(k) as i32) };
        a = a.wrapping_add(p * v);
    }
    a
}

/// [`tail1`] for two rows sharing `x`.
///
/// # Safety
/// `w0`, `w1` and `x` must be valid for reads of `n` elements.
#[cfg(not(s2s_isa = "v6m"))]
#[inline(always)]
pub(super) unsafe fn tail2(
    w0: *const i8,
    w1: *const i8,
    x: *const i16,
    from: usize,
    n: usize,
    (mut a0, mut a1): (i32, i32),
) -> (i32, i32) {
    for k in from..n {
        // SAFETY: `k < n`: inside all three (the caller's contract).
        let (p, q, v) = unsafe { (*w0.add(k) as i32, *w1.add(k) as i32, *x.add(k) as i32) };
        a0 = a0.wrapping_add(p * v);
        a1 = a1.wrapping_add(q * v);
    }
    (a0, a1)
}

/// Writes `x` widened to `i32` into `dst` (`x.len()` long), two at a time: the prepared
/// input of the Cortex-M0 and M3 kernels.
#[cfg(not(s2s_isa = "dsp"))]
pub(super) fn widen(x: &[i16], dst: &mut [MaybeUninit<u32>]) {
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
