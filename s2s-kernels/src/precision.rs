//! The [`Precision`] trait: one set of primitive operations, implemented once per number
//! format, so that the model code above is written once and runs at every precision.
//!
//! | precision | weights | activations ([`Precision::Act`]) | wide values ([`Precision::Wide`]) |
//! |---|---|---|---|
//! | [`F32`] | f32 | f32 | f32 |
//! | [`W8F32`] | int8, f32 scale per row | f32 | f32 |
//! | [`W8A16`] | int8, requantizer per row and input part | i16, `Q(15-f).f` per tensor | i32, `Q16.15` |
//!
//! "Wide" values are what a dense layer produces before it is stored: gate
//! pre-activations, attention scores and logits. In [`W8A16`] they share one fixed
//! format, so every nonlinearity reads one format and the model never carries a scale
//! at run time except the activation formats ([`Fmt`]) and the layers' requantizers.

use core::fmt::Debug;
use core::marker::PhantomData;
use core::ops::Range;

use bytemuck::Pod;

use crate::fixed::{self, mul_q15, mul_q15_i32, sat_i16, shift_round_i32, Requant, WIDE_FRAC};
use crate::layout::Layout;
use crate::part::Part;
use crate::{cell, float, lut, native, portable};

/// The number formats a model file can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum PrecisionKind {
    /// f32 weights and activations.
    F32 = 0,
    /// int8 weights (f32 scale per row), f32 activations.
    W8F32 = 1,
    /// int8 weights, int16 activations, int32 accumulators; no float at run time.
    W8A16 = 2,
}

impl PrecisionKind {
    /// All kinds, in file-id order.
    pub const ALL: [PrecisionKind; 3] = [Self::F32, Self::W8F32, Self::W8A16];

    /// The kind with this file id.
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.get(id as usize).copied()
    }

    /// Short lowercase name: `f32`, `w8f32`, `w8a16`.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::W8F32 => "w8f32",
            Self::W8A16 => "w8a16",
        }
    }
}

/// Format of an activation tensor: the number of fractional bits of its `i16` values
/// in [`W8A16`] (scale `2^-frac`); ignored by the float precisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fmt {
    /// Fractional bits, `0..=15` in practice (validated by the model parser).
    pub frac: i8,
}

impl Fmt {
    /// `Q0.15`: gate outputs, hidden states, attention weights.
    pub const Q15: Fmt = Fmt { frac: 15 };
}

/// A length that did not match what a kernel expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ShapeError {
    /// What was measured (`"weights"`, `"input"`, ...).
    pub what: &'static str,
    /// The length required.
    pub expected: usize,
    /// The length given.
    pub found: usize,
}

impl crate::text::Describe for ShapeError {
    fn describe(&self, out: &mut dyn crate::text::Sink) -> core::fmt::Result {
        crate::say!(out; self.what, " has length ", self.found, ", expected ", self.expected)
    }
}

impl core::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::text::Describe::describe(self, f)
    }
}

impl core::error::Error for ShapeError {}

fn check(what: &'static str, expected: usize, found: usize) -> Result<(), ShapeError> {
    if expected == found {
        Ok(())
    } else {
        Err(ShapeError {
            what,
            expected,
            found,
        })
    }
}

/// Which implementation of the kernels a precision runs: [`Native`] or [`Portable`].
///
/// Both give the same bits (the shared suite proves it on the host and on each QEMU
/// board); [`Portable`] exists so that the native kernels can be checked against it on
/// the device itself.
pub trait Kernels: Copy + Default + Debug + 'static {
    /// True for the target's own kernels.
    const NATIVE: bool;
}

/// The kernels of the target's instruction set where this crate has some (Cortex-M0 to
/// M33, chosen by `build.rs` from the target name), the portable ones elsewhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct Native;

/// The portable Rust kernels on every target: the reference of [`Native`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Portable;

impl Kernels for Native {
    const NATIVE: bool = true;
}
impl Kernels for Portable {
    const NATIVE: bool = false;
}

