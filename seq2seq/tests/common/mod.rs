//! Random valid models for the robustness tests: descriptions of every variant, written
//! by the builder at every precision, and a decode that must never panic.

#![allow(dead_code)] // each test file uses part of it

use rnn_core::{Masked, Recurrent, ResetMode};
use s2s_kernels::logprob::Alpha;
use s2s_kernels::{Fmt, PrecisionKind, Requant, F32, W8A16, W8F32};
use seq2seq::builder::{aligned, ModelBuilder};
use seq2seq::desc::{
    Activation, AttentionDesc, CellKind, Cells, Extras, Init, Logits, ModelDesc, Ordering, Part,
    PrefixSlot, ScoreKind, Split, MAX_FRAC, MAX_OUT_PARTS, MIN_FRAC,
};
use seq2seq::format::{crc32, DType, RawHeader, RawTensor, Slot, TensorId, HEADER_LEN};
use seq2seq::{
    BeamPlan, BeamRule, BeamVariant, Error, ModelFile, ModelPrecision, Net, Plan, Runner, Search,
};

/// xorshift64: deterministic pseudo-random numbers from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }
    pub fn u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.u64() % (hi - lo + 1) as u64) as usize
    }
    pub fn bool(&mut self) -> bool {
        self.u64() & 1 == 1
    }
    /// Uniform in `[-1, 1)`.
    pub fn f32(&mut self) -> f32 {
        (self.u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.range(0, xs.len() - 1)]
    }
}

pub const SRC: [&str; 7] = ["<pad>", "<unk>", "</s>", "a", "b", "c", "d"];
pub const TGT: [&str; 8] = ["<pad>", "<s>", "</s>", "w", "x", "y", "z", "q"];

/// A small model over [`SRC`] and [`TGT`] without attention: embeddings of 5 and 4, one
/// GRU of 6 each side, the decoder from zeros, output from its state.
pub fn small_desc() -> ModelDesc {
    ModelDesc {
        src_vocab: SRC.len(),
        tgt_vocab: TGT.len(),
        enc_emb: 5,
        dec_emb: 4,
        enc_layers: 1,
        enc_hidden: 6,
        enc_bidir: false,
        enc_reset: ResetMode::After,
        memory_proj: None,
        attention: AttentionDesc::NONE,
        src_pad_to: 0,
        init: Init::Zeros,
        dec_layers: 1,
        dec_hidden: 6,
        dec_reset: ResetMode::After,
        attentional: None,
        out_parts: [Some(Part::State), None, None, None],
        src_pad: 0,
        src_unk: Some(1),
        src_eos: Some(2),
        tgt_start: 1,
        tgt_end: 2,
        max_steps: 12,
        split: Split::Chars,
        lowercase: true,
        fmt_src_emb: Default::default(),
        fmt_dec_emb: Default::default(),
        fmt_memory: Default::default(),
        cells: Cells::GRU,
        att_parts: [None; MAX_OUT_PARTS],
        beam: Default::default(),
        extras: Extras::NONE,
    }
}

/// A random description that [`ModelDesc::check`] accepts: every ordering and score,
/// GRU and LSTM cells with every recurrent activation, uni- and bidirectional stacks
/// of 1 to 3 layers, every initial state (and initial cell state), memory projection
/// and attentional layer (over any parts) or not, padding (masked or not) or not, tiny
/// sizes.
pub fn random_desc(r: &mut Rng) -> ModelDesc {
    loop {
        let d = try_desc(r);
        let d = with_extras(d, r);
        if d.check().is_ok() {
            return d;
        }
    }
}

