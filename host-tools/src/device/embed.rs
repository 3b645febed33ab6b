//! `s2s embed`: a model file as a Rust module for the one-model firmware (and any
//! firmware of your own): the description as a constant, the vocabularies and every
//! tensor as aligned statics, bound on the device by `seq2seq::Net::embedded_into` with
//! no model-file parser. The file is checked here with the same code as everywhere on
//! the host, and refused in one line if it does not fit the board: its workspace in RAM
//! beside the one-model runtime's statics and stack, its tensors in flash beside the
//! runtime.

use std::fmt::Write as _;

use s2s_device::Board;
use seq2seq::desc::{Cells, Extras, LayerSpec, PrefixSlot};
use seq2seq::format::{DType, Slot, TensorId};
use seq2seq::{AttentionDesc, BeamRule, ModelDesc, ModelFile, Plan, PrecisionKind};

use crate::error::{Error, Place, Result};
use crate::model::LoadedModel;

/// The module `s2s embed` writes for `model` on `board`, or the one line saying what
/// does not fit.
pub fn embed(model: &LoadedModel, board: &Board) -> Result<String> {
    let file = model.file();
    let desc = *file.desc();
    let name = model.path.display().to_string();
    let refuse = |message: String| Error::invalid(&name, Place::File, message);
    let positions = board
        .capacities
        .positions_for(desc.src_pad_to)
        .ok_or_else(|| {
            refuse(format!(
                "a fixed source length of {} positions, over the {} positions of {}",
                desc.src_pad_to, board.capacities.max_positions, board.name
            ))
        })?;
    let (precision, arena) = match file.precision() {
        PrecisionKind::F32 => ("F32", Plan::new::<s2s_kernels::F32>(&desc, positions)),
        PrecisionKind::W8F32 => ("W8F32", Plan::new::<s2s_kernels::W8F32>(&desc, positions)),
        PrecisionKind::W8A16 => ("W8A16", Plan::new::<s2s_kernels::W8A16>(&desc, positions)),
    };
    let arena = arena.bytes().next_multiple_of(8);
    let runtime = board.one_model();
    let (statics, stack) = (runtime.statics as usize, runtime.stack as usize);
    let ram = board.memory.ram.length as usize;
    let ram_needed = arena + statics + stack;
    if ram_needed > ram {
        return Err(refuse(format!(
            "does not fit the RAM of {}: its workspace for {positions} positions is {arena} \
             bytes, with the runtime's statics ({statics}) and stack ({stack}) {ram_needed} bytes \
             of {ram}",
            board.name
        )));
    }
    let mut m = Module::default();
    let mut layers = String::new();
    for spec in desc.layer_specs() {
        layers += &m.layer(&file, &spec, &name)?;
    }
    let vocab = m.vocab(&file);
    let flash = board.app_flash().length as usize;
    let flash_needed = m.bytes + runtime.flash as usize;
    if flash_needed > flash {
        return Err(refuse(format!(
            "does not fit the flash of {}: its tensors and vocabularies are {} bytes, with the \
             runtime ({}) {flash_needed} bytes of {flash}",
            board.name, m.bytes, runtime.flash
        )));
    }

    let mut rs = String::new();
    let file_name = model.path.file_name().unwrap_or_default().to_string_lossy();
    let w = &mut rs;
    let _ = writeln!(
        w,
        "// {file_name} for {board}, written by `s2s embed` (s2s {version}): do not edit, run it \
         again.\n\
         // The file: {bytes} bytes, CRC {crc:#010x}, format version {fv}.\n\n\
         /// The board this model was checked against.\n\
         pub const BOARD: &str = {board:?};\n\
         /// The model's precision.\n\
         pub type P = seq2seq::embed::{precision};\n\
         /// Source positions the workspace is planned for.\n\
         pub const POSITIONS: usize = {positions};\n\
         /// Bytes of the workspace for them (`seq2seq::Plan`, a multiple of 8).\n\
         pub const ARENA_BYTES: usize = {arena};\n\
         /// The model file's size, CRC and parameters (the `MODEL` line).\n\
         pub const FILE_BYTES: usize = {bytes};\n\
         /// CRC-32 of the model file.\n\
         pub const FILE_CRC: u32 = {crc:#010x};\n\
         /// Parameters of the model.\n\
         pub const PARAMETERS: usize = {params};\n\
         /// Bytes of tensors and vocabularies embedded.\n\
         pub const EMBEDDED_BYTES: usize = {embedded};\n",
        board = board.name,
        version = env!("CARGO_PKG_VERSION"),
        bytes = file.bytes().len(),
        crc = file.crc(),
        fv = seq2seq::format::VERSION,
        params = file.parameters(),
        embedded = m.bytes,
    );
    let _ = writeln!(
        w,
        "/// The model.\n\
         pub static MODEL: seq2seq::embed::Embedded<'static, P> = seq2seq::embed::Embedded {{\n\
         \x20   desc: DESC,\n\
         \x20   layout: seq2seq::embed::Layout::{layout:?},\n\
         \x20   layers: &[\n{layers}    ],\n{vocab}}};\n\n\
         /// The description.\n\
         const DESC: seq2seq::ModelDesc = {desc};\n",
        layout = file.layout(),
        desc = desc_literal(&desc),
    );
    rs += &m.statics;
    Ok(rs)
}

