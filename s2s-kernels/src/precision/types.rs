//! The small types every precision and kernel shares, at the bottom of the crate: the
//! [`PrecisionKind`] a model file names, the activation format [`Fmt`], the
//! [`ShapeError`] of a length that does not match, and [`I32_EXACT_RUN`].

crate::named_enum! {
    /// The number formats a model file can carry; the id is the file's.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum PrecisionKind {
        /// f32 weights and activations.
        F32 = 0 => "f32",
        /// int8 weights (f32 scale per row), f32 activations.
        W8F32 = 1 => "w8f32",
        /// int8 weights, int16 activations, int32 accumulators; no float at run time.
        W8A16 = 2 => "w8a16",
    }
}

/// Format of an activation tensor: the number of fractional bits of its `i16` values
/// in [`W8A16`](crate::W8A16) (scale `2^-frac`); ignored by the float precisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fmt {
    /// Fractional bits, `0..=15` in practice (validated by the model parser).
    pub frac: i8,
}

impl Fmt {
    /// `Q0.15`: gate outputs, hidden states, attention weights.
    pub const Q15: Fmt = Fmt { frac: 15 };
}

/// A length that did not match what a kernel expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ShapeError {
    /// What was measured (`"weights"`, `"input"`, ...).
    pub what: &'static str,
    /// The length required.
    pub expected: usize,
    /// The length given.
    pub found: usize,
}

impl crate::text::Describe for ShapeError {
    fn describe(&self, out: &mut dyn crate::text::Sink) -> core::fmt::Result {
        crate::say!(out; self.what, " has length ", self.found, ", expected ", self.expected)
    }
}

impl core::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::text::Describe::describe(self, f)
    }
}

impl core::error::Error for ShapeError {}

pub(crate) fn check(what: &'static str, expected: usize, found: usize) -> Result<(), ShapeError> {
    if expected == found {
        Ok(())
    } else {
        Err(ShapeError {
            what,
            expected,
            found,
        })
    }
}

/// Longest run of int8 x int16 products that an `i32` accumulator holds exactly for
/// every `i8` weight, `-128` included: `511 * 128 * 32768 < 2^31` (512 would reach it).
pub const I32_EXACT_RUN: usize = 511;
