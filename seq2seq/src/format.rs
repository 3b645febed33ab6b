//! The model file (`.s2s`): one format for host and device.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "S2SM"
//!      4     2  format version (1)
//!      6     1  precision (0 f32, 1 w8f32, 2 w8a16)
//!      7     1  reserved (0)
//!      8     4  file length in bytes, CRC included
//!     12    32  (offset, length) of: description, vocabularies, tensor table, tensor data
//!     44    20  reserved (0)
//!     64     .  sections, each starting on an 8-byte boundary
//!   len-4    4  CRC-32 (IEEE) of every byte before it
//! ```
//!
//! All integers are little-endian. The description is a [`RawDesc`]; the vocabularies
//! are a string table (count, then `(offset, length)` pairs, then UTF-8 bytes) holding
//! the source tokens, the target tokens and the output separator; the tensor table is
//! an array of [`RawTensor`]; every tensor starts on an 8-byte boundary so it can be
//! read in place from flash. [`ModelFile::parse`] checks all of it without copying.

use bytemuck::{Pod, Zeroable};
use s2s_kernels::{PrecisionKind, Requant};

use crate::desc::{ModelDesc, RawDesc};
use crate::vocab::Vocab;
use crate::Error;

/// The first four bytes of every model file.
pub const MAGIC: [u8; 4] = *b"S2SM";
/// The format version this crate reads and writes.
pub const VERSION: u16 = 1;
/// Alignment of every section and tensor, in bytes.
pub const ALIGN: usize = 8;
/// Size of the fixed header.
pub const HEADER_LEN: usize = core::mem::size_of::<RawHeader>();

/// The fixed header as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
#[allow(missing_docs)]
pub struct RawHeader {
    pub magic: [u8; 4],
    pub version: u16,
    pub precision: u8,
    pub reserved0: u8,
    pub file_len: u32,
    pub desc: [u32; 2],
    pub vocab: [u32; 2],
    pub table: [u32; 2],
    pub data: [u32; 2],
    pub reserved: [u32; 5],
}

/// One entry of the tensor table as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct RawTensor {
    /// A [`TensorId`] in its `u32` form.
    pub id: u32,
    /// A [`DType`] code.
    pub dtype: u32,
    /// Rows.
    pub rows: u32,
    /// Columns (1 for vectors).
    pub cols: u32,
    /// Offset from the start of the file.
    pub offset: u32,
    /// Length in bytes.
    pub len: u32,
}

/// Element types of stored tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum DType {
    /// f32.
    F32 = 0,
    /// i8.
    I8 = 1,
    /// i32.
    I32 = 2,
    /// A [`Requant`] (two i32).
    Requant = 3,
}

impl DType {
    /// The type with this code.
    pub fn from_code(c: u32) -> Option<Self> {
        match c {
            0 => Some(Self::F32),
            1 => Some(Self::I8),
            2 => Some(Self::I32),
            3 => Some(Self::Requant),
            _ => None,
        }
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::F32 | Self::I32 => 4,
            Self::Requant => 8,
        }
    }
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::I8 => "i8",
            Self::I32 => "i32",
            Self::Requant => "requant",
        }
    }
}

/// Element types that tensors are read as.
pub trait Stored: Pod {
    /// The stored type, `None` for `()` (no data).
    const DTYPE: Option<DType>;
}
impl Stored for f32 {
    const DTYPE: Option<DType> = Some(DType::F32);
}
impl Stored for i8 {
    const DTYPE: Option<DType> = Some(DType::I8);
}
impl Stored for i32 {
    const DTYPE: Option<DType> = Some(DType::I32);
}
impl Stored for Requant {
    const DTYPE: Option<DType> = Some(DType::Requant);
}
impl Stored for () {
    const DTYPE: Option<DType> = None;
}

/// Which layer of the model a tensor belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Role {
    EncEmb = 1,
    EncWih = 2,
    EncWhh = 3,
    MemoryProj = 4,
    AttnQuery = 5,
    AttnKey = 6,
    AttnV = 7,
    AttnGeneral = 8,
    Bridge = 9,
    DecEmb = 10,
    DecWih = 11,
    DecWhh = 12,
    Attentional = 13,
    Out = 14,
}

impl Role {
    const ALL: [Role; 14] = [
        Role::EncEmb,
        Role::EncWih,
        Role::EncWhh,
        Role::MemoryProj,
        Role::AttnQuery,
        Role::AttnKey,
        Role::AttnV,
        Role::AttnGeneral,
        Role::Bridge,
        Role::DecEmb,
        Role::DecWih,
        Role::DecWhh,
        Role::Attentional,
        Role::Out,
    ];

