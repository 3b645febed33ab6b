//! Hostile model files: each damage of issue 10's list, with the CRC recomputed so that
//! only the parser's structural checks stand in the way, gives its own error (and
//! never a panic); the writer refuses the same things.

mod common;

use common::{
    find_entry, fix_crc, header, parse_bind_decode, random_model, set_header, small_desc,
    table_entry, Rng, SRC, TGT,
};
use s2s_kernels::PrecisionKind;
use seq2seq::builder::{aligned, ModelBuilder};
use seq2seq::desc::{CellKind, Init, ModelDesc, RawDesc};
use seq2seq::format::{DType, RawTensor, Role, Slot, TensorId, VERSION};
use seq2seq::{Error, ModelFile};

/// A small model without attention, starting from the encoder's last state.
fn plain_desc() -> ModelDesc {
    let mut d = small_desc();
    d.init = Init::Last;
    d
}

/// The plain model in f32, a bias on every layer but the embeddings, unless `bias`
/// says no for a layer.
fn builder(bias: impl Fn(Role) -> bool) -> ModelBuilder {
    let d = plain_desc();
    let mut b = ModelBuilder::new(PrecisionKind::F32, d);
    b.src_vocab = SRC.iter().map(|s| s.to_string()).collect();
    b.tgt_vocab = TGT.iter().map(|s| s.to_string()).collect();
    b.separator = " ".into();
    let mut r = Rng::new(7);
    for s in d.layer_specs() {
        let w: Vec<f32> = (0..s.rows * s.cols).map(|_| r.f32()).collect();
        let v: Vec<f32> = (0..s.rows).map(|_| r.f32()).collect();
        let b_ = (!s.is_embedding() && bias(s.role)).then_some(&v[..]);
        b.linear_f32((s.role, s.layer, s.dir), s.rows, s.cols, &w, b_);
    }
    b
}

fn plain() -> Vec<u8> {
    builder(|_| true).to_bytes().expect("a valid model")
}

fn parse(bytes: &[u8]) -> Result<(), Error> {
    let words = aligned(bytes);
    ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()]).map(drop)
}

/// `bytes` changed by `f`, CRC recomputed, parsed: the error.
#[track_caller]
fn damaged(bytes: &[u8], f: impl FnOnce(&mut Vec<u8>)) -> Error {
    let mut b = bytes.to_vec();
    f(&mut b);
    fix_crc(&mut b);
    // The whole device path returns the same error, and never panics.
    let full = parse_bind_decode(&b, "abc");
    let e = parse(&b).expect_err("the damaged file parses");
    assert_eq!(full.unwrap_err(), e);
    e
}

/// Changes the stored description.
fn with_desc(bytes: &mut [u8], f: impl FnOnce(&mut RawDesc)) {
    let at = header(bytes).desc[0] as usize;
    let n = core::mem::size_of::<RawDesc>();
    let mut d: RawDesc = bytemuck::pod_read_unaligned(&bytes[at..at + n]);
    f(&mut d);
    bytes[at..at + n].copy_from_slice(bytemuck::bytes_of(&d));
}

/// Changes table entry `i`.
fn with_entry(bytes: &mut [u8], i: usize, f: impl FnOnce(&mut RawTensor)) {
    let (at, mut e) = table_entry(bytes, i);
    f(&mut e);
    bytes[at..at + core::mem::size_of::<RawTensor>()].copy_from_slice(bytemuck::bytes_of(&e));
}

fn id(role: Role, slot: Slot) -> TensorId {
    TensorId::new(role, 0, 0, slot)
}

#[test]
fn the_plain_model_is_valid() {
    let bytes = plain();
    parse(&bytes).unwrap();
    assert!(parse_bind_decode(&bytes, "abc").is_ok());
}

// ---------------------------------------------- 1. panics on a CRC-valid file

