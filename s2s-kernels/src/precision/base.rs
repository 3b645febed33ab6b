//! The [`Precision`] trait and the dense layer [`Linear`] it is generic over (one file:
//! each names the other), with [`Job`] and the primitives' fused attention scores
//! [`additive_scores_primitives`]. Everything a precision implements starts here; the
//! implementations (`floats.rs`, `w8a16.rs`) and the kernels (`portable.rs`, `arm/`)
//! sit above it.

use core::fmt::Debug;
use core::ops::Range;

use bytemuck::Pod;

use super::types::{check, Fmt, PrecisionKind, ShapeError};
use crate::fixed::Requant;
use crate::layout::Layout;
use crate::part::Part;

/// Number formats and the primitive operations of the model code, implemented by
/// [`F32`](crate::F32), [`W8F32`](crate::W8F32) and [`W8A16`](crate::W8A16).
///
/// "Unit" values below are activations in `[-1, 1]` (gate outputs, states, attention
/// weights): plain f32, or `Q0.15` in [`W8A16`](crate::W8A16).
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
    /// Per-row (and, in [`W8A16`](crate::W8A16), per input part) quantization data of a layer.
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
    /// state `c` of format `fc` (saturating in [`W8A16`](crate::W8A16); see [`crate::cell`]).
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
    /// Local-p attention's predicted position `p = n * s` (Luong et al., 2015) for a
    /// unit `s` in `[0, 1]` (a sigmoid) over `n` positions (at most 65,535), as a wide
    /// value (exact in [`W8A16`](crate::W8A16): `Q16.15`).
    fn position(s: Self::Act, n: usize) -> Self::Wide;
    /// The position nearest a [`Precision::position`] `p` (a half rounds up).
    fn nearest(p: Self::Wide) -> usize;
    /// An attention weight `w` in `[0, 1]` of position `i` times local-p's Gaussian about
    /// the predicted position `p`, `exp(-(i - p)^2 / (2 sigma^2))` with `sigma = d / 2`
    /// (`d` at least 1). In [`W8A16`](crate::W8A16) within `2^-13` of the real product,
    /// 0 from a distance of `3 d`.
    fn gaussian(w: Self::Act, i: usize, p: Self::Wide, d: usize) -> Self::Act;

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
/// (a concatenation that is never copied); in [`W8A16`](crate::W8A16) each part has its own format.
///
/// A quantized layer may carry a second weight plane that holds the rounding residual
/// of the first (`W ~ s_0 Q_0 + s_1 Q_1` per row): about 15 significant bits for the
/// layers that need them, at twice their cost, with the same int8 kernels. Each row
/// stores its planes one after the other, `[plane 0 | plane 1]`, and so do its
/// quantization entries.
///
/// The int8 weights of a [`W8A16`](crate::W8A16) layer may be stored in another [`Layout`] (a
/// re-encoding of the same values, [`Linear::with_layout`]); every kernel reads every
/// layout with the same results.
pub struct Linear<'a, P: Precision> {
    // The fields are seen by the precisions' files (`pub(super)`): their kernels read
    // them directly, as they did when they lived in this file.
    pub(super) rows: usize,
    pub(super) cols: usize,
    // Small fields in one word: a `Linear` is one of many that a small device's `Net`
    // holds on its stack, and the small cores copy it for each gate.
    pub(super) parts: u16,
    /// The planes (low four bits) and the [`Layout`] id (high four bits): one byte
    /// copied as it was before layouts existed (a separate field cost the Cortex-M3 one
    /// percent of netra's instructions in copies of `Linear`).
    pub(super) planes_layout: u8,
    pub(super) w: &'a [P::Weight],
    pub(super) q: &'a [P::RowQ],
    pub(super) bias: Option<&'a [P::Bias]>,
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
    /// precision, the others for [`W8A16`](crate::W8A16) only, where this build reads them:
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
    /// Multiply-accumulates of one application: the model's `rows × cols`, whatever the
    /// number of stored planes (a residual plane refines the same products, so a w8a16
    /// layer counts the MACs of its f32 original).
    pub fn macs(&self) -> usize {
        self.rows * self.cols
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