    /// The name used in tensor names and configuration files.
    pub fn name(self) -> &'static str {
        match self {
            Role::EncEmb => "encoder.embedding",
            Role::EncWih => "encoder.w_ih",
            Role::EncWhh => "encoder.w_hh",
            Role::MemoryProj => "memory_proj",
            Role::AttnQuery => "attention.query",
            Role::AttnKey => "attention.key",
            Role::AttnV => "attention.v",
            Role::AttnGeneral => "attention.general",
            Role::Bridge => "bridge",
            Role::DecEmb => "decoder.embedding",
            Role::DecWih => "decoder.w_ih",
            Role::DecWhh => "decoder.w_hh",
            Role::Attentional => "attentional",
            Role::Out => "output",
        }
    }
}

/// The three tensors of a dense layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Slot {
    /// The weight matrix.
    Weight = 0,
    /// Per-row quantization data.
    RowQ = 1,
    /// The bias.
    Bias = 2,
}

/// Identifies a tensor: role, layer, direction (0 forward, 1 backward) and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorId {
    /// The layer it belongs to.
    pub role: Role,
    /// Layer index in a stack (0 otherwise).
    pub layer: u8,
    /// Direction: 0 forward, 1 backward.
    pub dir: u8,
    /// Which of the layer's tensors.
    pub slot: Slot,
}

impl TensorId {
    /// The tensor `slot` of layer `role`/`layer`/`dir`.
    pub fn new(role: Role, layer: usize, dir: usize, slot: Slot) -> Self {
        TensorId {
            role,
            layer: layer as u8,
            dir: dir as u8,
            slot,
        }
    }
    /// The stored form.
    pub fn to_u32(self) -> u32 {
        self.role as u32
            | (self.layer as u32) << 8
            | (self.dir as u32) << 16
            | (self.slot as u32) << 24
    }
    /// From the stored form.
    pub fn from_u32(v: u32) -> Option<Self> {
        let role = *Role::ALL.iter().find(|r| **r as u32 == v & 0xff)?;
        let slot = match v >> 24 {
            0 => Slot::Weight,
            1 => Slot::RowQ,
            2 => Slot::Bias,
            _ => return None,
        };
        let (layer, dir) = ((v >> 8) as u8, (v >> 16) as u8);
        if dir > 1 || layer as usize >= crate::desc::MAX_LAYERS {
            return None;
        }
        Some(TensorId {
            role,
            layer,
            dir,
            slot,
        })
    }
}

impl TensorId {
    /// The layer's name without the slot: `encoder.w_ih.l0.fwd`, `output`, ...
    /// (the keys of a model configuration's `[weights]` table).
    pub fn layer_name(&self) -> LayerName {
        LayerName(*self)
    }
}

/// Displays a tensor's layer name (see [`TensorId::layer_name`]).
pub struct LayerName(TensorId);

impl core::fmt::Display for LayerName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let id = self.0;
        f.write_str(id.role.name())?;
        if matches!(
            id.role,
            Role::EncWih | Role::EncWhh | Role::DecWih | Role::DecWhh | Role::Bridge
        ) {
            write!(f, ".l{}", id.layer)?;
        }
        if matches!(id.role, Role::EncWih | Role::EncWhh) {
            f.write_str(if id.dir == 0 { ".fwd" } else { ".bwd" })?;
        }
        Ok(())
    }
}

impl core::fmt::Display for TensorId {
    /// `encoder.w_ih.l0.fwd.weight`, `output.bias`, ...
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.layer_name())?;
        f.write_str(match self.slot {
            Slot::Weight => ".weight",
            Slot::RowQ => ".q",
            Slot::Bias => ".bias",
        })
    }
}

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

/// CRC-32 (IEEE 802.3, reflected, as zlib and zip compute it).
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32_update(0, bytes)
}