#[test]
fn tensor_counts_that_wrapped_are_refused() {
    let bytes = plain();
    // These wrapped `count * 24` to a table of 8 or 0 bytes and panicked in `entry()`.
    for count in [178_956_971u32, 536_870_912, 2_147_483_648, u32::MAX, 145] {
        let e = damaged(&bytes, |b| {
            let mut h = header(b);
            h.table[1] = count;
            set_header(b, &h);
        });
        assert_eq!(e, Error::TooManyTensors(count));
    }
    // One entry more than there are: the table would run into the data.
    let e = damaged(&bytes, |b| {
        let mut h = header(b);
        h.table[1] += 1;
        set_header(b, &h);
    });
    assert_eq!(e, Error::SectionMisplaced("tensor data"));
}

#[test]
fn offsets_and_lengths_that_would_wrap_are_refused() {
    let bytes = plain();
    let (_, first) = table_entry(&bytes, 0);
    // offset + len wrapped on a 32-bit target.
    let e = damaged(&bytes, |b| with_entry(b, 0, |t| t.offset = 0xffff_fff8));
    assert_eq!(e, Error::TensorMisplaced(first.id));
    let e = damaged(&bytes, |b| with_entry(b, 0, |t| t.len = u32::MAX));
    assert_eq!(e, Error::TensorLength(first.id));
    // rows x cols x 4 overflows 32 bits yet wraps to the stored length.
    let e = damaged(&bytes, |b| {
        with_entry(b, 0, |t| {
            t.rows = 0x4000_0000;
            t.cols = 4;
            t.len = 0;
        })
    });
    assert_eq!(e, Error::TensorLength(first.id));
    // Sections whose offset + length wraps.
    for (section, name) in [(0, "description"), (1, "vocabularies"), (3, "tensor data")] {
        let e = damaged(&bytes, |b| {
            let mut h = header(b);
            match section {
                0 => h.desc[1] = u32::MAX,
                1 => h.vocab[1] = u32::MAX,
                _ => h.data[1] = u32::MAX,
            }
            set_header(b, &h);
        });
        assert_eq!(e, Error::SectionOutOfFile(name));
    }
    // A stated length shorter than a header, and one longer than the bytes.
    let e = damaged(&bytes, |b| {
        let mut h = header(b);
        h.file_len = 3;
        set_header(b, &h);
    });
    assert_eq!(e, Error::FileLength(3));
    let e = damaged(&bytes, |b| {
        let mut h = header(b);
        h.file_len = u32::MAX;
        set_header(b, &h);
    });
    assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
}

// ------------------------------------- 2. structurally inconsistent files

#[test]
fn a_dropped_bias_is_missing() {
    // The file says the output layer has a bias; its table has none.
    let without = builder(|r| r != Role::Out).to_bytes().unwrap();
    let out_index = plain_desc()
        .layer_spec(Role::Out, 0, 0)
        .expect("an output layer")
        .index;
    let e = damaged(&without, |b| {
        let mut h = header(b);
        h.biases[0] |= 1 << out_index;
        set_header(b, &h);
    });
    assert_eq!(e, Error::MissingTensor(id(Role::Out, Slot::Bias).to_u32()));
    assert_eq!(e.to_string(), "tensor output.bias is missing");
    // The table entry dropped (the last one): the data no longer starts where the
    // shorter table ends.
    let bytes = plain();
    let n = header(&bytes).table[1];
    assert_eq!(
        find_entry(&bytes, id(Role::Out, Slot::Bias)),
        Some(n as usize - 1)
    );
    let e = damaged(&bytes, |b| {
        let mut h = header(b);
        h.table[1] -= 1;
        set_header(b, &h);
    });
    assert_eq!(e, Error::SectionMisplaced("tensor data"));
}

