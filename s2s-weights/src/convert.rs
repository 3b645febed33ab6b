//! Decoding of raw IEEE-754 element bytes (16/32/64-bit, bfloat16, either byte order)
//! into `f32`, with the `half` crate for the 16-bit formats.

use half::{bf16, f16};

/// A floating-point element encoding that the readers can convert to `f32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatKind {
    /// IEEE binary16.
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
            let half = u16::from_le_bytes([word[0], word[1]]);
            match kind {
                FloatKind::F16 => f16::from_bits(half).to_f32(),
                FloatKind::Bf16 => bf16::from_bits(half).to_f32(),
                FloatKind::F32 => f32::from_le_bytes([word[0], word[1], word[2], word[3]]),
                FloatKind::F64 => f64::from_le_bytes(word) as f32,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16_to_f32(bits: u16) -> f32 {
        decode(&bits.to_le_bytes(), FloatKind::F16, ByteOrder::Little)[0]
    }

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
        let bf = |bits: u16| decode(&bits.to_le_bytes(), FloatKind::Bf16, ByteOrder::Little)[0];
        assert_eq!(bf(0x3f80), 1.0);
        assert_eq!(bf(0xc0a0), -5.0);
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
