//! Numeric kernels for sequence-to-sequence inference on microcontrollers.
//!
//! No notion of models lives here: only number formats and the operations on them.
//!
//! * [`float`]: f32 elementary functions (`libm`, or `micromath` with `fast-math`),
//!   dot products, softmax, log-softmax, argmax, entropy.
//! * [`fixed`]: saturation, rounding shifts, the [`Requant`] multiplier.
//! * [`lut`]: int16 tanh/sigmoid by table with interpolation, fixed-point softmax.
//! * [`cell`]: the hard sigmoids of Keras 2 and Keras 3 and the LSTM cell-state update,
//!   f32 and fixed point.
//! * [`precision`]: the [`Precision`] trait that the model crates are generic over, with
//!   its three implementations [`F32`], [`W8F32`] and [`W8A16`], and the dense layer
//!   [`Linear`].
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
#![forbid(unsafe_code)]

pub mod cell;
pub mod fixed;
pub mod float;
pub mod lut;
pub mod precision;
mod tables;

#[cfg(test)]
mod extremes;
#[cfg(test)]
mod suite;

pub use fixed::Requant;
pub use precision::{
    dot_i16, dot_i8_i16, Float, FloatWeight, Fmt, Job, Linear, Precision, PrecisionKind,
    ShapeError, F32, W8A16, W8F32,
};