#[test]
fn a_renamed_tensor_is_unknown_or_a_duplicate() {
    let bytes = plain();
    let i = find_entry(&bytes, id(Role::Out, Slot::Bias)).unwrap();
    // An id of a layer this model does not have.
    let att = id(Role::Attentional, Slot::Bias).to_u32();
    let e = damaged(&bytes, |b| with_entry(b, i, |t| t.id = att));
    assert_eq!(e, Error::UnknownTensor(att));
    // Not an id at all: a layer beyond the stack, a direction 2, a slot 3, role 0.
    for bad in [0x0000_0a0e, 0x0002_000e, 0x0300_000e, 0x0200_0000] {
        let e = damaged(&bytes, |b| with_entry(b, i, |t| t.id = bad));
        assert_eq!(e, Error::UnknownTensor(bad));
    }
    // Quantization data in a float model.
    let q = id(Role::Out, Slot::RowQ).to_u32();
    let e = damaged(&bytes, |b| with_entry(b, i, |t| t.id = q));
    assert_eq!(e, Error::UnknownTensor(q));
    // The id of another entry.
    let w = id(Role::Out, Slot::Weight).to_u32();
    let e = damaged(&bytes, |b| with_entry(b, i, |t| t.id = w));
    assert_eq!(e, Error::DuplicateTensor(w));
    // A bias on an embedding: the mask cannot list it.
    let e = damaged(&bytes, |b| {
        let mut h = header(b);
        h.biases[0] |= 1; // layer 0 is the source embedding
        set_header(b, &h);
    });
    assert_eq!(e, Error::BiasMask);
    let e = damaged(&bytes, |b| {
        let mut h = header(b);
        h.biases[1] = 1 << 20; // layer 52: no model has that many
        set_header(b, &h);
    });
    assert_eq!(e, Error::BiasMask);
}

#[test]
fn overlapping_or_misplaced_tensors_are_refused() {
    let bytes = plain();
    let (_, first) = table_entry(&bytes, 0);
    let (_, second) = table_entry(&bytes, 1);
    // The second tensor over the first.
    let e = damaged(&bytes, |b| with_entry(b, 1, |t| t.offset = first.offset));
    assert_eq!(e, Error::TensorMisplaced(second.id));
    // A gap between them.
    let e = damaged(&bytes, |b| with_entry(b, 1, |t| t.offset += 8));
    assert_eq!(e, Error::TensorMisplaced(second.id));
    // Wrong element type, shape, unknown type code.
    let e = damaged(&bytes, |b| {
        with_entry(b, 0, |t| t.dtype = DType::I32 as u32)
    });
    assert_eq!(
        e,
        Error::TensorType {
            id: first.id,
            found: DType::I32
        }
    );
    let e = damaged(&bytes, |b| with_entry(b, 0, |t| t.dtype = 0x100));
    assert_eq!(
        e,
        Error::UnknownDType {
            id: first.id,
            code: 0x100
        }
    );
    let e = damaged(&bytes, |b| {
        with_entry(b, 0, |t| {
            (t.rows, t.cols) = (t.cols, t.rows);
        })
    });
    assert!(matches!(e, Error::TensorShape { .. }), "{e:?}");
}

#[test]
fn reserved_fields_and_padding_must_be_zero() {
    let bytes = plain();
    for word in 0..3 {
        let e = damaged(&bytes, |b| {
            let mut h = header(b);
            h.reserved[word] = 0x100;
            set_header(b, &h);
        });
        assert_eq!(e, Error::ReservedNotZero);
    }
    // The padding after a section (a separator of two bytes makes the vocabulary
    // section's length odd), and after a tensor.
    let mut odd = builder(|_| true);
    odd.separator = "--".into();
    let odd = odd.to_bytes().unwrap();
    let h = header(&odd);
    let sections = [h.desc, h.vocab, [h.table[0], 24 * h.table[1]], h.data];
    let end = sections
        .windows(2)
        .map(|w| ((w[0][0] + w[0][1]) as usize, w[1][0] as usize))
        .find(|(end, next)| end < next)
        .expect("padding between two sections")
        .0;
    let e = damaged(&odd, |b| b[end] = 1);
    assert_eq!(e, Error::PaddingNotZero);
    let h = header(&bytes);
    let gap = (1..h.table[1] as usize)
        .map(|i| (table_entry(&bytes, i - 1).1, table_entry(&bytes, i).1))
        .find(|(a, b)| a.offset + a.len < b.offset)
        .map(|(a, _)| (a.offset + a.len) as usize)
        .expect("a tensor whose length is not a multiple of 8");
    let e = damaged(&bytes, |b| b[gap] = 0x80);
    assert_eq!(e, Error::PaddingNotZero);
    // A bad precision code, and a version this build does not read.
    let e = damaged(&bytes, |b| b[6] = 3);
    assert_eq!(e, Error::UnknownPrecision(3));
    // Version 6 (no prefix slots, no minimum length), 5 (no weight layout), 2 (the
    // description without the recurrent-cell fields) and 1, and a newer one.
    for old in [1u16, 2, 5, 6, 7, 8, 9, VERSION + 1] {
        let e = damaged(&bytes, |b| b[4..6].copy_from_slice(&old.to_le_bytes()));
        assert_eq!(
            e,
            Error::UnsupportedVersion {
                found: old,
                supported: VERSION
            }
        );
        assert_eq!(
            e.to_string(),
            format!("model file format version {old}, this build reads version {VERSION}")
        );
    }
}

