//! Integer nonlinearities by table lookup with linear interpolation, and the
//! fixed-point softmax. Inputs are wide `Q16.15` values (`i32`), outputs `Q0.15`.
//!
//! All arithmetic is 32-bit (products of at most 17 x 16 bits, and one division per
//! softmax element); results are identical on every target.

use core::num::NonZeroU32;

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
    softmax_with(x, out, exp_neg_q16, |d| {
        // The sum is at least 2^16 (the maximum's own term): never the fallback.
        let d = NonZeroU32::new(d).unwrap_or(NonZeroU32::MIN);
        move |n| n / d
    })
}

/// [`softmax_q15`] with [`exp_neg_q16`] computed by `exp` (for inputs `>= 0`) and the
/// quotients `floor(n / d)` by the denominator `d >= 2^16` by `divider(d)`: the
/// instruction-set versions replace how they are computed (`arm/`), never the integers.
///
/// One exponential per element, kept in the output between the two passes. `e` is at
/// most `2^16`, so it is kept as `max(e, 1) - 1` (16 bits) and read back as one more.
/// That gives exactly the weights `floor((e 2^15 + floor(s / 2)) / s)` of the sum
/// `s >= 2^16`: `e = 0` read as 1 weighs `floor((2^15 + floor(s / 2)) / s)`, which is 0
/// like `e = 0`'s as soon as `s > 2^16`; when `s = 2^16` (one position takes
/// everything, the others have `e = 0`), the `2^15` is left out of the rounding term
/// instead: the maximum, read as `65535`, still gives `32767` after saturation, the
/// others 0 (`tests::softmax_matches_the_two_pass_definition`).
#[inline(always)]
pub(crate) fn softmax_with<D: Fn(u32) -> u32>(
    x: &[i32],
    out: &mut [i16],
    exp: impl Fn(i32) -> u32,
    divider: impl FnOnce(u32) -> D,
) -> u32 {
    let n = x.len().min(out.len()).min(1 << 15);
    let (Some(x), Some(out)) = (x.get(..n), out.get_mut(..n)) else {
        return 0; // never: `n` is at most both lengths
    };
    if n == 0 {
        return 0;
    }
    let max = x.iter().fold(i32::MIN, |m, &v| m.max(v));
    // e <= 2^16 per element and n <= 2^15: the sum fits in u32 (and is at least 2^16:
    // the maximum's own term).
    let mut sum = 0u32;
    for (o, &v) in out.iter_mut().zip(x) {
        let e = exp(max.saturating_sub(v));
        sum += e;
        *o = e.saturating_sub(1) as u16 as i16;
    }
    let round = sum / 2 + if sum > 1 << 16 { 1 << 15 } else { 0 };
    let div = divider(sum);
    for o in out.iter_mut() {
        // (e - 1) 2^15 < 2^31; plus round < 2^31 for n <= 2^15: fits u32.
        let w = div(round + ((*o as u16 as u32) << 15));
        *o = w.min(ONE_Q15 as u32) as i16;
    }
    sum
}

/// `floor(n / d)` for a fixed `d >= 2^16` without a division per quotient (Armv6-M has
/// no divide instruction; the library's costs about 50 instructions): an estimate from
/// 16-bit reciprocal and numerator, never above the quotient, then corrected by
/// subtracting `d` until the remainder is below it (at most a few times).
#[cfg(any(test, s2s_isa = "v6m"))]
#[derive(Clone, Copy)]
pub(crate) struct Divider {
    d: u32,
    /// `floor(2^31 / (top16(d) + 1))`, in `[2^15, 2^16)`.
    recip: u32,
    /// `15 + sh`, where `d >> sh` is `d`'s top 16 bits.
    shift: u32,
}

#[cfg(any(test, s2s_isa = "v6m"))]
impl Divider {
    /// The divider of `d` (`d >= 2^16`); one division.
    pub(crate) fn new(d: u32) -> Self {
        let sh = (16 - d.leading_zeros().min(16)).max(1);
        // top + 1 > d / 2^sh, so the reciprocal errs low.
        let top = (d >> sh) + 1;
        Divider {
            d,
            recip: (1u32 << 31) / top,
            shift: 15 + sh,
        }
    }

