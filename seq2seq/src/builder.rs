//! Writing model files (host side, feature `alloc`): the counterpart of
//! [`ModelFile::parse`](crate::ModelFile::parse), so both sides of the format live
//! together.

use alloc::string::String;
use alloc::vec::Vec;
use core::num::NonZeroU16;

use s2s_kernels::{Layout, PrecisionKind, Requant, F32, W8A16, W8F32};

use crate::desc::{ModelDesc, PrefixSlot};
use crate::format::{
    bias_words, crc32, DType, RawHeader, RawTensor, Role, Slot, TensorId, ALIGN, HEADER_LEN, MAGIC,
    VERSION,
};
use crate::{Error, ModelFile, Net};

/// One tensor to be written.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    /// Which tensor.
    pub id: TensorId,
    /// Element type.
    pub dtype: DType,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Little-endian bytes.
    pub bytes: Vec<u8>,
}

/// Assembles a model file.
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    /// Precision of the tensors.
    pub precision: PrecisionKind,
    /// How the int8 weight tensors are stored (the header's layout; see
    /// [`ModelBuilder::lay_out`] to change it).
    pub layout: Layout,
    /// The description.
    pub desc: ModelDesc,
    /// Source tokens.
    pub src_vocab: Vec<String>,
    /// Target tokens.
    pub tgt_vocab: Vec<String>,
    /// Output separator.
    pub separator: String,
    /// The prefix slots' names and source token ids, in the order of the description's
    /// slots (`desc.extras.slots`, which holds their sizes and defaults: see
    /// [`ModelBuilder::slot`]).
    pub slots: Vec<(String, Vec<u16>)>,
    /// Tensors, in file order.
    pub tensors: Vec<TensorData>,
}

fn le<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    // Every supported target is little-endian; see the crate docs.
    bytemuck::cast_slice(v).to_vec()
}

impl ModelBuilder {
    /// An empty model of this precision and description.
    pub fn new(precision: PrecisionKind, desc: ModelDesc) -> Self {
        ModelBuilder {
            precision,
            layout: Layout::Row,
            desc,
            src_vocab: Vec::new(),
            tgt_vocab: Vec::new(),
            separator: String::new(),
            slots: Vec::new(),
            tensors: Vec::new(),
        }
    }

    /// Adds a prefix slot called `name` offering the source tokens `tokens`, with a
    /// default token (one of them) or none: its name and tokens here, its size and
    /// default in the description. More than [`MAX_SLOTS`](crate::desc::MAX_SLOTS) slots, or a slot of no
    /// tokens or more than 65,535, is an error naming the field.
    pub fn slot(
        &mut self,
        name: &str,
        tokens: &[u16],
        default: Option<u16>,
    ) -> Result<&mut Self, Error> {
        let at = self.slots.len();
        let place = self
            .desc
            .extras
            .slots
            .get_mut(at)
            .ok_or(Error::FieldOverflow {
                field: "slots",
                value: at + 1,
            })?;
        let size = u16::try_from(tokens.len())
            .ok()
            .and_then(NonZeroU16::new)
            .ok_or(Error::FieldOverflow {
                field: "slot_sizes",
                value: tokens.len(),
            })?;
        *place = Some(PrefixSlot { size, default });
        self.slots.push((name.into(), tokens.to_vec()));
        Ok(self)
    }

    /// Adds (or replaces) a tensor.
    pub fn tensor<T: bytemuck::Pod>(
        &mut self,
        id: TensorId,
        dtype: DType,
        rows: usize,
        cols: usize,
        data: &[T],
    ) -> &mut Self {
        self.tensors.retain(|t| t.id != id);
        self.tensors.push(TensorData {
            id,
            dtype,
            rows,
            cols,
            bytes: le(data),
        });
        self
    }

    /// Adds an f32 dense layer (weights `rows x cols`, optional bias).
    pub fn linear_f32(
        &mut self,
        (role, layer, dir): (Role, usize, usize),
        rows: usize,
        cols: usize,
        w: &[f32],
        bias: Option<&[f32]>,
    ) -> &mut Self {
        self.tensor(
            TensorId::new(role, layer, dir, Slot::Weight),
            DType::F32,
            rows,
            cols,
            w,
        );
        if let Some(b) = bias {
            self.tensor(
                TensorId::new(role, layer, dir, Slot::Bias),
                DType::F32,
                rows,
                1,
                b,
            );
        }
        self
    }

    /// Stores the int8 weight tensors in `layout` (re-encoding those present from the
    /// current layout) and records it in the header.
    pub fn lay_out(&mut self, layout: Layout) -> &mut Self {
        let from = self.layout;
        for t in &mut self.tensors {
            if t.id.slot == Slot::Weight && t.dtype == DType::I8 {
                for b in &mut t.bytes {
                    *b = layout.store(from.load(*b as i8)) as u8;
                }
            }
        }
        self.layout = layout;
        self
    }

    /// Adds a requantizer table of `rows x parts`.
    pub fn requant(&mut self, id: TensorId, rows: usize, parts: usize, q: &[Requant]) -> &mut Self {
        self.tensor(id, DType::Requant, rows, parts, q)
    }