#[test]
fn the_weight_layout_is_known_and_of_the_precision() {
    // The plain model is f32: only the row layout (0).
    let bytes = plain();
    for code in [1u8, 2, 0x80, 0xff] {
        let e = damaged(&bytes, |b| b[7] = code);
        assert_eq!(e, Error::BadLayout(code));
        assert_eq!(
            e.to_string(),
            format!("weight layout code {code} is unknown or not for this precision")
        );
    }
    // A w8a16 model: row and v6m, nothing else.
    let mut r = Rng::new(3);
    let w8 = random_model(PrecisionKind::W8A16, &mut r);
    for code in [0u8, 1] {
        let mut b = w8.clone();
        b[7] = code;
        fix_crc(&mut b);
        parse(&b).expect("a w8a16 layout");
    }
    let e = damaged(&w8, |b| b[7] = 2);
    assert_eq!(e, Error::BadLayout(2));
}

#[test]
fn every_code_is_checked_whole() {
    let bytes = plain();
    type Set = fn(&mut RawDesc, u32);
    let fields: [(&str, Set); 16] = [
        ("enc_cell", |d, v| d.enc_cell = v),
        ("dec_cell", |d, v| d.dec_cell = v),
        ("enc_recurrent", |d, v| d.enc_recurrent = v),
        ("dec_recurrent", |d, v| d.dec_recurrent = v),
        ("enc_mask", |d, v| d.enc_mask = v),
        ("init_cell", |d, v| d.init_cell = v),
        ("enc_reset", |d, v| d.enc_reset = v),
        ("dec_reset", |d, v| d.dec_reset = v),
        ("ordering", |d, v| d.ordering = v),
        ("score", |d, v| d.score = v),
        ("init", |d, v| d.init = v),
        ("split", |d, v| d.split = v),
        ("enc_bidir", |d, v| d.enc_bidir = v),
        ("lowercase", |d, v| d.lowercase = v),
        ("mask_padding", |d, v| d.mask_padding = v),
        ("attn_key_proj", |d, v| d.attn_key_proj = v),
    ];
    for (name, set) in fields {
        // 65536 has a zero low byte: only the low byte was checked before.
        for v in [65_536, 256, 0x8000_0000] {
            let e = damaged(&bytes, |b| with_desc(b, |d| set(d, v)));
            assert_eq!(e, Error::BadField(name), "{name} = {v}");
        }
    }
}

