//! The attention's additive scores fused for the instruction set
//! ([`additive_scores`]): one prepared `tanh` row and one dot product per key and plane.

use core::mem::MaybeUninit;

use super::pick::{isa, tanh_q15};
use super::run::{correction, dot1, reads, RUN};
use crate::fixed::{Requant, WIDE_FRAC};
use crate::layout::Layout;
use crate::precision::base::{additive_scores_primitives, Linear, Precision};
use crate::precision::types::{Fmt, ShapeError};

/// [`Precision::additive_scores`] of the integer precision, fused: per key, the row
/// `tanh(q_j + k_j 2^(15 - f))` (an exact shift, a saturating add, a table lookup) is
/// written once, prepared for the instruction set, and each of `v`'s planes is one dot
/// product over it: the matrix product of `v` with the rows of all positions, one row
/// at a time, without a layer call per position. Other shapes (a key format beyond a
/// plain shift, `v` wider than a run or the buffer, a layout the instruction set does
/// not read) take the primitives.
pub(crate) fn additive_scores<P>(
    q: &[i32],
    keys: &[i16],
    fk: Fmt,
    v: &Linear<'_, P>,
    tanh: &mut [i16],
    scores: &mut [i32],
) -> Result<(), ShapeError>
where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32>,
{
    let a = q.len();
    let shift = WIDE_FRAC - fk.frac as i32;
    let fused = a > 0
        && (0..=16).contains(&shift)
        && v.rows() == 1
        && v.parts() == 1
        && v.cols() == a
        && a <= RUN
        && isa::words(a) <= isa::SMALL_WORDS
        && tanh.len() >= a
        && keys.len() >= scores.len() * a
        && v.weights().len() == a * v.planes()
        && v.row_q().len() == v.planes()
        && reads(v.layout());
    if !fused {
        return additive_scores_primitives(q, keys, fk, v, tanh, scores);
    }
    if Layout::NATIVE == Layout::V6m && v.layout() == Layout::V6m {
        fused_scores::<P, true>(q, keys, shift, v, tanh, scores);
    } else {
        fused_scores::<P, false>(q, keys, shift, v, tanh, scores);
    }
    Ok(())
}

/// The fused [`additive_scores`] (its conditions checked), `v` in [`Layout::V6m`] when
/// `OFFSET`, in [`Layout::Row`] otherwise.
#[inline(always)]
fn fused_scores<P, const OFFSET: bool>(
    q: &[i32],
    keys: &[i16],
    shift: i32,
    v: &Linear<'_, P>,
    tanh: &mut [i16],
    scores: &mut [i32],
) where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32>,
{
    let a = q.len();
    let tanh = &mut tanh[..a];
    let bias = v.bias().and_then(|b| b.first()).map_or(0, |&b| b);
    let mut buf = [MaybeUninit::<u32>::uninit(); isa::SMALL_WORDS];
    let buf = &mut buf[..isa::words(a)];
    for (e, key) in scores.iter_mut().zip(keys.chunks_exact(a)) {
        for ((t, &qj), &kj) in tanh.iter_mut().zip(q).zip(key) {
            *t = tanh_q15(qj.saturating_add((kj as i32) << shift));
        }
        isa::prepare(tanh, buf);
        let corr = correction::<OFFSET>(tanh);
        let mut acc = bias;
        for (wp, rq) in v.weights().chunks_exact(a).zip(v.row_q()) {
            // SAFETY: `wp` holds `a` weights, `tanh` `a` activations, and `buf` their
            // `words(a)` prepared words, all written by `prepare`.
            let d =
                unsafe { dot1::<OFFSET>(wp.as_ptr(), buf.as_ptr().cast(), tanh.as_ptr(), a, corr) };
            acc = acc.saturating_add(rq.apply(d));
        }
        *e = acc;
    }
}
