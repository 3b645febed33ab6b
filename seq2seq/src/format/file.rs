//! A parsed model file ([`ModelFile`]): [`ModelFile::parse`] reads the header and the
//! sections in their places and has the tensor table checked (`check`); the parsed file
//! gives views into its bytes without copying.

use s2s_kernels::{Layout, PrecisionKind};

use super::crc::crc32;
use super::layout::{
    align_up, bias_mask, RawHeader, RawTensor, HEADER_LEN, MAGIC, MAX_TENSORS, VERSION,
};
use super::tensor::{DType, Slot, Stored, TensorId};
use crate::desc::{ModelDesc, RawDesc};
use crate::features::{Feature, Features};
use crate::vocab::{Slots, Vocab};
use crate::Error;

/// A checked tensor table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorInfo {
    /// Which tensor.
    pub id: TensorId,
    /// Element type.
    pub dtype: DType,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Offset from the start of the file.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

/// A parsed, checked model file borrowing its bytes.
#[derive(Clone, Copy, Debug)]
pub struct ModelFile<'a> {
    bytes: &'a [u8],
    precision: PrecisionKind,
    layout: Layout,
    desc: ModelDesc,
    table: &'a [u8],
    src: Vocab<'a>,
    tgt: Vocab<'a>,
    separator: &'a str,
    /// The vocabulary section (the prefix slots are made from it when asked).
    vocab: &'a [u8],
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

