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
//! `s2s quantize` makes them; for `W8A16` one [`Requant::from_real`](crate::Requant::from_real) per row, plane and
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
//! and [`layouts`]: every weight [`Layout`](crate::Layout) read by the native kernels gives the row
//! layout's bits.
//! Measurements are printed in the tests only; on a board a failure panics.
//!
//! The files, one per family of primitives: `tolerances.rs` (units, tolerances, sizes),
//! `fixture.rs` (feeding a precision), `check.rs` (verdicts and shared helpers), then
//! `layers.rs`, `elementwise.rs` and `attention.rs`; this file runs them all.

// What only the printed measurements use.
#![cfg_attr(not(test), allow(unused_variables))]

mod attention;
mod check;
mod elementwise;
mod fixture;
mod layers;
mod tolerances;

pub use attention::{additive_scores, dot, softmax, weighted_sum};
pub use elementwise::{add, blend, cell_update, gate, hard_sigmoids, sigmoid, tanh, widen_narrow};
pub use fixture::{int8_planes, Fixture, FloatFixture, FloatStore, IntFixture, OwnedLayer, Rng};
pub use layers::{embed, layouts, linear, wide_layers, IntPrecision};
pub use tolerances::{
    Scale, Tolerances, CELL_FMT, DOT_FMTS, EMBED_FMT, F32_TOL, KEY_FMTS, LINEAR_FMTS, NARROW_FMT,
    W8A16_TOL, W8F32_TOL, WSUM_FMT,
};

use crate::Precision;
#[cfg(any(test, doc))]
use crate::{F32Portable, W8A16Portable, F32, W8A16, W8F32};

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
///
/// Exported (with the `suite` feature) so that implementations of [`Precision`] in
/// other crates are held to the same suite: the host tools' fast precisions are, bit for
/// bit against [`F32Portable`] and [`W8A16Portable`]. The invoking module needs the
/// fixture, the precisions and the tolerances in scope.
#[macro_export]
macro_rules! precision_suite {
    ($name:ident, $p:ty, $fixture:ident, $tol:expr) => {
        $crate::precision_suite!(@tests $name, $fixture<$p>, $p, $tol, false);
    };
    ($name:ident, $p:ty, $fixture:ident, $tol:expr, bit_exact_with = $r:ty) => {
        $crate::precision_suite!(@tests $name, $fixture<$p>, $r, $tol, true);
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
            fn wide_layers() {
                $crate::suite::wide_layers::<$f, $r>(&$tol, $exact, &$crate::suite::Scale::FULL);
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
pub use crate::precision_suite;

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
