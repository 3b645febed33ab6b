//! `tanh_q15` and `sigmoid_q15` at table-lookup cost: one shared table over the whole
//! signed input range, so that no sign or saturation branch is left, giving exactly the
//! integers of [`crate::lut::tanh_q15`] and [`crate::lut::sigmoid_q15`] (the FPU/DSP boards' choice:
//! 6 KiB of flash for about 8 instead of 17 instructions per element).
//!
//! [`crate::lut`] interpolates `T = TANH_Q15` (step `1/64`) at `|x|` and restores the sign. The
//! same values come from interpolating, at the signed input itself, a table that holds
//! for interval `j` (`-512 <= j < 512`) its left end `L_j` and slope `D_j`: `L_j = T[j]`
//! for `j >= 0` and `-T[-j]` below, `D_j = L_(j+1) - L_j`. Rounding half up of `|x|` and
//! then negating is rounding half *down* at the signed input, so the rounding term is
//! one less on the negative side:
//!
//! ```text
//! -(T[i] + floor((D r + S/2) / S))  =  L_j + floor((D r' + S/2 - 1) / S)
//! ```
//!
//! for `x = -(i S + r) = j S + r'` (`S` the interpolation step). The table stores
//! `A_j = 1024 L_j + c_j` (`c_j = 512`, or `511` below 0) in the units of sigmoid's step
//! (`S = 1024`, input `x / 2`); tanh (`S = 512`) reads it with `2 r'`.
//!
//! `exact_over_every_input` compares both with [`crate::lut`] over every input up to beyond
//! saturation.

use crate::tables::{EXP_FRAC_Q15, EXP_INT_Q16, TANH_Q15};

/// Intervals of the table: inputs of `|x| < 8` (tanh) or `16` (sigmoid) in `Q16.15`.
const N: usize = 1024;

/// `A_j` (see the module documentation), for `j = -512..512` at index `j + 512`.
static A: [i32; N] = {
    let mut a = [0i32; N];
    let mut i = 0;
    while i < N {
        let j = i as i32 - 512;
        let (l, c) = if j >= 0 {
            (TANH_Q15[j as usize] as i32, 512)
        } else {
            (-(TANH_Q15[(-j) as usize] as i32), 511)
        };
        a[i] = 1024 * l + c;
        i += 1;
    }
    a
};

/// `D_j`, the slope of interval `j` (`0..=512`), at index `j + 512`.
static D: [u16; N] = {
    let mut d = [0u16; N];
    let mut i = 0;
    while i < N {
        let j = i as i32 - 512;
        let (l0, l1) = if j >= 0 {
            (TANH_Q15[j as usize] as i32, TANH_Q15[j as usize + 1] as i32)
        } else {
            (
                -(TANH_Q15[(-j) as usize] as i32),
                -(TANH_Q15[(-j - 1) as usize] as i32),
            )
        };
        d[i] = (l1 - l0) as u16;
        i += 1;
    }
    d
};

/// `tanh(x)` for `x` in `Q16.15`, in `Q0.15`: [`crate::lut::tanh_q15`]'s integers. The
/// reference of the instruction-set version (`arm/dsp.rs`), tested here on the host.
#[cfg(test)]
pub fn tanh_q15(x: i32) -> i16 {
    // Interval j of x (step 2^9): beyond the table, the end intervals have D = 0 and hold
    // ±32767 whatever r is, so saturating j alone is exact.
    let i = ((x >> 9).clamp(-512, 511) + 512) as usize;
    let r2 = (x & 511) << 1;
    ((A[i] + D[i] as i32 * r2) >> 10) as i16
}

/// `1 / (1 + e^-x)` for `x` in `Q16.15`, in `Q0.15`: [`crate::lut::sigmoid_q15`]'s
/// integers. The reference of the instruction-set version, tested here on the host.
#[cfg(test)]
pub fn sigmoid_q15(x: i32) -> i16 {
    // (32769 + t) >> 1 with t interpolated at x / 2 (step 2^10 in x), saturated to
    // 32767: one shift of A + D r + 1024 * 32769. Never below 1: the clamp is a minimum.
    let i = ((x >> 10).clamp(-512, 511) + 512) as usize;
    let r = x & 1023;
    let v = (A[i] + D[i] as i32 * r + SIGMOID_BIAS) >> 11;
    v.clamp(0, i16::MAX as i32) as i16
}