fn try_desc(r: &mut Rng) -> ModelDesc {
    let ordering = r.pick(&[
        Ordering::None,
        Ordering::Bahdanau,
        Ordering::Luong,
        Ordering::Monotonic,
    ]);
    let attention = ordering != Ordering::None;
    let score = if attention {
        r.pick(&[
            ScoreKind::Additive,
            ScoreKind::Dot,
            ScoreKind::ScaledDot,
            ScoreKind::General,
        ])
    } else {
        ScoreKind::Additive
    };
    let enc_layers = r.range(1, 3);
    let enc_hidden = r.range(1, 5);
    let enc_bidir = r.bool();
    let enc_output = enc_hidden * (1 + enc_bidir as usize);
    let memory_proj = (attention && r.bool()).then(|| r.range(1, 6));
    let memory_dim = memory_proj.unwrap_or(enc_output);
    let init = r.pick(&[Init::Zeros, Init::Last, Init::Dense]);
    let dec_hidden = match (init, score) {
        (Init::Last, _) => enc_output,
        (_, ScoreKind::Dot | ScoreKind::ScaledDot) if attention => memory_dim,
        _ => r.range(1, 6),
    };
    let dec_layers = if init == Init::Last {
        r.range(1, enc_layers)
    } else {
        r.range(1, 3)
    };
    let additive = attention && score == ScoreKind::Additive;
    let (attn_query_proj, attn_key_proj) = if additive {
        (r.bool(), r.bool())
    } else {
        (false, false)
    };
    let attn_dim = match (additive, attn_query_proj, attn_key_proj) {
        (false, ..) => 0,
        (true, false, _) => dec_hidden,
        (true, true, false) => memory_dim,
        (true, true, true) => r.range(1, 5),
    };
    let attentional = (attention && r.bool()).then(|| r.range(1, 5));
    let mut att_parts = [None; MAX_OUT_PARTS];
    if attentional.is_some() {
        let from = [Part::State, Part::Context, Part::Embedding];
        for slot in att_parts.iter_mut().take(r.range(1, 3)) {
            *slot = Some(r.pick(&from));
        }
    }
    let (enc_cell, dec_cell) = (
        r.pick(&[CellKind::Gru, CellKind::Lstm]),
        r.pick(&[CellKind::Gru, CellKind::Lstm]),
    );
    let reset = |r: &mut Rng, cell| match cell {
        CellKind::Gru => r.pick(&[ResetMode::After, ResetMode::Before]),
        CellKind::Lstm => ResetMode::After,
    };
    let recurrent = |r: &mut Rng| {
        r.pick(&[
            Recurrent::Sigmoid,
            Recurrent::HardSigmoidKeras2,
            Recurrent::HardSigmoidKeras3,
        ])
    };
    let cell_fmt = |r: &mut Rng, cell| Fmt {
        frac: match cell {
            CellKind::Gru => 0,
            CellKind::Lstm => r.range(0, 15) as i8,
        },
    };
    let init_cell = match (dec_cell, enc_cell) {
        (CellKind::Gru, _) => Init::Zeros,
        (CellKind::Lstm, CellKind::Lstm) if init == Init::Last => Init::Last,
        (CellKind::Lstm, _) => r.pick(&[Init::Zeros, Init::Dense]),
    };
    let mut candidates = vec![Part::State, Part::Embedding];
    if attention {
        candidates.push(Part::Context);
    }
    if attentional.is_some() {
        candidates.push(Part::Attentional);
    }
    let mut out_parts = [None; MAX_OUT_PARTS];
    for slot in out_parts.iter_mut().take(r.range(1, MAX_OUT_PARTS)) {
        *slot = Some(r.pick(&candidates));
    }
    let src_pad_to = if r.range(0, 3) == 0 {
        r.range(6, 12)
    } else {
        0
    };
    let enc_mask = (src_pad_to > 0 && r.bool()).then(|| r.pick(&[Masked::Previous, Masked::Zeros]));
    // Any format the parser admits, extremes included.
    let frac = |r: &mut Rng| Fmt {
        frac: r.range(0, (MAX_FRAC - MIN_FRAC) as usize) as i8 + MIN_FRAC,
    };
    // Drawn in the order of the stored description's fields, as they always were.
    let (enc_emb, dec_emb) = (r.range(1, 5), r.range(1, 5));
    let enc_reset = reset(r, enc_cell);
    let mask_padding = attention && r.bool();
    ModelDesc {
        src_vocab: SRC.len(),
        tgt_vocab: TGT.len(),
        enc_emb,
        dec_emb,
        enc_layers,
        enc_hidden,
        enc_bidir,
        enc_reset,
        memory_proj,
        src_pad_to,
        init,
        dec_layers,
        dec_hidden,
        dec_reset: reset(r, dec_cell),
        attentional,
        out_parts,
        src_pad: 0,
        src_unk: r.bool().then_some(1),
        src_eos: r.bool().then_some(2),
        tgt_start: 1,
        tgt_end: 2,
        max_steps: r.range(1, 8),
        split: r.pick(&[Split::Chars, Split::Whitespace]),
        lowercase: r.bool(),
        fmt_src_emb: frac(r),
        fmt_dec_emb: frac(r),
        fmt_memory: frac(r),
        attention: AttentionDesc {
            ordering,
            score,
            dim: attn_dim as u16,
            query_proj: attn_query_proj,
            key_proj: attn_key_proj,
            mask_padding,
            fmt_keys: frac(r),
            scale: if score == ScoreKind::ScaledDot {
                0.5
            } else {
                1.0 + r.f32()
            },
            scale_q: Requant::from_real(0.25 + r.f32().abs() as f64),
            chunk: match ordering {
                Ordering::Monotonic => r.pick(&[1, 1, 2, 3, 5]),
                _ => 0,
            },
            // Local attention (local-m) for some Bahdanau and Luong models.
            window: match ordering {
                Ordering::Bahdanau | Ordering::Luong => r.pick(&[0, 0, 0, 1, 3]),
                _ => 0,
            },
            // Local-p: drawn last, in `with_extras`.
            predict: 0,
        },
        cells: Cells {
            enc: enc_cell,
            dec: dec_cell,
            enc_recurrent: recurrent(r),
            dec_recurrent: recurrent(r),
            enc_mask,
            init_cell,
            fmt_enc: cell_fmt(r, enc_cell),
            fmt_dec: cell_fmt(r, dec_cell),
        },
        att_parts,
        beam: BeamRule {
            variant: r.pick(&BeamVariant::ALL),
            alpha: Alpha::from_halves(r.range(0, 4) as u8).expect("alpha in range"),
        },
        extras: Extras::NONE,
    }
}

