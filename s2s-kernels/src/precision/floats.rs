//! The float precisions [`Float`], generic over their weight storage ([`FloatWeight`]:
//! `f32.rs`, `w8f32.rs`) and their kernels: f32 math throughout.

use core::fmt::Debug;
use core::marker::PhantomData;

use bytemuck::Pod;

use super::base::{Linear, Precision};
use super::kernels::{Kernels, Native};
use super::types::{Fmt, PrecisionKind};
use crate::fixed::Requant;
use crate::{cell, float};

/// Weight storage of the float precisions.
pub trait FloatWeight: Copy + Debug + Pod {
    /// The precision this storage makes.
    const KIND: PrecisionKind;
    /// Per-row quantization data: `()` for f32, the f32 row scale for int8.
    type RowQ: Copy + Debug + Pod;
    /// How many row-quantization entries a layer has (per plane).
    fn row_q_len(rows: usize) -> usize;
    /// Most weight planes.
    const MAX_PLANES: usize;
    /// `acc + w . x` (unscaled), summed sequentially.
    fn dot_acc(acc: f32, w: &[Self], x: &[f32]) -> f32;
    /// The same sum by the target's own kernel (same order, same bits).
    #[inline]
    fn dot_acc_native(acc: f32, w: &[Self], x: &[f32]) -> f32 {
        Self::dot_acc(acc, w, x)
    }
    /// Scale of row `r`.
    fn row_scale(q: &[Self::RowQ], r: usize) -> f32;
    /// Whether a stored row scale is usable (finite).
    fn row_q_valid(_q: &Self::RowQ) -> bool {
        true
    }
    /// One weight as f32 (unscaled).
    fn to_f32(self) -> f32;
}

/// The float precisions, generic over weight storage and kernels: f32 math throughout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Float<W, K = Native>(PhantomData<(W, K)>);

impl<W: FloatWeight, K: Kernels> Precision for Float<W, K> {
    const KIND: PrecisionKind = W::KIND;
    const MAX_PLANES: usize = W::MAX_PLANES;
    type Act = f32;
    type Wide = f32;
    type Weight = W;
    type RowQ = W::RowQ;
    type Bias = f32;
    type Scale = f32;

    fn row_q_len(rows: usize, _parts: usize) -> usize {
        W::row_q_len(rows)
    }
    fn row_q_valid(q: &W::RowQ) -> bool {
        W::row_q_valid(q)
    }
    fn scale(real: f32, _: Requant) -> f32 {
        real
    }

    fn linear(l: &Linear<'_, Self>, x: &[&[f32]], out: &mut [f32]) {
        let bias = |r: usize, y: f32| match l.bias.and_then(|b| b.get(r)) {
            Some(&b) => y + b,
            None => y,
        };
        let (cols, planes) = (l.cols, l.planes());
        if cols == 0 {
            // No weights: every sum is empty.
            for (r, o) in out.iter_mut().enumerate() {
                *o = bias(r, 0.0);
            }
            return;
        }
        // The weights are runs of `cols`, `planes` per row: run `k` is plane `k % planes`
        // of row `k / planes`, with row scale `k`.
        let mut runs = l.w.chunks_exact(cols).enumerate();
        for (r, o) in out.iter_mut().enumerate() {
            let mut y = 0.0;
            for (k, plane) in runs.by_ref().take(planes) {
                // One sequential sum over the concatenated input (see `float`); the
                // parts' lengths add up to `cols` (`Linear::apply` checked it).
                let mut acc = 0.0;
                let mut rest = plane;
                for part in x {
                    let Some((w, tail)) = rest.split_at_checked(part.len()) else {
                        break;
                    };
                    acc = if K::NATIVE {
                        W::dot_acc_native(acc, w, part)
                    } else {
                        W::dot_acc(acc, w, part)
                    };
                    rest = tail;
                }
                y += acc * W::row_scale(l.q, k);
            }
            *o = bias(r, y);
        }
    }

    fn embed(table: &Linear<'_, Self>, row: usize, out: &mut [f32]) {
        let row_w = table.cols * table.planes();
        out.fill(0.0);
        // In range: `Linear::embed` checked `row < rows`.
        let Some(w) = table.w.get(row * row_w..(row + 1) * row_w) else {
            return;
        };
        // `max(1)`: a table without columns has no planes to add (and `out` is empty).
        let planes = w.chunks_exact(table.cols.max(1));
        for (p, w) in planes.enumerate() {
            let s = W::row_scale(table.q, row * table.planes() + p);
            for (o, &v) in out.iter_mut().zip(w) {
                *o += v.to_f32() * s;
            }
        }
    }

    #[inline]
    fn sigmoid(x: f32) -> f32 {
        float::sigmoid(x)
    }
    #[inline]
    fn tanh(x: f32) -> f32 {
        float::tanh(x)
    }
    #[inline]
    fn add(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline]
    fn gate(u: f32, x: f32) -> f32 {
        u * x
    }
    #[inline]
    fn gate_act(u: f32, x: f32) -> f32 {
        u * x
    }
    #[inline]
    fn blend(z: f32, h: f32, n: f32) -> f32 {
        // The PyTorch / Keras form, term for term.
        (1.0 - z) * n + z * h
    }
    #[inline]
    fn hard_sigmoid_keras2(x: f32) -> f32 {
        cell::hard_sigmoid_keras2(x)
    }
    #[inline]
    fn hard_sigmoid_keras3(x: f32) -> f32 {
        cell::hard_sigmoid_keras3(x)
    }
    #[inline]
    fn cell_update(f: f32, c: f32, i: f32, g: f32, _: Fmt) -> f32 {
        cell::cell_update(f, c, i, g)
    }
    #[inline]
    fn widen(a: f32, _: Fmt) -> f32 {
        a
    }
    #[inline]
    fn narrow(w: f32, _: Fmt) -> f32 {
        w
    }
    fn dot(a: &[f32], _: Fmt, b: &[f32], _: Fmt, s: f32) -> f32 {
        float::dot(a, b) * s
    }
    fn softmax(x: &[f32], out: &mut [f32]) {
        float::softmax(x, out);
    }
    fn weighted_sum(w: &[f32], rows: &[f32], out: &mut [f32]) {
        let d = out.len();
        out.fill(0.0);
        for (&wi, row) in w.iter().zip(rows.chunks_exact(d.max(1))) {
            for (o, &v) in out.iter_mut().zip(row) {
                *o += wi * v;
            }
        }
    }
    fn position(s: f32, n: usize) -> f32 {
        n as f32 * s
    }
    fn nearest(p: f32) -> usize {
        // (`as` saturates: a negative or NaN position is 0.)
        (p + 0.5) as usize
    }
    fn gaussian(w: f32, i: usize, p: f32, d: usize) -> f32 {
        let (x, d) = (i as f32 - p, d.max(1) as f32);
        w * float::exp(-2.0 * x * x / (d * d))
    }
    fn unit_to_f32(a: f32) -> f32 {
        a
    }
    fn act_to_f32(a: f32, _: Fmt) -> f32 {
        a
    }
    fn wide_to_f32(w: f32) -> f32 {
        w
    }
}
