//! Which file of `arm/` gives each kernel on this target, as `build.rs` chose the
//! instruction set: the `isa` module of the integer matrix product, and the f32 dot
//! product and the nonlinearities (an instruction set's own, or the portable ones).

#[cfg(s2s_isa = "dsp")]
pub(super) use super::dsp as isa;
#[cfg(s2s_isa = "v6m")]
pub(super) use super::v6m as isa;
#[cfg(s2s_isa = "v7m")]
pub(super) use super::v7m as isa;

#[cfg(s2s_fpu)]
pub(crate) use super::fpu::dot_f32;
#[cfg(not(s2s_fpu))]
pub(crate) use crate::float::dot_acc as dot_f32;

#[cfg(s2s_isa = "dsp")]
pub(crate) use super::dsp::softmax_q15;
#[cfg(s2s_isa = "v6m")]
pub(crate) use super::v6m::softmax_q15;
#[cfg(s2s_isa = "v7m")]
pub(crate) use crate::lut::softmax_q15;
#[cfg(not(s2s_isa = "dsp"))]
pub(crate) use crate::lut::{sigmoid_q15, tanh_q15};

#[cfg(s2s_isa = "dsp")]
pub(crate) use super::dsp::{sigmoid_q15, tanh_q15};