/// The statics of a module being written and their bytes.
#[derive(Default)]
struct Module {
    statics: String,
    bytes: usize,
    count: usize,
}

impl Module {
    /// A static from a tensor's bytes, its elements of `dtype` (`None`: bytes); its
    /// path.
    fn tensor(&mut self, dtype: Option<DType>, data: &[u8]) -> String {
        let name = format!("T{}", self.count);
        self.count += 1;
        self.bytes += data.len().next_multiple_of(8);
        let word = |c: &[u8]| i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let mut body = String::with_capacity(data.len() * 4);
        let (ty, n) = match dtype {
            None => {
                for (i, b) in data.iter().enumerate() {
                    let _ = write!(body, "{b},{}", line_break(i, 32));
                }
                ("u8", data.len())
            }
            Some(DType::I8) => {
                for (i, &b) in data.iter().enumerate() {
                    let _ = write!(body, "{},{}", b as i8, line_break(i, 32));
                }
                ("i8", data.len())
            }
            Some(DType::I32) => {
                for (i, c) in data.chunks_exact(4).enumerate() {
                    let _ = write!(body, "{},{}", word(c), line_break(i, 16));
                }
                ("i32", data.len() / 4)
            }
            // The bits: the value exactly, whatever it is.
            Some(DType::F32) => {
                for (i, c) in data.chunks_exact(4).enumerate() {
                    let bits = word(c) as u32;
                    let _ = write!(body, "f32::from_bits({bits:#010x}),{}", line_break(i, 8));
                }
                ("f32", data.len() / 4)
            }
            Some(DType::Requant) => {
                for (i, c) in data.chunks_exact(8).enumerate() {
                    let (mult, shift) = (word(&c[..4]), word(&c[4..]));
                    let _ = write!(
                        body,
                        "{EMBED}::Requant {{ mult: {mult}, shift: {shift} }},{}",
                        line_break(i, 2)
                    );
                }
                ("seq2seq::embed::Requant", data.len() / 8)
            }
        };
        let _ = writeln!(
            self.statics,
            "#[link_section = \"{SECTION}\"]\n\
             static {name}: {EMBED}::Aligned<[{ty}; {n}]> = {EMBED}::Aligned([\n{body}\n]);"
        );
        format!("&{name}.0")
    }

    /// The `Layer` literal of one dense layer.
    /// A weights tensor the checked file lacks (which the parser refuses) is an error
    /// naming it rather than a module that does not compile.
    fn layer(&mut self, file: &ModelFile<'_>, s: &LayerSpec, name: &str) -> Result<String> {
        let mut data = |slot| -> Option<String> {
            let id = TensorId::new(s.role, s.layer, s.dir, slot);
            let t = file.find(id)?;
            let bytes = file.bytes().get(t.offset..t.offset.checked_add(t.len)?)?;
            Some(self.tensor(Some(t.dtype), bytes))
        };
        let w = data(Slot::Weight).ok_or_else(|| {
            let id = TensorId::new(s.role, s.layer, s.dir, Slot::Weight);
            Error::invalid(name, Place::File, format!("no weights tensor {id}"))
        })?;
        let q = data(Slot::RowQ).unwrap_or_else(|| "&[]".into());
        let bias = match data(Slot::Bias) {
            Some(b) => format!("Some({b})"),
            None => "None".into(),
        };
        Ok(format!(
            "        seq2seq::embed::Layer {{ role: seq2seq::desc::Role::{:?}, layer: {}, dir: {}, \
             rows: {}, cols: {}, parts: {}, w: {w}, q: {q}, bias: {bias} }},\n",
            s.role, s.layer, s.dir, s.rows, s.cols, s.parts
        ))
    }

