//! The kernels [`Native`](crate::Native) runs: the instruction-set kernels of `arm/` on
//! Cortex-M targets, the portable ones elsewhere. Same names, same signatures, same
//! results.

#[cfg(s2s_arm)]
pub(crate) use crate::arm::{
    additive_scores, dot_f32, linear, sigmoid_q15, softmax_q15, tanh_q15, weighted_sum,
};

#[cfg(not(s2s_arm))]
pub(crate) use super::base::additive_scores_primitives as additive_scores;
#[cfg(not(s2s_arm))]
pub(crate) use crate::float::dot_acc as dot_f32;
#[cfg(not(s2s_arm))]
pub(crate) use crate::lut::{sigmoid_q15, softmax_q15, tanh_q15};
#[cfg(not(s2s_arm))]
pub(crate) use crate::portable::{linear, weighted_sum};