/// Number formats and the primitive operations of the model code, implemented by
/// [`F32`], [`W8F32`] and [`W8A16`].
///
/// "Unit" values below are activations in `[-1, 1]` (gate outputs, states, attention
/// weights): plain f32, or `Q0.15` in [`W8A16`].
pub trait Precision: Sized + 'static {
    /// Which format this is (stored in model files).
    const KIND: PrecisionKind;
    /// An activation element.
    type Act: Copy + Default + PartialEq + Debug + Pod;
    /// A wide element: layer outputs before storage, scores, logits, and the
    /// log-probabilities of a beam search ([`crate::logprob::Score`]).
    type Wide: Copy + Default + PartialOrd + Debug + Pod + crate::logprob::Score;
    /// A stored weight.
    type Weight: Copy + Debug + Pod;
    /// Per-row (and, in [`W8A16`], per input part) quantization data of a layer.
    type RowQ: Copy + Debug + Pod;
    /// A stored bias, in the wide domain.
    type Bias: Copy + Debug + Pod;
    /// A scale applied to dot-product scores (`1` or `1/sqrt(d)`).
    type Scale: Copy + Debug;

    /// Most weight planes a layer may have (1 for f32).
    const MAX_PLANES: usize;

    /// How many [`Precision::RowQ`] a layer of `rows` rows and `parts` input parts has
    /// per weight plane.
    fn row_q_len(rows: usize, parts: usize) -> usize;
    /// Whether stored quantization data is in range (a model file is checked with this
    /// before it runs: no shift a kernel cannot apply, no non-finite scale).
    fn row_q_valid(_q: &Self::RowQ) -> bool {
        true
    }
    /// The score scale from its real value and its requantizer (the model file stores both).
    fn scale(real: f32, q: Requant) -> Self::Scale;

    /// `out = W [x_0; x_1; ...] + b`, lengths already checked by [`Linear::apply`].
    fn linear(l: &Linear<'_, Self>, x: &[&[Self::Act]], out: &mut [Self::Wide]);
    /// The same layer on several inputs at once (lengths already checked by
    /// [`Linear::apply_batch`]). The default applies them one by one; an implementation
    /// may share the weight traffic between them but must give every output exactly as
    /// [`Precision::linear`] does.
    fn linear_batch(l: &Linear<'_, Self>, jobs: &mut [Job<'_, Self>]) {
        for j in jobs {
            Self::linear(l, j.x, j.out);
        }
    }
    /// Row `row` of an embedding table, as activations (length checked by the caller).
    fn embed(table: &Linear<'_, Self>, row: usize, out: &mut [Self::Act]);

    /// Logistic sigmoid of a wide value, as a unit value.
    fn sigmoid(x: Self::Wide) -> Self::Act;
    /// Hyperbolic tangent of a wide value, as a unit value.
    fn tanh(x: Self::Wide) -> Self::Act;
    /// `a + b` (saturating).
    fn add(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// `u * x` for a unit `u` (the reset gate applied after the recurrent matmul).
    fn gate(u: Self::Act, x: Self::Wide) -> Self::Wide;
    /// `u * x` of two unit values (the reset gate applied before the recurrent matmul).
    fn gate_act(u: Self::Act, x: Self::Act) -> Self::Act;
    /// The GRU update `(1 - z) * n + z * h` of unit values.
    fn blend(z: Self::Act, h: Self::Act, n: Self::Act) -> Self::Act;
    /// Keras 2 / tf.keras hard sigmoid `clip(0.2 x + 0.5, 0, 1)` of a wide value, as a
    /// unit value (see [`crate::cell`]).
    fn hard_sigmoid_keras2(x: Self::Wide) -> Self::Act;
    /// Keras 3 hard sigmoid `relu6(x + 3) / 6` of a wide value, as a unit value.
    fn hard_sigmoid_keras3(x: Self::Wide) -> Self::Act;
    /// The LSTM cell-state update `f * c + i * g` for unit `f`, `i`, `g` and a cell
    /// state `c` of format `fc` (saturating in [`W8A16`]; see [`crate::cell`]).
    fn cell_update(f: Self::Act, c: Self::Act, i: Self::Act, g: Self::Act, fc: Fmt) -> Self::Act;
    /// An activation of format `f` as a wide value.
    fn widen(a: Self::Act, f: Fmt) -> Self::Wide;
    /// A wide value stored as an activation of format `f` (saturating).
    fn narrow(w: Self::Wide, f: Fmt) -> Self::Act;
    /// `s * (a . b)` for activations of formats `fa` and `fb`, as a wide value.
    fn dot(a: &[Self::Act], fa: Fmt, b: &[Self::Act], fb: Fmt, s: Self::Scale) -> Self::Wide;
    /// Softmax of wide values into unit weights.
    fn softmax(x: &[Self::Wide], out: &mut [Self::Act]);
    /// Additive attention scores `e_i = v . tanh(q + k_i)` (`v` with its bias) for each
    /// of the `scores.len()` keys in `keys` (`q.len()` values each, format `fk`, widened),
    /// using `tanh` (`q.len()` long) as scratch; `v` is one row over `q.len()` columns.
    /// The default ([`additive_scores_primitives`]) runs the primitives one by one; an
    /// implementation may fuse them, and must give exactly the same values.
    fn additive_scores(
        q: &[Self::Wide],
        keys: &[Self::Act],
        fk: Fmt,
        v: &Linear<'_, Self>,
        tanh: &mut [Self::Act],
        scores: &mut [Self::Wide],
    ) -> Result<(), ShapeError> {
        additive_scores_primitives(q, keys, fk, v, tanh, scores)
    }
    /// `out_j = sum_i w_i * rows[i * d + j]` for unit weights `w`: a convex combination
    /// of `w.len()` rows of length `d = out.len()`, in the rows' own format.
    fn weighted_sum(w: &[Self::Act], rows: &[Self::Act], out: &mut [Self::Act]);

    /// A unit value as f32 (for observers and reports, never on the inference path).
    fn unit_to_f32(a: Self::Act) -> f32;
    /// An activation of format `f` as f32 (reports only).
    fn act_to_f32(a: Self::Act, f: Fmt) -> f32;
    /// A wide value as f32 (reports only).
    fn wide_to_f32(w: Self::Wide) -> f32;
}

/// [`Precision::additive_scores`] from the primitives: per key, `tanh(add(q_j,
/// widen(k_j)))` into `tanh`, then `v` applied to it.
pub fn additive_scores_primitives<P: Precision>(
    q: &[P::Wide],
    keys: &[P::Act],
    fk: Fmt,
    v: &Linear<'_, P>,
    tanh: &mut [P::Act],
    scores: &mut [P::Wide],
) -> Result<(), ShapeError> {
    let a = q.len();
    check("key scratch", a, tanh.len().min(a))?;
    check("keys", scores.len() * a, keys.len().min(scores.len() * a))?;
    let tanh = &mut tanh[..a];
    for (e, key) in scores.iter_mut().zip(keys.chunks_exact(a.max(1))) {
        for ((t, &qj), &kj) in tanh.iter_mut().zip(q).zip(key) {
            *t = P::tanh(P::add(qj, P::widen(kj, fk)));
        }
        let mut out = [P::Wide::default()];
        v.apply(&[tanh], &mut out)?;
        *e = out[0];
    }
    Ok(())
}

/// One input of a batched layer application and where its output goes.
pub struct Job<'j, P: Precision> {
    /// The input parts.
    pub x: &'j [&'j [P::Act]],
    /// One wide value per row.
    pub out: &'j mut [P::Wide],
}

