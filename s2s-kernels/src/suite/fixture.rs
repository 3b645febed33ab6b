//! How the suite feeds a precision: the [`Fixture`] trait (reals in, reals out, layers
//! built from float weights) with [`FloatFixture`] and [`IntFixture`], the layers it
//! owns ([`OwnedLayer`], [`int8_planes`]) and its generator ([`Rng`]).

use alloc::vec;
use alloc::vec::Vec;
use core::marker::PhantomData;

use super::tolerances::pow2;
use crate::fixed::WIDE_FRAC;
use crate::{FloatWeight, Fmt, Linear, Precision, Requant};

/// A small deterministic generator (SplitMix64), so that the measured maxima are
/// reproducible.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.u64() % (hi - lo + 1) as u64) as usize
    }
}

/// A layer that owns its storage, with the weights and bias it represents in reals.
pub struct OwnedLayer<P: Precision> {
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) parts: usize,
    pub(super) w: Vec<P::Weight>,
    pub(super) q: Vec<P::RowQ>,
    pub(super) bias: Option<Vec<P::Bias>>,
    /// The weights as the layer represents them (planes summed), row-major.
    pub deq: Vec<f64>,
    /// The bias as the layer represents it (zeros without one).
    pub deq_bias: Vec<f64>,
}

impl<P: Precision> OwnedLayer<P> {
    /// The layer, for its own precision.
    pub fn linear(&self) -> Linear<'_, P> {
        self.linear_as::<P>()
    }

    /// The same storage seen by a precision `R` with the same storage types.
    pub fn linear_as<R: Precision>(&self) -> Linear<'_, R> {
        Linear::new(
            self.rows,
            self.cols,
            self.parts,
            bytemuck::cast_slice(&self.w),
            bytemuck::cast_slice(&self.q),
            self.bias.as_deref().map(bytemuck::cast_slice),
        )
        .expect("consistent shapes")
    }
}

/// Per-row symmetric int8 as `s2s quantize` makes it (`quantize_rows` in
/// `host-tools/src/quantize/mod.rs`): `s = max|w| / 127` in f32, codes rounded to nearest;
/// each further plane quantizes the f32 residual of the previous ones the same way.
/// Codes are `[row][plane][col]`, scales `[row][plane]`; also returns the reals.
pub fn int8_planes(
    w: &[f64],
    rows: usize,
    cols: usize,
    planes: usize,
) -> (Vec<i8>, Vec<f32>, Vec<f64>) {
    let mut codes = vec![0i8; rows * planes * cols];
    let mut scales = vec![0f32; rows * planes];
    let mut deq = vec![0f64; rows * cols];
    for r in 0..rows {
        let mut rest: Vec<f32> = w[r * cols..(r + 1) * cols]
            .iter()
            .map(|&v| v as f32)
            .collect();
        for p in 0..planes {
            let max = rest.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = max / 127.0;
            scales[r * planes + p] = s;
            for (k, v) in rest.iter_mut().enumerate() {
                let c = if s == 0.0 {
                    0
                } else {
                    libm::roundf(*v / s).clamp(-127.0, 127.0) as i8
                };
                codes[(r * planes + p) * cols + k] = c;
                *v -= c as f32 * s;
                deq[r * cols + k] += c as f64 * s as f64;
            }
        }
    }
    (codes, scales, deq)
}

pub(super) type Act<F> = <<F as Fixture>::P as Precision>::Act;
pub(super) type Wide<F> = <<F as Fixture>::P as Precision>::Wide;

/// How to feed a precision from reals and read its results back as reals.
pub trait Fixture {
    /// The precision under test.
    type P: Precision;
    /// The activation of format `f` closest to `x` (saturated).
    fn act(x: f64, f: Fmt) -> Act<Self>;
    /// The real value of an activation of format `f`.
    fn act_real(a: Act<Self>, f: Fmt) -> f64;
    /// The wide value closest to `x` (saturated).
    fn wide(x: f64) -> Wide<Self>;
    /// The real value of a wide value.
    fn wide_real(w: Wide<Self>) -> f64;
    /// A layer of `rows` rows over input parts `(length, format)` with `planes` weight
    /// planes, from float weights (row-major) and bias; with `embedding`, a table whose
    /// rows are read as activations of format `parts[0].1`.
    fn layer(
        rows: usize,
        parts: &[(usize, Fmt)],
        planes: usize,
        w: &[f64],
        bias: Option<&[f64]>,
        embedding: bool,
    ) -> OwnedLayer<Self::P>;
}

/// Float storage that the float fixture can build layers of.
pub trait FloatStore: FloatWeight {
    /// Weights, row quantization and the reals they represent.
    fn build(
        w: &[f64],
        rows: usize,
        cols: usize,
        planes: usize,
    ) -> (Vec<Self>, Vec<Self::RowQ>, Vec<f64>);
}