    /// The file's bytes: header, sections each aligned to 8 bytes, CRC. Refuses what
    /// a reader refuses: the result is checked with [`ModelFile::parse`], bound with
    /// [`Net::bind`] at its precision and scanned with [`ModelFile::check_finite`],
    /// and the first error is returned instead of the bytes. (A build without a model
    /// part the model needs cannot bind it: it writes it unbound.)
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        let out = self.assemble()?;
        let words = aligned(&out);
        let file = ModelFile::parse(&bytemuck::cast_slice(&words)[..out.len()])?;
        let bound = match self.precision {
            PrecisionKind::F32 => Net::<F32>::bind(&file).map(drop),
            PrecisionKind::W8F32 => Net::<W8F32>::bind(&file).map(drop),
            PrecisionKind::W8A16 => Net::<W8A16>::bind(&file).map(drop),
        };
        match bound {
            Err(Error::NotCompiled(_)) => {}
            other => other?,
        }
        file.check_finite()?;
        Ok(out)
    }

    /// The bytes, unchecked.
    fn assemble(&self) -> Result<Vec<u8>, Error> {
        let u32_of = |field: &'static str, v: usize| {
            u32::try_from(v).map_err(|_| Error::FieldOverflow { field, value: v })
        };
        let mut out = alloc::vec![0u8; HEADER_LEN];
        let section = |out: &mut Vec<u8>, bytes: &[u8]| -> Result<[u32; 2], Error> {
            while !out.len().is_multiple_of(ALIGN) {
                out.push(0);
            }
            let off = u32_of("file length", out.len())?;
            out.extend_from_slice(bytes);
            Ok([off, u32_of("section length", bytes.len())?])
        };
        let desc = section(&mut out, bytemuck::bytes_of(&self.desc.to_raw()?))?;

        let strings: Vec<&str> = self
            .src_vocab
            .iter()
            .chain(&self.tgt_vocab)
            .map(String::as_str)
            .chain([self.separator.as_str()])
            .chain(self.slots.iter().map(|(name, _)| name.as_str()))
            .collect();
        let mut vocab = Vec::new();
        vocab.extend_from_slice(&u32_of("vocabulary size", strings.len())?.to_le_bytes());
        let mut off = 0usize;
        for s in &strings {
            vocab.extend_from_slice(&u32_of("vocabulary strings", off)?.to_le_bytes());
            vocab.extend_from_slice(&u32_of("token length", s.len())?.to_le_bytes());
            off += s.len();
        }
        // Each vocabulary's ids sorted by their bytes (see `Vocab::parse_section`).
        for tokens in [&self.src_vocab, &self.tgt_vocab] {
            let n = u16::try_from(tokens.len()).map_err(|_| Error::FieldOverflow {
                field: "vocabulary size",
                value: tokens.len(),
            })?;
            let mut ids: Vec<u16> = (0..n).collect();
            ids.sort_by(|&a, &b| {
                tokens[a as usize]
                    .as_bytes()
                    .cmp(tokens[b as usize].as_bytes())
            });
            for id in ids {
                vocab.extend_from_slice(&id.to_le_bytes());
            }
        }
        // Each slot's token ids, in the order of the description's slots.
        for (_, tokens) in &self.slots {
            for id in tokens {
                vocab.extend_from_slice(&id.to_le_bytes());
            }
        }
        for s in &strings {
            vocab.extend_from_slice(s.as_bytes());
        }
        let vocab = section(&mut out, &vocab)?;

        // Data first, so the table can record absolute offsets.
        let table_len = self.tensors.len() * core::mem::size_of::<RawTensor>();
        let table_off = out.len().div_ceil(ALIGN) * ALIGN;
        let data_off = (table_off + table_len).div_ceil(ALIGN) * ALIGN;
        let mut data = Vec::new();
        let mut table = Vec::new();
        for t in &self.tensors {
            while data.len() % ALIGN != 0 {
                data.push(0);
            }
            table.push(RawTensor {
                id: t.id.to_u32(),
                dtype: t.dtype as u32,
                rows: u32_of("tensor rows", t.rows)?,
                cols: u32_of("tensor columns", t.cols)?,
                offset: u32_of("file length", data_off + data.len())?,
                len: u32_of("tensor length", t.bytes.len())?,
            });
            data.extend_from_slice(&t.bytes);
        }
        let table_sec = section(&mut out, bytemuck::cast_slice(&table))?;
        debug_assert_eq!(table_sec[0] as usize, table_off);
        let data_sec = section(&mut out, &data)?;
        debug_assert_eq!(data_sec[0] as usize, data_off);

        // The bias mask: the layers whose bias is among the tensors (an embedding's is
        // left out, so the reader names that tensor as not part of the model).
        let mut biases = 0u64;
        self.desc.for_each_layer(|s| {
            let bias = TensorId::new(s.role, s.layer, s.dir, Slot::Bias);
            if !s.is_embedding() && self.tensors.iter().any(|t| t.id == bias) {
                biases |= 1 << s.index;
            }
        });

        let header = RawHeader {
            magic: MAGIC,
            version: VERSION,
            precision: self.precision as u8,
            layout: self.layout as u8,
            file_len: u32_of("file length", out.len() + 4)?,
            desc,
            vocab,
            table: [table_sec[0], u32_of("tensor count", self.tensors.len())?],
            data: data_sec,
            biases: bias_words(biases),
            reserved: [0; 3],
        };
        out[..HEADER_LEN].copy_from_slice(bytemuck::bytes_of(&header));
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }
}

/// Copies model bytes into 8-byte aligned storage (what [`crate::ModelFile::parse`]
/// needs to view tensors in place).
pub fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut v = alloc::vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut v)[..bytes.len()].copy_from_slice(bytes);
    v
}