/// A dense layer `y = W [x_0; x_1; ...] + b`: row-major weights borrowed from the model
/// file, quantization data, an optional bias. The input may come in several parts
/// (a concatenation that is never copied); in [`W8A16`] each part has its own format.
///
/// A quantized layer may carry a second weight plane that holds the rounding residual
/// of the first (`W ~ s_0 Q_0 + s_1 Q_1` per row): about 15 significant bits for the
/// layers that need them, at twice their cost, with the same int8 kernels. Each row
/// stores its planes one after the other, `[plane 0 | plane 1]`, and so do its
/// quantization entries.
///
/// The int8 weights of a [`W8A16`] layer may be stored in another [`Layout`] (a
/// re-encoding of the same values, [`Linear::with_layout`]); every kernel reads every
/// layout with the same results.
pub struct Linear<'a, P: Precision> {
    rows: usize,
    cols: usize,
    // Small fields in one word: a `Linear` is one of many that a small device's `Net`
    // holds on its stack, and the small cores copy it for each gate.
    parts: u16,
    /// The planes (low four bits) and the [`Layout`] id (high four bits): one byte
    /// copied as it was before layouts existed (a separate field cost the Cortex-M3 one
    /// percent of netra's instructions in copies of `Linear`).
    planes_layout: u8,
    w: &'a [P::Weight],
    q: &'a [P::RowQ],
    bias: Option<&'a [P::Bias]>,
}

