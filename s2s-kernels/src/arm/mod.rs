//! Kernels written for the Cortex-M instruction sets, compiled only for thumb targets
//! (`build.rs` sets `s2s_isa`): [`dsp`] (`SXTB16` + `SMLAD`, Cortex-M4/M7/M33), [`v7m`]
//! (`LDRSB` + `MLA`, Cortex-M3), [`v6m`] (Thumb-1 `LDM` + `MULS`, Cortex-M0/M0+/M23), and
//! [`fpu`] (`VLDM` + `VMLA`, the f32 dot product on FPU parts).
//!
//! Each function has the signature and gives exactly the results of its portable
//! counterpart (`portable.rs`, `float.rs`, `lut.rs`): the shared suite runs on every QEMU
//! board against [`W8A16Portable`](crate::W8A16Portable) and
//! [`F32Portable`](crate::F32Portable). Only the order of the integer additions differs,
//! and every sum is exact.
//!
//! # The int8 x int16 matrix-vector product
//!
//! [`linear`] prepares the layer's input once per call into a buffer on its stack, in the
//! form the instruction set consumes (pairs of int16 for `SMLAD`, int32 for `MLA` and
//! `MULS`), then runs the rows (two at a time where the registers allow, sharing every
//! activation load) with one exact `i32` dot product and one requantization
//! ([`Requant::apply`]) per row, plane and part. On the M0, whose stack is small, the
//! buffer holds one part at a time instead of the whole input ([`isa::PER_PART`]): each
//! part is prepared, then every row takes its term. A layer with a part longer than
//! [`RUN`] columns, or whose prepared input does not fit the buffer (more than 512
//! columns on the M3/M4/M33, a part of more than 256 on the M0), runs row by row over
//! runs of columns prepared for each row, their sums added in `i64`: slower, same
//! results, little code.
//!
//! # Weight layouts
//!
//! Every instruction set reads [`Layout::Row`]; the M0 also reads [`Layout::V6m`]
//! (offset-binary bytes, `v6m::dot1_offset`), each part's correction `128 * sum x`
//! computed once when the input is prepared. A layout the instruction set does not
//! read goes through `portable::linear`.

//!
//! The files: `common.rs` (the assembly loop macros and tails every instruction set
//! shares), the instruction sets (`dsp.rs`, `v7m.rs`, `v6m.rs`, `fpu.rs`), `pick.rs`
//! (which of them this target runs), `run.rs` (one run's dot product), this file (the
//! matrix-vector product) and `scores.rs` (the attention's fused scores).

use core::mem::MaybeUninit;

use crate::fixed::Requant;
use crate::layout::Layout;
use crate::portable;
use crate::precision::base::{Linear, Precision};

#[macro_use]
mod common;
#[cfg(s2s_isa = "dsp")]
mod dsp;
#[cfg(s2s_fpu)]
mod fpu;
mod pick;
mod run;
mod scores;
#[cfg(s2s_isa = "v6m")]
mod v6m;
#[cfg(s2s_isa = "v7m")]
mod v7m;

use pick::isa;
use run::{correction, dot1, reads, RUN};

pub(crate) use pick::{dot_f32, sigmoid_q15, softmax_q15, tanh_q15};
pub(crate) use scores::additive_scores;

/// The attention's context (`portable::weighted_sum`'s integers): four outputs at a time
/// on the DSP boards, one at a time on the M0/M3 (whose registers do not hold four sums
/// and the pointers).
pub(crate) fn weighted_sum(w: &[i16], rows: &[i16], out: &mut [i16]) {
    let cols = if cfg!(s2s_isa = "dsp") { 4 } else { 1 };
    portable::weighted_sum_by(w, rows, out, cols)
}

/// Longest run [`rows_general`] prepares: [`RUN`], or less when the small buffer holds
/// less (a multiple of 16 either way).
const CHUNK: usize = {
    let mut n = RUN;
    while isa::words(n) > isa::SMALL_WORDS {
        n -= 16;
    }
    n
};

/// Most input parts the fast path takes (more: [`rows_general`]); a model's layers have
/// at most four (the output layer's).
const MAX_PARTS: usize = 4;

/// An input part prepared in the buffer.
#[cfg(not(s2s_isa = "v6m"))]
#[derive(Clone, Copy)]
struct Seg {
    /// First column, within a plane's row.
    col: usize,
    /// Columns.
    n: usize,
    /// First word of the prepared input.
    word: usize,
    /// The part's activations.
    x: *const i16,
    /// What an offset-binary dot product over the part subtracts: `128 * sum x`
    /// (modulo `2^32`; 0 for the other layouts).
    corr: i32,
}

