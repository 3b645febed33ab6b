//! Integer nonlinearities by table lookup with linear interpolation, and the
//! fixed-point softmax. Inputs are wide `Q16.15` values (`i32`), outputs `Q0.15`.
//!
//! All arithmetic is 32-bit (products of at most 17 x 16 bits, and one division per
//! softmax element); results are identical on every target.

use crate::fixed::{sat_i16, ONE_Q15};
use crate::tables::{EXP_FRAC_Q15, EXP_INT_Q16, TANH_Q15};

/// Largest error of [`tanh_q15`] against `tanh` over its whole input range, in real units
/// (checked exhaustively over a fine grid by a test).
pub const MAX_ERROR_TANH_Q15: f64 = 4.7e-5;
/// Largest error of [`sigmoid_q15`] against the logistic function, in real units.
pub const MAX_ERROR_SIGMOID_Q15: f64 = 3.9e-5;
/// Largest error of [`exp_neg_q16`] against `exp(-x)`, in real units.
pub const MAX_ERROR_EXP_Q16: f64 = 3.1e-5;
/// Largest deviation of the sum of [`softmax_q15`]'s weights from 1, in units of `2^-15`,
/// per element (the sum of `n` weights is within `n / 2 + 1` units of `2^15`).
pub const SOFTMAX_SUM_TOLERANCE_PER_ELEMENT: f64 = 0.5;

/// Interpolates `TANH_Q15` at `mag / 2^frac` for `mag >= 0` with `frac >= 6`
/// fractional bits; saturates at the table end (`tanh(8)` rounds to one).
#[inline]
fn tanh_mag(mag: u32, frac: u32) -> i32 {
    let step = frac - 6; // table step is 1/64
    let idx = (mag >> step) as usize;
    if idx >= TANH_Q15.len() - 1 {
        return ONE_Q15 as i32;
    }
    let r = (mag & ((1 << step) - 1)) as i32;
    let (a, b) = (TANH_Q15[idx] as i32, TANH_Q15[idx + 1] as i32);
    a + (((b - a) * r + (1 << (step - 1))) >> step)
}

/// `tanh(x)` for `x` in `Q16.15`, result in `Q0.15`.
#[inline]
pub fn tanh_q15(x: i32) -> i16 {
    let mag = tanh_mag(x.unsigned_abs(), 15);
    (if x < 0 { -mag } else { mag }) as i16
}

/// `1 / (1 + e^-x)` for `x` in `Q16.15`, result in `Q0.15`, computed as
/// `(1 + tanh(x / 2)) / 2` from the same table.
#[inline]
pub fn sigmoid_q15(x: i32) -> i16 {
    // x / 2 in Q.15 is x in Q.16: no bit of the input is lost.
    let t = tanh_mag(x.unsigned_abs(), 16);
    let t = if x < 0 { -t } else { t };
    sat_i16((32768 + t + 1) >> 1)
}

/// `exp(-x)` for `x >= 0` in `Q16.15`, result in `Q0.16` (`65536` is one). Negative
/// inputs are treated as zero, inputs of 17 and more give 0.
#[inline]
pub fn exp_neg_q16(x: i32) -> u32 {
    let x = x.max(0) as u32;
    let n = (x >> 15) as usize;
    if n >= EXP_INT_Q16.len() {
        return 0;
    }
    let f = x & 0x7fff; // fraction in Q0.15; table step 1/256 = 2^7 units
    let idx = (f >> 7) as usize;
    let r = (f & 0x7f) as i32;
    let (a, b) = (EXP_FRAC_Q15[idx] as i32, EXP_FRAC_Q15[idx + 1] as i32);
    let frac = (a + (((b - a) * r + 64) >> 7)) as u32; // Q0.15, <= 2^15
                                                       // <= 2^16 * 2^15 = 2^31: fits.
    (EXP_INT_Q16[n] * frac + (1 << 14)) >> 15
}