impl<P: Precision> Clone for Linear<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for Linear<'_, P> {}

impl<P: Precision> Debug for Linear<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Linear<{}>({}x{}, {} parts, {} planes, bias: {})",
            P::KIND.name(),
            self.rows,
            self.cols,
            self.parts(),
            self.planes(),
            self.bias.is_some()
        )
    }
}

impl<'a, P: Precision> Linear<'a, P> {
    /// A layer of `rows x cols` weights whose input comes in `parts` parts; the number
    /// of weight planes (1, or up to [`Precision::MAX_PLANES`]) follows from `w.len()`.
    pub fn new(
        rows: usize,
        cols: usize,
        parts: usize,
        w: &'a [P::Weight],
        q: &'a [P::RowQ],
        bias: Option<&'a [P::Bias]>,
    ) -> Result<Self, ShapeError> {
        let size = rows * cols;
        let planes = w.len().checked_div(size).unwrap_or(1);
        if planes == 0 || planes > P::MAX_PLANES || planes * size != w.len() {
            return Err(ShapeError {
                what: "weights",
                expected: size,
                found: w.len(),
            });
        }
        check("quantization", P::row_q_len(rows, parts) * planes, q.len())?;
        if let Some(b) = bias {
            check("bias", rows, b.len())?;
        }
        let Ok(parts) = u16::try_from(parts) else {
            return Err(ShapeError {
                what: "parts",
                expected: u16::MAX as usize,
                found: parts,
            });
        };
        if parts == 0 {
            return Err(ShapeError {
                what: "parts",
                expected: 1,
                found: 0,
            });
        }
        Ok(Linear {
            rows,
            cols,
            parts,
            // At most `P::MAX_PLANES` (2), checked above.
            planes_layout: planes as u8 | (Layout::Row as u8) << 4,
            w,
            q,
            bias,
        })
    }

    /// The same layer with its weights stored in `layout` ([`Layout::Row`] for any
    /// precision, the others for [`W8A16`] only, where this build reads them:
    /// [`Layout::compiled`]).
    pub fn with_layout(self, layout: Layout) -> Result<Self, ShapeError> {
        let readable = layout == Layout::Row || P::KIND == PrecisionKind::W8A16;
        if !readable || !layout.compiled() {
            return Err(ShapeError {
                what: "weight layout",
                expected: Layout::Row as usize,
                found: layout as usize,
            });
        }
        Ok(Linear {
            planes_layout: self.planes_layout & 0x0f | (layout as u8) << 4,
            ..self
        })
    }

    /// Output size.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Input size (all parts together).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Number of input parts.
    pub fn parts(&self) -> usize {
        self.parts as usize
    }
    /// Number of weight planes.
    pub fn planes(&self) -> usize {
        (self.planes_layout & 0x0f) as usize
    }
    /// How the weights are stored.
    pub fn layout(&self) -> Layout {
        // Only `with_layout` sets the high bits, from a `Layout`.
        Layout::from_id(self.planes_layout >> 4).unwrap_or_default()
    }
    /// Multiply-accumulates of one application.
    pub fn macs(&self) -> usize {
        self.rows * self.cols * self.planes()
    }
    /// The weights, row-major, as stored (see [`Linear::layout`]).
    pub fn weights(&self) -> &'a [P::Weight] {
        self.w
    }
    /// The quantization data.
    pub fn row_q(&self) -> &'a [P::RowQ] {
        self.q
    }
    /// The bias.
    pub fn bias(&self) -> Option<&'a [P::Bias]> {
        self.bias
    }

    /// The layer made of rows `r` only (for example one gate of a GRU).
    pub fn row_range(&self, r: Range<usize>) -> Result<Self, ShapeError> {
        if r.start > r.end || r.end > self.rows {
            return Err(ShapeError {
                what: "row range",
                expected: self.rows,
                found: r.end,
            });
        }
        let per_row = P::row_q_len(1, self.parts()) * self.planes();
        let row_w = self.cols * self.planes();
        Ok(Linear {
            rows: r.len(),
            cols: self.cols,
            parts: self.parts,
            planes_layout: self.planes_layout,
            w: self.w.part(r.start * row_w..r.end * row_w, "weights")?,
            q: self
                .q
                .part(r.start * per_row..r.end * per_row, "quantization")?,
            bias: match self.bias {
                Some(b) => Some(b.part(r, "bias")?),
                None => None,
            },
        })
    }

    /// `out = W [x_0; x_1; ...] + b`: checks that the parts are as many as declared,
    /// that their lengths add up to the input size and that `out` has one element per row.
    pub fn apply(&self, x: &[&[P::Act]], out: &mut [P::Wide]) -> Result<(), ShapeError> {
        check("input parts", self.parts(), x.len())?;
        check("input", self.cols, x.iter().map(|p| p.len()).sum())?;
        check("output", self.rows, out.len())?;
        P::linear(self, x, out);
        Ok(())
    }

    /// [`Linear::apply`] to several inputs at once, checking every one.
    pub fn apply_batch(&self, jobs: &mut [Job<'_, P>]) -> Result<(), ShapeError> {
        for j in jobs.iter() {
            check("input parts", self.parts(), j.x.len())?;
            check("input", self.cols, j.x.iter().map(|p| p.len()).sum())?;
            check("output", self.rows, j.out.len())?;
        }
        P::linear_batch(self, jobs);
        Ok(())
    }

    /// Row `row` of an embedding table into `out` (one element per column).
    pub fn embed(&self, row: usize, out: &mut [P::Act]) -> Result<(), ShapeError> {
        if row >= self.rows {
            return Err(ShapeError {
                what: "embedding row",
                expected: self.rows,
                found: row,
            });
        }
        check("embedding output", self.cols, out.len())?;
        P::embed(self, row, out);
        Ok(())
    }
}

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