/// The format-5 fields (issue 12): codes and flags compared whole, spare bytes zero,
/// prefix tokens in the vocabulary and without gaps, and the settings that need what
/// the model does not have.
#[test]
fn extras_fields_are_checked() {
    let bytes = plain();
    for (name, set, first_bad) in [
        (
            "bridge_shared",
            (|d, v| d.bridge_shared = v) as fn(&mut RawDesc, u32),
            2,
        ),
        ("input_feed", |d, v| d.input_feed = v, 2),
        ("att_act", |d, v| d.att_act = v, 3),
        ("logits", |d, v| d.logits = v, 2),
        ("init", |d, v| d.init = v, 4),
    ] {
        for v in [first_bad, 256, 65_536, 0x8000_0000] {
            let e = damaged(&bytes, |b| with_desc(b, |d| set(d, v)));
            assert_eq!(e, Error::BadField(name), "{name} = {v}");
        }
    }
    let e = damaged(&bytes, |b| with_desc(b, |d| d.extra_fmts[2] = 1));
    assert_eq!(e, Error::BadField("extra_fmts"));
    // The plain model's attentional layer is absent: no activation, no format.
    let e = damaged(&bytes, |b| with_desc(b, |d| d.att_act = 1));
    assert_eq!(
        e,
        Error::Inconsistent("att_act, fmt_attentional: set without an attentional layer")
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.extra_fmts[0] = 3));
    assert_eq!(
        e,
        Error::Inconsistent("att_act, fmt_attentional: set without an attentional layer")
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.input_feed = 1));
    assert_eq!(
        e,
        Error::Inconsistent("input_feed: needs the Luong ordering and an attentional layer")
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.bridge_shared = 1));
    assert_eq!(
        e,
        Error::Inconsistent("bridge_shared: without a bridge (init dense or mean)")
    );
    // Prefix tokens: in the vocabulary, no gap; the others are NO_TOKEN.
    let e = damaged(&bytes, |b| {
        with_desc(b, |d| d.src_prefix[0] = SRC.len() as u32)
    });
    assert!(
        matches!(
            e,
            Error::TokenOutOfRange {
                what: "src_prefix",
                ..
            }
        ),
        "{e:?}"
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.src_prefix[0] = 70_000));
    assert!(
        matches!(
            e,
            Error::TokenOutOfRange {
                what: "src_prefix",
                ..
            }
        ),
        "{e:?}"
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.src_prefix[1] = 1));
    assert_eq!(e, Error::BadField("src_prefix"));
    // The plain model starts from the last encoder state: the mean bridge's layers
    // are missing, and the mean is no cell-state bridge.
    let e = damaged(&bytes, |b| with_desc(b, |d| d.init = 3));
    assert!(
        matches!(
            e,
            Error::BiasMask | Error::MissingTensor(_) | Error::TensorShape { .. }
        ),
        "{e:?}"
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.init_cell = 3));
    assert_eq!(
        e,
        Error::Inconsistent("init_cell mean: the mean bridge is for the state only")
    );
}

