//! Log-probabilities for beam search: log-softmax, sums of log-probabilities and their
//! comparison under length normalisation, exactly defined for every precision.
//!
//! A beam search ranks hypotheses by the sum of the natural-log probabilities of their
//! tokens, `score`, and chooses among finished ones by `score / len^alpha`. The
//! [`Score`] trait gives those operations for the wide values of each precision:
//!
//! * `f32` (the float precisions): [`crate::float::log_softmax`], IEEE additions in step
//!   order, and `score / len^alpha` as one f32 division by `len^alpha` computed from
//!   integer powers and `sqrtf` (both exact or correctly rounded, so host and device
//!   agree bit for bit).
//! * `i32` (`W8A16`): natural-log units in the logits' own `Q16.15` format, no float at
//!   all. `log p_i = x_i - max - L` with `L = ln(sum_j e^(x_j - max))`: the exponentials
//!   by [`crate::lut::exp_neg_q16`] (`Q0.16`, 0 below `e^-17`), their sum `S` in 64
//!   bits, and `L = ln(S / 2^16)` by [`ln_ratio_q15`] (leading-zero count times `ln 2`
//!   plus a 257-entry table of `ln(1 + f)` with linear interpolation). Sums saturate at
//!   `i32::MIN` (about `-65536` nats). Length normalisation compares
//!   `a / n(la)` and `b / n(lb)` by cross-multiplying in 128 bits, with `n(len) =
//!   len^alpha` in `Q.16` from integer powers and an integer square root: exact.
//!
//! `alpha` goes in steps of one half from 0 to 2 ([`Alpha`]), which keeps `len^alpha`
//! exact in integers (`len^(1/2)` is an integer square root). The error of the integer
//! log-softmax against `ln` of the exact softmax of the same logits is at most
//! [`MAX_ERROR_LOG_SOFTMAX_Q15`] (checked by a test).

use core::cmp::Ordering;
use core::fmt::Debug;

use bytemuck::Pod;

use crate::lut::exp_neg_q16;
use crate::tables::LN1P_Q16;

/// `ln 2` in `Q16.15` (22713.0139..., rounded).
pub const LN2_Q15: i32 = 22713;

/// Largest error of the integer log-softmax of a token with probability at least
/// `e^-17` against `ln` of the real softmax of the same `Q16.15` logits, in nats.
pub const MAX_ERROR_LOG_SOFTMAX_Q15: f64 = 2.0e-4;

/// The threshold of netra-transliterate's pruning, `ln(1e-8)`, in nats: a token whose
/// probability is at most `1e-8` is dropped.
pub const LN_PRUNE: f64 = -18.420_680_743_952_367;

/// The length-normalisation exponent of a beam search, in halves: `alpha = halves / 2`,
/// from 0 (no normalisation) to 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Alpha {
    halves: u8,
}

impl Alpha {
    /// Largest exponent, in halves.
    pub const MAX_HALVES: u8 = 4;
    /// `alpha = 0`: raw scores.
    pub const ZERO: Alpha = Alpha { halves: 0 };
    /// `alpha = 1`: the score per token.
    pub const ONE: Alpha = Alpha { halves: 2 };

    /// `halves / 2`, or `None` above [`Alpha::MAX_HALVES`].
    pub const fn from_halves(halves: u8) -> Option<Alpha> {
        if halves <= Self::MAX_HALVES {
            Some(Alpha { halves })
        } else {
            None
        }
    }

    /// The exponent in halves.
    pub const fn halves(self) -> u8 {
        self.halves
    }

    /// The exponent as a real number.
    pub fn value(self) -> f32 {
        f32::from(self.halves) / 2.0
    }

    /// `len^alpha` in `Q.16` (at most `65535^2 * 2^16 < 2^48` for a 16-bit length;
    /// saturating above).
    pub fn norm_q16(self, len: usize) -> u64 {
        let l = len as u64;
        let mut n: u64 = 1 << 16;
        for _ in 0..self.halves / 2 {
            n = n.saturating_mul(l);
        }
        if self.halves % 2 == 1 {
            // sqrt(l) in Q.16 is isqrt(l * 2^32); times n / 2^16.
            let root = l.saturating_mul(1 << 32).isqrt();
            n = (n >> 16).saturating_mul(root);
        }
        n
    }

    /// `len^alpha` in f32 (integer powers and `sqrtf`: exact or correctly rounded).
    pub fn norm_f32(self, len: usize) -> f32 {
        let l = len as f32;
        let mut n = 1.0f32;
        for _ in 0..self.halves / 2 {
            n *= l;
        }
        if self.halves % 2 == 1 {
            n *= libm::sqrtf(l);
        }
        n
    }
}

