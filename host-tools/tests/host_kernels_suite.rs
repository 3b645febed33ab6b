//! The shared kernel suite of `s2s-kernels` (the one every device kernel passes on its
//! QEMU board) run against the host's fast precisions: [`HostF32`] (AVX-512 / AVX2 f32
//! layers) must give bit for bit what [`F32Portable`] gives, and [`HostW8A16`] (packed
//! `pmaddwd` layers) what [`W8A16Portable`] gives, within the suite's tolerances of the
//! f64 reference. An AVX kernel that drifts fails here, on whichever instruction set
//! this CPU runs (`host_tools::model::simd`).

use host_tools::model::hostf32::HostF32;
use host_tools::model::hostw8a16::HostW8A16;
use s2s_kernels::suite::{layouts, FloatFixture, IntFixture, Scale, F32_TOL, W8A16_TOL};
use s2s_kernels::{F32Portable, W8A16Portable};

s2s_kernels::precision_suite!(
    host_f32_bit_exact,
    HostF32,
    FloatFixture,
    F32_TOL,
    bit_exact_with = F32Portable
);

s2s_kernels::precision_suite!(
    host_w8a16_bit_exact,
    HostW8A16,
    IntFixture,
    W8A16_TOL,
    bit_exact_with = W8A16Portable
);

/// Every weight layout through the host's integer layers gives the portable kernels'
/// bits in the row layout.
#[test]
fn host_w8a16_layouts() {
    layouts::<HostW8A16, W8A16Portable>(&W8A16_TOL, true, &Scale::FULL);
}
