//! One test suite for every [`Precision`]: each primitive against an f64 reference, with
//! tolerances stated per primitive and per precision in real units ([`Tolerances`]).
//!
//! `precision_suite!` generates one module of tests per instantiation (in this crate's
//! tests):
//!
//! ```text
//! precision_suite!(w8a16, W8A16, IntFixture, W8A16_TOL);
//! precision_suite!(w8a16_bit_exact, W8A16, IntFixture, W8A16_TOL, bit_exact_with = W8A16Portable);
//! ```
//!
//! The fixture (`FloatFixture` or `IntFixture`) knows how to make the precision's
//! inputs from reals and how to build its layers from float weights: per-row symmetric
//! int8 codes with `s = max|w| / 127` (and a residual plane quantized the same way), as
//! `s2s quantize` makes them; for `W8A16` one [`Requant::from_real`] per row, plane and
//! input part folding `s` and the part's format `f` into `s * 2^(15 - f)` (outputs in
//! `Q16.15`), or `s * 2^f` for an embedding table (rows stored as activations of format
//! `f`), and biases rounded to `Q16.15`. The reference is computed in f64 from the SAME
//! dequantized weights and biases and the same (quantized) inputs, so the tolerances
//! measure the arithmetic of the implementation (accumulation, requantization,
//! rounding, tables), not the weight rounding.
//!
//! # Optimised implementations
//!
//! With `bit_exact_with = R` every primitive is also run through `R` on the same bits
//! (the storage is reinterpreted with `bytemuck`, so both must use the same storage
//! types) and the outputs must be identical bit for bit. The instruction-set kernels
//! (`arm/`) are held to it against the portable ones ([`W8A16Portable`],
//! [`F32Portable`]): they then give exactly what the host tools, the golden tests and
//! the other boards give.
//!
//! The suite runs in this crate's tests (`cargo test -p s2s-kernels`), where
//! [`W8A16`] and [`F32`] are the portable kernels, and, compiled with the `suite`
//! feature (`no_std` with `alloc`), on each QEMU board: the firmware's `kernel-suite`
//! binary runs [`run_all`] for the board's native kernels against [`W8A16Portable`] and
//! [`F32Portable`], tolerances and bit-exactness alike, at a [`Scale`] that fits the
//! board's RAM (the same generators and seeds; the small boards cap the layer sizes),
//! and [`layouts`]: every weight [`Layout`] read by the native kernels gives the row
//! layout's bits.
//! Measurements are printed in the tests only; on a board a failure panics.

// What only the printed measurements use.
#![cfg_attr(not(test), allow(unused_variables))]

use alloc::vec;
use alloc::vec::Vec;
use core::marker::PhantomData;

use bytemuck::Pod;

use crate::fixed::WIDE_FRAC;
use crate::{
    cell, float, lut, Float, FloatWeight, Fmt, Job, Kernels, Layout, Linear, Precision, Requant,
};
#[cfg(any(test, doc))]
use crate::{F32Portable, W8A16Portable, F32, W8A16, W8F32};

/// Prints a measurement in the tests; on a board (no `std`, little flash) nothing. The
/// assertions' messages name the case in integers only, for the same reason: a failing
/// case is reproduced on the host, where the measurements are printed.
macro_rules! say {
    ($($t:tt)*) => {{
        #[cfg(test)]
        eprintln!($($t)*);
    }};
}

/// `2^k`, exactly.
fn pow2(k: i32) -> f64 {
    libm::ldexp(1.0, k)
}

/// How large the suite's cases are. The host and the mps2 boards run [`Scale::FULL`];
/// boards with little RAM cap the rows and columns of the test layers (drawn as on the
/// host, then capped).
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// Most rows of a `linear` test layer with short parts (16 in full).
    pub rows: usize,
    /// Most rows of a `linear` test layer with long parts (16 in full).
    pub long_rows: usize,
    /// Longest long part (1024 in full: every long part is beyond `I32_EXACT_RUN`).
    pub long_cols: usize,
    /// Most rows of an `embed` test table (20 in full).
    pub embed_rows: usize,
}

impl Scale {
    /// The host's cases, whole.
    pub const FULL: Scale = Scale {
        rows: 16,
        long_rows: 16,
        long_cols: 1024,
        embed_rows: 20,
    };
}

/// Tolerances of one precision's primitives against the f64 reference, in real units.
/// Every test prints the largest error it measured next to its tolerance.
#[derive(Clone, Copy, Debug)]
pub struct Tolerances {
    /// `linear`: `|y - y_ref| <= linear_abs + linear_rel * sum_k |w_k x_k|` (layers of
    /// 1-16 rows, 1-2 input parts of formats [`LINEAR_FMTS`], 1-2 planes, 1-2048 columns).
    pub linear_abs: f64,
    /// See `linear_abs`.
    pub linear_rel: f64,
    /// `embed`: per element, rows stored in [`EMBED_FMT`] (`Q3.12`), values in `[-6, 6]`.
    pub embed: f64,
    /// `sigmoid` of wide values in `[-nonlinearity_range, nonlinearity_range]`.
    pub sigmoid: f64,
    /// `tanh` of wide values in `[-nonlinearity_range, nonlinearity_range]`.
    pub tanh: f64,
    /// Where `sigmoid` and `tanh` are checked: the whole wide range, except for the
    /// `fast-math` f32 functions, whose errors `float.rs` states over `[-20, 20]` (and
    /// whose `exp` gives NaN just below `-88.7`: see `extremes.rs`).
    pub nonlinearity_range: f64,
    /// `add` of wide values in `[-100, 100]`.
    pub add: f64,
    /// `gate`: unit `u` in `[0, 1)` times a wide `x` in `[-64, 64]`.
    pub gate: f64,
    /// `gate_act`: unit `u` in `[0, 1)` times a unit `x` in `[-1, 1)`.
    pub gate_act: f64,
    /// `blend`: `(1 - z) n + z h` for `z` in `[0, 1)`, `h`, `n` in `[-1, 1)`.
    pub blend: f64,
    /// `widen` of an activation of any format `Q(15-f).f`, `0 <= f <= 15`.
    pub widen: f64,
    /// `narrow` of a wide value in range to [`NARROW_FMT`] (`Q3.12`).
    pub narrow: f64,
    /// `dot`: `|y - y_ref| <= dot_abs + dot_rel * s * sum_k |a_k b_k|`, `a` in `Q3.12`,
    /// `b` in `Q0.15`, 1-256 elements, `s = 1 / sqrt(len)`.
    pub dot_abs: f64,
    /// See `dot_abs`.
    pub dot_rel: f64,
    /// `softmax`: each weight, 1-300 scores spread over up to `[-20, 20]`.
    pub softmax: f64,
    /// `softmax`: `|sum w - 1| <= softmax_sum + softmax_sum_per_element * n`.
    pub softmax_sum: f64,
    /// See `softmax_sum`.
    pub softmax_sum_per_element: f64,
    /// `weighted_sum`: each output, rows in [`WSUM_FMT`] (`Q3.12`) with values in
    /// `[-7, 7]`, 1-64 unit weights summing to about one.
    pub weighted_sum: f64,
    /// `additive_scores`: `|e - e_ref| <= additive_abs + additive_rel * sum_j |v_j|`
    /// (queries in `[-6, 6]`, keys of the formats [`KEY_FMTS`], 1-96 values, 1-30 keys,
    /// `v` in `[-2, 2]` with 1-2 planes).
    pub additive_abs: f64,
    /// See `additive_abs`: the tanh's error, and the key's rounding into `Q16.15`.
    pub additive_rel: f64,
    /// `hard_sigmoid_keras2` of wide values over the whole wide range.
    pub hard_sigmoid_keras2: f64,
    /// `hard_sigmoid_keras3` of wide values over the whole wide range.
    pub hard_sigmoid_keras3: f64,
    /// `cell_update`: `f c + i g` for unit `f`, `i`, `g` (`f`, `i` in `[0, 1)`, `g` in
    /// `[-1, 1)`) and a cell state `c` in [`CELL_FMT`] (`Q3.12`) within `±6`, so the
    /// result stays in range (its saturation is tested apart).
    pub cell_update: f64,
}

