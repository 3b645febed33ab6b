//! Primitives of gated recurrent cells beyond the GRU's: the two piecewise-linear "hard"
//! sigmoids that Keras uses as recurrent activations, and the LSTM cell-state update
//! `c' = f * c + i * g`, in f32 and in fixed point.
//!
//! The two hard sigmoids are different functions that share a name in the frameworks:
//!
//! | name here | definition | used by |
//! |---|---|---|
//! | `hard_sigmoid_keras2` | `clip(0.2 x + 0.5, 0, 1)` | Keras 2 (`hard_sigmoid`, the LSTM/GRU default recurrent activation before 2.3), tf.keras 2.x |
//! | `hard_sigmoid_keras3` | `relu6(x + 3) / 6` = `clip(x / 6 + 0.5, 0, 1)` | Keras 3 (`keras.activations.hard_sigmoid`) |
//!
//! The f32 forms compute what those frameworks compute, operation for operation
//! (Keras 2 / TensorFlow: multiply by `0.2f32`, add `0.5f32`, clip; Keras 3 on the jax
//! and TensorFlow backends: add `3`, clip to `[0, 6]`, divide by `6`).
//!
//! The fixed-point forms read a wide `Q16.15` value and give a `Q0.15` unit value
//! (one is `32767`). Their slopes are 32-bit multiply-and-shift approximations of `1/5`
//! and `1/6` on an input clamped to `±4` (beyond which both are saturated anyway), so no
//! division and no 64-bit multiply is needed; the largest errors over every `i32` input
//! are [`MAX_ERROR_HARD_SIGMOID_KERAS2_Q15`] and [`MAX_ERROR_HARD_SIGMOID_KERAS3_Q15`].
//!
//! The cell state `c` of an LSTM is not bounded by one. In fixed point it is an `i16` of
//! a per-model format `Q(15-f).f` with `0 <= f <= 15` (chosen by the quantizer from the
//! largest `|c|` seen in calibration, as TFLM and CMSIS-NN choose a power-of-two cell
//! format); [`cell_update_q`] forms `f * c + i * g` exactly (16 x 16-bit products summed
//! in 64 bits), rounds once, half up, and saturates to `i16`.

use crate::fixed::{sat_i16, shift_round_i64, ONE_Q15};

/// Largest error of [`hard_sigmoid_keras2_q15`] against `clip(0.2 x + 0.5, 0, 1)` over
/// every `Q16.15` input, in real units (measured by a test over every input in `±5` and
/// the ends of the `i32` range; one is stored as `1 - 2^-15`, so the error is at least
/// `3.05e-5` wherever the function saturates at one).
pub const MAX_ERROR_HARD_SIGMOID_KERAS2_Q15: f64 = 3.1e-5;
/// Largest error of [`hard_sigmoid_keras3_q15`] against `clip(x / 6 + 0.5, 0, 1)` over
/// every `Q16.15` input, in real units (measured as above).
pub const MAX_ERROR_HARD_SIGMOID_KERAS3_Q15: f64 = 3.1e-5;

/// Inputs beyond `±4` (`Q16.15`) saturate both hard sigmoids; clamping to this keeps
/// every product below `2^31`.
const HARD_CLAMP: i32 = 4 << 15;

/// Keras 2 / tf.keras hard sigmoid in f32: `clip(x * 0.2 + 0.5, 0, 1)`.
#[inline]
pub fn hard_sigmoid_keras2(x: f32) -> f32 {
    (x * 0.2 + 0.5).clamp(0.0, 1.0)
}

/// Keras 3 hard sigmoid in f32: `relu6(x + 3) / 6`.
#[inline]
pub fn hard_sigmoid_keras3(x: f32) -> f32 {
    (x + 3.0).clamp(0.0, 6.0) / 6.0
}

/// `16384 + round(x * slope / 2^16)` clamped to a unit value, for `x` clamped to `±4`.
#[inline]
fn hard_q15(x: i32, slope: i32) -> i16 {
    let x = x.clamp(-HARD_CLAMP, HARD_CLAMP);
    // |x * slope| <= 2^17 * 13107 < 2^31.
    let y = 16384 + ((x * slope + (1 << 15)) >> 16);
    y.clamp(0, ONE_Q15 as i32) as i16
}

/// Keras 2 / tf.keras hard sigmoid of a `Q16.15` value, as `Q0.15`: the slope `1/5` is
/// `13107 / 2^16` (`0.19999695`).
#[inline]
pub fn hard_sigmoid_keras2_q15(x: i32) -> i16 {
    hard_q15(x, 13107)
}

/// Keras 3 hard sigmoid of a `Q16.15` value, as `Q0.15`: the slope `1/6` is
/// `10923 / 2^16` (`0.16667175`).
#[inline]
pub fn hard_sigmoid_keras3_q15(x: i32) -> i16 {
    hard_q15(x, 10923)
}

/// `f * c + i * g` in f32, term for term as PyTorch and Keras compute it.
#[inline]
pub fn cell_update(f: f32, c: f32, i: f32, g: f32) -> f32 {
    f * c + i * g
}

