//! The f32 precision: [`F32`] (f32 weights) and its portable twin [`F32Portable`].

use super::dispatch as native;
use super::floats::{Float, FloatWeight};
use super::kernels::Portable;
use super::types::PrecisionKind;
use crate::float;

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

/// f32 weights and activations.
pub type F32 = Float<f32>;
/// [`F32`] on the portable kernels (the reference of the FPU kernels).
pub type F32Portable = Float<f32, Portable>;