/// f32: the errors of f32 arithmetic (and of the `fast-math` functions when enabled).
pub const F32_TOL: Tolerances = Tolerances {
    linear_abs: 1e-6,
    linear_rel: 2e-6,
    embed: 0.0,
    sigmoid: float::MAX_ERROR_SIGMOID as f64 + 2e-7,
    tanh: float::MAX_ERROR_TANH as f64 + 2e-7,
    nonlinearity_range: if cfg!(feature = "fast-math") {
        20.0
    } else {
        f64::INFINITY
    },
    add: 1e-5,
    gate: 5e-6,
    gate_act: 1e-7,
    blend: 2e-7,
    widen: 0.0,
    narrow: 5e-7,
    dot_abs: 1e-6,
    dot_rel: 2e-6,
    softmax: 1e-6 + 2.0 * float::MAX_REL_ERROR_EXP as f64,
    softmax_sum: 1e-6 + 2.0 * float::MAX_REL_ERROR_EXP as f64,
    softmax_sum_per_element: 0.0,
    weighted_sum: 2e-6,
    additive_abs: 1e-5,
    additive_rel: 1e-6 + float::MAX_ERROR_TANH as f64,
    // One f32 multiply and add (Keras 2) or add and divide (Keras 3) on values <= 1.
    hard_sigmoid_keras2: 2e-7,
    hard_sigmoid_keras3: 2e-7,
    // Two products and a sum of magnitude up to 7.
    cell_update: 2e-6,
};

/// int8 weights, f32 math: as f32 (the reference uses the dequantized weights).
pub const W8F32_TOL: Tolerances = Tolerances {
    embed: 1e-6,
    ..F32_TOL
};

/// One unit of `Q16.15` (the wide domain) and of `Q0.15`.
const U15: f64 = 1.0 / 32768.0;

/// int8 weights, int16 activations: every rounding is half up, so each is within half a
/// unit of its format; the tables are within their stated errors ([`lut`]).
pub const W8A16_TOL: Tolerances = Tolerances {
    // One rounding (<= 1/2 unit) per plane and part, two (< 1 unit) for a part whose
    // dot product leaves i32 (possible only beyond I32_EXACT_RUN columns): at most 4
    // units with 2 parts and 2 planes. The multiplier's 31-bit mantissa is a relative
    // error of at most 2^-31.
    linear_abs: 4.0 * U15,
    linear_rel: 1e-9,
    // One rounding per plane to Q3.12 (half a unit of 2^-12 each).
    embed: 2.0 * 0.5 / 4096.0,
    sigmoid: lut::MAX_ERROR_SIGMOID_Q15,
    tanh: lut::MAX_ERROR_TANH_Q15,
    nonlinearity_range: f64::INFINITY,
    add: 0.0,
    gate: 0.5 * U15,
    gate_act: 0.5 * U15,
    blend: 0.5 * U15,
    widen: 0.0,
    narrow: 0.5 / 4096.0,
    // Rounding to Q16.15 before the scale, then after it.
    dot_abs: 1.0 * U15,
    dot_rel: 1e-9,
    softmax: 1e-4,
    softmax_sum: U15,
    softmax_sum_per_element: lut::SOFTMAX_SUM_TOLERANCE_PER_ELEMENT * U15,
    // One rounding to Q3.12.
    weighted_sum: 0.5 / 4096.0,
    // One rounding per plane; the tanh table's error and the key's rounding (formats
    // with more than 15 fractional bits) per unit of |v|.
    additive_abs: 2.0 * 0.5 * U15 + 1e-9,
    additive_rel: lut::MAX_ERROR_TANH_Q15 + 0.5 * U15,
    hard_sigmoid_keras2: cell::MAX_ERROR_HARD_SIGMOID_KERAS2_Q15,
    hard_sigmoid_keras3: cell::MAX_ERROR_HARD_SIGMOID_KERAS3_Q15,
    // Exact products and sum, one rounding to Q3.12.
    cell_update: 0.5 / 4096.0,
};

/// Formats of the input parts of the `linear` test layers.
pub const LINEAR_FMTS: [Fmt; 4] = [
    Fmt::Q15,
    Fmt { frac: 14 },
    Fmt { frac: 12 },
    Fmt { frac: 9 },
];
/// Format of the `embed` test tables.
pub const EMBED_FMT: Fmt = Fmt { frac: 12 };
/// Format `narrow` is tested into.
pub const NARROW_FMT: Fmt = Fmt { frac: 12 };
/// Format of the rows of `weighted_sum`.
pub const WSUM_FMT: Fmt = Fmt { frac: 12 };
/// Formats of the two operands of `dot`.
pub const DOT_FMTS: (Fmt, Fmt) = (Fmt { frac: 12 }, Fmt::Q15);
/// Formats of the keys of `additive_scores`: exact shifts into `Q16.15` (15 fractional
/// bits down to -1), a rounding one (17) and a saturating one (-3).
pub const KEY_FMTS: [Fmt; 6] = [
    Fmt { frac: 11 },
    Fmt::Q15,
    Fmt { frac: 4 },
    Fmt { frac: -1 },
    Fmt { frac: 17 },
    Fmt { frac: -3 },
];
/// Format of the cell states of `cell_update`.
pub const CELL_FMT: Fmt = Fmt { frac: 12 };

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
    rows: usize,
    cols: usize,
    parts: usize,
    w: Vec<P::Weight>,
    q: Vec<P::RowQ>,
    bias: Option<Vec<P::Bias>>,
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

