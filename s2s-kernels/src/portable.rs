//! The portable integer kernels of [`W8A16`](crate::W8A16): plain Rust on every target,
//! the reference that every instruction-set kernel (`arm/`) matches bit for bit, and
//! what runs where there is none (the host).
//!
//! Each function here has the same signature as its counterpart in `arm/`, so that
//! `precision/dispatch.rs` picks one module or the other and nothing else changes.

use crate::fixed::{sat_i16, shift_round_i64, Requant};
use crate::layout::Layout;
use crate::precision::base::{Linear, Precision};
use crate::precision::types::I32_EXACT_RUN;

/// `w . x` for `w.len() == x.len() <= I32_EXACT_RUN`: exact in an `i32` accumulator
/// (`511 * 128 * 32768 < 2^31`, so even `-128` weights cannot make it wrap).
#[inline]
pub(crate) fn dot_run(w: &[i8], x: &[i16]) -> i32 {
    let mut acc = 0i32;
    for (&a, &b) in w.iter().zip(x) {
        acc = acc.wrapping_add(a as i32 * b as i32);
    }
    acc
}

/// [`dot_run`] of weights stored in `layout`: the same integer (each weight decoded
/// before its product).
#[inline]
fn dot_run_as(layout: Layout, w: &[i8], x: &[i16]) -> i32 {
    match layout {
        Layout::Row => dot_run(w, x),
        Layout::V6m => {
            let mut acc = 0i32;
            for (&a, &b) in w.iter().zip(x) {
                acc = acc.wrapping_add(Layout::V6m.load(a) as i32 * b as i32);
            }
            acc
        }
    }
}

/// `w . x` of int8 weights and int16 activations, exact for any length: `i32` runs of
/// at most [`I32_EXACT_RUN`] products, added in `i64`.
#[inline]
pub fn dot_i8_i16(w: &[i8], x: &[i16]) -> i64 {
    dot_i8_i16_as(Layout::Row, w, x)
}

/// [`dot_i8_i16`] of weights stored in `layout`.
#[inline]
fn dot_i8_i16_as(layout: Layout, w: &[i8], x: &[i16]) -> i64 {
    let mut total = 0i64;
    for (wc, xc) in w.chunks(I32_EXACT_RUN).zip(x.chunks(I32_EXACT_RUN)) {
        total += dot_run_as(layout, wc, xc) as i64;
    }
    total
}

/// One (row, plane, part) term of a layer: the part's exact dot product `d`,
/// requantized. `d` fits `i32` for every part of up to [`I32_EXACT_RUN`] columns. Not
/// inlined: the kernels call it for long parts only (and the small boards' flash is
/// short).
#[inline(never)]
pub(crate) fn term(d: i64, q: Requant) -> i32 {
    match i32::try_from(d) {
        Ok(d) => q.apply_cold(d),
        Err(_) => requant_i64(d, q),
    }
}

/// Applies a requantizer to an `i64` accumulator (runs longer than [`I32_EXACT_RUN`]):
/// the accumulator is first brought into `i32` range by a rounding shift taken from the
/// multiplier's own shift, so the result differs from exact by at most one unit.
pub(crate) fn requant_i64(d: i64, q: Requant) -> i32 {
    // A shift outside 0..=62 never comes from the quantizer; treat it as 0 (no panic).
    let pre = (64 - d.unsigned_abs().leading_zeros() as i32 - 31).clamp(0, q.shift.max(0));
    let d = shift_round_i64(d, pre);
    Requant {
        mult: q.mult,
        shift: q.shift - pre,
    }
    .apply_cold(d)
}