/// `d` with random [`Extras`] (drawn after everything else, so that the rest of a
/// seed's description is what it was before they existed): a mean or shared bridge,
/// input feeding, the attentional activation and its format, the output's
/// normalisation, source prefix tokens.
fn with_extras(mut d: ModelDesc, r: &mut Rng) -> ModelDesc {
    if d.init == Init::Dense && r.bool() {
        d.init = Init::Mean;
    }
    let x = &mut d.extras;
    x.bridge_shared = d.init.is_bridge() && r.bool();
    x.input_feed = d.attention.ordering == Ordering::Luong && d.attentional.is_some() && r.bool();
    if d.attentional.is_some() {
        x.att_act = r.pick(&[Activation::Tanh, Activation::Relu, Activation::Identity]);
        if x.att_act != Activation::Tanh {
            x.fmt_attentional = Fmt {
                frac: r.range(0, 15) as i8,
            };
        }
    }
    x.logits = r.pick(&[Logits::Softmax, Logits::LogSoftmax]);
    for slot in x.src_prefix.iter_mut().take(r.range(0, 2)) {
        *slot = Some(r.range(0, SRC.len() - 1) as u16);
    }
    // Drawn last (format 7): prefix slots over the tokens of [`SLOT_TOKENS`], each with
    // a default, and a minimum output length.
    for slot in x.slots.iter_mut().take(r.range(0, 2)) {
        let size = r.range(1, SLOT_TOKENS.len());
        *slot = Some(PrefixSlot {
            size: std::num::NonZeroU16::new(size as u16).unwrap(),
            default: Some(SLOT_TOKENS[r.range(0, size - 1)]),
        });
    }
    x.min_steps = r.range(0, 2);
    // Drawn last (format 10): local-p for half the local models.
    if d.attention.local() && r.bool() {
        d.attention.predict = r.range(1, 4) as u16;
    }
    d
}

