//! The integer precision: [`W8A16`] (int8 weights, int16 activations, int32
//! accumulators) on the target's kernels, and [`W8A16Portable`] on the portable ones.

use core::marker::PhantomData;

use super::base::{additive_scores_primitives, Linear, Precision};
use super::dispatch as native;
use super::kernels::{Kernels, Native, Portable};
use super::types::{Fmt, PrecisionKind, ShapeError};
use crate::fixed::{self, mul_q15, mul_q15_i32, sat_i16, shift_round_i32, Requant, WIDE_FRAC};
use crate::{cell, lut, portable};

/// int8 weights, int16 activations, int32 accumulators: integers only at run time, on
/// kernels `K`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Int<K = Native>(PhantomData<K>);

/// int8 weights, int16 activations, int32 accumulators: integers only at run time.
pub type W8A16 = Int;
/// [`W8A16`] on the portable kernels (the reference of the instruction-set kernels).
pub type W8A16Portable = Int<Portable>;

/// An activation of format `f` as a `Q16.15` wide value: for the formats with at most 15
/// fractional bits and at least -1 (every calibrated memory and key) an exact left
/// shift (`|a| * 2^16 <= 2^31`), otherwise a rounding shift, saturated.
#[inline]
pub(crate) fn widen_q(a: i16, f: Fmt) -> i32 {
    let s = WIDE_FRAC - f.frac as i32;
    if (0..=16).contains(&s) {
        (a as i32) << s
    } else {
        shift_round_i32(a as i32, -s)
    }
}

/// `a . b` of two int16 vectors, exact: each product fits `i32`, the sum is `i64`
/// (no 64-bit multiply).
#[inline]
pub fn dot_i16(a: &[i16], b: &[i16]) -> i64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x as i32 * y as i32) as i64)
        .sum()
}

impl<K: Kernels> Precision for Int<K> {
    const KIND: PrecisionKind = PrecisionKind::W8A16;
    const MAX_PLANES: usize = 2;
    type Act = i16;
    type Wide = i32;
    type Weight = i8;
    type RowQ = Requant;
    type Bias = i32;
    type Scale = Requant;

    fn row_q_len(rows: usize, parts: usize) -> usize {
        rows * parts
    }
    fn row_q_valid(q: &Requant) -> bool {
        q.is_valid()
    }
    fn scale(_: f32, q: Requant) -> Requant {
        q
    }

    fn linear(l: &Linear<'_, Self>, x: &[&[i16]], out: &mut [i32]) {
        if K::NATIVE {
            native::linear(l, x, out)
        } else {
            portable::linear(l, x, out)
        }
    }

    fn embed(table: &Linear<'_, Self>, row: usize, out: &mut [i16]) {
        let (cols, planes) = (table.cols, table.planes());
        // In range: `Linear::embed` checked `row < rows` (`rows * planes` requantizers,
        // one per row and plane, an embedding table having one part).
        let w = table.w.get(row * cols * planes..(row + 1) * cols * planes);
        let q = table.q.get(row * planes..(row + 1) * planes);
        let (Some(w), Some(q)) = (w, q) else {
            out.fill(0);
            return;
        };
        // The layout's decoding once, not per element (a byte mask).
        let flip = table.layout().store(0);
        for (j, o) in out.iter_mut().enumerate().take(cols) {
            let mut acc = 0i32;
            for (wp, rq) in w.chunks_exact(cols).zip(q) {
                acc = acc.saturating_add(rq.apply_cold((wp[j] ^ flip) as i32));
            }
            *o = sat_i16(acc);
        }
    }

