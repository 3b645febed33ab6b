//! Host side of the project: the `s2s` command-line tool's library.
//!
//! * [`data`]: string pairs, and seeded generators of synthetic tasks;
//! * [`formats`]: reading trained weights (safetensors, npz/npy, Keras 3 `.keras`, HDF5
//!   `.h5`, ONNX), from the `s2s-weights` crate, and the table `s2s tensors` prints;
//! * [`import`]: model configurations and the f32 model file they make;
//! * `train` (feature `train`, not a default): training a model from string pairs;
//! * [`model`]: loading model files and running them through the no_std core;
//! * [`quantize`]: int8 weights, calibrated activation formats;
//! * [`eval`] and [`plot`]: reports and pictures;
//! * [`device`]: building the firmware and running it under QEMU;
//! * [`commands`]: reports that read several of those (`s2s inspect`).
#![deny(unsafe_code)]

pub use error::{Error, Place, Result};

pub mod commands;
pub mod data;
pub mod device;
pub mod error;
pub mod eval;
pub mod formats;
pub mod import;
pub mod io;
pub mod model;
pub mod plot;
pub mod quantize;
#[cfg(feature = "train")]
pub mod train;
