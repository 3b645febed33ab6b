//! Fixed-point building blocks: saturation, rounding shifts, requantization.
//!
//! Conventions used throughout the integer path (see `docs/NUMERICS.md`):
//!
//! * activations are `i16` in a per-tensor `Q(15-f).f` format (`f` fractional bits,
//!   scale `2^-f`), chosen by calibration;
//! * "wide" values (gate pre-activations, attention scores, logits) are `i32` in the
//!   fixed format `Q16.15` (scale `2^-15`);
//! * probabilities and gate outputs are `i16` in `Q0.15`;
//! * every rounding is half up (`floor(x + 1/2)`), every narrowing saturates.

use bytemuck::{Pod, Zeroable};

/// Fractional bits of the wide (`i32`) domain: gate pre-activations, scores, logits.
pub const WIDE_FRAC: i32 = 15;
/// One in `Q0.15`, saturated: the largest `i16` (`1 - 2^-15`).
pub const ONE_Q15: i16 = i16::MAX;

/// Saturates an `i32` to `i16`.
#[inline]
pub fn sat_i16(x: i32) -> i16 {
    x.clamp(i16::MIN as i32, i16::MAX as i32) as i16
}

/// Saturates an `i64` to `i32`.
#[inline]
pub fn sat_i32(x: i64) -> i32 {
    x.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

/// `x * 2^-s` rounded half up for `s > 0`, `x * 2^-s` saturated for `s <= 0`.
/// Shifts beyond the width give 0 (right) or saturate (left): never undefined.
#[inline]
pub fn shift_round_i32(x: i32, s: i32) -> i32 {
    shift_round_i64(x as i64, s)
}

/// As [`shift_round_i32`] for an `i64` input, saturated to `i32`.
#[inline]
pub fn shift_round_i64(x: i64, s: i32) -> i32 {
    if s > 0 {
        if s >= 63 {
            return 0;
        }
        sat_i32(x.saturating_add(1i64 << (s - 1)) >> s)
    } else {
        let s = (-s).min(32);
        sat_i32(x.saturating_mul(1i64 << s))
    }
}

/// A real multiplier `m = mult * 2^-shift` applied to an integer, with rounding half up
/// and saturation. Stored in model files (8 bytes, little-endian).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(C)]
pub struct Requant {
    /// Mantissa; `[2^30, 2^31)` when made by [`Requant::from_real`], or 0.
    pub mult: i32,
    /// Right shift, `0..=62`.
    pub shift: i32,
}

impl Requant {
    /// The multiplier 1.
    pub const ONE: Requant = Requant {
        mult: 1 << 30,
        shift: 30,
    };

    /// The closest representable multiplier to `m` (`m >= 0`), with a 31-bit mantissa.
    /// Multipliers too small to represent become 0; too large ones saturate.
    pub fn from_real(m: f64) -> Requant {
        if m.is_nan() || m <= 0.0 {
            return Requant { mult: 0, shift: 0 };
        }
        // m = frac * 2^exp with frac in [0.5, 1).
        let (frac, exp) = libm::frexp(m);
        let mut mult = libm::round(frac * (1u64 << 31) as f64) as i64;
        let mut shift = 31 - exp;
        if mult == 1i64 << 31 {
            mult >>= 1;
            shift -= 1;
        }
        if shift > 62 {
            return Requant { mult: 0, shift: 0 };
        }
        if shift < 0 {
            return Requant {
                mult: i32::MAX,
                shift: 0,
            };
        }
        Requant {
            mult: mult as i32,
            shift,
        }
    }

    /// The real value of this multiplier.
    pub fn to_real(self) -> f64 {
        self.mult as f64 / libm::pow(2.0, self.shift as f64)
    }

    /// `round(x * m)`, saturated to `i32`. One 32x32->64-bit multiply.
    ///
    /// Multipliers below one half (`shift >= 32`, every dense layer's in practice) take
    /// a short path: `|x * mult| <= 2^62`, so the rounded result fits `i32` without
    /// saturation and only the product's high word needs shifting. The same integers as
    /// [`shift_round_i64`] of the product (`extremes::requant_apply_is_exact_and_saturated`).
    // One copy on the Cortex-M0 (flash is short there; a call costs little against it).
    #[cfg_attr(not(s2s_isa = "v6m"), inline)]
    #[cfg_attr(s2s_isa = "v6m", inline(never))]
    pub fn apply(self, x: i32) -> i32 {
        let p = mul_i64(x, self.mult);
        let s = self.shift;
        if s == 32 {
            // round(p / 2^32): the high word plus the rounding bit below it.
            ((p >> 32) as i32).wrapping_add(((p as u32) >> 31) as i32)
        } else if (33..=62).contains(&s) {
            // floor((floor(p / 2^(s-1)) + 1) / 2) = floor((p + 2^(s-1)) / 2^s), and
            // p / 2^(s-1) is the high word shifted by s - 33.
            (((p >> 32) as i32 >> (s - 33)) + 1) >> 1
        } else if (1..=31).contains(&s) {
            // Multipliers of one half and more (embeddings): the same rounding on the
            // two words, then saturation. |p| <= 2^62, so adding 2^(s-1) cannot wrap.
            let r = p + (1i64 << (s - 1));
            let (lo, hi) = (r as u32, (r >> 32) as i32);
            let y = (lo >> s | (hi as u32) << (32 - s)) as i32;
            // The result fits i32 when the bits above it are all copies of its sign.
            if hi >> s == y >> 31 {
                y
            } else if hi < 0 {
                i32::MIN
            } else {
                i32::MAX
            }
        } else {
            shift_round_i64(p, s)
        }
    }

    /// [`Requant::apply`] as a call, for the callers that are not hot (embedding rows,
    /// parts longer than one run): one copy of its code instead of one per caller (the
    /// small boards' flash is short).
    #[inline(never)]
    pub(crate) fn apply_cold(self, x: i32) -> i32 {
        self.apply(x)
    }

    /// True when the shift is in range (as [`Requant::from_real`] makes them).
    pub fn is_valid(self) -> bool {
        (0..=62).contains(&self.shift) && self.mult >= 0
    }
}

/// `a * b` exactly, as `i64`. On Armv6-M (no 32x32->64 multiply instruction) from four
/// 16x16->32 products instead of the library's 64x64 multiply, which costs twice as much.
#[inline(always)]
pub(crate) fn mul_i64(a: i32, b: i32) -> i64 {
    #[cfg(s2s_isa = "v6m")]
    {
        mul_i64_halves(a, b)
    }
    #[cfg(not(s2s_isa = "v6m"))]
    {
        a as i64 * b as i64
    }
}

/// `a * b` from 16-bit halves: `a = ah 2^16 + al` (`al` unsigned, `ah` signed), the same
/// for `b`; every partial product fits 32 bits.
#[cfg(any(test, s2s_isa = "v6m"))]
#[inline(always)]
fn mul_i64_halves(a: i32, b: i32) -> i64 {
    let (al, ah) = ((a & 0xffff) as u32, a >> 16);
    let (bl, bh) = ((b & 0xffff) as u32, b >> 16);
    let low = (al * bl) as i64;
    // |ah * bl|, |al * bh| < 2^31: each fits i32; their sum may not.
    let mid = (ah * bl as i32) as i64 + (al as i32 * bh) as i64;
    (((ah * bh) as i64) << 32) + (mid << 16) + low
}

/// `u * x` where `u` is a `Q0.15` value in `[0, 1)` and `x` any `i32`, rounded half up,
/// computed without a 64-bit multiply: `x = hi * 2^15 + lo` with `0 <= lo < 2^15`.
#[inline]
pub fn mul_q15_i32(u: i16, x: i32) -> i32 {
    let u = u as i32;
    let hi = x >> 15;
    let lo = x & 0x7fff;
    // |u * hi| < 2^15 * 2^16 fits; u * lo < 2^30 fits.
    (u * hi).saturating_add((u * lo + (1 << 14)) >> 15)
}

/// `a * b` of two `Q0.15` values, rounded half up, saturated.
#[inline]
pub fn mul_q15(a: i16, b: i16) -> i16 {
    sat_i16((a as i32 * b as i32 + (1 << 14)) >> 15)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn requant_round_trips_reals() {
        for &m in &[1.0, 0.5, 0.123456, 3.0e-7, 17.25, 1.0e-12, 1.0e9] {
            let q = Requant::from_real(m);
            assert!(q.is_valid());
            let rel = (q.to_real() - m).abs() / m;
            if m > 1e-10 && m < 1e9 {
                assert!(rel < 1e-9, "{m}: {q:?} -> {}", q.to_real());
            }
        }
        assert_eq!(Requant::from_real(0.0), Requant { mult: 0, shift: 0 });
        assert_eq!(Requant::ONE.apply(12345), 12345);
        assert_eq!(Requant::from_real(0.5).apply(3), 2); // 1.5 rounds up
        assert_eq!(Requant::from_real(0.5).apply(-3), -1); // -1.5 rounds up
    }

    #[test]
    fn shifts_are_defined_everywhere() {
        assert_eq!(shift_round_i32(5, 1), 3);
        assert_eq!(shift_round_i32(-5, 1), -2);
        assert_eq!(shift_round_i32(i32::MAX, 40), 0);
        assert_eq!(shift_round_i32(7, -40), i32::MAX);
        assert_eq!(shift_round_i32(-7, -40), i32::MIN);
        assert_eq!(shift_round_i64(i64::MAX, 1), i32::MAX);
        assert_eq!(shift_round_i64(i64::MIN, -5), i32::MIN);
        assert_eq!(shift_round_i64(-(1i64 << 40), 70), 0);
    }

    #[test]
    fn mul_i64_halves_is_the_product() {
        let v = [
            i32::MIN,
            i32::MIN + 1,
            -65536,
            -65535,
            -1,
            0,
            1,
            65535,
            65536,
            i32::MAX,
        ];
        for &a in &v {
            for &b in &v {
                assert_eq!(mul_i64_halves(a, b), a as i64 * b as i64, "{a} * {b}");
            }
        }
    }

    proptest! {
        #[test]
        fn mul_i64_halves_is_the_product_anywhere(a in any::<i32>(), b in any::<i32>()) {
            prop_assert_eq!(mul_i64_halves(a, b), a as i64 * b as i64);
        }

        #[test]
        fn mul_q15_i32_equals_exact_rounding(u in 0i16..=i16::MAX, x in any::<i32>()) {
            let exact = ((u as i64 * x as i64) + (1 << 14)) >> 15;
            prop_assert_eq!(mul_q15_i32(u, x) as i64, exact);
        }

        #[test]
        fn requant_apply_matches_real_arithmetic(x in any::<i32>(), m in 1e-6f64..4.0) {
            let q = Requant::from_real(m);
            let exact = (x as f64 * q.to_real() + 0.5).floor();
            let exact = exact.clamp(i32::MIN as f64, i32::MAX as f64);
            prop_assert_eq!(q.apply(x) as f64, exact);
        }
    }
}
