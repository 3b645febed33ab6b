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
//!
//! This file only names the parts and re-exports them: the small shared types
//! (`types.rs`) and the kernel markers (`kernels.rs`) at the bottom, the trait and the
//! dense layer (`base.rs`) on them, then one file per precision (`floats.rs` with
//! `f32.rs` and `w8f32.rs`, `w8a16.rs`) over the kernels they pick (`dispatch.rs`).

pub(crate) mod base;
pub(crate) mod dispatch;
mod f32;
mod floats;
pub(crate) mod kernels;
pub(crate) mod types;
mod w8a16;
mod w8f32;

pub use self::f32::{F32Portable, F32};
pub use base::{additive_scores_primitives, Job, Linear, Precision};
pub use floats::{Float, FloatWeight};
pub use kernels::{Kernels, Native, Portable};
pub use types::{Fmt, PrecisionKind, ShapeError, I32_EXACT_RUN};
pub use w8a16::{dot_i16, Int, W8A16Portable, W8A16};
pub use w8f32::W8F32;

pub use crate::portable::dot_i8_i16;