#[cfg(not(s2s_isa = "v6m"))]
const NO_SEG: Seg = Seg {
    col: 0,
    n: 0,
    word: 0,
    x: core::ptr::null(),
    corr: 0,
};

/// `out = W [x_0; x_1; ...] + b`, exactly as `portable::linear`. Not inlined: one copy
/// per precision, and a symbol to find it by in the firmware.
///
/// Shapes that `Linear::apply` would have refused (the only caller) give zeros.
#[inline(never)]
pub(crate) fn linear<P>(l: &Linear<'_, P>, x: &[&[i16]], out: &mut [i32])
where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32>,
{
    if !reads(l.layout()) {
        return foreign(l, x, out);
    }
    let (rows, cols, planes, np) = (l.rows(), l.cols(), l.planes(), l.parts());
    let (w, q, bias) = (l.weights(), l.row_q(), l.bias());
    // What `Linear::new` and `Linear::apply` checked, checked again here: the pointer
    // arithmetic below relies on it.
    let consistent = out.len() == rows
        && x.len() == np
        && x.iter().map(|p| p.len()).sum::<usize>() == cols
        && w.len() == rows * planes * cols
        && q.len() == rows * planes * np
        && bias.is_none_or(|b| b.len() == rows);
    if !consistent {
        out.fill(0);
        return;
    }
    match bias {
        Some(b) => {
            for (o, &b) in out.iter_mut().zip(b) {
                *o = b;
            }
        }
        None => out.fill(0),
    }
    let dims = [cols, planes, np];
    // The words the buffer holds: the longest part's, or the whole input's.
    let words: usize = if isa::PER_PART {
        x.iter().map(|p| isa::words(p.len())).max().unwrap_or(0)
    } else {
        x.iter().map(|p| isa::words(p.len())).sum()
    };
    let whole = (isa::PER_PART || np <= MAX_PARTS) && x.iter().all(|p| p.len() <= RUN);
    let (w, q) = (w.as_ptr(), q.as_ptr());
    // SAFETY: for all three, every row `r < rows` of every plane `p < planes` lies inside
    // `w` (`w.len() == rows * planes * cols`), its requantizers inside `q` (`q.len() ==
    // rows * planes * np`), and the parts' lengths add up to `cols`.
    unsafe {
        // The layout is `Row` or, on the M0 with the `v6m-layout` feature, `V6m`
        // (`reads`): one copy of the loops each, other builds instantiate only the
        // first.
        if Layout::NATIVE == Layout::V6m && l.layout() == Layout::V6m {
            if whole && words <= isa::SMALL_WORDS {
                prepared::<{ isa::SMALL_WORDS }, true>(x, w, q, out, dims);
            } else if whole && words <= isa::BUF_WORDS {
                prepared::<{ isa::BUF_WORDS }, true>(x, w, q, out, dims);
            } else {
                rows_general::<true>(x, w, q, out, dims);
            }
        } else if whole && words <= isa::SMALL_WORDS {
            prepared::<{ isa::SMALL_WORDS }, false>(x, w, q, out, dims);
        } else if whole && words <= isa::BUF_WORDS {
            prepared::<{ isa::BUF_WORDS }, false>(x, w, q, out, dims);
        } else {
            rows_general::<false>(x, w, q, out, dims);
        }
    }
}

/// A layer in a layout this instruction set does not read: `portable::linear`, out of
/// line (inlined, it would add its registers and frame to every native call). Never on
/// the M0, which reads every layout it compiles (`Linear::with_layout` refuses the
/// others): zeros there, without the portable kernel's flash.
#[cold]
#[inline(never)]
fn foreign<P>(l: &Linear<'_, P>, x: &[&[i16]], out: &mut [i32])
where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32>,
{
    if cfg!(s2s_isa = "v6m") {
        out.fill(0);
    } else {
        portable::linear(l, x, out)
    }
}

/// Prepares every part (at most [`MAX_PARTS`], each at most [`RUN`] columns, `W` words
/// in all) into a buffer of `W` words on this frame's stack, then [`rows_whole`]. (The
/// M3/M4/M33's; the M0's holds one part at a time.)
///
/// # Safety
/// As [`rows_whole`], with `x` the layer's parts (their lengths add up to `cols`, their
/// prepared words to at most `W`).
#[cfg(not(s2s_isa = "v6m"))]
#[inline(never)]
unsafe fn prepared<const W: usize, const OFFSET: bool>(
    x: &[&[i16]],
    w: *const i8,
    q: *const Requant,
    out: &mut [i32],
    dims: [usize; 3],
) {
    // Not zeroed: `prepare` writes every word that is read.
    let mut buf = [MaybeUninit::<u32>::uninit(); W];
    let mut segs = [NO_SEG; MAX_PARTS];
    let (mut word, mut col) = (0, 0);
    let mut rest = &mut buf[..];
    for (seg, part) in segs.iter_mut().zip(x.iter()) {
        let n = isa::words(part.len());
        // The caller's contract (at most `W` words in all): never short. Were it, the
        // outputs would keep their biases.
        let Some((dst, tail)) = rest.split_at_mut_checked(n) else {
            return;
        };
        isa::prepare(part, dst);
        rest = tail;
        *seg = Seg {
            col,
            n: part.len(),
            word,
            x: part.as_ptr(),
            corr: correction::<OFFSET>(part),
        };
        word += n;
        col += part.len();
    }
    // The caller's contract: at most `MAX_PARTS` parts.
    let Some(segs) = segs.get(..x.len()) else {
        return;
    };
    // SAFETY: the caller's contract; part `i` covers columns `col..col + n <= cols` of a
    // plane's row, its `n` activations, and the prepared words `word..word + words(n)`
    // inside `buf`.
    unsafe { rows_whole::<OFFSET>(segs, buf.as_ptr().cast(), w, q, out, dims) };
}

/// Adds to each output (its bias already there) the terms of a layer whose every part
/// fits one run: one exact `i32` dot product and one requantization per row, plane and
/// part. The planes and parts are the outer loops, the rows the inner one: each output
/// accumulates its terms in the order of `portable::linear` (plane by plane, part by
/// part), and the inner loop carries little more than three pointers.
///
/// # Safety
/// `segs`, `xp`, `w`, `q` and `out` as [`linear`] makes them: weights of `out.len()`
/// rows of `planes` planes of `cols` columns, `planes * np` requantizers per row, one
/// prepared run per part, each inside its plane's row and the prepared input; weights
/// in [`Layout::V6m`] when `OFFSET` (M0 only), in [`Layout::Row`] otherwise.
#[cfg(not(s2s_isa = "v6m"))]
#[inline(always)]
unsafe fn rows_whole<const OFFSET: bool>(
    segs: &[Seg],
    xp: *const u32,
    w: *const i8,
    q: *const Requant,
    out: &mut [i32],
    [cols, planes, np]: [usize; 3],
) {
    let rows = out.len();
    let (row_w, row_q) = (cols * planes, planes * np);
    let pairs = if isa::PAIRS && !OFFSET { rows / 2 } else { 0 };
    for p in 0..planes {
        for (i, s) in segs.iter().enumerate() {
            // SAFETY: the caller's contract (see `linear`): every row `r < rows` of
            // plane `p`, part `i`, and its requantizer `r * row_q + p * np + i`.
            unsafe {
                let (x, n, xs, corr) = (s.x, s.n, xp.add(s.word), s.corr);
                let mut wr = w.add(p * cols + s.col);
                let mut qr = q.add(p * np + i);
                let mut o = out.as_mut_ptr();
                // Rows in pairs: both share every load of the prepared input.
                for _ in 0..pairs {
                    let (d0, d1) = isa::dot2(wr, wr.add(row_w), xs, x, n);
                    *o = (*o).saturating_add((*qr).apply(d0));
                    *o.add(1) = (*o.add(1)).saturating_add((*qr.add(row_q)).apply(d1));
                    wr = wr.add(2 * row_w);
                    qr = qr.add(2 * row_q);
                    o = o.add(2);
                }
                for _ in 2 * pairs..rows {
                    let d = dot1::<OFFSET>(wr, xs, x, n, corr);
                    *o = (*o).saturating_add((*qr).apply(d));
                    wr = wr.add(row_w);
                    qr = qr.add(row_q);
                    o = o.add(1);
                }
            }
        }
    }
}

/// The Cortex-M0's [`prepared`]: adds to each output (its bias already there) the terms
/// of a layer whose every part fits one run and `W` prepared words. Each part in turn is
/// prepared into a buffer of `W` words on this frame's stack, then every row takes one
/// exact `i32` dot product over it and one requantization ([`Requant::apply`]): the
/// buffer holds the longest part, not the whole input (the micro:bit's netra needs 64
/// words, 256 bytes, for layers of up to 128 columns), and its size follows the layer: a
/// Cortex-M0 running small layers never reserves the larger one.
///
/// The planes and parts are the outer loops, the rows the inner one: each output
/// accumulates its terms in the order of `portable::linear` (plane by plane, part by
/// part). A layer of one part prepares it once for all its planes; one of several parts
/// and planes (residual planes) prepares each part again for each plane.
///
/// # Safety
/// `w`, `q` and `out` as [`linear`] makes them: weights of `out.len()` rows of `planes`
/// planes of `cols` columns, `planes * np` requantizers per row; `x` the layer's `np`
/// parts (their lengths add up to `cols`, each at most [`RUN`] columns and `W` prepared
/// words); weights in [`Layout::V6m`] when `OFFSET`, in [`Layout::Row`] otherwise.
#[cfg(s2s_isa = "v6m")]
#[inline(never)]
unsafe fn prepared<const W: usize, const OFFSET: bool>(
    x: &[&[i16]],
    w: *const i8,
    q: *const Requant,
    out: &mut [i32],
    [cols, planes, np]: [usize; 3],
) {
    // Not zeroed: `prepare` writes every word that is read.
    let mut buf = [MaybeUninit::<u32>::uninit(); W];
    let rows = out.len();
    let (row_w, row_q) = (cols * planes, planes * np);
    let mut corr = 0;
    for p in 0..planes {
        let mut col = 0;
        for (i, part) in x.iter().enumerate() {
            let n = part.len();
            // The caller's contract (every part at most `W` words): never short. Were
            // it, the outputs would keep the terms added so far.
            let Some(dst) = buf.get_mut(..isa::words(n)) else {
                return;
            };
            if p == 0 || np > 1 {
                isa::prepare(part, dst);
                corr = correction::<OFFSET>(part);
            }
            let (x, xs) = (part.as_ptr(), buf.as_ptr().cast::<u32>());
            // SAFETY: the caller's contract: every row `r < rows` of plane `p`, its
            // columns `col..col + n <= cols` (part `i`), and its requantizer `r * row_q +
            // p * np + i`; `xs` holds the part's `words(n)` prepared words, `x` its `n`
            // activations. (Rows one at a time: the M0 has no registers to share loads
            // between two.)
            unsafe {
                let mut wr = w.add(p * cols + col);
                let mut qr = q.add(p * np + i);
                let mut o = out.as_mut_ptr();
                for _ in 0..rows {
                    let d = dot1::<OFFSET>(wr, xs, x, n, corr);
                    *o = (*o).saturating_add((*qr).apply(d));
                    wr = wr.add(row_w);
                    qr = qr.add(row_q);
                    o = o.add(1);
                }
            }
            col += n;
        }
    }
}

/// Adds to each output (its bias already there) the terms of any layer, row by row:
/// each part in runs of at most [`CHUNK`] columns, prepared for each row (compact rather
/// than fast: these are the layers beyond the buffer, which the small boards do not run),
/// their exact sums added in `i64`, then requantized (`portable::term`), plane by plane
/// and part by part.
///
/// # Safety
/// `w`, `q` and `out` as for [`prepared`] (with its `OFFSET`), `x` the layer's parts
/// (their lengths add up to `cols`).
#[inline(never)]
unsafe fn rows_general<const OFFSET: bool>(
    x: &[&[i16]],
    w: *const i8,
    q: *const Requant,
    out: &mut [i32],
    [cols, planes, np]: [usize; 3],
) {
    // Not zeroed: `prepare` writes every word that is read.
    let mut buf = [MaybeUninit::<u32>::uninit(); isa::SMALL_WORDS];
    let (row_w, row_q) = (cols * planes, planes * np);
    for (r, o) in out.iter_mut().enumerate() {
        for p in 0..planes {
            let mut col = 0;
            for (i, part) in x.iter().enumerate() {
                let mut s = 0i64;
                for (k, run) in part.chunks(CHUNK).enumerate() {
                    isa::prepare(run, &mut buf[..isa::words(run.len())]);
                    // SAFETY: the run covers columns `col + k * CHUNK ..` (within `cols`)
                    // of row `r`'s plane `p`, prepared in `buf`.
                    let d = unsafe {
                        let wr = w.add(r * row_w + p * cols + col + k * CHUNK);
                        let corr = correction::<OFFSET>(run);
                        dot1::<OFFSET>(wr, buf.as_ptr().cast(), run.as_ptr(), run.len(), corr)
                    };
                    s += d as i64;
                }
                // SAFETY: requantizer `r * row_q + p * np + i` lies in `q`.
                let rq = unsafe { *q.add(r * row_q + p * np + i) };
                *o = o.saturating_add(portable::term(s, rq));
                col += part.len();
            }
        }
    }
}