type Act<F> = <<F as Fixture>::P as Precision>::Act;
type Wide<F> = <<F as Fixture>::P as Precision>::Wide;

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

/// The fixture of [`F32`] and [`W8F32`].
pub struct FloatFixture<P>(PhantomData<P>);

impl<W: FloatStore, K: Kernels> Fixture for FloatFixture<Float<W, K>> {
    type P = Float<W, K>;
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
    ) -> OwnedLayer<Float<W, K>> {
        let cols = parts.iter().map(|p| p.0).sum();
        let (w, q, deq) = W::build(w, rows, cols, planes);
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

/// The fixture of [`W8A16`] and of any implementation with its storage types.
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

/// The same bits, seen as another type of the same size.
fn cast<A: Pod, B: Pod>(a: A) -> B {
    bytemuck::cast(a)
}

/// Whether two slices hold the same bits.
fn same_bits<A: Pod, B: Pod>(a: &[A], b: &[B]) -> bool {
    bytemuck::cast_slice::<A, u8>(a) == bytemuck::cast_slice::<B, u8>(b)
}

/// Checks the largest error against its tolerance and prints both.
fn verdict<F: Fixture>(what: &str, worst: f64, tol: f64, twin: Option<&str>) {
    let name = label::<F::P>();
    let (with, twin) = twin.map_or(("", ""), |r| (", bit-exact with ", r));
    say!("suite: {name:<14} {what:<13} max error {worst:.3e}  tolerance {tol:.3e}{with}{twin}");
    assert!(worst <= tol, "{name} {what}: error above the tolerance");
}

/// For the tolerances with a relative part: the largest absolute error and the largest
/// error relative to `sum |terms|`, against the two parts of the tolerance.
fn verdict_rel<F: Fixture>(
    what: &str,
    worst: (f64, f64, f64),
    tol: (f64, f64),
    twin: Option<&str>,
) {
    let name = label::<F::P>();
    let (with, twin) = twin.map_or(("", ""), |r| (", bit-exact with ", r));
    say!(
        "suite: {name:<14} {what:<13} max error {:.3e} (max error / sum|terms| {:.3e}, max error / tolerance {:.3})  tolerance {:.3e} + {:.3e} sum|terms|{with}{twin}",
        worst.0, worst.1, worst.2, tol.0, tol.1
    );
    assert!(worst.2 <= 1.0, "{name} {what}: error above the tolerance");
}

fn twin_name<R: Precision>(exact: bool) -> Option<&'static str> {
    exact.then(label::<R>)
}

/// A precision's name in the printed measurements: its kind, and `portable` for the
/// portable kernels' reference types.
fn label<P: Precision>() -> &'static str {
    let portable = core::any::type_name::<P>().contains("Portable");
    match (P::KIND.name(), portable) {
        ("f32", true) => "f32 portable",
        ("w8a16", true) => "w8a16 portable",
        (name, _) => name,
    }
}

/// The largest input magnitude used for a part of format `f`.
fn input_range(f: Fmt) -> f64 {
    (0.9 * pow2(15 - f.frac as i32)).min(4.0)
}

/// A random dense layer's shape: 1 to 15 rows (at most the scale's) and 1 to
/// `max_parts` input parts in random formats, of 1 to 95 columns each, or, for a `long`
/// case, of 517 to 1023 (longer than `I32_EXACT_RUN`; at most the scale's).
fn random_shape(
    rng: &mut Rng,
    scale: &Scale,
    long: bool,
    max_parts: usize,
) -> (usize, Vec<(usize, Fmt)>) {
    let nparts = rng.range(1, max_parts);
    let rows = rng
        .range(1, 16)
        .min(if long { scale.long_rows } else { scale.rows });
    let parts = (0..nparts)
        .map(|_| {
            let len = if long {
                rng.range(517, 1024).min(scale.long_cols)
            } else {
                rng.range(1, 96)
            };
            (len, LINEAR_FMTS[rng.range(0, LINEAR_FMTS.len() - 1)])
        })
        .collect();
    (rows, parts)
}