    /// The vocabulary fields of `Embedded`.
    fn vocab(&mut self, file: &ModelFile<'_>) -> String {
        let (src_index, strings) = file.src_vocab().raw_parts();
        let (tgt_index, _) = file.tgt_vocab().raw_parts();
        let section = if file.desc().extras.slots().next().is_some() {
            self.tensor(None, file.vocab_section())
        } else {
            "&[]".into()
        };
        let (src, tgt, strings) = (
            self.tensor(None, src_index),
            self.tensor(None, tgt_index),
            self.tensor(None, strings),
        );
        format!(
            "    src_vocab: seq2seq::Vocab::from_raw({src}, {strings}),\n\
             \x20   tgt_vocab: seq2seq::Vocab::from_raw({tgt}, {strings}),\n\
             \x20   separator: {:?},\n\
             \x20   vocab_section: {section},\n",
            file.separator()
        )
    }
}

/// The link section of the model's statics: the one-model memory map
/// (`s2s_device::Board::write_one_model_memory_x`) gathers them into an output section
/// of their own, so that the runtime's flash is known apart from the model's.
pub const SECTION: &str = ".s2s_model";

/// The path of the module the generated code's types come from.
const EMBED: &str = "seq2seq::embed";

/// A line break after every `n` values.
fn line_break(i: usize, n: usize) -> &'static str {
    if (i + 1).is_multiple_of(n) {
        "\n"
    } else {
        ""
    }
}

/// A fieldless enum's value by its path: `Type::Variant`.
fn e(path: &str, v: impl std::fmt::Debug) -> String {
    format!("{path}::{v:?}")
}

/// An `Option` of a literal.
fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or("None".into(), |v| format!("Some({})", f(v)))
}

/// An array of literals.
fn arr<T: Copy>(v: &[T], f: impl Fn(T) -> String) -> String {
    let items: Vec<String> = v.iter().map(|&x| f(x)).collect();
    format!("[{}]", items.join(", "))
}

fn fmt(f: s2s_kernels::Fmt) -> String {
    format!("{EMBED}::Fmt {{ frac: {} }}", f.frac)
}

fn part(p: seq2seq::Part) -> String {
    e("seq2seq::Part", p)
}

