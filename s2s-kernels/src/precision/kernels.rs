//! Which implementation of the kernels a precision runs: the [`Kernels`] marker trait,
//! [`Native`] (the target's instruction-set kernels) and [`Portable`] (plain Rust).

use core::fmt::Debug;

/// Which implementation of the kernels a precision runs: [`Native`] or [`Portable`].
///
/// Both give the same bits (the shared suite proves it on the host and on each QEMU
/// board); [`Portable`] exists so that the native kernels can be checked against it on
/// the device itself.
pub trait Kernels: Copy + Default + Debug + 'static {
    /// True for the target's own kernels.
    const NATIVE: bool;
}

/// The kernels of the target's instruction set where this crate has some (Cortex-M0 to
/// M33, chosen by `build.rs` from the target name), the portable ones elsewhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct Native;

/// The portable Rust kernels on every target: the reference of [`Native`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Portable;

impl Kernels for Native {
    const NATIVE: bool = true;
}
impl Kernels for Portable {
    const NATIVE: bool = false;
}