/// The LSTM fields: codes out of range, fields a variant does not use left non-zero,
/// settings that need what the model does not have.
#[test]
fn lstm_fields_are_checked() {
    let bytes = plain();
    // Codes just past the last valid one.
    for (name, set) in [
        ("enc_cell", (|d, v| d.enc_cell = v) as fn(&mut RawDesc, u32)),
        ("enc_recurrent", |d, v| d.enc_recurrent = v),
        ("dec_recurrent", |d, v| d.dec_recurrent = v),
        ("enc_mask", |d, v| d.enc_mask = v),
        ("init_cell", |d, v| d.init_cell = v),
    ] {
        let v = match name {
            "enc_cell" => 2,
            // 3 is the mean bridge (refused for the cell state, below).
            "init_cell" => 4,
            _ => 3,
        };
        let e = damaged(&bytes, |b| with_desc(b, |d| set(d, v)));
        assert_eq!(e, Error::BadField(name), "{name} = {v}");
    }
    // A GRU stack has no cell-state format; the two spare format bytes stay zero.
    let e = damaged(&bytes, |b| with_desc(b, |d| d.cell_fmts[0] = 12));
    assert_eq!(e, Error::BadField("fmt_enc_cell"));
    let e = damaged(&bytes, |b| with_desc(b, |d| d.cell_fmts[1] = 12));
    assert_eq!(e, Error::BadField("fmt_dec_cell"));
    let e = damaged(&bytes, |b| with_desc(b, |d| d.cell_fmts[3] = 1));
    assert_eq!(e, Error::BadField("cell_fmts"));
    // A mask without padding; a cell state for a GRU decoder; attentional parts
    // without an attentional layer.
    let e = damaged(&bytes, |b| with_desc(b, |d| d.enc_mask = 1));
    assert_eq!(
        e,
        Error::Inconsistent("enc_mask: a mask without source padding (src_pad_to)")
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.init_cell = 2));
    assert_eq!(
        e,
        Error::Inconsistent("init_cell: a cell state for a GRU decoder")
    );
    let e = damaged(&bytes, |b| with_desc(b, |d| d.att_parts = [1, 2, 0, 0]));
    assert_eq!(
        e,
        Error::Inconsistent("att_parts: set without an attentional layer")
    );
    // The GRU file's matrices read as an LSTM's: 3H rows where 4H are needed.
    let e = damaged(&bytes, |b| with_desc(b, |d| d.enc_cell = 1));
    assert!(matches!(e, Error::TensorShape { .. }), "{e:?}");

    // An LSTM model: its own rules.
    let mut d = plain_desc();
    d.cells.enc = CellKind::Lstm;
    d.cells.dec = CellKind::Lstm;
    d.cells.init_cell = Init::Last;
    d.cells.fmt_enc = s2s_kernels::Fmt { frac: 12 };
    d.cells.fmt_dec = s2s_kernels::Fmt { frac: 11 };
    let mut b = common::random_builder(&d, PrecisionKind::W8A16, &mut Rng::new(3));
    b.src_vocab = SRC.iter().map(|s| s.to_string()).collect();
    let lstm = b.to_bytes().expect("a valid LSTM model");
    for frac in [-1, 16, 30] {
        let e = damaged(&lstm, |b| with_desc(b, |d| d.cell_fmts[0] = frac as i8));
        assert_eq!(e, Error::BadField("fmt_enc_cell"), "{frac}");
    }
    let e = damaged(&lstm, |b| with_desc(b, |d| d.enc_reset = 1));
    assert_eq!(
        e,
        Error::Inconsistent("enc_reset: set for an LSTM encoder (a GRU field)")
    );
    // A GRU encoder keeps no cell-state format...
    let e = damaged(&lstm, |b| with_desc(b, |d| d.enc_cell = 0));
    assert_eq!(e, Error::BadField("fmt_enc_cell"));
    // ...and has no cell states to start the decoder's from.
    let e = damaged(&lstm, |b| {
        with_desc(b, |d| {
            d.enc_cell = 0;
            d.cell_fmts[0] = 0;
        })
    });
    assert_eq!(
        e,
        Error::Inconsistent("init_cell last: the encoder has no cell state (GRU)")
    );
    let e = damaged(&lstm, |b| with_desc(b, |d| d.att_parts = [0, 1, 0, 0]));
    assert_eq!(e, Error::BadField("att_parts"));
}

#[test]
fn attention_fields_on_a_model_without_attention_are_refused() {
    let bytes = plain();
    let e = damaged(&bytes, |b| with_desc(b, |d| d.attn_dim = u32::MAX));
    assert_eq!(e, Error::BadField("attn_dim"));
    let e = damaged(&bytes, |b| with_desc(b, |d| d.attn_dim = 6));
    assert!(matches!(e, Error::Inconsistent(_)), "{e:?}");
    let e = damaged(&bytes, |b| with_desc(b, |d| d.mask_padding = 1));
    assert!(matches!(e, Error::Inconsistent(_)), "{e:?}");
    // Sizes beyond 65535, tokens beyond their vocabulary or u16.
    let e = damaged(&bytes, |b| with_desc(b, |d| d.enc_hidden = 0x1_0006));
    assert_eq!(e, Error::BadField("enc_hidden"));
    let e = damaged(&bytes, |b| with_desc(b, |d| d.tgt_end = 0x1_0002));
    assert!(matches!(e, Error::TokenOutOfRange { .. }), "{e:?}");
}

