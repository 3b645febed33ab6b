//! Numeric kernels for sequence-to-sequence inference on microcontrollers.
//!
//! No notion of models lives here: only number formats and the operations on them.
//!
//! * [`float`]: f32 elementary functions (`libm`, or `micromath` with `fast-math`),
//!   dot products, softmax, log-softmax, argmax, entropy.
//! * [`fixed`]: saturation, rounding shifts, the [`Requant`] multiplier.
//! * [`lut`]: int16 tanh/sigmoid by table with interpolation, fixed-point softmax.
//! * [`logprob`]: log-softmax, sums of log-probabilities and length-normalised
//!   comparison for beam search, exactly defined in f32 and in integers.
//! * [`cell`]: the hard sigmoids of Keras 2 and Keras 3 and the LSTM cell-state update,
//!   f32 and fixed point.
//! * [`precision`]: the [`Precision`] trait that the model crates are generic over, with
//!   its three implementations [`F32`], [`W8F32`] and [`W8A16`], and the dense layer
//!   [`Linear`].
//! * [`layout`]: how a [`W8A16`] layer stores its int8 weights ([`Layout`]).
//! * [`text`]: messages and numbers written without `core::fmt` formatting.
//! * [`part`]: sub-slices that are a [`ShapeError`] instead of a panic when out of range.
//! * [`phase`]: the phases of a model run and the [`Marks`] that profiling receives.
//!
//! On Cortex-M targets the hot kernels (int8 x int16 and f32 matrix-vector products,
//! the nonlinearities, the softmax, the attention's weighted sum) run in code written
//! for the instruction set (`SMLAD` on the M4/M33, `MLA` on the M3, Thumb-1 on the M0,
//! `VMLA` on FPU parts), selected by `build.rs` from the target name. They give exactly
//! the portable kernels' results: the shared test suite checks it on the host and on
//! each QEMU board ([`W8A16Portable`], [`F32Portable`] are the references).
//!
//! ```
//! use s2s_kernels::{Linear, Precision, F32};
//!
//! // y = W x + b for a 2x3 layer.
//! let w = [1.0, 0.0, 2.0, 0.0, 1.0, 0.0];
//! let b = [0.5, -0.5];
//! let layer = Linear::<F32>::new(2, 3, 1, &w, &[], Some(&b)).unwrap();
//! let mut y = [0.0; 2];
//! layer.apply(&[&[1.0, 2.0, 3.0]], &mut y).unwrap();
//! assert_eq!(y, [7.5, 1.5]);
//! assert_eq!(F32::tanh(0.0), 0.0);
//! ```
#![cfg_attr(not(test), no_std)]
// Unsafe code (inline assembly) lives in `arm/` only, compiled for Cortex-M targets only.
#![cfg_attr(not(s2s_arm), forbid(unsafe_code))]
#![cfg_attr(s2s_arm, deny(unsafe_code))]

#[cfg(s2s_arm)]
#[allow(unsafe_code)]
mod arm;
pub mod cell;
pub mod fixed;
pub mod float;
#[cfg(any(test, s2s_isa = "dsp"))]
mod fulltable;
pub mod layout;
pub mod logprob;
pub mod lut;
mod named;
pub mod part;
mod portable;
pub mod precision;
mod report;
mod tables;

#[cfg(any(test, feature = "suite"))]
extern crate alloc;

#[cfg(test)]
mod extremes;
#[cfg(any(test, feature = "suite"))]
pub mod suite;

pub use fixed::Requant;
pub use layout::Layout;
pub use precision::{
    additive_scores_primitives, dot_i16, dot_i8_i16, F32Portable, Float, FloatWeight, Fmt, Int,
    Job, Kernels, Linear, Native, Portable, Precision, PrecisionKind, ShapeError, W8A16Portable,
    F32, W8A16, W8F32,
};
pub use report::phase::{self, Marks, Phase};
pub use report::text;