/// Fixed-point softmax: `out_i ~ e^(x_i - max) / sum_j e^(x_j - max)` in `Q0.15` for
/// scores in `Q16.15`. Writes `min(x.len(), out.len())` weights; returns the
/// denominator in `Q0.16` (0 for an empty input).
///
/// Each weight is rounded to nearest by one integer division, so the sum of `n` weights
/// is within `n / 2 + 1` units of `2^15`. Inputs are limited to 32768 elements.
pub fn softmax_q15(x: &[i32], out: &mut [i16]) -> u32 {
    let n = x.len().min(out.len()).min(1 << 15);
    let Some(&max) = x[..n].iter().max() else {
        return 0;
    };
    // e <= 2^16 per element and n <= 2^15: the sum fits in u32. The exponentials are
    // recomputed in the second pass (two table lookups) instead of being stored.
    let sum: u32 = x[..n]
        .iter()
        .map(|&v| exp_neg_q16(max.saturating_sub(v)))
        .sum();
    // Second pass: recompute e (cheap table lookups) and divide.
    let half = sum / 2;
    for (o, &v) in out[..n].iter_mut().zip(&x[..n]) {
        let e = exp_neg_q16(max.saturating_sub(v));
        // e <= 2^16, e << 15 <= 2^31; plus half < 2^31 for n <= 2^15: fits u32.
        let w = ((e << 15) + half) / sum;
        *o = w.min(ONE_Q15 as u32) as i16;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q15(x: f64) -> i32 {
        (x * 32768.0).round() as i32
    }

    #[test]
    fn tables_match_their_formulas() {
        for (i, &t) in TANH_Q15.iter().enumerate() {
            let v = (libm::tanh(i as f64 / 64.0) * 32768.0 + 0.5)
                .floor()
                .min(32767.0);
            assert_eq!(t as f64, v, "tanh[{i}]");
        }
        for (i, &t) in EXP_FRAC_Q15.iter().enumerate() {
            let v = (libm::exp(-(i as f64) / 256.0) * 32768.0 + 0.5).floor();
            assert_eq!(t as f64, v, "exp_frac[{i}]");
        }
        for (n, &t) in EXP_INT_Q16.iter().enumerate() {
            let v = (libm::exp(-(n as f64)) * 65536.0 + 0.5).floor();
            assert_eq!(t as f64, v, "exp_int[{n}]");
        }
    }

    #[test]
    fn nonlinearities_within_stated_error_over_whole_range() {
        let (mut et, mut es, mut ee) = (0.0f64, 0.0f64, 0.0f64);
        // Every input in [-20, 20] at a step of 2^-15 * 3, plus the extremes.
        let mut x = q15(-20.0);
        while x <= q15(20.0) {
            let r = x as f64 / 32768.0;
            et = et.max((tanh_q15(x) as f64 / 32768.0 - libm::tanh(r)).abs());
            let s = 1.0 / (1.0 + libm::exp(-r));
            es = es.max((sigmoid_q15(x) as f64 / 32768.0 - s).abs());
            if x >= 0 {
                ee = ee.max((exp_neg_q16(x) as f64 / 65536.0 - libm::exp(-r)).abs());
            }
            x += 3;
        }
        for x in [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX] {
            let r = x as f64 / 32768.0;
            assert!((tanh_q15(x) as f64 / 32768.0 - libm::tanh(r)).abs() <= MAX_ERROR_TANH_Q15);
            let s = 1.0 / (1.0 + libm::exp(-r));
            assert!((sigmoid_q15(x) as f64 / 32768.0 - s).abs() <= MAX_ERROR_SIGMOID_Q15);
        }
        assert!(et <= MAX_ERROR_TANH_Q15, "tanh {et}");
        assert!(es <= MAX_ERROR_SIGMOID_Q15, "sigmoid {es}");
        assert!(ee <= MAX_ERROR_EXP_Q16, "exp {ee}");
    }

    #[test]
    fn softmax_sums_to_one_within_tolerance_and_matches_float() {
        let cases: [&[f64]; 5] = [
            &[0.3, 2.1, 0.5],
            &[0.0; 25],
            &[10.0, -10.0, 0.0, 3.0],
            &[-1000.0, -1000.5, 2000.0],
            &[1.0],
        ];
        for c in cases {
            let x: Vec<i32> = c.iter().map(|&v| q15(v.clamp(-65536.0, 65535.0))).collect();
            let mut w = vec![0i16; x.len()];
            softmax_q15(&x, &mut w);
            let sum: i64 = w.iter().map(|&v| v as i64).sum();
            let tol = (SOFTMAX_SUM_TOLERANCE_PER_ELEMENT * x.len() as f64 + 1.0) as i64;
            assert!((sum - 32768).abs() <= tol, "{c:?}: sum {sum}");
            let m = c.iter().cloned().fold(f64::MIN, f64::max);
            let d: f64 = c.iter().map(|v| (v - m).exp()).sum();
            for (i, v) in c.iter().enumerate() {
                let p = (v - m).exp() / d;
                assert!((w[i] as f64 / 32768.0 - p).abs() < 1e-4, "{c:?}[{i}]");
            }
        }
        assert_eq!(softmax_q15(&[], &mut []), 0);
    }
}