impl<'a> ModelFile<'a> {
    /// Parses and checks a model file (see the [module docs](crate::format) for
    /// everything it checks). Bytes after the file's stated length are ignored (a flash region may be
    /// larger). Float values are not scanned: see [`ModelFile::check_finite`].
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        Self::parse_inner(bytes, true)
    }

    /// [`ModelFile::parse`] without the CRC, for bytes that have already passed
    /// [`ModelFile::parse`] and not changed since (a host holding a model in memory
    /// re-parses it cheaply). Every other check still runs.
    pub fn parse_verified(bytes: &'a [u8]) -> Result<Self, Error> {
        Self::parse_inner(bytes, false)
    }

    // Out of line: its temporaries (header, stored description, ...) would otherwise
    // stay on a small device's stack under everything the parsed file is used for.
    #[inline(never)]
    fn parse_inner(bytes: &'a [u8], check_crc: bool) -> Result<Self, Error> {
        if bytes.len() < 4 || bytes[..4] != MAGIC {
            return Err(Error::BadMagic);
        }
        // The version first: a file of another version may have another layout.
        if let [_, _, _, _, lo, hi, ..] = *bytes {
            let found = u16::from_le_bytes([lo, hi]);
            if found != VERSION {
                return Err(Error::UnsupportedVersion {
                    found,
                    supported: VERSION,
                });
            }
        }
        if bytes.len() < HEADER_LEN + 4 {
            return Err(Error::Truncated {
                needed: HEADER_LEN + 4,
                len: bytes.len(),
            });
        }
        let h: RawHeader = bytemuck::pod_read_unaligned(&bytes[..HEADER_LEN]);
        let len = h.file_len as usize;
        if len < HEADER_LEN + 4 {
            return Err(Error::FileLength(h.file_len));
        }
        if len > bytes.len() {
            return Err(Error::Truncated {
                needed: len,
                len: bytes.len(),
            });
        }
        let bytes = &bytes[..len];
        let end = len - 4;
        if check_crc {
            let stored = read_u32(bytes, end);
            let computed = crc32(&bytes[..end]);
            if stored != computed {
                return Err(Error::CrcMismatch { stored, computed });
            }
        }
        let precision =
            PrecisionKind::from_id(h.precision).ok_or(Error::UnknownPrecision(h.precision))?;
        if h.reserved != [0; 3] {
            return Err(Error::ReservedNotZero);
        }
        // A layout re-encodes int8 weights for the integer kernels: w8a16 only.
        let layout = Layout::from_id(h.layout)
            .filter(|&l| l == Layout::Row || precision == PrecisionKind::W8A16)
            .ok_or(Error::BadLayout(h.layout))?;

        // The sections, in order, each at the first aligned offset after the previous.
        let mut at = HEADER_LEN;
        let mut section = |what: &'static str, off: u32, n: usize| -> Result<&'a [u8], Error> {
            let off = off as usize;
            if Some(off) != align_up(at) {
                return Err(Error::SectionMisplaced(what));
            }
            let stop = off
                .checked_add(n)
                .filter(|&e| e <= end)
                .ok_or(Error::SectionOutOfFile(what))?;
            zero_padding(bytes.get(at..off).ok_or(Error::SectionMisplaced(what))?)?;
            at = stop;
            bytes.get(off..stop).ok_or(Error::SectionOutOfFile(what))
        };
        let desc_bytes = section("description", h.desc[0], h.desc[1] as usize)?;
        if desc_bytes.len() != core::mem::size_of::<RawDesc>() {
            return Err(Error::SectionLength("description"));
        }
        let desc = ModelDesc::from_raw(&bytemuck::pod_read_unaligned(desc_bytes))?;
        let vocab = section("vocabularies", h.vocab[0], h.vocab[1] as usize)?;
        let (src, tgt, separator) = Vocab::parse_section(vocab, &desc)?;
        let count = h.table[1];
        if count as usize > MAX_TENSORS {
            return Err(Error::TooManyTensors(count));
        }
        let entry_size = core::mem::size_of::<RawTensor>();
        let table = section("tensor table", h.table[0], count as usize * entry_size)?;
        let data = section("tensor data", h.data[0], h.data[1] as usize)?;
        if at != end {
            return Err(Error::SectionLength("tensor data"));
        }
        let file = ModelFile {
            bytes,
            precision,
            layout,
            desc,
            table,
            src,
            tgt,
            separator,
            vocab,
        };
        file.check_tensors(bias_mask(&h), h.data[0] as usize, data.len())?;
        Ok(file)
    }

    /// Entry `i` of the tensor table as stored (`i` below [`ModelFile::tensor_count`]).
    pub(super) fn raw(&self, i: usize) -> Option<RawTensor> {
        let size = core::mem::size_of::<RawTensor>();
        self.table
            .chunks_exact(size)
            .nth(i)
            .map(bytemuck::pod_read_unaligned)
    }

    /// The bytes of tensor `t` (inside the file, as `parse` checked).
    pub(super) fn bytes_of(&self, t: &TensorInfo) -> Result<&'a [u8], Error> {
        t.offset
            .checked_add(t.len)
            .and_then(|end| self.bytes.get(t.offset..end))
            .ok_or(Error::TensorOutsideData(t.id.to_u32()))
    }

    /// Entry `i` of the tensor table (checked by `parse`).
    fn entry(&self, i: usize) -> Option<TensorInfo> {
        let r = self.raw(i)?;
        Some(TensorInfo {
            id: TensorId::from_u32(r.id)?,
            dtype: DType::from_code(r.dtype)?,
            rows: r.rows as usize,
            cols: r.cols as usize,
            offset: r.offset as usize,
            len: r.len as usize,
        })
    }

    /// The file's bytes (up to its stated length).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The CRC-32 stored at the end of the file (checked by [`ModelFile::parse`]): with
    /// the length, what tells two model files apart (the firmware's `MODEL` line).
    pub fn crc(&self) -> u32 {
        match *self.bytes {
            [.., a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
            _ => 0, // never: a parsed file holds a header and its CRC
        }
    }

    /// The precision of its tensors.
    pub fn precision(&self) -> PrecisionKind {
        self.precision
    }
    /// How its int8 weight tensors are stored.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// The model description.
    pub fn desc(&self) -> &ModelDesc {
        &self.desc
    }
    /// Source vocabulary.
    pub fn src_vocab(&self) -> Vocab<'a> {
        self.src
    }
    /// Target vocabulary.
    pub fn tgt_vocab(&self) -> Vocab<'a> {
        self.tgt
    }
    /// String written between output tokens.
    pub fn separator(&self) -> &'a str {
        self.separator
    }
    /// The prefix slots' names and tokens.
    pub fn slots(&self) -> Slots<'a> {
        Slots::in_section(self.vocab, &self.desc)
    }

    /// The vocabulary section's bytes.
    pub fn vocab_section(&self) -> &'a [u8] {
        self.vocab
    }
    /// Number of tensors.
    pub fn tensor_count(&self) -> usize {
        self.table.len() / core::mem::size_of::<RawTensor>()
    }
    /// Every tensor's table entry.
    pub fn tensors(&self) -> impl Iterator<Item = TensorInfo> + '_ {
        // Entries were all checked by `parse`.
        (0..self.tensor_count()).filter_map(|i| self.entry(i))
    }
    /// The entry of tensor `id`, if present.
    pub fn find(&self, id: TensorId) -> Option<TensorInfo> {
        self.tensors().find(|t| t.id == id)
    }

    /// The data of tensor `id` as `T`, if present; checks its element type and that it
    /// is aligned in memory (load files into 8-byte aligned buffers).
    pub fn data<T: Stored>(&self, id: TensorId) -> Result<Option<(TensorInfo, &'a [T])>, Error> {
        let Some(t) = self.find(id) else {
            return Ok(None);
        };
        if Some(t.dtype) != T::DTYPE {
            return Err(Error::TensorType {
                id: id.to_u32(),
                found: t.dtype,
            });
        }
        let bytes = self.bytes_of(&t)?;
        let data = bytemuck::try_cast_slice(bytes).map_err(|_| Error::Misaligned(id.to_u32()))?;
        Ok(Some((t, data)))
    }

    /// Parameters of the model: the weights of every layer the description calls for
    /// (once, however many planes store them) and every bias.
    pub fn parameters(&self) -> usize {
        // Without the list of layers: the firmware calls this with its session on the
        // stack.
        let mut weights = 0;
        self.desc.for_each_layer(|s| weights += s.rows * s.cols);
        let biases: usize = self
            .tensors()
            .filter(|t| t.id.slot == Slot::Bias)
            .map(|t| t.rows * t.cols)
            .sum();
        weights + biases
    }

    /// Bytes of tensor data (all tensors).
    pub fn tensor_bytes(&self) -> usize {
        self.tensors().map(|t| t.len).sum()
    }
}

impl ModelFile<'_> {
    /// The parts this model file needs: its description's ([`ModelDesc::features`]) and
    /// the kernel of its weight layout where that is a part of its own.
    pub fn features(&self) -> Features {
        let set = self.desc().features();
        match self.layout() {
            Layout::Row => set,
            Layout::V6m => set.with(Feature::V6mLayout),
        }
    }
}

/// Checks that padding bytes are zero.
pub(super) fn zero_padding(pad: &[u8]) -> Result<(), Error> {
    if pad.iter().all(|&b| b == 0) {
        Ok(())
    } else {
        Err(Error::PaddingNotZero)
    }
}
