//! The precision of int8 weights with f32 math: [`W8F32`].

use super::floats::{Float, FloatWeight};
use super::types::PrecisionKind;
use crate::float;

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

/// int8 weights with an f32 scale per row, dequantized on the fly; f32 math.
pub type W8F32 = Float<i8>;