/// `ln(s / 2^16)` in `Q16.15` for `s >= 2^16` (smaller `s` counts as `2^16`).
pub fn ln_ratio_q15(s: u64) -> i32 {
    let s = s.max(1 << 16);
    let k = 63 - s.leading_zeros() as i32; // 16..=63
                                           // The mantissa in [2^16, 2^17): its 16 fraction bits index the table by their top 8
                                           // (`m - 2^16`, taken as a mask so that the index is visibly below 256).
    let m = (s >> (k - 16)) as u32;
    let f = m & 0xffff;
    let (idx, r) = ((f >> 8) as usize, (f & 0xff) as i32);
    let (a, b) = (LN1P_Q16[idx] as i32, LN1P_Q16[idx + 1] as i32);
    let ln_m_q16 = a + (((b - a) * r + 128) >> 8);
    (k - 16) * LN2_Q15 + ((ln_m_q16 + 1) >> 1)
}

/// The integer log-softmax (see the module docs): `out_i = x_i - max - ln(sum_j
/// e^(x_j - max))` in `Q16.15`, saturating at `i32::MIN`. Writes `min(x.len(),
/// out.len())` values.
pub fn log_softmax_q15(x: &[i32], out: &mut [i32]) {
    let n = x.len().min(out.len());
    let (x, out) = (&x[..n], &mut out[..n]);
    let Some(max) = x.iter().copied().max() else {
        return;
    };
    let gap = |v: i32| (i64::from(max) - i64::from(v)).min(i64::from(i32::MAX)) as i32;
    let sum: u64 = x.iter().map(|&v| u64::from(exp_neg_q16(gap(v)))).sum();
    let l = i64::from(ln_ratio_q15(sum));
    for (o, &v) in out.iter_mut().zip(x) {
        let lp = -(i64::from(gap(v)) + l);
        *o = lp.max(i64::from(i32::MIN)) as i32;
    }
}

/// The scores of a beam search in the wide values of a precision (see the module docs).
pub trait Score: Copy + Default + PartialOrd + Debug + Pod {
    /// `ln(1e-8)` ([`LN_PRUNE`]) in this representation.
    const PRUNE: Self;
    /// Log-probabilities of the logits `x` into `out` (the first `min` of both lengths).
    fn log_softmax(x: &[Self], out: &mut [Self]);
    /// `self + other` (saturating in integers).
    fn plus(self, other: Self) -> Self;
    /// Compares `self / la^alpha` with `other / lb^alpha` (lengths at least 1).
    /// Incomparable values (NaN) are equal.
    fn cmp_normalised(self, la: usize, other: Self, lb: usize, alpha: Alpha) -> Ordering;
    /// The value in nats (reports only).
    fn nats(self) -> f64;
}

impl Score for f32 {
    const PRUNE: f32 = LN_PRUNE as f32;

    fn log_softmax(x: &[f32], out: &mut [f32]) {
        crate::float::log_softmax(x, out);
    }

    fn plus(self, other: f32) -> f32 {
        self + other
    }

    fn cmp_normalised(self, la: usize, other: f32, lb: usize, alpha: Alpha) -> Ordering {
        let a = self / alpha.norm_f32(la);
        let b = other / alpha.norm_f32(lb);
        a.partial_cmp(&b).unwrap_or(Ordering::Equal)
    }

    fn nats(self) -> f64 {
        f64::from(self)
    }
}

impl Score for i32 {
    // -603608.87 in Q16.15, rounded.
    const PRUNE: i32 = -603_609;

    fn log_softmax(x: &[i32], out: &mut [i32]) {
        log_softmax_q15(x, out);
    }

    fn plus(self, other: i32) -> i32 {
        self.saturating_add(other)
    }

    fn cmp_normalised(self, la: usize, other: i32, lb: usize, alpha: Alpha) -> Ordering {
        if alpha.halves == 0 {
            return self.cmp(&other);
        }
        // a / na vs b / nb with na, nb > 0: a * nb vs b * na.
        let (na, nb) = (alpha.norm_q16(la.max(1)), alpha.norm_q16(lb.max(1)));
        (i128::from(self) * i128::from(nb)).cmp(&(i128::from(other) * i128::from(na)))
    }