/// `linear` on random layers: 1-2 input parts, 1-2 planes (as the precision allows),
/// with and without bias; every 20th layer has parts longer than `I32_EXACT_RUN`. Also
/// `linear_batch` (through `Linear::apply_batch`), which must give every output exactly
/// as `linear`.
pub fn linear<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, scale: &Scale) {
    let mut rng = Rng::new(0x11);
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for case in 0..300 {
        let long = case % 20 == 0;
        let planes = rng.range(1, F::P::MAX_PLANES);
        let (rows, parts) = random_shape(&mut rng, scale, long, 2);
        let cols: usize = parts.iter().map(|p| p.0).sum();
        let a = 2.0 / libm::sqrt(cols as f64);
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-a, a)).collect();
        let bias: Option<Vec<f64>> =
            (case % 2 == 0).then(|| (0..rows).map(|_| rng.uniform(-2.0, 2.0)).collect());
        let layer = F::layer(rows, &parts, planes, &w, bias.as_deref(), false);
        drop(w); // the layer's `deq` is the reference's weights (a board's heap is small)
        let xs: Vec<Vec<Act<F>>> = parts
            .iter()
            .map(|&(len, f)| {
                let r = input_range(f);
                (0..len).map(|_| F::act(rng.uniform(-r, r), f)).collect()
            })
            .collect();
        let x: Vec<&[Act<F>]> = xs.iter().map(|v| v.as_slice()).collect();
        let mut out = vec![Wide::<F>::default(); rows];
        layer.linear().apply(&x, &mut out).expect("shapes");
        let xr: Vec<f64> = parts
            .iter()
            .zip(&xs)
            .flat_map(|(&(_, f), v)| v.iter().map(move |&a| F::act_real(a, f)))
            .collect();
        for (r, &o) in out.iter().enumerate() {
            let (mut y, mut mag) = (layer.deq_bias[r], 0.0f64);
            for (k, &xk) in xr.iter().enumerate() {
                let t = layer.deq[r * cols + k] * xk;
                y += t;
                mag += t.abs();
            }
            let e = (F::wide_real(o) - y).abs();
            let bound = tol.linear_abs + tol.linear_rel * mag;
            assert!(
                e <= bound,
                "linear case {case} row {r}: error above the tolerance"
            );
            worst = (
                worst.0.max(e),
                worst.1.max(e / mag.max(f64::MIN_POSITIVE)),
                worst.2.max(e / bound),
            );
        }
        // `linear_batch` gives every output exactly as `linear` does: the same input
        // and two others (scaled copies) in one batch.
        let others: Vec<Vec<Vec<Act<F>>>> = [0.5, -1.0]
            .iter()
            .map(|&k| {
                parts
                    .iter()
                    .zip(&xs)
                    .map(|(&(_, f), v)| {
                        v.iter()
                            .map(|&a| F::act(k * F::act_real(a, f), f))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let inputs: Vec<Vec<&[Act<F>]>> = core::iter::once(x.clone())
            .chain(
                others
                    .iter()
                    .map(|o| o.iter().map(|v| v.as_slice()).collect()),
            )
            .collect();
        let mut outs = vec![vec![Wide::<F>::default(); rows]; inputs.len()];
        {
            let mut jobs: Vec<Job<'_, F::P>> = inputs
                .iter()
                .zip(outs.iter_mut())
                .map(|(x, out)| Job { x, out })
                .collect();
            layer.linear().apply_batch(&mut jobs).expect("shapes");
        }
        for (xi, bo) in inputs.iter().zip(&outs) {
            let mut one = vec![Wide::<F>::default(); rows];
            layer.linear().apply(xi, &mut one).expect("shapes");
            assert!(
                same_bits(&one, bo),
                "linear_batch case {case}: not as linear"
            );
        }
        if exact {
            let x2: Vec<&[R::Act]> = x.iter().map(|p| bytemuck::cast_slice(p)).collect();
            let mut o2 = vec![R::Wide::default(); rows];
            layer.linear_as::<R>().apply(&x2, &mut o2).expect("shapes");
            assert!(same_bits(&out, &o2), "linear case {case}: not bit-exact");
            let inputs2: Vec<Vec<&[R::Act]>> = inputs
                .iter()
                .map(|x| x.iter().map(|p| bytemuck::cast_slice(p)).collect())
                .collect();
            let mut outs2 = vec![vec![R::Wide::default(); rows]; inputs.len()];
            let mut jobs: Vec<Job<'_, R>> = inputs2
                .iter()
                .zip(outs2.iter_mut())
                .map(|(x, out)| Job { x, out })
                .collect();
            layer
                .linear_as::<R>()
                .apply_batch(&mut jobs)
                .expect("shapes");
            drop(jobs);
            for (a, b) in outs.iter().zip(&outs2) {
                assert!(same_bits(a, b), "linear_batch case {case}: not bit-exact");
            }
        }
    }
    verdict_rel::<F>(
        "linear",
        worst,
        (tol.linear_abs, tol.linear_rel),
        twin_name::<R>(exact),
    );
}

/// `embed` of every row of random tables with 1-2 planes.
pub fn embed<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, scale: &Scale) {
    let mut rng = Rng::new(0x22);
    let mut worst = 0.0f64;
    for case in 0..100 {
        let planes = rng.range(1, F::P::MAX_PLANES);
        let (rows, cols) = (rng.range(1, 20).min(scale.embed_rows), rng.range(1, 64));
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-6.0, 6.0)).collect();
        let table = F::layer(rows, &[(cols, EMBED_FMT)], planes, &w, None, true);
        drop(w);
        for r in 0..rows {
            let mut out = vec![Act::<F>::default(); cols];
            table.linear().embed(r, &mut out).expect("shapes");
            for (k, &o) in out.iter().enumerate() {
                let e = (F::act_real(o, EMBED_FMT) - table.deq[r * cols + k]).abs();
                worst = worst.max(e);
            }
            if exact {
                let mut o2 = vec![R::Act::default(); cols];
                table.linear_as::<R>().embed(r, &mut o2).expect("shapes");
                assert!(same_bits(&out, &o2), "embed case {case}: not bit-exact");
            }
        }
    }
    verdict::<F>("embed", worst, tol.embed, twin_name::<R>(exact));
}

/// Wide inputs of the nonlinearities: a grid over `[-20, 20]`, random values up to
/// `±1000`, and the ends of the wide range (made one by one: no buffer).
fn nonlinearity_inputs<F: Fixture>() -> impl Iterator<Item = Wide<F>> {
    let mut rng = Rng::new(0x33);
    (0..=80_000)
        .map(|i| F::wide(-20.0 + i as f64 / 2000.0))
        .chain((0..10_000).map(move |_| F::wide(rng.uniform(-1000.0, 1000.0))))
        .chain([-65536.0, -65535.99, 65535.99, 65536.0].map(F::wide))
}

fn nonlinearity<F: Fixture, R: Precision>(
    what: &str,
    (tol, range): (f64, f64),
    exact: bool,
    f: impl Fn(Wide<F>) -> Act<F>,
    g: impl Fn(R::Wide) -> R::Act,
    reference: impl Fn(f64) -> f64,
) {
    let mut worst = 0.0f64;
    for (i, x) in nonlinearity_inputs::<F>().enumerate() {
        if F::wide_real(x).abs() > range {
            continue;
        }
        let y = f(x);
        let e = (F::act_real(y, Fmt::Q15) - reference(F::wide_real(x))).abs();
        worst = worst.max(e);
        if exact {
            let y2 = g(cast(x));
            assert!(same_bits(&[y], &[y2]), "{what} input {i}: not bit-exact");
        }
    }
    verdict::<F>(what, worst, tol, twin_name::<R>(exact));
}

/// `sigmoid` of wide values over the whole wide range.
pub fn sigmoid<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    nonlinearity::<F, R>(
        "sigmoid",
        (tol.sigmoid, tol.nonlinearity_range),
        exact,
        F::P::sigmoid,
        R::sigmoid,
        |x| 1.0 / (1.0 + libm::exp(-x)),
    );
}

