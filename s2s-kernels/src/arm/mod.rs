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
//! activation load), each over runs of at most [`RUN`] columns whose sums are exact in
//! `i32`. Per row, plane and part the work is one requantization ([`Requant::apply`]).
//! A layer whose prepared input does not fit the buffer (more than about 512 columns
//! on the M3/M4/M33, 256 on the M0) runs on the portable kernel.

use crate::fixed::Requant;
use crate::portable;
use crate::precision::{Linear, Precision};

#[cfg(s2s_isa = "dsp")]
mod dsp;
#[cfg(s2s_fpu)]
mod fpu;
#[cfg(s2s_isa = "v6m")]
mod v6m;
#[cfg(s2s_isa = "v7m")]
mod v7m;

#[cfg(s2s_isa = "dsp")]
use dsp as isa;
#[cfg(s2s_isa = "v6m")]
use v6m as isa;
#[cfg(s2s_isa = "v7m")]
use v7m as isa;

#[cfg(not(s2s_fpu))]
pub(crate) use crate::float::dot_acc as dot_f32;
#[cfg(s2s_fpu)]
pub(crate) use fpu::dot_f32;

pub(crate) use crate::portable::weighted_sum;

#[cfg(not(s2s_isa = "dsp"))]
pub(crate) use crate::lut::{sigmoid_q15, tanh_q15};
#[cfg(s2s_isa = "dsp")]
pub(crate) use dsp::{sigmoid_q15, tanh_q15};

/// Longest run of columns summed in one `i32` accumulator: at most
/// [`I32_EXACT_RUN`](crate::precision::I32_EXACT_RUN) (511), and a multiple of 16 so that
/// every run starts on a group of the prepared input.
const RUN: usize = 496;

/// Most runs of columns [`linear`] prepares (more: the portable kernel).
const MAX_SEGS: usize = 12;

/// A run of at most [`RUN`] columns of one input part.
#[derive(Clone, Copy)]
struct Seg {
    /// First column, within a plane's row.
    col: usize,
    /// Columns.
    n: usize,
    /// First word of the prepared input.
    word: usize,
    /// The part's activations from this run on.
    x: *const i16,
    /// Which part.
    part: usize,
    /// Whether this run is the whole part (its sum fits `i32`: one requantization).
    whole: bool,
    /// Whether this run ends its part.
    last: bool,
}

const NO_SEG: Seg = Seg {
    col: 0,
    n: 0,
    word: 0,
    x: core::ptr::null(),
    part: 0,
    whole: true,
    last: true,
};

/// `out = W [x_0; x_1; ...] + b`, exactly as `portable::linear`. Not inlined: one copy
/// per precision, and a symbol to find it by in the firmware.
#[inline(never)]
pub(crate) fn linear<P>(l: &Linear<'_, P>, x: &[&[i16]], out: &mut [i32])
where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32>,
{
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
        return portable::linear(l, x, out);
    }
    // The input, prepared once, and its runs.
    let mut buf = [0u32; isa::BUF_WORDS];
    let mut segs = [NO_SEG; MAX_SEGS];
    let (mut ns, mut words, mut col) = (0, 0, 0);
    for (i, part) in x.iter().enumerate() {
        let need = isa::words(part.len());
        let Some(dst) = buf.get_mut(words..words + need) else {
            return portable::linear(l, x, out);
        };
        isa::prepare(part, dst);
        let mut k = 0;
        loop {
            let n = RUN.min(part.len() - k);
            let Some(seg) = segs.get_mut(ns) else {
                return portable::linear(l, x, out);
            };
            *seg = Seg {
                col: col + k,
                n,
                word: words + isa::words(k),
                x: part[k..].as_ptr(),
                part: i,
                whole: n == part.len(),
                last: k + n == part.len(),
            };
            ns += 1;
            k += n;
            if k >= part.len() {
                break;
            }
        }
        words += need;
        col += part.len();
    }
    let segs = &segs[..ns];
    let xp = buf.as_ptr();
    // SAFETY: the contract of both: every row `r < rows` of every plane `p < planes` lies
    // inside `w` (`w.len() == rows * planes * cols`), its requantizers inside `q`
    // (`q.len() == rows * planes * np`); each run covers columns `col..col + n <= cols`
    // of a plane's row, `n` activations of its part from `x` on, and the prepared words
    // `word..word + words(n)` inside `buf`.
    unsafe {
        if segs.iter().all(|s| s.whole) {
            rows_whole(
                segs,
                xp,
                w.as_ptr(),
                q.as_ptr(),
                bias,
                out,
                [cols, planes, np],
            );
        } else {
            rows_long(
                segs,
                xp,
                w.as_ptr(),
                q.as_ptr(),
                bias,
                out,
                [cols, planes, np],
            );
        }
    }
}

/// The rows of a layer whose every part fits one run: one exact `i32` dot product and
/// one requantization per row, plane and part. The planes and parts are the outer
/// loops, the rows the inner one: each output accumulates its terms in the order of
/// `portable::linear` (bias, then plane by plane, part by part), and the inner loop
/// carries little more than three pointers.
///
/// # Safety
/// `segs`, `xp`, `w`, `q`, `bias` and `out` as [`linear`] makes them: weights of
/// `out.len()` rows of `planes` planes of `cols` columns, `planes * np` requantizers per
/// row, one run per part, each inside its plane's row and the prepared input.
#[inline(always)]
unsafe fn rows_whole(
    segs: &[Seg],
    xp: *const u32,
    w: *const i8,
    q: *const Requant,
    bias: Option<&[i32]>,
    out: &mut [i32],
    [cols, planes, np]: [usize; 3],
) {
    match bias {
        Some(b) => out.copy_from_slice(b),
        None => out.fill(0),
    }
    let rows = out.len();
    let (row_w, row_q) = (cols * planes, planes * np);
    let pairs = rows / 2;
    for p in 0..planes {
        for (i, s) in segs.iter().enumerate() {
            // SAFETY: the caller's contract (see `linear`): every row `r < rows` of
            // plane `p`, run `s`, and its requantizer `r * row_q + p * np + i`.
            unsafe {
                let (x, n, xs) = (s.x, s.n, xp.add(s.word));
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
                if rows % 2 == 1 {
                    let d = isa::dot1(wr, xs, x, n);
                    *o = (*o).saturating_add((*qr).apply(d));
                }
            }
        }
    }
}

/// The rows of a layer with a part longer than one run: its runs' sums are added in
/// `i64`, then requantized (`portable::term`).
///
/// # Safety
/// As [`rows_whole`], with one or more runs per part (in order).
#[inline(never)]
unsafe fn rows_long(
    segs: &[Seg],
    xp: *const u32,
    w: *const i8,
    q: *const Requant,
    bias: Option<&[i32]>,
    out: &mut [i32],
    [cols, planes, np]: [usize; 3],
) {
    let row_w = cols * planes;
    let row_q = planes * np;
    for (r, o) in out.iter_mut().enumerate() {
        let mut acc = bias.map_or(0, |b| b[r]);
        for p in 0..planes {
            let mut s = 0i64;
            // SAFETY: the caller's contract (see `linear`).
            unsafe {
                let w0 = w.add(r * row_w + p * cols);
                let q0 = q.add(r * row_q + p * np);
                for seg in segs {
                    s += isa::dot1(w0.add(seg.col), xp.add(seg.word), seg.x, seg.n) as i64;
                    if seg.last {
                        acc = acc.saturating_add(portable::term(s, *q0.add(seg.part)));
                        s = 0;
                    }
                }
            }
        }
        *o = acc;
    }
}