/// The tokens of the random descriptions' prefix slots (special tokens, which no test
/// line types): slot `i` of size `n` offers the first `n`.
pub const SLOT_TOKENS: [u16; 3] = [1, 2, 0];

/// A builder holding `d` at `precision` with random weights: weights of one or two
/// planes (quantized), quantization data, and a bias on a random half of the layers
/// that can have one.
pub fn random_builder(d: &ModelDesc, precision: PrecisionKind, r: &mut Rng) -> ModelBuilder {
    let mut b = ModelBuilder::new(precision, *d);
    b.src_vocab = SRC.iter().map(|s| s.to_string()).collect();
    b.tgt_vocab = TGT.iter().map(|s| s.to_string()).collect();
    b.separator = r.pick(&["", " ", "-"]).into();
    for (i, s) in d.extras.slots().enumerate() {
        b.slots.push((
            format!("s{i}"),
            SLOT_TOKENS[..s.size.get() as usize].to_vec(),
        ));
    }
    for s in d.layer_specs() {
        let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
        let planes = if precision == PrecisionKind::F32 {
            1
        } else {
            r.range(1, 2)
        };
        let n = s.rows * s.cols * planes;
        let bias = !s.is_embedding() && r.bool();
        match precision {
            PrecisionKind::F32 => {
                let w: Vec<f32> = (0..n).map(|_| r.f32() * 2.0).collect();
                let v: Vec<f32> = (0..s.rows).map(|_| r.f32()).collect();
                let bias = bias.then_some(&v[..]);
                b.linear_f32((s.role, s.layer, s.dir), s.rows, s.cols, &w, bias);
            }
            PrecisionKind::W8F32 => {
                let w: Vec<i8> = (0..n).map(|_| (r.u64() >> 56) as i8).collect();
                b.tensor(id(Slot::Weight), DType::I8, s.rows, s.cols * planes, &w);
                let q: Vec<f32> = (0..s.rows * planes).map(|_| r.f32().abs() / 64.0).collect();
                b.tensor(id(Slot::RowQ), DType::F32, s.rows, planes, &q);
                if bias {
                    let v: Vec<f32> = (0..s.rows).map(|_| r.f32()).collect();
                    b.tensor(id(Slot::Bias), DType::F32, s.rows, 1, &v);
                }
            }
            PrecisionKind::W8A16 => {
                let w: Vec<i8> = (0..n).map(|_| (r.u64() >> 56) as i8).collect();
                b.tensor(id(Slot::Weight), DType::I8, s.rows, s.cols * planes, &w);
                let q: Vec<Requant> = (0..s.rows * s.parts * planes)
                    .map(|_| Requant::from_real(r.f32().abs() as f64 / 32.0))
                    .collect();
                b.requant(id(Slot::RowQ), s.rows, s.parts * planes, &q);
                if bias {
                    let v: Vec<i32> = (0..s.rows)
                        .map(|_| (r.u64() >> 48) as i32 - 32768)
                        .collect();
                    b.tensor(id(Slot::Bias), DType::I32, s.rows, 1, &v);
                }
            }
        }
    }
    b
}

/// A random valid model file of `precision`.
/// `n` source lines of 1 to 7 symbols of [`SRC`] (no special tokens).
#[allow(dead_code)]
pub fn random_lines(r: &mut Rng, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            (0..r.range(1, 8))
                .map(|_| SRC[r.range(3, SRC.len() - 1)])
                .collect()
        })
        .collect()
}