impl FloatStore for f32 {
    fn build(w: &[f64], _: usize, _: usize, planes: usize) -> (Vec<f32>, Vec<()>, Vec<f64>) {
        assert_eq!(planes, 1);
        let w: Vec<f32> = w.iter().map(|&v| v as f32).collect();
        let deq = w.iter().map(|&v| v as f64).collect();
        (w, vec![], deq)
    }
}

impl FloatStore for i8 {
    fn build(w: &[f64], rows: usize, cols: usize, planes: usize) -> (Vec<i8>, Vec<f32>, Vec<f64>) {
        int8_planes(w, rows, cols, planes)
    }
}

/// The fixture of [`F32`](crate::F32) and [`W8F32`](crate::W8F32), and of any
/// implementation with the storage types of one of them (f32 activations, wide values
/// and biases, weights a [`FloatStore`]), such as the host tools' fast f32 precision.
pub struct FloatFixture<P>(PhantomData<P>);

impl<P> Fixture for FloatFixture<P>
where
    P: Precision<Act = f32, Wide = f32, Bias = f32>,
    P::Weight: FloatStore<RowQ = P::RowQ>,
{
    type P = P;
    fn act(x: f64, _: Fmt) -> f32 {
        x as f32
    }
    fn act_real(a: f32, _: Fmt) -> f64 {
        a as f64
    }
    fn wide(x: f64) -> f32 {
        x as f32
    }
    fn wide_real(w: f32) -> f64 {
        w as f64
    }
    fn layer(
        rows: usize,
        parts: &[(usize, Fmt)],
        planes: usize,
        w: &[f64],
        bias: Option<&[f64]>,
        _embedding: bool,
    ) -> OwnedLayer<P> {
        let cols = parts.iter().map(|p| p.0).sum();
        let (w, q, deq) = P::Weight::build(w, rows, cols, planes);
        let bias: Option<Vec<f32>> = bias.map(|b| b.iter().map(|&v| v as f32).collect());
        let deq_bias = match &bias {
            Some(b) => b.iter().map(|&v| v as f64).collect(),
            None => vec![0.0; rows],
        };
        OwnedLayer {
            rows,
            cols,
            parts: parts.len(),
            w,
            q,
            bias,
            deq,
            deq_bias,
        }
    }
}

/// The fixture of [`W8A16`](crate::W8A16) and of any implementation with its storage types.
pub struct IntFixture<P>(PhantomData<P>);

impl<P> Fixture for IntFixture<P>
where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32, Scale = Requant>,
{
    type P = P;
    fn act(x: f64, f: Fmt) -> i16 {
        libm::floor(x * pow2(f.frac as i32) + 0.5).clamp(i16::MIN as f64, i16::MAX as f64) as i16
    }
    fn act_real(a: i16, f: Fmt) -> f64 {
        a as f64 / pow2(f.frac as i32)
    }
    fn wide(x: f64) -> i32 {
        libm::floor(x * 32768.0 + 0.5).clamp(i32::MIN as f64, i32::MAX as f64) as i32
    }
    fn wide_real(w: i32) -> f64 {
        w as f64 / 32768.0
    }
    fn layer(
        rows: usize,
        parts: &[(usize, Fmt)],
        planes: usize,
        w: &[f64],
        bias: Option<&[f64]>,
        embedding: bool,
    ) -> OwnedLayer<P> {
        let cols = parts.iter().map(|p| p.0).sum();
        let (w, scales, deq) = int8_planes(w, rows, cols, planes);
        // One requantizer per row, plane and part, in that order: the real multiplier
        // from a part of format f to Q16.15 is s * 2^(15 - f); an embedding's rows
        // become activations of their own format f: s * 2^f.
        let mut q = Vec::with_capacity(scales.len() * parts.len());
        for &s in &scales {
            for &(_, f) in parts {
                let exp = if embedding {
                    f.frac as i32
                } else {
                    WIDE_FRAC - f.frac as i32
                };
                q.push(Requant::from_real(s as f64 * pow2(exp)));
            }
        }
        // Biases in Q16.15, rounded as `s2s quantize` rounds them.
        let bias: Option<Vec<i32>> =
            bias.map(|b| b.iter().map(|&v| libm::round(v * 32768.0) as i32).collect());
        let deq_bias = match &bias {
            Some(b) => b.iter().map(|&v| v as f64 / 32768.0).collect(),
            None => vec![0.0; rows],
        };
        OwnedLayer {
            rows,
            cols,
            parts: parts.len(),
            w,
            q,
            bias,
            deq,
            deq_bias,
        }
    }
}