/// What sigmoid adds to the interpolation before its final shift: `1024 * 32769`.
pub(crate) const SIGMOID_BIAS: i32 = 1024 * 32769;

/// The middle of the two tables (interval 0): the instruction-set versions index them
/// with the signed interval number.
#[cfg(s2s_isa = "dsp")]
pub(crate) fn middles() -> (*const i32, *const u16) {
    (A[512..].as_ptr(), D[512..].as_ptr())
}

/// `exp(-i / 256)` interpolation data for `i = 0..256`: `128 a_i + 64` and
/// `a_(i+1) - a_i` (`a = EXP_FRAC_Q15`), so that the interpolated fraction is one
/// multiply-add and a shift.
static EXP_FRAC: [[i32; 2]; 256] = {
    let mut t = [[0i32; 2]; 256];
    let mut i = 0;
    while i < 256 {
        let a = EXP_FRAC_Q15[i] as i32;
        t[i] = [128 * a + 64, EXP_FRAC_Q15[i + 1] as i32 - a];
        i += 1;
    }
    t
};

/// `exp(-n)` in `Q0.16` for `n = 0..32`: `EXP_INT_Q16`, then zeros, so that the integer
/// part needs no branch (it is saturated to 31 instead).
static EXP_INT: [u32; 32] = {
    let mut t = [0u32; 32];
    let mut n = 0;
    while n < EXP_INT_Q16.len() {
        t[n] = EXP_INT_Q16[n];
        n += 1;
    }
    t
};

/// [`crate::lut::exp_neg_q16`]'s integers for `d >= 0`, without a branch: the integer
/// part saturated to 31 (where the table is 0), the fraction from one pair of entries.
/// The reference of the instruction-set version (`arm/dsp.rs`), tested here.
#[cfg(test)]
pub(crate) fn exp_neg_q16(d: i32) -> u32 {
    let n = (d >> 15).clamp(0, 31) as usize;
    let [a, s] = EXP_FRAC[((d >> 7) & 255) as usize];
    let frac = ((a + s * (d & 127)) >> 7) as u32;
    (EXP_INT[n] * frac + (1 << 14)) >> 15
}

/// The exponential's tables (`EXP_INT`, `EXP_FRAC`) for the instruction-set version.
#[cfg(s2s_isa = "dsp")]
pub(crate) fn exp_tables() -> (*const u32, *const [i32; 2]) {
    (EXP_INT.as_ptr(), EXP_FRAC.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lut;

    #[test]
    fn exact_over_every_input() {
        // Every input up to beyond saturation (|x| = 2^20 is sigmoid's end), and the
        // extremes.
        let lim = (1 << 20) + 4096;
        for x in (-lim..=lim).chain([i32::MIN, i32::MIN + 1, i32::MAX - 1, i32::MAX]) {
            assert_eq!(tanh_q15(x), lut::tanh_q15(x), "tanh({x})");
            assert_eq!(sigmoid_q15(x), lut::sigmoid_q15(x), "sigmoid({x})");
        }
    }

    #[test]
    fn softmax_with_the_table_exponential_is_exact() {
        for x in &lut::tests::softmax_cases() {
            let (mut a, mut b) = (vec![0i16; x.len()], vec![0i16; x.len()]);
            lut::softmax_with(x, &mut a, exp_neg_q16, |d| move |n| n / d);
            lut::softmax_q15(x, &mut b);
            assert_eq!(a, b, "{x:?}");
        }
    }

    #[test]
    fn exp_exact_over_every_input() {
        for d in (0..(1 << 21)).chain([i32::MAX - 1, i32::MAX, 1 << 30]) {
            assert_eq!(exp_neg_q16(d), lut::exp_neg_q16(d), "exp_neg({d})");
        }
    }
}
