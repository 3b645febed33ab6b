//! The suite's units and sizes: the [`Tolerances`] of each precision in real units
//! ([`F32_TOL`], [`W8F32_TOL`], [`W8A16_TOL`]), the formats the tests feed, and the
//! [`Scale`] of the cases.

use crate::{cell, float, lut, Fmt};

/// `2^k`, exactly.
pub(super) fn pow2(k: i32) -> f64 {
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
