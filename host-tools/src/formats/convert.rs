//! Decoding of raw IEEE-754 element bytes (16/32/64-bit, either byte order) into `f32`.
//!
//! Every reader ends up with a byte slice plus an element type; this module is the one
//! place that turns those bytes into numbers, so the half-precision bit twiddling is
//! written (and tested) once.

/// A floating-point element encoding that the readers can convert to `f32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatKind {
    /// IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits).
    F16,
    /// bfloat16: the upper half of an IEEE binary32.
    Bf16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64, rounded to the nearest `f32`.
    F64,
}

impl FloatKind {
    /// Size of one element in bytes.
    pub(crate) fn size(self) -> usize {
        match self {
            FloatKind::F16 | FloatKind::Bf16 => 2,
            FloatKind::F32 => 4,
            FloatKind::F64 => 8,
        }
    }
}

/// Byte order of the stored elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ByteOrder {
    /// Least significant byte first (what every writer we care about produces).
    Little,
    /// Most significant byte first.
    Big,
}

/// Decodes `bytes` as consecutive elements of `kind`; `bytes.len()` must be a multiple of
/// the element size (callers check the length against the shape first). A trailing
/// partial element, which callers never pass, would be ignored.
pub(crate) fn decode(bytes: &[u8], kind: FloatKind, order: ByteOrder) -> Vec<f32> {
    let size = kind.size();
    bytes
        .chunks_exact(size)
        .map(|raw| {
            let mut word = [0u8; 8];
            word[..size].copy_from_slice(raw);
            if order == ByteOrder::Big {
                word[..size].reverse();
            }
            match kind {
                FloatKind::F16 => f16_to_f32(u16::from_le_bytes([word[0], word[1]])),
                FloatKind::Bf16 => bf16_to_f32(u16::from_le_bytes([word[0], word[1]])),
                FloatKind::F32 => f32::from_le_bytes([word[0], word[1], word[2], word[3]]),
                FloatKind::F64 => f64::from_le_bytes(word) as f32,
            }
        })
        .collect()
}

/// Converts IEEE binary16 bits to `f32` exactly (every half value is representable).
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match (exponent, mantissa) {
        (0, 0) => 0,
        // Subnormal half: value = mantissa * 2^-24, exact in f32.
        (0, m) => (m as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        // Infinity or NaN (the NaN payload is kept in the top mantissa bits).
        (0x1f, m) => 0x7f80_0000 | (m << 13),
        (e, m) => ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// Converts bfloat16 bits to `f32` exactly.
pub(crate) fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_special_values() {
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert!(f16_to_f32(0x8000).is_sign_negative());
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3800), 0.5);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x0400), 2f32.powi(-14));
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert_eq!(f16_to_f32(0xfc00), f32::NEG_INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
    }

    #[test]
    fn bfloat16_is_the_top_half() {
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(bf16_to_f32(0xc0a0), -5.0);
    }

    #[test]
    fn decode_all_kinds_and_orders() {
        let le = [0x00, 0x00, 0xc0, 0x3f];
        assert_eq!(decode(&le, FloatKind::F32, ByteOrder::Little), vec![1.5]);
        let be = [0x3f, 0xc0, 0x00, 0x00];
        assert_eq!(decode(&be, FloatKind::F32, ByteOrder::Big), vec![1.5]);
        let f64s: Vec<u8> = [0.25f64, -3.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(
            decode(&f64s, FloatKind::F64, ByteOrder::Little),
            vec![0.25, -3.0]
        );
        assert_eq!(
            decode(&[0x00, 0x3c], FloatKind::F16, ByteOrder::Little),
            vec![1.0]
        );
        assert_eq!(
            decode(&[0x3f, 0x80], FloatKind::Bf16, ByteOrder::Big),
            vec![1.0]
        );
    }
}