/// `f * c + i * g` for unit `f`, `i`, `g` (`Q0.15`) and a cell state `c` of format
/// `Q(15-frac).frac`, in that format: exact products and sum, one rounding half up, then
/// saturation to `i16`. `frac` outside `0..=15` is clamped into it (the model parser
/// refuses such formats; this only keeps the function total).
#[inline]
pub fn cell_update_q(f: i16, c: i16, i: i16, g: i16, frac: i8) -> i16 {
    let frac = frac.clamp(0, 15) as i32;
    // f * c is Q(15 + frac), i * g is Q30: both to Q30, exactly, in 64 bits.
    let fc = ((f as i32 * c as i32) as i64) << (15 - frac);
    let ig = (i as i32 * g as i32) as i64;
    sat_i16(shift_round_i64(fc + ig, 30 - frac))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hard_ref(x: f64, slope: f64) -> f64 {
        (slope * x + 0.5).clamp(0.0, 1.0)
    }

    /// The largest errors of the fixed-point hard sigmoids over every input of `±5` and
    /// the ends of the range, within the stated constants; both are monotone.
    #[test]
    fn hard_sigmoids_q15_over_every_input() {
        let mut worst = [(0.0f64, 0i32); 2];
        let mut prev = [i16::MIN; 2];
        let inputs = (-(5i32 << 15)..=(5 << 15)).chain([i32::MIN, i32::MIN + 1, i32::MAX]);
        for x in inputs {
            let r = x as f64 / 32768.0;
            for (k, (y, slope)) in [
                (hard_sigmoid_keras2_q15(x), 0.2),
                (hard_sigmoid_keras3_q15(x), 1.0 / 6.0),
            ]
            .into_iter()
            .enumerate()
            {
                let e = (y as f64 / 32768.0 - hard_ref(r, slope)).abs();
                if e > worst[k].0 {
                    worst[k] = (e, x);
                }
                if (-(5 << 15)..=(5 << 15)).contains(&x) {
                    assert!(y >= prev[k], "hard sigmoid {k} not monotone at {x}");
                    prev[k] = y;
                }
                assert!((0..=ONE_Q15).contains(&y));
            }
        }
        eprintln!(
            "cell: max error hard_sigmoid_keras2 {:.3e} (at {}), hard_sigmoid_keras3 {:.3e} (at {})",
            worst[0].0,
            worst[0].1 as f64 / 32768.0,
            worst[1].0,
            worst[1].1 as f64 / 32768.0
        );
        assert!(worst[0].0 <= MAX_ERROR_HARD_SIGMOID_KERAS2_Q15);
        assert!(worst[1].0 <= MAX_ERROR_HARD_SIGMOID_KERAS3_Q15);
        // Exact at the points that matter: 0 gives one half, the knees saturate.
        assert_eq!(hard_sigmoid_keras2_q15(0), 16384);
        assert_eq!(hard_sigmoid_keras3_q15(0), 16384);
        assert_eq!(hard_sigmoid_keras2_q15(5 << 14), ONE_Q15); // 2.5
        assert_eq!(hard_sigmoid_keras2_q15(-(5 << 14)), 0);
        assert_eq!(hard_sigmoid_keras3_q15(3 << 15), ONE_Q15);
        assert_eq!(hard_sigmoid_keras3_q15(-(3 << 15)), 0);
    }

    #[test]
    fn hard_sigmoids_f32_are_the_frameworks_formulas() {
        for x in [
            -10.0f32, -3.0, -2.5, -1.0, -0.1, 0.0, 0.3, 1.7, 2.5, 3.0, 7.0,
        ] {
            assert_eq!(hard_sigmoid_keras2(x), (0.2f32 * x + 0.5).clamp(0.0, 1.0));
            assert_eq!(hard_sigmoid_keras3(x), (x + 3.0).clamp(0.0, 6.0) / 6.0);
        }
        assert_eq!(hard_sigmoid_keras2(-2.5), 0.0);
        assert_eq!(hard_sigmoid_keras3(3.0), 1.0);
    }

    /// The cell update against exact arithmetic over random and extreme operands, in
    /// every format: one rounding half up, then saturation.
    #[test]
    fn cell_update_q_is_exact_rounding_then_saturation() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let ends = [
            i16::MIN,
            i16::MIN + 1,
            -1,
            0,
            1,
            16384,
            i16::MAX - 1,
            i16::MAX,
        ];
        for frac in 0..=15i8 {
            for k in 0..20_000 {
                let pick = |v: u64| {
                    if k % 4 == 0 {
                        ends[(v % ends.len() as u64) as usize]
                    } else {
                        v as i16
                    }
                };
                let (f, c, i, g) = (pick(next()), pick(next()), pick(next()), pick(next()));
                let y = cell_update_q(f, c, i, g, frac);
                // Exact: f c 2^-(15+frac) + i g 2^-30, in units of 2^-frac.
                let num = (f as i128 * c as i128) * (1i128 << (15 - frac)) + i as i128 * g as i128;
                let den = 1i128 << (30 - frac);
                let rounded = (num + den / 2).div_euclid(den);
                let want = rounded.clamp(i16::MIN as i128, i16::MAX as i128) as i16;
                assert_eq!(y, want, "cell_update_q({f}, {c}, {i}, {g}, {frac})");
            }
        }
    }

    /// Saturation: a cell state at the top of its format stays there when the update
    /// would push it further, in every format; the sign is kept at the bottom.
    #[test]
    fn cell_update_q_saturates() {
        for frac in 0..=15i8 {
            assert_eq!(
                cell_update_q(ONE_Q15, i16::MAX, ONE_Q15, ONE_Q15, frac),
                i16::MAX
            );
            assert_eq!(
                cell_update_q(ONE_Q15, i16::MIN, ONE_Q15, -ONE_Q15, frac),
                i16::MIN
            );
        }
        // Q3.12: 7.5 + 1 * 0.75 = 8.25 is beyond 8 - 2^-12.
        let c = (7.5 * 4096.0) as i16;
        let three_q = (0.75 * 32768.0) as i16;
        assert_eq!(cell_update_q(ONE_Q15, c, ONE_Q15, three_q, 12), i16::MAX);
    }
}