/// `out = W [x_0; x_1; ...] + b`: per row, the bias, then for each plane and each part
/// in that order the requantized dot product, added with saturation. Reads every
/// [`Layout`].
pub(crate) fn linear<P>(l: &Linear<'_, P>, x: &[&[i16]], out: &mut [i32])
where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32>,
{
    match l.layout() {
        Layout::Row => linear_as(Layout::Row, l, x, out),
        Layout::V6m => linear_as(Layout::V6m, l, x, out),
    }
}

/// [`linear`] for weights in `layout` (a constant in each call above: one copy per
/// layout, the layout's decoding inlined into its loop).
#[inline(always)]
fn linear_as<P>(layout: Layout, l: &Linear<'_, P>, x: &[&[i16]], out: &mut [i32])
where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32>,
{
    let (np, planes, cols) = (l.parts(), l.planes(), l.cols());
    let (w, q, bias) = (l.weights(), l.row_q(), l.bias());
    let bias = |r: usize| bias.and_then(|b| b.get(r)).map_or(0, |&b| b);
    let (row_w, row_q) = (cols * planes, planes * np);
    if cols == 0 || np == 0 || row_w == 0 || row_q == 0 {
        // No weights: every sum is empty.
        for (r, o) in out.iter_mut().enumerate() {
            *o = bias(r);
        }
        return;
    }
    // `Linear::new` made `q` `planes * np` requantizers per row, `Linear::apply` the
    // parts' lengths add up to `cols`: the loops below never stop short.
    // Rows, planes and parts by `get` (always there), which the firmware's no-panic link
    // check sees through where the foreign layouts run this.
    for (r, o) in out.iter_mut().enumerate() {
        let row = w.get(r * row_w..(r + 1) * row_w);
        let (Some(row), Some(row_q)) = (row, q.get(r * row_q..(r + 1) * row_q)) else {
            break;
        };
        let mut acc: i32 = bias(r);
        for p in 0..planes {
            let plane = row.get(p * cols..(p + 1) * cols);
            let (Some(plane), Some(q)) = (plane, row_q.get(p * np..(p + 1) * np)) else {
                break;
            };
            let mut rest = plane;
            for (part, &rq) in x.iter().zip(q) {
                let n = part.len();
                let Some((wp, tail)) = rest.split_at_checked(n) else {
                    break;
                };
                rest = tail;
                let y = if n <= I32_EXACT_RUN {
                    rq.apply(dot_run_as(layout, wp, part))
                } else {
                    term(dot_i8_i16_as(layout, wp, part), rq)
                };
                acc = acc.saturating_add(y);
            }
        }
        *o = acc;
    }
}

/// The largest `sum |w_i|` for which `weighted_sum` accumulates in `i32`: each product
/// is at most `|w_i| * 2^15`, so the sum of all of them stays below `2^31`.
pub(crate) const WSUM_I32_LIMIT: u32 = 1 << 16;

/// `out_j = round(sum_i w_i * rows[i * d + j] / 2^15)`, saturated to `i16`; exact sums,
/// in `i32` when `sum |w_i| < 2^16` (softmax weights: about `2^15`), else in `i64`.
pub(crate) fn weighted_sum(w: &[i16], rows: &[i16], out: &mut [i16]) {
    weighted_sum_by(w, rows, out, 1)
}

/// [`weighted_sum`] computing `cols` (1 or 4) outputs at a time in the `i32` case: four
/// share each weight's load where the registers allow it (the DSP boards').
#[inline(always)]
pub(crate) fn weighted_sum_by(w: &[i16], rows: &[i16], out: &mut [i16], cols: usize) {
    let d = out.len();
    if d == 0 {
        return;
    }
    let mag: u32 = w.iter().map(|&v| v.unsigned_abs() as u32).sum();
    if mag < WSUM_I32_LIMIT {
        // |acc| < 2^31 - 2^14: adding the rounding term cannot wrap.
        let round = |acc: i32| sat_i16((acc + (1 << 14)) >> 15);
        let mut done = 0;
        if cols == 4 {
            let mut quads = out.chunks_exact_mut(4);
            for (q, o) in quads.by_ref().enumerate() {
                let mut acc = [0i32; 4];
                for (&wi, row) in w.iter().zip(rows.chunks_exact(d)) {
                    // Always there: output `4 q + 3` is within the row's `d` columns.
                    let Some(r) = row.get(4 * q..4 * q + 4) else {
                        continue;
                    };
                    for (a, &v) in acc.iter_mut().zip(r) {
                        *a += wi as i32 * v as i32;
                    }
                }
                for (o, &a) in o.iter_mut().zip(&acc) {
                    *o = round(a);
                }
            }
            done = d - quads.into_remainder().len();
        }
        for (j, o) in out.iter_mut().enumerate().skip(done) {
            // Never taken (`out` is `d` long): `j < d`, the rows' length, said once per
            // output so that the optimiser drops the check of each row's `get`.
            if j >= d {
                break;
            }
            let mut acc = 0i32;
            for (&wi, row) in w.iter().zip(rows.chunks_exact(d)) {
                if let Some(&v) = row.get(j) {
                    acc += wi as i32 * v as i32;
                }
            }
            *o = round(acc);
        }
    } else {
        for (j, o) in out.iter_mut().enumerate() {
            if j >= d {
                break; // never, as above
            }
            let mut acc = 0i64;
            for (&wi, row) in w.iter().zip(rows.chunks_exact(d)) {
                if let Some(&v) = row.get(j) {
                    acc += (wi as i32 * v as i32) as i64;
                }
            }
            *o = sat_i16(shift_round_i64(acc, 15));
        }
    }
}