    fn nats(self) -> f64 {
        f64::from(self) / 32768.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_its_formula() {
        for (i, &t) in LN1P_Q16.iter().enumerate() {
            let v = (libm::log1p(i as f64 / 256.0) * 65536.0 + 0.5).floor();
            assert_eq!(f64::from(t), v, "ln1p[{i}]");
        }
    }

    #[test]
    fn ln_ratio_is_close_to_ln() {
        let mut worst = 0.0f64;
        let mut s: u64 = 1 << 16;
        while s < 1 << 40 {
            let exact = libm::log(s as f64 / 65536.0);
            let got = f64::from(ln_ratio_q15(s)) / 32768.0;
            worst = worst.max((got - exact).abs());
            s += s / 97 + 1;
        }
        assert!(worst < 1e-4, "worst {worst}");
        assert_eq!(ln_ratio_q15(1 << 16), 0);
        assert_eq!(ln_ratio_q15(0), 0);
        assert_eq!(ln_ratio_q15(1 << 17), LN2_Q15);
        // The largest sum cannot overflow.
        assert!(ln_ratio_q15(u64::MAX) > 0);
    }

    #[test]
    fn integer_log_softmax_within_stated_error() {
        let mut state = 12345u32;
        let mut next = || {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            state >> 8
        };
        let mut worst = 0.0f64;
        for trial in 0..300 {
            let n = 1 + (trial % 90);
            let spread = [1 << 15, 8 << 15, 30 << 15][trial % 3] as u32;
            let x: std::vec::Vec<i32> = (0..n)
                .map(|_| (next() % spread) as i32 - (spread / 2) as i32)
                .collect();
            let mut out = std::vec![0i32; n];
            log_softmax_q15(&x, &mut out);
            let r: std::vec::Vec<f64> = x.iter().map(|&v| f64::from(v) / 32768.0).collect();
            let m = r.iter().copied().fold(f64::MIN, f64::max);
            let lse = m + libm::log(r.iter().map(|&v| libm::exp(v - m)).sum::<f64>());
            for (i, &o) in out.iter().enumerate() {
                let exact = r[i] - lse;
                if exact > -17.0 {
                    worst = worst.max((f64::from(o) / 32768.0 - exact).abs());
                }
                assert!(o <= 0, "log-probability above 0");
            }
        }
        assert!(worst <= MAX_ERROR_LOG_SOFTMAX_Q15, "worst {worst}");
    }

    #[test]
    fn integer_log_softmax_saturates_and_takes_empty_inputs() {
        let x = [i32::MAX, i32::MIN, 0];
        let mut out = [1; 3];
        log_softmax_q15(&x, &mut out);
        // Differences from the maximum are clamped to i32::MAX before L (0 here) is
        // added: the sum saturates instead of wrapping.
        assert_eq!(out, [0, -i32::MAX, -i32::MAX]);
        let mut out2 = [1; 3];
        log_softmax_q15(&[0, 0, i32::MIN], &mut out2);
        assert_eq!(out2[..2], [-LN2_Q15, -LN2_Q15]);
        assert_eq!(out2[2], i32::MIN);
        log_softmax_q15(&[], &mut out);
        // Huge vocabularies: the sum of exponentials does not overflow.
        let wide = std::vec![7i32; 70_000];
        let mut out = std::vec![0i32; 70_000];
        log_softmax_q15(&wide, &mut out);
        let exact = -libm::log(70_000.0) * 32768.0;
        assert!(
            (f64::from(out[0]) - exact).abs() < 8.0,
            "{} vs {exact}",
            out[0]
        );
    }

    #[test]
    fn normalised_comparison_is_exact() {
        let one = Alpha::ONE;
        // -6 over 3 tokens beats -5 over 2 tokens at alpha 1, not at alpha 0.
        assert_eq!((-6i32).cmp_normalised(3, -5, 2, one), Ordering::Greater);
        assert_eq!((-6.0f32).cmp_normalised(3, -5.0, 2, one), Ordering::Greater);
        let zero = Alpha::from_halves(0).unwrap();
        assert_eq!((-6i32).cmp_normalised(3, -5, 2, zero), Ordering::Less);
        // Exactly equal ratios are equal in integers.
        assert_eq!((-6i32).cmp_normalised(3, -4, 2, one), Ordering::Equal);
        // alpha 1/2: -4 / sqrt(4) = -2 equals -2 / sqrt(1).
        let half = Alpha::from_halves(1).unwrap();
        assert_eq!((-4i32).cmp_normalised(4, -2, 1, half), Ordering::Equal);
        assert_eq!((-4.0f32).cmp_normalised(4, -2.0, 1, half), Ordering::Equal);
        assert_eq!(half.norm_q16(2), 92681); // sqrt(2) * 2^16 = 92681.9
        assert_eq!(
            Alpha::from_halves(4).unwrap().norm_q16(65535),
            (65535u64 * 65535) << 16
        );
        assert!(Alpha::from_halves(5).is_none());
        // NaN compares equal rather than panicking.
        assert_eq!(f32::NAN.cmp_normalised(1, 0.0, 1, one), Ordering::Equal);
        assert_eq!(
            i32::MIN.cmp_normalised(65535, i32::MIN, 1, one),
            Ordering::Greater
        );
    }

    #[test]
    fn prune_thresholds_agree() {
        assert_eq!(
            f64::from(<i32 as Score>::PRUNE),
            (LN_PRUNE * 32768.0).round()
        );
        assert_eq!(<f32 as Score>::PRUNE, LN_PRUNE as f32);
    }
}