/// `tanh` of wide values over the whole wide range.
pub fn tanh<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    nonlinearity::<F, R>(
        "tanh",
        (tol.tanh, tol.nonlinearity_range),
        exact,
        F::P::tanh,
        R::tanh,
        libm::tanh,
    );
}

/// `add` of wide values.
pub fn add<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x44);
    let mut worst = 0.0f64;
    for _ in 0..20_000 {
        let (a, b) = (
            F::wide(rng.uniform(-100.0, 100.0)),
            F::wide(rng.uniform(-100.0, 100.0)),
        );
        let y = F::P::add(a, b);
        let e = (F::wide_real(y) - (F::wide_real(a) + F::wide_real(b))).abs();
        worst = worst.max(e);
        if exact {
            assert!(same_bits(&[y], &[R::add(cast(a), cast(b))]));
        }
    }
    verdict::<F>("add", worst, tol.add, twin_name::<R>(exact));
}

/// `gate` and `gate_act`: unit values times wide values and unit values.
pub fn gate<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x55);
    let (mut w1, mut w2) = (0.0f64, 0.0f64);
    for _ in 0..20_000 {
        let u = F::act(rng.unit(), Fmt::Q15);
        let x = F::wide(rng.uniform(-64.0, 64.0));
        let y = F::P::gate(u, x);
        let e = (F::wide_real(y) - F::act_real(u, Fmt::Q15) * F::wide_real(x)).abs();
        w1 = w1.max(e);
        let v = F::act(rng.uniform(-1.0, 1.0), Fmt::Q15);
        let z = F::P::gate_act(u, v);
        let e =
            (F::act_real(z, Fmt::Q15) - F::act_real(u, Fmt::Q15) * F::act_real(v, Fmt::Q15)).abs();
        w2 = w2.max(e);
        if exact {
            assert!(same_bits(&[y], &[R::gate(cast(u), cast(x))]));
            assert!(same_bits(&[z], &[R::gate_act(cast(u), cast(v))]));
        }
    }
    verdict::<F>("gate", w1, tol.gate, twin_name::<R>(exact));
    verdict::<F>("gate_act", w2, tol.gate_act, twin_name::<R>(exact));
}

/// `blend`, the GRU update, unit values at the ends included.
pub fn blend<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x66);
    let mut worst = 0.0f64;
    let q = Fmt::Q15;
    for i in 0..50_000 {
        // The ends of the unit range included.
        let z = match i % 100 {
            0 => F::act(0.0, q),
            1 => F::act(1.0, q),
            _ => F::act(rng.unit(), q),
        };
        let h = F::act(rng.uniform(-1.0, 1.0), q);
        let n = F::act(
            if i % 7 == 0 {
                -1.0
            } else {
                rng.uniform(-1.0, 1.0)
            },
            q,
        );
        let y = F::P::blend(z, h, n);
        let (zr, hr, nr) = (F::act_real(z, q), F::act_real(h, q), F::act_real(n, q));
        let e = (F::act_real(y, q) - ((1.0 - zr) * nr + zr * hr)).abs();
        worst = worst.max(e);
        if exact {
            assert!(same_bits(&[y], &[R::blend(cast(z), cast(h), cast(n))]));
        }
    }
    verdict::<F>("blend", worst, tol.blend, twin_name::<R>(exact));
}

/// `widen` of every activation of every format `Q(15-f).f` is exact, and `narrow` gives
/// it back; `narrow` of wide values in range rounds to [`NARROW_FMT`].
pub fn widen_narrow<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x77);
    let mut worst = (0.0f64, 0.0f64);
    for frac in 0..=15 {
        let f = Fmt { frac };
        let r = pow2(15 - frac as i32);
        for i in 0..4000 {
            let x = if i == 0 { -r } else { rng.uniform(-r, r) };
            let a = F::act(x, f);
            let w = F::P::widen(a, f);
            worst.0 = worst.0.max((F::wide_real(w) - F::act_real(a, f)).abs());
            let back = F::P::narrow(w, f);
            assert_eq!(back, a, "narrow(widen({a:?}, {f:?}))");
            if exact {
                assert!(same_bits(&[w], &[R::widen(cast(a), f)]));
            }
        }
    }
    for _ in 0..50_000 {
        let x = F::wide(rng.uniform(-7.99, 7.99));
        let a = F::P::narrow(x, NARROW_FMT);
        worst.1 = worst
            .1
            .max((F::act_real(a, NARROW_FMT) - F::wide_real(x)).abs());
        if exact {
            assert!(same_bits(&[a], &[R::narrow(cast(x), NARROW_FMT)]));
        }
    }
    verdict::<F>("widen", worst.0, tol.widen, twin_name::<R>(exact));
    verdict::<F>("narrow", worst.1, tol.narrow, twin_name::<R>(exact));
}

/// `dot`, the attention's scaled dot product, with and without `1 / sqrt(len)`.
pub fn dot<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x88);
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    let (fa, fb) = DOT_FMTS;
    for case in 0..3000 {
        let n = rng.range(1, 256);
        let a: Vec<Act<F>> = (0..n).map(|_| F::act(rng.uniform(-4.0, 4.0), fa)).collect();
        let b: Vec<Act<F>> = (0..n).map(|_| F::act(rng.uniform(-1.0, 1.0), fb)).collect();
        let real = if case % 3 == 0 {
            1.0
        } else {
            1.0 / libm::sqrt(n as f64)
        };
        let q = Requant::from_real(real);
        let y = F::P::dot(&a, fa, &b, fb, F::P::scale(real as f32, q));
        let (mut d, mut mag) = (0.0f64, 0.0f64);
        for (&x, &z) in a.iter().zip(&b) {
            let t = F::act_real(x, fa) * F::act_real(z, fb);
            d += t;
            mag += t.abs();
        }
        let e = (F::wide_real(y) - real * d).abs();
        let bound = tol.dot_abs + tol.dot_rel * real * mag;
        assert!(e <= bound, "dot case {case}: error above the tolerance");
        worst = (
            worst.0.max(e),
            worst.1.max(e / (real * mag).max(f64::MIN_POSITIVE)),
            worst.2.max(e / bound),
        );
        if exact {
            let y2 = R::dot(
                bytemuck::cast_slice(&a),
                fa,
                bytemuck::cast_slice(&b),
                fb,
                R::scale(real as f32, q),
            );
            assert!(same_bits(&[y], &[y2]), "dot case {case}: not bit-exact");
        }
    }
    verdict_rel::<F>(
        "dot",
        worst,
        (tol.dot_abs, tol.dot_rel),
        twin_name::<R>(exact),
    );
}