    #[inline]
    fn sigmoid(x: i32) -> i16 {
        if K::NATIVE {
            native::sigmoid_q15(x)
        } else {
            lut::sigmoid_q15(x)
        }
    }
    #[inline]
    fn tanh(x: i32) -> i16 {
        if K::NATIVE {
            native::tanh_q15(x)
        } else {
            lut::tanh_q15(x)
        }
    }
    #[inline]
    fn add(a: i32, b: i32) -> i32 {
        a.saturating_add(b)
    }
    #[inline]
    fn gate(u: i16, x: i32) -> i32 {
        mul_q15_i32(u, x)
    }
    #[inline]
    fn gate_act(u: i16, x: i16) -> i16 {
        mul_q15(u, x)
    }
    #[inline]
    fn blend(z: i16, h: i16, n: i16) -> i16 {
        // n + z * (h - n): one multiply, |h - n| < 2^16.
        let d = h as i32 - n as i32;
        sat_i16(n as i32 + ((z as i32 * d + (1 << 14)) >> 15))
    }
    #[inline]
    fn hard_sigmoid_keras2(x: i32) -> i16 {
        cell::hard_sigmoid_keras2_q15(x)
    }
    #[inline]
    fn hard_sigmoid_keras3(x: i32) -> i16 {
        cell::hard_sigmoid_keras3_q15(x)
    }
    #[inline]
    fn cell_update(f: i16, c: i16, i: i16, g: i16, fc: Fmt) -> i16 {
        cell::cell_update_q(f, c, i, g, fc.frac)
    }
    #[inline]
    fn widen(a: i16, f: Fmt) -> i32 {
        widen_q(a, f)
    }
    #[inline]
    fn narrow(w: i32, f: Fmt) -> i16 {
        sat_i16(shift_round_i32(w, WIDE_FRAC - f.frac as i32))
    }
    fn dot(a: &[i16], fa: Fmt, b: &[i16], fb: Fmt, s: Requant) -> i32 {
        let d = dot_i16(a, b);
        let w = fixed::shift_round_i64(d, fa.frac as i32 + fb.frac as i32 - WIDE_FRAC);
        s.apply(w)
    }
    fn softmax(x: &[i32], out: &mut [i16]) {
        if K::NATIVE {
            native::softmax_q15(x, out);
        } else {
            lut::softmax_q15(x, out);
        }
    }
    fn additive_scores(
        q: &[i32],
        keys: &[i16],
        fk: Fmt,
        v: &Linear<'_, Self>,
        tanh: &mut [i16],
        scores: &mut [i32],
    ) -> Result<(), ShapeError> {
        if K::NATIVE {
            native::additive_scores(q, keys, fk, v, tanh, scores)
        } else {
            additive_scores_primitives(q, keys, fk, v, tanh, scores)
        }
    }
    fn weighted_sum(w: &[i16], rows: &[i16], out: &mut [i16]) {
        if K::NATIVE {
            native::weighted_sum(w, rows, out)
        } else {
            portable::weighted_sum(w, rows, out)
        }
    }
    fn position(s: i16, n: usize) -> i32 {
        // At most 65,535 * 32,767 < 2^31.
        n.min(u16::MAX as usize) as i32 * s.max(0) as i32
    }
    fn nearest(p: i32) -> usize {
        ((p.max(0) as u32 + (1 << 14)) >> 15) as usize
    }
    fn gaussian(w: i16, i: usize, p: i32, d: usize) -> i16 {
        // The distance over `d` in Q15, rounded (32-bit: the distance is below 2^31, a
        // position and `p` both being), and the exponent 2 r^2 in Q15 (`exp_neg_q16` is
        // 0 from 17 on: a distance of 3 d is past it, and r^2 < 2^34 before it).
        let x = (i.min(u16::MAX as usize) as u32 * 32768).abs_diff(p.max(0) as u32);
        let d = d.clamp(1, u16::MAX as usize) as u32;
        let r = x / d + u32::from(x % d >= d.div_ceil(2));
        if r >= 3 << 15 {
            return 0;
        }
        let e = (u64::from(r) * u64::from(r)) >> 14;
        let g = lut::exp_neg_q16(e as i32);
        // A weight in [0, 1] times at most 2^16 (Q0.16), rounded: below 2^31.
        ((w.max(0) as u32 * g + (1 << 15)) >> 16) as i16
    }
    fn unit_to_f32(a: i16) -> f32 {
        a as f32 / 32768.0
    }
    fn act_to_f32(a: i16, f: Fmt) -> f32 {
        a as f32 / libm::exp2f(f.frac as f32)
    }
    fn wide_to_f32(w: i32) -> f32 {
        w as f32 / 32768.0
    }
}
