use super::*;
use crate::Feature;
use s2s_kernels::PrecisionKind;

/// One value of every variant, with its name.
fn every_variant() -> Vec<(&'static str, Error)> {
    let shape = ShapeError {
        what: "input",
        expected: 2,
        found: 3,
    };
    vec![
        ("BadMagic", Error::BadMagic),
        (
            "UnsupportedVersion",
            Error::UnsupportedVersion {
                found: 9,
                supported: 1,
            },
        ),
        ("Truncated", Error::Truncated { needed: 9, len: 1 }),
        ("FileLength", Error::FileLength(3)),
        (
            "CrcMismatch",
            Error::CrcMismatch {
                stored: 1,
                computed: 2,
            },
        ),
        ("UnknownPrecision", Error::UnknownPrecision(9)),
        ("ReservedNotZero", Error::ReservedNotZero),
        ("BadLayout", Error::BadLayout(9)),
        ("SectionMisplaced", Error::SectionMisplaced("vocabulary")),
        ("SectionOutOfFile", Error::SectionOutOfFile("data")),
        ("SectionLength", Error::SectionLength("description")),
        ("PaddingNotZero", Error::PaddingNotZero),
        ("BadField", Error::BadField("cell")),
        (
            "FieldOverflow",
            Error::FieldOverflow {
                field: "hidden",
                value: 1 << 20,
            },
        ),
        ("Inconsistent", Error::Inconsistent("rule")),
        (
            "TokenOutOfRange",
            Error::TokenOutOfRange {
                what: "end token",
                id: 9,
                vocab: 3,
            },
        ),
        (
            "VocabCount",
            Error::VocabCount {
                found: 1,
                expected: 2,
            },
        ),
        ("VocabIndex", Error::VocabIndex),
        ("VocabNotUtf8", Error::VocabNotUtf8),
        ("VocabOrder", Error::VocabOrder { vocab: "source" }),
        (
            "EmptyToken",
            Error::EmptyToken {
                vocab: "target",
                id: 3,
            },
        ),
        (
            "DuplicateToken",
            Error::DuplicateToken {
                vocab: "source",
                first: 1,
                second: 2,
            },
        ),
        ("TooManyTensors", Error::TooManyTensors(999)),
        ("BiasMask", Error::BiasMask),
        ("UnknownTensor", Error::UnknownTensor(7)),
        ("DuplicateTensor", Error::DuplicateTensor(7)),
        ("MissingTensor", Error::MissingTensor(7)),
        ("UnknownDType", Error::UnknownDType { id: 7, code: 9 }),
        (
            "TensorType",
            Error::TensorType {
                id: 7,
                found: DType::F32,
            },
        ),
        ("TensorLength", Error::TensorLength(7)),
        (
            "TensorShape",
            Error::TensorShape {
                id: 7,
                expected: (1, 2),
                found: (2, 1),
            },
        ),
        ("TensorMisplaced", Error::TensorMisplaced(7)),
        ("TensorOutsideData", Error::TensorOutsideData(7)),
        ("TrailingData", Error::TrailingData),
        ("BadRowQ", Error::BadRowQ(7)),
        ("NonFinite", Error::NonFinite(7)),
        ("Misaligned", Error::Misaligned(7)),
        (
            "PrecisionMismatch",
            Error::PrecisionMismatch {
                model: PrecisionKind::F32,
                runtime: PrecisionKind::W8A16,
            },
        ),
        (
            "UnsupportedPrecision",
            Error::UnsupportedPrecision(PrecisionKind::W8F32),
        ),
        (
            "ArenaTooSmall",
            Error::ArenaTooSmall {
                needed: 2,
                available: 1,
            },
        ),
        ("InputTooLong", Error::InputTooLong { len: 30, max: 25 }),
        ("EmptyInput", Error::EmptyInput),
        (
            "UnknownSymbol",
            Error::UnknownSymbol {
                position: 1,
                ch: 'x',
            },
        ),
        ("NoSuchSlot", Error::NoSuchSlot),
        ("NotInSlot", Error::NotInSlot { slot: 0 }),
        ("NoPrefixToken", Error::NoPrefixToken { slot: 0 }),
        ("PrefixField", Error::PrefixField),
        (
            "SlotTokenInSource",
            Error::SlotTokenInSource { position: 2 },
        ),
        (
            "ChunkOverWindow",
            Error::ChunkOverWindow {
                chunk: 8,
                window: 5,
            },
        ),
        (
            "LocalOverWindow",
            Error::LocalOverWindow {
                positions: 9,
                window: 5,
            },
        ),
        ("BeamTooWide", Error::BeamTooWide { width: 9, max: 4 }),
        ("GreedyOnly", Error::GreedyOnly),
        (
            "NotStreamable",
            Error::NotStreamable("its encoder is bidirectional"),
        ),
        (
            "OutputTooSmall",
            Error::OutputTooSmall {
                needed: 32,
                available: 1,
            },
        ),
        ("Rnn", Error::Rnn(rnn_core::Error::Shape(shape))),
        (
            "Attention",
            Error::Attention(attention_core::Error::Shape(shape)),
        ),
        ("Shape", Error::Shape(shape)),
        ("NotCompiled", Error::NotCompiled(Feature::Lstm)),
    ]
}

#[test]
fn every_code_explains_its_variant_and_codes_are_distinct() {
    let all = every_variant();
    let mut codes = std::collections::BTreeSet::new();
    for (name, e) in &all {
        let code = e.code();
        assert_eq!(Error::explain(code), Some((*name, e.as_str())), "{e:?}");
        assert!(codes.insert(code), "{name}: code {code} given twice");
        assert!((1..100).contains(&code), "{name}: code {code} outside 1-99");
    }
    // Every variant is listed once (by name).
    let names: std::collections::BTreeSet<_> = all.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), all.len());
    // Only the table's codes are explained.
    let explained = (0..=u16::MAX)
        .filter(|&c| Error::explain(c).is_some())
        .count();
    assert_eq!(explained, all.len());
    assert_eq!(Error::explain(0), None);
    assert_eq!(Error::explain(64), Some(("InputTooLong", "input too long")));
}