    /// `floor(n / d)`.
    #[inline(always)]
    pub(crate) fn div(&self, n: u32) -> u32 {
        // (n >> 16) * recip < 2^16 * 2^16: no overflow; every step rounds down, so the
        // estimate is at most the quotient and `r` cannot wrap.
        let mut q = ((n >> 16) * self.recip) >> self.shift;
        let mut r = n - q * self.d;
        while r >= self.d {
            q += 1;
            r -= self.d;
        }
        q
    }
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// What lets the softmax keep each exponential in 16 bits: 65536 only at `x = 0`,
    /// and 65535 never (below `2^15` the product with `e^0 = 65536` is even; beyond it
    /// the value is at most `e^-1 * 65536`).
    #[test]
    fn exp_neg_never_65535() {
        for x in -4..(18 << 15) {
            let e = exp_neg_q16(x);
            assert_ne!(e, 65535, "exp_neg_q16({x})");
            assert!(e <= 65536);
            assert_eq!(e == 65536, x <= 0, "exp_neg_q16({x}) = {e}");
        }
    }

    #[test]
    fn divider_gives_every_quotient() {
        let mut ds = vec![
            1 << 16,
            (1 << 16) + 1,
            (1 << 17) - 1,
            1 << 17,
            3 << 20,
            (1 << 31) - 1,
            1 << 31,
        ];
        let mut s = 0x9E37_79B9u32;
        for _ in 0..200 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            ds.push((s >> (s % 16)).max(1 << 16));
        }
        for &d in &ds {
            let div = Divider::new(d);
            let ns = [
                0,
                1,
                d - 1,
                d,
                d + 1,
                u32::MAX,
                u32::MAX - 1,
                1 << 31,
                (1 << 31) + (d / 2),
            ];
            for n in ns
                .into_iter()
                .chain((0..2000u32).map(|i| i.wrapping_mul(2_654_435_761)))
            {
                assert_eq!(div.div(n), n / d, "{n} / {d}");
            }
        }
    }

    /// The definition: one rounded division per weight, of the exponential recomputed.
    fn softmax_reference(x: &[i32], out: &mut [i16]) -> u32 {
        let max = x.iter().copied().max().unwrap_or(0);
        let sum: u32 = x.iter().map(|&v| exp_neg_q16(max.saturating_sub(v))).sum();
        for (o, &v) in out.iter_mut().zip(x) {
            let e = exp_neg_q16(max.saturating_sub(v));
            *o = (((e << 15) + sum / 2) / sum).min(32767) as i16;
        }
        sum
    }

    /// Score vectors that reach every branch of the softmax: ties, gaps beyond the
    /// exponential's range (`e = 0`, alone or with `e = 1`), saturated differences,
    /// and random spreads.
    pub(crate) fn softmax_cases() -> Vec<Vec<i32>> {
        let mut cases: Vec<Vec<i32>> = vec![
            vec![0],
            vec![5, 5],
            vec![0, -(17 << 15)],
            vec![0, -(17 << 15), i32::MIN],
            vec![i32::MAX, i32::MIN, 0],
            vec![0, -(16 << 15) - 20000, -(16 << 15)],
            vec![1 << 20; 25],
        ];
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for case in 0..20_000 {
            let n = 1 + case % 40;
            let spread = [1, 1 << 15, 8 << 15, 20 << 15, i32::MAX][case % 5] as u64;
            cases.push(
                (0..n)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        ((s % (2 * spread + 1)) as i64 - spread as i64) as i32
                    })
                    .collect(),
            );
        }
        cases
    }

    #[test]
    fn softmax_matches_the_two_pass_definition() {
        for x in &softmax_cases() {
            let (mut a, mut b) = (vec![0i16; x.len()], vec![0i16; x.len()]);
            assert_eq!(softmax_q15(x, &mut a), softmax_reference(x, &mut b));
            assert_eq!(a, b, "{x:?}");
            let mut c = vec![0i16; x.len()];
            softmax_with(x, &mut c, exp_neg_q16, |d| {
                let div = Divider::new(d);
                move |n| div.div(n)
            });
            assert_eq!(a, c, "with the divider: {x:?}");
        }
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