/// `desc` as a Rust expression. Every field is named (no `..`): a field added to the
/// description breaks this build until it is written here too.
fn desc_literal(d: &ModelDesc) -> String {
    let ModelDesc {
        src_vocab,
        tgt_vocab,
        enc_emb,
        dec_emb,
        enc_layers,
        enc_hidden,
        enc_bidir,
        enc_reset,
        memory_proj,
        attention,
        src_pad_to,
        init,
        dec_layers,
        dec_hidden,
        dec_reset,
        attentional,
        out_parts,
        src_pad,
        src_unk,
        src_eos,
        tgt_start,
        tgt_end,
        max_steps,
        split,
        lowercase,
        fmt_src_emb,
        fmt_dec_emb,
        fmt_memory,
        cells,
        att_parts,
        beam,
        extras,
    } = *d;
    let usize_opt = |v: Option<usize>| opt(v, |n| n.to_string());
    let u16_opt = |v: Option<u16>| opt(v, |n| n.to_string());
    let AttentionDesc {
        ordering,
        score,
        dim,
        query_proj,
        key_proj,
        mask_padding,
        fmt_keys,
        scale,
        scale_q,
        chunk,
        window,
        predict,
    } = attention;
    let Cells {
        enc,
        dec,
        enc_recurrent,
        dec_recurrent,
        enc_mask,
        init_cell,
        fmt_enc,
        fmt_dec,
    } = cells;
    let BeamRule { variant, alpha } = beam;
    let Extras {
        bridge_shared,
        input_feed,
        att_act,
        fmt_attentional,
        logits,
        src_prefix,
        slots,
        min_steps,
    } = extras;
    let slot = |s: PrefixSlot| {
        let PrefixSlot { size, default } = s;
        format!(
            "seq2seq::desc::PrefixSlot {{ size: match core::num::NonZeroU16::new({size}) \
             {{ Some(n) => n, None => panic!() }}, default: {} }}",
            u16_opt(default)
        )
    };
    format!(
        "seq2seq::ModelDesc {{
    src_vocab: {src_vocab},
    tgt_vocab: {tgt_vocab},
    enc_emb: {enc_emb},
    dec_emb: {dec_emb},
    enc_layers: {enc_layers},
    enc_hidden: {enc_hidden},
    enc_bidir: {enc_bidir},
    enc_reset: {},
    memory_proj: {},
    attention: seq2seq::AttentionDesc {{
        ordering: {},
        score: {},
        dim: {dim},
        query_proj: {query_proj},
        key_proj: {key_proj},
        mask_padding: {mask_padding},
        fmt_keys: {},
        scale: f32::from_bits({:#010x}),
        scale_q: seq2seq::embed::Requant {{ mult: {}, shift: {} }},
        chunk: {chunk},
        window: {window},
        predict: {predict},
    }},
    src_pad_to: {src_pad_to},
    init: {},
    dec_layers: {dec_layers},
    dec_hidden: {dec_hidden},
    dec_reset: {},
    attentional: {},
    out_parts: {},
    src_pad: {src_pad},
    src_unk: {},
    src_eos: {},
    tgt_start: {tgt_start},
    tgt_end: {tgt_end},
    max_steps: {max_steps},
    split: {},
    lowercase: {lowercase},
    fmt_src_emb: {},
    fmt_dec_emb: {},
    fmt_memory: {},
    cells: seq2seq::Cells {{
        enc: {},
        dec: {},
        enc_recurrent: {},
        dec_recurrent: {},
        enc_mask: {},
        init_cell: {},
        fmt_enc: {},
        fmt_dec: {},
    }},
    att_parts: {},
    beam: seq2seq::BeamRule {{
        variant: {},
        alpha: match seq2seq::embed::Alpha::from_halves({}) {{ Some(a) => a, None => panic!() }},
    }},
    extras: seq2seq::desc::Extras {{
        bridge_shared: {bridge_shared},
        input_feed: {input_feed},
        att_act: {},
        fmt_attentional: {},
        logits: {},
        src_prefix: {},
        slots: {},
        min_steps: {min_steps},
    }},
}}",
        e("seq2seq::embed::ResetMode", enc_reset),
        usize_opt(memory_proj),
        e("seq2seq::Ordering", ordering),
        e("seq2seq::ScoreKind", score),
        fmt(fmt_keys),
        scale.to_bits(),
        scale_q.mult,
        scale_q.shift,
        e("seq2seq::Init", init),
        e("seq2seq::embed::ResetMode", dec_reset),
        usize_opt(attentional),
        arr(&out_parts, |p| opt(p, part)),
        u16_opt(src_unk),
        u16_opt(src_eos),
        e("seq2seq::Split", split),
        fmt(fmt_src_emb),
        fmt(fmt_dec_emb),
        fmt(fmt_memory),
        e("seq2seq::CellKind", enc),
        e("seq2seq::CellKind", dec),
        e("seq2seq::embed::Recurrent", enc_recurrent),
        e("seq2seq::embed::Recurrent", dec_recurrent),
        opt(enc_mask, |m| e("seq2seq::embed::Masked", m)),
        e("seq2seq::Init", init_cell),
        fmt(fmt_enc),
        fmt(fmt_dec),
        arr(&att_parts, |p| opt(p, part)),
        e("seq2seq::BeamVariant", variant),
        alpha.halves(),
        e("seq2seq::desc::Activation", att_act),
        fmt(fmt_attentional),
        e("seq2seq::desc::Logits", logits),
        arr(&src_prefix, u16_opt),
        arr(&slots, |s| opt(s, slot)),
    )
}
