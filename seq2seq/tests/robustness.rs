//! Property tests: random valid models of every variant and precision, written by the
//! builder, decode; and the same files with random fields and bytes changed (the CRC
//! recomputed, so the parser's structural checks are what stands in the way) go
//! through parse -> bind -> decode without a panic: they succeed or return an error.

mod common;

use common::{fix_crc, header, parse_bind_decode, random_model, Rng};
use proptest::prelude::*;
use s2s_kernels::PrecisionKind;
use seq2seq::format::HEADER_LEN;
use seq2seq::Error;

const LINES: [&str; 6] = ["abc", "a b", "", "eeddcc", "zz", "b"];

fn kind(i: usize) -> PrecisionKind {
    PrecisionKind::ALL[i % 3]
}

/// Values that tend to sit on a boundary of some check.
const INTERESTING: [u32; 12] = [
    0,
    1,
    2,
    3,
    7,
    0xff,
    0x100,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Every random valid model parses, binds and decodes; only the line may be refused.
    #[test]
    fn random_valid_models_decode(seed: u64, p in 0usize..3, line in 0usize..LINES.len()) {
        let mut r = Rng::new(seed);
        let bytes = random_model(kind(p), &mut r);
        match parse_bind_decode(&bytes, LINES[line]) {
            Ok(_)
            | Err(Error::UnknownSymbol { .. })
            | Err(Error::InputTooLong { .. })
            | Err(Error::EmptyInput) => {}
            Err(e) => prop_assert!(false, "a valid model failed: {e}"),
        }
    }

    /// Changed fields and bytes, CRC recomputed: never a panic.
    #[test]
    fn changed_models_never_panic(
        seed: u64,
        p in 0usize..3,
        line in 0usize..LINES.len(),
        changes in proptest::collection::vec((any::<u32>(), any::<u32>(), 0u8..5), 1..5),
    ) {
        let mut r = Rng::new(seed);
        let mut bytes = random_model(kind(p), &mut r);
        let h = header(&bytes);
        let data = h.data[0] as usize..(h.data[0] + h.data[1]) as usize;
        for (at, v, how) in changes {
            let len = bytes.len();
            let word = |at: u32, span: usize| (at as usize % (span / 4)) * 4;
            match how {
                // Any byte.
                0 => bytes[at as usize % len] = v as u8,
                // A header, description, vocabulary or table word: a boundary value.
                1 => {
                    let w = word(at, data.start);
                    bytes[w..w + 4].copy_from_slice(&INTERESTING[v as usize % 12].to_le_bytes());
                }
                // A header word: any value.
                2 => {
                    let w = word(at, HEADER_LEN);
                    bytes[w..w + 4].copy_from_slice(&v.to_le_bytes());
                }
                // A weight, bias or quantization byte: the parser admits most of these,
                // so the decoder runs on them.
                3 if !data.is_empty() => bytes[data.start + at as usize % data.len()] = v as u8,
                // A word of tensor data.
                _ if data.len() >= 4 => {
                    let w = data.start + word(at, data.len());
                    bytes[w..w + 4].copy_from_slice(&v.to_le_bytes());
                }
                _ => {}
            }
        }
        fix_crc(&mut bytes);
        let _ = parse_bind_decode(&bytes, LINES[line]);
    }
}