/// `softmax` of 1-300 scores, its weights and their sum.
pub fn softmax<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0x99);
    let (mut worst, mut worst_sum, mut worst_dev) = (0.0f64, 0.0f64, (0.0f64, 0.0f64));
    for case in 0..2000 {
        let n = if case % 50 == 0 {
            rng.range(100, 300)
        } else {
            rng.range(1, 64)
        };
        let spread = [0.1, 1.0, 4.0, 10.0, 20.0][case % 5];
        let x: Vec<Wide<F>> = (0..n)
            .map(|_| F::wide(rng.uniform(-spread, spread)))
            .collect();
        let mut out = vec![Act::<F>::default(); n];
        F::P::softmax(&x, &mut out);
        let xr: Vec<f64> = x.iter().map(|&v| F::wide_real(v)).collect();
        let m = xr.iter().copied().fold(f64::MIN, f64::max);
        let den: f64 = xr.iter().map(|v| libm::exp(v - m)).sum();
        let mut sum = 0.0;
        for (o, v) in out.iter().zip(&xr) {
            let w = F::act_real(*o, Fmt::Q15);
            worst = worst.max((w - libm::exp(v - m) / den).abs());
            sum += w;
        }
        let dev = (sum - 1.0).abs();
        assert!(
            dev <= tol.softmax_sum + tol.softmax_sum_per_element * n as f64,
            "softmax case {case}: the sum of {n} weights is off by more than the tolerance"
        );
        worst_sum = worst_sum.max(dev - tol.softmax_sum_per_element * n as f64);
        worst_dev = (worst_dev.0.max(dev), worst_dev.1.max(dev / n as f64));
        if exact {
            let mut o2 = vec![R::Act::default(); n];
            R::softmax(bytemuck::cast_slice(&x), &mut o2);
            assert!(same_bits(&out, &o2), "softmax case {case}: not bit-exact");
        }
    }
    verdict::<F>("softmax", worst, tol.softmax, twin_name::<R>(exact));
    say!(
        "suite: {:<14} softmax sum:  max |sum - 1| {:.3e}, max |sum - 1| / n {:.3e}",
        label::<F::P>(),
        worst_dev.0,
        worst_dev.1
    );
    // What is left of the deviation of the sum once the per-element part is taken.
    verdict::<F>("softmax sum", worst_sum.max(0.0), tol.softmax_sum, None);
}

/// `weighted_sum`, the attention's context.
pub fn weighted_sum<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0xAA);
    let mut worst = 0.0f64;
    for case in 0..2000 {
        let (n, d) = (rng.range(1, 64), rng.range(1, 32));
        let raw: Vec<f64> = (0..n).map(|_| rng.unit()).collect();
        let total: f64 = raw.iter().sum::<f64>().max(1e-9);
        let w: Vec<Act<F>> = raw.iter().map(|v| F::act(v / total, Fmt::Q15)).collect();
        let rows: Vec<Act<F>> = (0..n * d)
            .map(|_| F::act(rng.uniform(-7.0, 7.0), WSUM_FMT))
            .collect();
        let mut out = vec![Act::<F>::default(); d];
        F::P::weighted_sum(&w, &rows, &mut out);
        for (j, &o) in out.iter().enumerate() {
            let y: f64 = (0..n)
                .map(|i| F::act_real(w[i], Fmt::Q15) * F::act_real(rows[i * d + j], WSUM_FMT))
                .sum();
            worst = worst.max((F::act_real(o, WSUM_FMT) - y).abs());
        }
        if exact {
            let mut o2 = vec![R::Act::default(); d];
            R::weighted_sum(
                bytemuck::cast_slice(&w),
                bytemuck::cast_slice(&rows),
                &mut o2,
            );
            assert!(
                same_bits(&out, &o2),
                "weighted_sum case {case}: not bit-exact"
            );
        }
    }
    verdict::<F>(
        "weighted_sum",
        worst,
        tol.weighted_sum,
        twin_name::<R>(exact),
    );
}

/// `additive_scores` (the attention's `v . tanh(q + k_i) + b` for every key at once)
/// against f64, on 500 random attentions.
pub fn additive_scores<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0xBB);
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for case in 0..500 {
        let planes = rng.range(1, F::P::MAX_PLANES);
        let (a, n) = (rng.range(1, 96), rng.range(1, 30));
        let vw: Vec<f64> = (0..a).map(|_| rng.uniform(-2.0, 2.0)).collect();
        let bias: Option<Vec<f64>> = (case % 2 == 0).then(|| vec![rng.uniform(-1.0, 1.0)]);
        let v = F::layer(1, &[(a, Fmt::Q15)], planes, &vw, bias.as_deref(), false);
        let q: Vec<Wide<F>> = (0..a).map(|_| F::wide(rng.uniform(-6.0, 6.0))).collect();
        let kf = KEY_FMTS[case % KEY_FMTS.len()];
        let r = input_range(kf);
        let keys: Vec<Act<F>> = (0..n * a).map(|_| F::act(rng.uniform(-r, r), kf)).collect();
        let mut tanh = vec![Act::<F>::default(); a];
        let mut scores = vec![Wide::<F>::default(); n];
        F::P::additive_scores(&q, &keys, kf, &v.linear(), &mut tanh, &mut scores).expect("shapes");
        let mag: f64 = v.deq.iter().map(|w| w.abs()).sum();
        for (i, &e) in scores.iter().enumerate() {
            let mut y = v.deq_bias[0];
            for j in 0..a {
                let t = F::wide_real(q[j]) + F::act_real(keys[i * a + j], kf);
                y += v.deq[j] * libm::tanh(t);
            }
            let err = (F::wide_real(e) - y).abs();
            let bound = tol.additive_abs + tol.additive_rel * mag;
            assert!(
                err <= bound,
                "additive_scores case {case} key {i}: error above the tolerance"
            );
            worst = (
                worst.0.max(err),
                worst.1.max(err / mag.max(f64::MIN_POSITIVE)),
                worst.2.max(err / bound),
            );
        }
        if exact {
            let mut t2 = vec![R::Act::default(); a];
            let mut s2 = vec![R::Wide::default(); n];
            R::additive_scores(
                bytemuck::cast_slice(&q),
                bytemuck::cast_slice(&keys),
                kf,
                &v.linear_as::<R>(),
                &mut t2,
                &mut s2,
            )
            .expect("shapes");
            assert!(
                same_bits(&scores, &s2),
                "additive_scores case {case}: not bit-exact"
            );
        }
    }
    verdict_rel::<F>(
        "additive",
        worst,
        (tol.additive_abs, tol.additive_rel),
        twin_name::<R>(exact),
    );
}