impl FloatWeight for f32 {
    const KIND: PrecisionKind = PrecisionKind::F32;
    const MAX_PLANES: usize = 1;
    type RowQ = ();
    fn row_q_len(_: usize) -> usize {
        0
    }
    #[inline]
    fn dot_acc(acc: f32, w: &[f32], x: &[f32]) -> f32 {
        float::dot_acc(acc, w, x)
    }
    #[inline]
    fn dot_acc_native(acc: f32, w: &[f32], x: &[f32]) -> f32 {
        native::dot_f32(acc, w, x)
    }
    #[inline]
    fn row_scale(_: &[()], _: usize) -> f32 {
        1.0
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
}

impl FloatWeight for i8 {
    const KIND: PrecisionKind = PrecisionKind::W8F32;
    const MAX_PLANES: usize = 2;
    type RowQ = f32;
    fn row_q_len(rows: usize) -> usize {
        rows
    }
    #[inline]
    fn dot_acc(acc: f32, w: &[i8], x: &[f32]) -> f32 {
        float::dot_i8_acc(acc, w, x)
    }
    #[inline]
    fn row_scale(q: &[f32], r: usize) -> f32 {
        // `Linear::new` made `q` one scale per row and plane: a missing one cannot be
        // asked for, and would count as 0.
        q.get(r).copied().unwrap_or(0.0)
    }
    fn row_q_valid(q: &f32) -> bool {
        q.is_finite()
    }
    #[inline]
    fn to_f32(self) -> f32 {
        f32::from(self)
    }
}

/// The float precisions, generic over weight storage and kernels: f32 math throughout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Float<W, K = Native>(PhantomData<(W, K)>);

/// f32 weights and activations.
pub type F32 = Float<f32>;
/// int8 weights with an f32 scale per row, dequantized on the fly; f32 math.
pub type W8F32 = Float<i8>;
/// [`F32`] on the portable kernels (the reference of the FPU kernels).
pub type F32Portable = Float<f32, Portable>;

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

/// int8 weights, int16 activations, int32 accumulators: integers only at run time, on
/// kernels `K`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Int<K = Native>(PhantomData<K>);

/// int8 weights, int16 activations, int32 accumulators: integers only at run time.
pub type W8A16 = Int;
/// [`W8A16`] on the portable kernels (the reference of the instruction-set kernels).
pub type W8A16Portable = Int<Portable>;

/// Longest run of int8 x int16 products that an `i32` accumulator holds exactly for
/// every `i8` weight, `-128` included: `511 * 128 * 32768 < 2^31` (512 would reach it).
pub const I32_EXACT_RUN: usize = 511;

pub use crate::portable::dot_i8_i16;

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
