//! What the crate gives the outside besides numbers, and that is no kernel: messages
//! and numbers written without `core::fmt` ([`text`]), and the phases of a model run
//! that profiling receives ([`phase`]). Both are re-exported at the crate root
//! (`s2s_kernels::text`, `s2s_kernels::phase`), where their users name them.

pub mod phase;
pub mod text;