/// The integer precisions' storage types (what [`layouts`] re-encodes).
pub trait IntPrecision:
    Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32, Scale = Requant>
{
}
impl<P> IntPrecision for P where
    P: Precision<Act = i16, Wide = i32, Weight = i8, RowQ = Requant, Bias = i32, Scale = Requant>
{
}

/// Every weight [`Layout`]: `linear` (1-3 parts, 1-2 planes, parts longer than
/// `I32_EXACT_RUN` every 20th case, with and without bias, every third case with
/// arbitrary int8 codes, -128 included, and every seventh at the extremes of both
/// weights and inputs), `linear_batch`, `embed` and `additive_scores`, on weights
/// re-encoded in the layout and run by `P`, give exactly the bits of the same weights
/// in [`Layout::Row`] run by `R` (the portable kernels). The other arguments are the
/// suite's (no tolerance: exactness only).
pub fn layouts<P: IntPrecision, R: IntPrecision>(_: &Tolerances, _: bool, scale: &Scale) {
    let mut rng = Rng::new(0x1A);
    for case in 0..150 {
        let long = case % 20 == 0;
        let extreme = case % 7 == 0;
        let planes = rng.range(1, P::MAX_PLANES);
        let (rows, parts) = random_shape(&mut rng, scale, long, 3);
        let cols: usize = parts.iter().map(|p| p.0).sum();
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let bias: Option<Vec<f64>> =
            (case % 2 == 0).then(|| (0..rows).map(|_| rng.uniform(-2.0, 2.0)).collect());
        let mut layer = IntFixture::<R>::layer(rows, &parts, planes, &w, bias.as_deref(), false);
        drop(w);
        if extreme {
            layer.w.fill(i8::MIN);
        } else if case % 3 == 0 {
            for c in layer.w.iter_mut() {
                *c = rng.u64() as i8;
            }
        }
        let xs: Vec<Vec<i16>> = parts
            .iter()
            .map(|&(len, _)| {
                (0..len)
                    .map(|_| if extreme { i16::MIN } else { rng.u64() as i16 })
                    .collect()
            })
            .collect();
        let x: Vec<&[i16]> = xs.iter().map(|v| v.as_slice()).collect();
        let mut want = vec![0i32; rows];
        layer.linear().apply(&x, &mut want).expect("shapes");
        for layout in Layout::ALL {
            let stored: Vec<i8> = layer.w.iter().map(|&c| layout.store(c)).collect();
            let l = Linear::<P>::new(
                rows,
                cols,
                parts.len(),
                &stored,
                &layer.q,
                layer.bias.as_deref(),
            )
            .and_then(|l| l.with_layout(layout))
            .expect("shapes");
            let mut got = vec![0i32; rows];
            l.apply(&x, &mut got).expect("shapes");
            assert!(
                got == want,
                "layout {} linear case {case}: not as the row layout",
                layout as u8
            );
            let mut outs = [vec![0i32; rows], vec![0i32; rows]];
            let [o0, o1] = &mut outs;
            let mut jobs = [Job { x: &x, out: o0 }, Job { x: &x, out: o1 }];
            l.apply_batch(&mut jobs).expect("shapes");
            assert!(
                outs.iter().all(|o| *o == want),
                "layout {} linear_batch case {case}: not as the row layout",
                layout as u8
            );
        }
    }
    // Embedding tables.
    for case in 0..40 {
        let planes = rng.range(1, P::MAX_PLANES);
        let (rows, cols) = (rng.range(1, 20).min(scale.embed_rows), rng.range(1, 64));
        let w: Vec<f64> = (0..rows * cols).map(|_| rng.uniform(-6.0, 6.0)).collect();
        let table = IntFixture::<R>::layer(rows, &[(cols, EMBED_FMT)], planes, &w, None, true);
        drop(w);
        for layout in Layout::ALL {
            let stored: Vec<i8> = table.w.iter().map(|&c| layout.store(c)).collect();
            let t = Linear::<P>::new(rows, cols, 1, &stored, &table.q, None)
                .and_then(|l| l.with_layout(layout))
                .expect("shapes");
            for r in 0..rows {
                let (mut got, mut want) = (vec![0i16; cols], vec![0i16; cols]);
                t.embed(r, &mut got).expect("shapes");
                table.linear().embed(r, &mut want).expect("shapes");
                assert!(
                    got == want,
                    "layout {} embed case {case}: not as the row layout",
                    layout as u8
                );
            }
        }
    }
    // The attention's fused scores (`v` one row).
    for case in 0..60 {
        let planes = rng.range(1, P::MAX_PLANES);
        let (a, n) = (rng.range(1, 96), rng.range(1, 30));
        let vw: Vec<f64> = (0..a).map(|_| rng.uniform(-2.0, 2.0)).collect();
        let bias: Option<Vec<f64>> = (case % 2 == 0).then(|| vec![rng.uniform(-1.0, 1.0)]);
        let v = IntFixture::<R>::layer(1, &[(a, Fmt::Q15)], planes, &vw, bias.as_deref(), false);
        let q: Vec<i32> = (0..a)
            .map(|_| IntFixture::<R>::wide(rng.uniform(-6.0, 6.0)))
            .collect();
        let kf = KEY_FMTS[case % KEY_FMTS.len()];
        let r = input_range(kf);
        let keys: Vec<i16> = (0..n * a)
            .map(|_| IntFixture::<R>::act(rng.uniform(-r, r), kf))
            .collect();
        let (mut t, mut want) = (vec![0i16; a], vec![0i32; n]);
        R::additive_scores(&q, &keys, kf, &v.linear(), &mut t, &mut want).expect("shapes");
        for layout in Layout::ALL {
            let stored: Vec<i8> = v.w.iter().map(|&c| layout.store(c)).collect();
            let l = Linear::<P>::new(1, a, 1, &stored, &v.q, v.bias.as_deref())
                .and_then(|l| l.with_layout(layout))
                .expect("shapes");
            let mut got = vec![0i32; n];
            P::additive_scores(&q, &keys, kf, &l, &mut t, &mut got).expect("shapes");
            assert!(
                got == want,
                "layout {} additive_scores case {case}: not as the row layout",
                layout as u8
            );
        }
    }
    say!("layouts: every layout as the row layout, bit for bit");
}