pub fn random_model(precision: PrecisionKind, r: &mut Rng) -> Vec<u8> {
    let d = random_desc(r);
    random_builder(&d, precision, r)
        .to_bytes()
        .unwrap_or_else(|e| panic!("a valid random model is refused: {e}\n{d:?}"))
}

/// The header of model bytes.
pub fn header(bytes: &[u8]) -> RawHeader {
    bytemuck::pod_read_unaligned(&bytes[..HEADER_LEN])
}

/// Writes the header back.
pub fn set_header(bytes: &mut [u8], h: &RawHeader) {
    bytes[..HEADER_LEN].copy_from_slice(bytemuck::bytes_of(h));
}

/// The CRC recomputed over the file's stated length (when it fits in the bytes).
pub fn fix_crc(bytes: &mut [u8]) {
    let len = header(bytes).file_len as usize;
    if (HEADER_LEN + 4..=bytes.len()).contains(&len) {
        let crc = crc32(&bytes[..len - 4]);
        bytes[len - 4..len].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Entry `i` of the tensor table and its byte offset in the file.
pub fn table_entry(bytes: &[u8], i: usize) -> (usize, RawTensor) {
    let at = header(bytes).table[0] as usize + i * core::mem::size_of::<RawTensor>();
    let e = bytemuck::pod_read_unaligned(&bytes[at..at + core::mem::size_of::<RawTensor>()]);
    (at, e)
}

/// The index of tensor `id` in the table.
pub fn find_entry(bytes: &[u8], id: TensorId) -> Option<usize> {
    let n = header(bytes).table[1] as usize;
    (0..n).find(|&i| table_entry(bytes, i).1.id == id.to_u32())
}

/// Parses, binds at the file's precision, and decodes one short line (an output
/// buffer of 64 steps, a workspace for 16 positions): the full path a device takes.
/// Whatever the bytes, this returns; the test is that it never panics.
pub fn parse_bind_decode(bytes: &[u8], line: &str) -> Result<usize, Error> {
    let words = aligned(bytes);
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
    let file = ModelFile::parse(bytes)?;
    match file.precision() {
        PrecisionKind::F32 => decode::<F32>(&file, line),
        PrecisionKind::W8F32 => decode::<W8F32>(&file, line),
        PrecisionKind::W8A16 => decode::<W8A16>(&file, line),
    }
}

fn decode<P: ModelPrecision>(file: &ModelFile<'_>, line: &str) -> Result<usize, Error> {
    let net = Net::<P>::bind(file)?;
    let positions = 16;
    let need = Plan::new::<P>(file.desc(), positions).bytes();
    // Like a device: a fixed arena, so a model that needs more is refused.
    let mut arena = vec![0u32; need.min(1 << 18) / 4];
    let mut runner = Runner::new(&net, &mut arena, positions)?;
    let mut out = [0u16; 64];
    let n =
        runner
            .translate_line::<Error>(line, &seq2seq::Prefix::NONE, &mut out, &mut (), |_| Ok(()))?;
    // A beam search of the model's own variant, 3 wide, over the same kind of arena
    // (a monotonic model decodes greedily only: refused, tests/beam.rs).
    if file.desc().attention.ordering == Ordering::Monotonic {
        return Ok(n);
    }
    let need = need + BeamPlan::new::<P>(file.desc(), 3).bytes();
    let mut arena = vec![0u32; need.min(1 << 18) / 4];
    let mut runner = Runner::with_beam(&net, &mut arena, positions, 3)?;
    let search = Search::of(file.desc(), 3);
    runner.beam_line::<Error>(
        line,
        &seq2seq::Prefix::NONE,
        search,
        &mut out,
        &mut (),
        |_| Ok(()),
    )?;
    Ok(n)
}