#[test]
fn duplicate_or_empty_tokens_are_refused() {
    let bytes = plain();
    let h = header(&bytes);
    // The strings follow the count, the index and the two orders:
    // "<pad><unk></s>abcd<pad>...".
    let strings = h.vocab[0] as usize + 4 + 8 * (SRC.len() + TGT.len() + 1) + 2 * 15;
    let b_at = strings + "<pad><unk></s>a".len();
    assert_eq!(bytes[b_at], b'b');
    let e = damaged(&bytes, |b| b[b_at] = b'a');
    assert_eq!(
        e,
        Error::DuplicateToken {
            vocab: "source",
            first: 3,
            second: 4
        }
    );
    // The writer refuses an empty or a repeated token.
    let mut b = builder(|_| true);
    b.tgt_vocab[5] = String::new();
    assert_eq!(
        b.to_bytes().unwrap_err(),
        Error::EmptyToken {
            vocab: "target",
            id: 5
        }
    );
    b.tgt_vocab[5] = "w".into();
    assert_eq!(
        b.to_bytes().unwrap_err(),
        Error::DuplicateToken {
            vocab: "target",
            first: 3,
            second: 5
        }
    );
    // A string count that does not match the description, a string out of its place.
    let e = damaged(&bytes, |b| {
        let at = h.vocab[0] as usize;
        b[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
    });
    assert_eq!(
        e,
        Error::VocabCount {
            found: 1000,
            expected: 16
        }
    );
    let e = damaged(&bytes, |b| {
        let at = h.vocab[0] as usize + 4 + 8; // offset of string 1
        b[at] += 1;
    });
    assert_eq!(e, Error::VocabIndex);
    // An order that is not sorted, or repeats an id, or names one beyond the vocabulary.
    let order = h.vocab[0] as usize + 4 + 8 * 16;
    let e = damaged(&bytes, |b| b.swap(order, order + 2));
    assert_eq!(e, Error::VocabOrder { vocab: "source" });
    let e = damaged(&bytes, |b| b.copy_within(order..order + 2, order + 2));
    assert_eq!(e, Error::VocabOrder { vocab: "source" });
    let e = damaged(&bytes, |b| b[order + 2 * 7] = 8);
    assert_eq!(e, Error::VocabOrder { vocab: "target" });
}

#[test]
fn non_finite_weights_are_refused_by_the_host_scan_and_the_writer() {
    let bytes = plain();
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let i = find_entry(&bytes, id(Role::Out, Slot::Bias)).unwrap();
        let (_, t) = table_entry(&bytes, i);
        let mut b = bytes.clone();
        b[t.offset as usize..t.offset as usize + 4].copy_from_slice(&bad.to_le_bytes());
        fix_crc(&mut b);
        // The parser (all the firmware runs) accepts it; the host's scan does not.
        let words = aligned(&b);
        let file = ModelFile::parse(&bytemuck::cast_slice::<u64, u8>(&words)[..b.len()]).unwrap();
        assert_eq!(file.check_finite(), Err(Error::NonFinite(t.id)));
        // The writer refuses it too.
        let mut w = builder(|_| true);
        let out = w
            .tensors
            .iter_mut()
            .find(|t| t.id.role == Role::Out)
            .unwrap();
        out.bytes[..4].copy_from_slice(&bad.to_le_bytes());
        assert_eq!(
            w.to_bytes().unwrap_err(),
            Error::NonFinite(id(Role::Out, Slot::Weight).to_u32())
        );
    }
    // A w8f32 scale that is not finite is quantization data out of range.
    let mut r = Rng::new(3);
    let w8 = random_model(PrecisionKind::W8F32, &mut r);
    let i = (0..header(&w8).table[1] as usize)
        .find(|&i| table_entry(&w8, i).1.id >> 24 == Slot::RowQ as u32)
        .unwrap();
    let (_, q) = table_entry(&w8, i);
    let e = damaged(&w8, |b| {
        let at = q.offset as usize;
        b[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    });
    assert_eq!(e, Error::BadRowQ(q.id));
}

// ------------------------------------------------------------ 3. silent wraps

#[test]
fn sizes_too_large_for_the_file_are_refused_not_truncated() {
    let mut d = plain_desc();
    d.max_steps = 4_294_967_327; // 2^32 + 31: was stored as 31
    assert_eq!(
        d.to_raw().unwrap_err(),
        Error::FieldOverflow {
            field: "max_steps",
            value: 4_294_967_327
        }
    );
    let mut b = builder(|_| true);
    b.desc = d;
    assert!(matches!(
        b.to_bytes(),
        Err(Error::FieldOverflow {
            field: "max_steps",
            ..
        })
    ));
    // In range of u32 but not of the format: named by the description check.
    for (field, set) in [
        (
            "max_steps",
            (|d, v| d.max_steps = v) as fn(&mut ModelDesc, usize),
        ),
        ("enc_hidden", |d, v| d.enc_hidden = v),
        ("src_pad_to", |d, v| d.src_pad_to = v),
        ("enc_layers", |d, v| d.enc_layers = v),
    ] {
        let mut d = plain_desc();
        set(&mut d, 65_536);
        let raw = d.to_raw().unwrap();
        assert_eq!(
            ModelDesc::from_raw(&raw).unwrap_err(),
            Error::BadField(field)
        );
        set(&mut d, 1 << 32);
        assert_eq!(
            d.to_raw().unwrap_err(),
            Error::FieldOverflow {
                field,
                value: 1 << 32
            }
        );
    }
}

// ------------------------------------------------------------- exhaustive damage

#[test]
fn every_bit_flip_and_truncation_is_refused_or_harmless() {
    let bytes = plain();
    let len = bytes.len();
    // Every truncation: an error.
    for n in 0..len {
        assert!(parse(&bytes[..n]).is_err(), "{n} bytes parsed");
    }
    // Every single-bit flip, CRC recomputed: parse -> bind -> decode returns. A flip
    // in the header, the vocabulary index, the tensor table or any padding is refused;
    // one in the description, a token's bytes or a weight may well be another valid
    // model.
    let h = header(&bytes);
    let sec = |[off, n]: [u32; 2]| off as usize..(off + n) as usize;
    let vocab_head = h.vocab[0] as usize..h.vocab[0] as usize + 4 + 8 * 16 + 2 * 15;
    let (desc, vocab, data) = (sec(h.desc), sec(h.vocab), sec(h.data));
    let table = h.table[0] as usize..h.table[0] as usize + 24 * h.table[1] as usize;
    let tensors: Vec<_> = (0..h.table[1] as usize)
        .map(|i| {
            sec({
                let t = table_entry(&bytes, i).1;
                [t.offset, t.len]
            })
        })
        .collect();
    let mut accepted = 0;
    for at in 0..len - 4 {
        let may_pass = desc.contains(&at)
            || (vocab.contains(&at) && !vocab_head.contains(&at))
            || tensors.iter().any(|t| t.contains(&at));
        let must_fail = at < 64 || vocab_head.contains(&at) || table.contains(&at) || !may_pass;
        assert!(data.contains(&at) || !tensors.iter().any(|t| t.contains(&at)));
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[at] ^= 1 << bit;
            fix_crc(&mut b);
            let r = parse_bind_decode(&b, "abc");
            if must_fail {
                assert!(r.is_err(), "byte {at} bit {bit} accepted");
            }
            accepted += r.is_ok() as usize;
        }
    }
    // Most weight flips leave a valid model: the decoder ran on them.
    assert!(accepted > 8 * (data.len() / 2), "{accepted} flips decoded");
}

#[test]
fn every_error_has_a_static_text() {
    let samples = [
        Error::BadMagic,
        Error::TooManyTensors(9),
        Error::BadField("init"),
        Error::UnknownTensor(3),
        Error::PaddingNotZero,
        Error::NonFinite(1),
        Error::BadLayout(7),
    ];
    for e in samples {
        assert!(!e.as_str().is_empty());
        assert!(!e.to_string().is_empty());
    }
    assert_eq!(Error::BadField("init").subject(), Some("init"));
    assert_eq!(Error::TooManyTensors(9).as_str(), "too many tensors");
}