/// `hard_sigmoid_keras2` and `hard_sigmoid_keras3` over the nonlinearities' inputs.
pub fn hard_sigmoids<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    nonlinearity::<F, R>(
        "hard_sigm_k2",
        (tol.hard_sigmoid_keras2, f64::INFINITY),
        exact,
        F::P::hard_sigmoid_keras2,
        R::hard_sigmoid_keras2,
        |x| (0.2 * x + 0.5).clamp(0.0, 1.0),
    );
    nonlinearity::<F, R>(
        "hard_sigm_k3",
        (tol.hard_sigmoid_keras3, f64::INFINITY),
        exact,
        F::P::hard_sigmoid_keras3,
        R::hard_sigmoid_keras3,
        |x| (x / 6.0 + 0.5).clamp(0.0, 1.0),
    );
}

/// `cell_update` on random operands in range (the ends of the unit range included);
/// saturation at the ends of the cell format, where the precision has one, must keep
/// the sign.
pub fn cell_update<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, _: &Scale) {
    let mut rng = Rng::new(0xBB);
    let mut worst = 0.0f64;
    let q = Fmt::Q15;
    for k in 0..50_000 {
        let f = F::act(if k % 97 == 0 { 1.0 } else { rng.unit() }, q);
        let i = F::act(if k % 89 == 0 { 1.0 } else { rng.unit() }, q);
        let g = F::act(rng.uniform(-1.0, 1.0), q);
        let c = F::act(rng.uniform(-6.0, 6.0), CELL_FMT);
        let y = F::P::cell_update(f, c, i, g, CELL_FMT);
        let want =
            F::act_real(f, q) * F::act_real(c, CELL_FMT) + F::act_real(i, q) * F::act_real(g, q);
        worst = worst.max((F::act_real(y, CELL_FMT) - want).abs());
        if exact {
            let y2 = R::cell_update(cast(f), cast(c), cast(i), cast(g), CELL_FMT);
            assert!(same_bits(&[y], &[y2]), "cell_update: not bit-exact");
        }
    }
    // Pushed past the top and the bottom of the format: never wraps.
    let top = F::act(7.99, CELL_FMT);
    let up = F::P::cell_update(
        F::act(1.0, q),
        top,
        F::act(1.0, q),
        F::act(1.0, q),
        CELL_FMT,
    );
    assert!(
        F::act_real(up, CELL_FMT) >= 7.99,
        "cell_update wrapped at the top"
    );
    let bottom = F::act(-8.0, CELL_FMT);
    let down = F::P::cell_update(
        F::act(1.0, q),
        bottom,
        F::act(1.0, q),
        F::act(-1.0, q),
        CELL_FMT,
    );
    assert!(
        F::act_real(down, CELL_FMT) <= -7.99,
        "cell_update wrapped at the bottom"
    );
    verdict::<F>("cell_update", worst, tol.cell_update, twin_name::<R>(exact));
}

/// Every test of the suite for the precision of fixture `F`, bit-exact with `R` when
/// `exact` (what the firmware's `kernel-suite` runs on a board). Panics at the first
/// failure.
pub fn run_all<F: Fixture, R: Precision>(tol: &Tolerances, exact: bool, scale: &Scale) {
    linear::<F, R>(tol, exact, scale);
    embed::<F, R>(tol, exact, scale);
    sigmoid::<F, R>(tol, exact, scale);
    tanh::<F, R>(tol, exact, scale);
    add::<F, R>(tol, exact, scale);
    gate::<F, R>(tol, exact, scale);
    blend::<F, R>(tol, exact, scale);
    widen_narrow::<F, R>(tol, exact, scale);
    dot::<F, R>(tol, exact, scale);
    softmax::<F, R>(tol, exact, scale);
    weighted_sum::<F, R>(tol, exact, scale);
    additive_scores::<F, R>(tol, exact, scale);
    hard_sigmoids::<F, R>(tol, exact, scale);
    cell_update::<F, R>(tol, exact, scale);
}

/// Generates the suite for one precision: `precision_suite!(module, Precision, Fixture,
/// TOLERANCES)`, optionally `, bit_exact_with = Reference`. `Fixture` is
/// `FloatFixture` or `IntFixture` (applied to the precision).
#[cfg(test)]
macro_rules! precision_suite {
    ($name:ident, $p:ty, $fixture:ident, $tol:expr) => {
        $crate::suite::precision_suite!(@tests $name, $fixture<$p>, $p, $tol, false);
    };
    ($name:ident, $p:ty, $fixture:ident, $tol:expr, bit_exact_with = $r:ty) => {
        $crate::suite::precision_suite!(@tests $name, $fixture<$p>, $r, $tol, true);
    };
    (@tests $name:ident, $f:ty, $r:ty, $tol:expr, $exact:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn linear() {
                $crate::suite::linear::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn embed() {
                $crate::suite::embed::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn sigmoid() {
                $crate::suite::sigmoid::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn tanh() {
                $crate::suite::tanh::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn add() {
                $crate::suite::add::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn gate_and_gate_act() {
                $crate::suite::gate::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn blend() {
                $crate::suite::blend::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn widen_and_narrow() {
                $crate::suite::widen_narrow::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn dot() {
                $crate::suite::dot::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn softmax() {
                $crate::suite::softmax::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn weighted_sum() {
                $crate::suite::weighted_sum::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn additive_scores() {
                $crate::suite::additive_scores::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn hard_sigmoids() {
                $crate::suite::hard_sigmoids::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
            #[test]
            fn cell_update() {
                $crate::suite::cell_update::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
            }
        }
    };
}
#[cfg(test)]
pub(crate) use precision_suite;

#[cfg(test)]
precision_suite!(float32, F32, FloatFixture, F32_TOL);
#[cfg(test)]
precision_suite!(
    float32_bit_exact,
    F32,
    FloatFixture,
    F32_TOL,
    bit_exact_with = F32Portable
);
#[cfg(test)]
precision_suite!(w8f32, W8F32, FloatFixture, W8F32_TOL);
#[cfg(test)]
#[test]
fn w8a16_layouts() {
    layouts::<W8A16, W8A16Portable>(&W8A16_TOL, true, &Scale::FULL);
}
#[cfg(test)]
precision_suite!(w8a16, W8A16, IntFixture, W8A16_TOL);
#[cfg(test)]
precision_suite!(
    w8a16_bit_exact,
    W8A16,
    IntFixture,
    W8A16_TOL,
    bit_exact_with = W8A16Portable
);