/// Continues a CRC-32 over more bytes.
pub fn crc32_update(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in bytes {
        c = CRC_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

static CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// A parsed, checked model file borrowing its bytes.
#[derive(Clone, Copy, Debug)]
pub struct ModelFile<'a> {
    bytes: &'a [u8],
    precision: PrecisionKind,
    desc: ModelDesc,
    table: &'a [u8],
    src: Vocab<'a>,
    tgt: Vocab<'a>,
    separator: &'a str,
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

impl<'a> ModelFile<'a> {
    /// Parses and checks a model file: magic, version, length, CRC, sections, the
    /// description, the vocabularies and every tensor's place, type and size. Bytes
    /// after the file's stated length are ignored (a flash region may be larger).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        Self::parse_inner(bytes, true)
    }

    /// [`ModelFile::parse`] without the CRC, for bytes that have already passed
    /// [`ModelFile::parse`] and not changed since (a host holding a model in memory
    /// re-parses it cheaply). Every other check still runs.
    pub fn parse_verified(bytes: &'a [u8]) -> Result<Self, Error> {
        Self::parse_inner(bytes, false)
    }

    fn parse_inner(bytes: &'a [u8], check_crc: bool) -> Result<Self, Error> {
        if bytes.len() < 4 || bytes[..4] != MAGIC {
            return Err(Error::BadMagic);
        }
        if bytes.len() < HEADER_LEN + 4 {
            return Err(Error::Truncated {
                needed: HEADER_LEN + 4,
                len: bytes.len(),
            });
        }
        let h: RawHeader = bytemuck::pod_read_unaligned(&bytes[..HEADER_LEN]);
        if h.version != VERSION {
            return Err(Error::UnsupportedVersion(h.version));
        }
        let len = h.file_len as usize;
        if len > bytes.len() {
            return Err(Error::Truncated {
                needed: len,
                len: bytes.len(),
            });
        }
        if len < HEADER_LEN + 4 {
            return Err(Error::BadSection("file length"));
        }
        let bytes = &bytes[..len];
        if check_crc {
            let stored = read_u32(bytes, len - 4);
            let computed = crc32(&bytes[..len - 4]);
            if stored != computed {
                return Err(Error::CrcMismatch { stored, computed });
            }
        }
        let precision =
            PrecisionKind::from_id(h.precision).ok_or(Error::UnknownPrecision(h.precision))?;
        let section = |what: &'static str, [off, n]: [u32; 2]| -> Result<&'a [u8], Error> {
            let (off, n) = (off as usize, n as usize);
            if off < HEADER_LEN
                || off % ALIGN != 0
                || off.checked_add(n).is_none_or(|e| e > len - 4)
            {
                return Err(Error::BadSection(what));
            }
            Ok(&bytes[off..off + n])
        };
        let desc_bytes = section("description", h.desc)?;
        if desc_bytes.len() != core::mem::size_of::<RawDesc>() {
            return Err(Error::BadSection("description length"));
        }
        let desc = ModelDesc::from_raw(&bytemuck::pod_read_unaligned(desc_bytes))?;
        let (src, tgt, separator) = Vocab::parse_section(
            section("vocabularies", h.vocab)?,
            desc.src_vocab,
            desc.tgt_vocab,
        )?;
        let (table_off, count) = (h.table[0], h.table[1] as usize);
        let table = section(
            "tensor table",
            [
                table_off,
                (count * core::mem::size_of::<RawTensor>()) as u32,
            ],
        )?;
        let data = section("tensor data", h.data)?;
        let file = ModelFile {
            bytes,
            precision,
            desc,
            table,
            src,
            tgt,
            separator,
        };
        let data_range = h.data[0] as usize..h.data[0] as usize + data.len();
        for i in 0..count {
            let t = file.entry(i)?;
            if t.offset % ALIGN != 0
                || t.offset < data_range.start
                || t.offset + t.len > data_range.end
            {
                return Err(Error::BadTensor {
                    id: t.id.to_u32(),
                    reason: "data outside the data section or misaligned",
                });
            }
            for j in 0..i {
                if file.entry(j)?.id == t.id {
                    return Err(Error::DuplicateTensor(t.id.to_u32()));
                }
            }
        }
        Ok(file)
    }

    /// Entry `i` of the tensor table, checked.
    fn entry(&self, i: usize) -> Result<TensorInfo, Error> {
        let size = core::mem::size_of::<RawTensor>();
        let r: RawTensor = bytemuck::pod_read_unaligned(&self.table[i * size..(i + 1) * size]);
        let id = TensorId::from_u32(r.id).ok_or(Error::BadTensor {
            id: r.id,
            reason: "unknown tensor id",
        })?;
        let dtype = DType::from_code(r.dtype).ok_or(Error::BadTensor {
            id: r.id,
            reason: "unknown element type",
        })?;
        let (rows, cols) = (r.rows as usize, r.cols as usize);
        let expect = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(dtype.size()));
        if expect != Some(r.len as usize) {
            return Err(Error::BadTensor {
                id: r.id,
                reason: "length differs from rows x cols x element size",
            });
        }
        Ok(TensorInfo {
            id,
            dtype,
            rows,
            cols,
            offset: r.offset as usize,
            len: r.len as usize,
        })
    }

    /// The file's bytes (up to its stated length).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The precision of its tensors.
    pub fn precision(&self) -> PrecisionKind {
        self.precision
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
    /// Number of tensors.
    pub fn tensor_count(&self) -> usize {
        self.table.len() / core::mem::size_of::<RawTensor>()
    }
    /// Every tensor's table entry.
    pub fn tensors(&self) -> impl Iterator<Item = TensorInfo> + '_ {
        // Entries were all checked by `parse`.
        (0..self.tensor_count()).filter_map(|i| self.entry(i).ok())
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
        let bytes = &self.bytes[t.offset..t.offset + t.len];
        let data = bytemuck::try_cast_slice(bytes).map_err(|_| Error::Misaligned(id.to_u32()))?;
        Ok(Some((t, data)))
    }

    /// Parameters of the model: the weights of every layer the description calls for
    /// (once, however many planes store them) and every bias.
    pub fn parameters(&self) -> usize {
        let weights: usize = self
            .desc
            .layer_specs()
            .iter()
            .map(|s| s.rows * s.cols)
            .sum();
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
