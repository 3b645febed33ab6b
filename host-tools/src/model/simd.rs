//! The x86 vector instructions the host's fast dense layers run on ([`hostf32`] and
//! [`hostw8a16`]): one detection and one choice for both, so that they never disagree
//! on what the CPU has.
//!
//! [`hostf32`]: super::hostf32
//! [`hostw8a16`]: super::hostw8a16

/// The widest vector instructions the host's kernels have a version for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Simd {
    /// AVX-512 with its foundation (`avx512f`, the f32 kernel's) and its byte and word
    /// instructions (`avx512bw`, the integer kernel's): 16 lanes of 32 bits.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX2: 8 lanes of 32 bits.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Neither (or not an x86-64 CPU): the scalar loops.
    Generic,
}

/// What this CPU runs, best first: [`Simd::Avx512`], [`Simd::Avx2`], else
/// [`Simd::Generic`]. Detected at run time (the standard library caches the answer).
pub(crate) fn simd() -> Simd {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
        {
            return Simd::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Simd::Avx2;
        }
    }
    Simd::Generic
}
