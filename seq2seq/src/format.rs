//! The model file (`.s2s`): one format for host and device.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "S2SM"
//!      4     2  format version (6)
//!      6     1  precision (0 f32, 1 w8f32, 2 w8a16)
//!      7     1  weight layout of every int8 weight tensor (0 row, 1 v6m: see
//!               s2s_kernels::Layout; w8a16 only, 0 otherwise)
//!      8     4  file length in bytes, CRC included
//!     12    32  (offset, length) of: description, vocabularies; (offset, count) of the
//!               tensor table; (offset, length) of the tensor data
//!     44     8  bias mask: bit i (of the little-endian 64-bit value) set when layer i of
//!               ModelDesc::layer_specs has a bias
//!     52    12  reserved (0)
//!     64     .  sections in that order, each at the first 8-byte boundary after the
//!               previous one (the description right after the header), padding zero
//!   len-4    4  CRC-32 (IEEE) of every byte before it, right after the tensor data
//! ```
//!
//! All integers are little-endian. The description is a [`RawDesc`]; the vocabularies
//! are a string table (count, then `(offset, length)` pairs, then each vocabulary's ids
//! sorted by their strings as `u16`, then the UTF-8 strings one after another; see
//! [`Vocab`]) holding the source tokens, the target tokens and the output separator;
//! the tensor table is an array of [`RawTensor`], the tensors stored in
//! table order, each at the first 8-byte boundary after the previous one, so they can
//! be read in place from flash.
//!
//! [`ModelFile::parse`] trusts nothing and copies nothing: with checked arithmetic
//! (correct on 32-bit targets) it checks the header, the layout above byte for byte,
//! the description, the vocabularies (non-empty, distinct tokens) and that the table
//! holds exactly the tensors the description calls for at the file's precision, each
//! once, with its element type and shape, and valid quantization data. Only the float
//! values themselves are left to [`ModelFile::check_finite`], which the host tools and
//! the writer run and the firmware skips (a scan of every weight at boot).
//!
//! Files of other versions are refused with [`Error::UnsupportedVersion`] (version 1: no
//! bias mask, no sorted orders; version 2: no recurrent-cell fields in the description;
//! version 3: no beam-search rule in the description; version 4: none of the
//! OpenNMT-style decoder fields; version 5: no weight layout);
//! the host tools re-create them from their sources with `s2s import` and `s2s quantize`.

use bytemuck::{Pod, Zeroable};
use s2s_kernels::text::{Describe, Sink};
use s2s_kernels::{say, Layout, PrecisionKind, Requant};

use crate::desc::{LayerSpec, ModelDesc, RawDesc, MAX_SPECS};
use crate::net::ModelPrecision;
use crate::vocab::Vocab;
use crate::Error;

/// The first four bytes of every model file.
pub const MAGIC: [u8; 4] = *b"S2SM";
/// The format version this crate reads and writes (2: the bias mask in the header, the
/// vocabularies' sorted orders; 3: the description's recurrent cells, GRU or LSTM, with
/// their gate activations, cell-state formats, encoder masking, an LSTM decoder's
/// initial cell state and the attentional layer's input parts; 4: the beam-search
/// variant and its length-normalisation exponent; 5: the mean bridge and shared
/// bridges, input feeding, the attentional layer's activation, the output's
/// normalisation and source prefix tokens, at the end of the description; 6: the
/// weight layout in the header).
pub const VERSION: u16 = 6;
/// Most entries a tensor table can need: weights, quantization data and bias of every
/// layer.
pub const MAX_TENSORS: usize = 3 * MAX_SPECS;
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
    pub layout: u8,
    pub file_len: u32,
    pub desc: [u32; 2],
    pub vocab: [u32; 2],
    pub table: [u32; 2],
    pub data: [u32; 2],
    pub biases: [u32; 2],
    pub reserved: [u32; 3],
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
    BridgeC = 15,
}

impl Role {
    const ALL: [Role; 15] = [
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
        Role::BridgeC,
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
            Role::BridgeC => "bridge_c",
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

impl Describe for LayerName {
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        let id = self.0;
        out.put(id.role.name())?;
        if matches!(
            id.role,
            Role::EncWih
                | Role::EncWhh
                | Role::DecWih
                | Role::DecWhh
                | Role::Bridge
                | Role::BridgeC
        ) {
            say!(out; ".l", id.layer)?;
        }
        if matches!(id.role, Role::EncWih | Role::EncWhh) {
            out.put(if id.dir == 0 { ".fwd" } else { ".bwd" })?;
        }
        Ok(())
    }
}

impl core::fmt::Display for LayerName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.describe(f)
    }
}

impl Describe for TensorId {
    /// `encoder.w_ih.l0.fwd.weight`, `output.bias`, ...
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        self.layer_name().describe(out)?;
        out.put(match self.slot {
            Slot::Weight => ".weight",
            Slot::RowQ => ".q",
            Slot::Bias => ".bias",
        })
    }
}

impl core::fmt::Display for TensorId {
    /// `encoder.w_ih.l0.fwd.weight`, `output.bias`, ...
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.describe(f)
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

/// What a precision stores for each dense layer, taken from the kernels' types (the
/// one definition): element types per slot, weight planes, quantization data per row.
#[derive(Clone, Copy)]
struct Rules {
    weight: Option<DType>,
    row_q: Option<DType>,
    bias: Option<DType>,
    max_planes: usize,
    row_q_len: fn(usize, usize) -> usize,
    row_q_valid: fn(&[u8]) -> bool,
}

impl Rules {
    fn of(kind: PrecisionKind) -> Rules {
        match kind {
            PrecisionKind::F32 => Self::for_precision::<s2s_kernels::F32>(),
            PrecisionKind::W8F32 => Self::for_precision::<s2s_kernels::W8F32>(),
            PrecisionKind::W8A16 => Self::for_precision::<s2s_kernels::W8A16>(),
        }
    }

    fn for_precision<P: ModelPrecision>() -> Rules {
        Rules {
            weight: <P::Weight as Stored>::DTYPE,
            row_q: <P::RowQ as Stored>::DTYPE,
            bias: <P::Bias as Stored>::DTYPE,
            max_planes: P::MAX_PLANES,
            row_q_len: P::row_q_len,
            row_q_valid: |bytes| {
                let size = core::mem::size_of::<P::RowQ>();
                size == 0
                    || bytes
                        .chunks_exact(size)
                        .all(|c| P::row_q_valid(&bytemuck::pod_read_unaligned(c)))
            },
        }
    }

    /// The element type of `slot` of a layer, `None` when the precision stores none.
    fn dtype(&self, slot: Slot) -> Option<DType> {
        match slot {
            Slot::Weight => self.weight,
            Slot::RowQ => self.row_q,
            Slot::Bias => self.bias,
        }
    }
}

/// `n` rounded up to [`ALIGN`], `None` on overflow.
fn align_up(n: usize) -> Option<usize> {
    Some(n.checked_add(ALIGN - 1)? / ALIGN * ALIGN)
}

/// The bias mask of a header: bit `i` set when layer `i` has a bias.
fn bias_mask(h: &RawHeader) -> u64 {
    h.biases[0] as u64 | (h.biases[1] as u64) << 32
}

/// The header's two words for a bias mask.
#[cfg(feature = "alloc")]
pub(crate) fn bias_words(mask: u64) -> [u32; 2] {
    [mask as u32, (mask >> 32) as u32]
}

const _: () = assert!(MAX_SPECS <= 64, "the bias mask has 64 bits");

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
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

impl<'a> ModelFile<'a> {
    /// Parses and checks a model file (see the [module docs](self) for everything it
    /// checks). Bytes after the file's stated length are ignored (a flash region may be
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
        let (src, tgt, separator) = Vocab::parse_section(vocab, desc.src_vocab, desc.tgt_vocab)?;
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
        };
        file.check_tensors(bias_mask(&h), h.data[0] as usize, data.len())?;
        Ok(file)
    }

    /// Checks the tensor table against the description and the data section.
    fn check_tensors(&self, biases: u64, data_off: usize, data_len: usize) -> Result<(), Error> {
        let rules = Rules::of(self.precision);
        let d = &self.desc;
        // The bias mask: only layers that exist and are not embeddings.
        let mut layers = 0;
        let mut mask_ok = true;
        d.for_each_layer(|s| {
            layers += 1;
            mask_ok &= !(s.is_embedding() && biases >> s.index & 1 == 1);
        });
        if !mask_ok || (layers < 64 && biases >> layers != 0) {
            return Err(Error::BiasMask);
        }

        // Each entry on its own: a tensor of this model, once, of the right type, length
        // and shape, at its place in the data section.
        let data_end = data_off + data_len;
        let mut next = data_off;
        for i in 0..self.tensor_count() {
            let r = self.raw(i).ok_or(Error::SectionLength("tensor table"))?;
            let id = TensorId::from_u32(r.id).ok_or(Error::UnknownTensor(r.id))?;
            let spec = d
                .layer_spec(id.role, id.layer as usize, id.dir as usize)
                .ok_or(Error::UnknownTensor(r.id))?;
            let has_bias = biases >> spec.index & 1 == 1;
            let want = match id.slot {
                Slot::Bias if !has_bias => None,
                slot => rules.dtype(slot),
            }
            .ok_or(Error::UnknownTensor(r.id))?;
            if (0..i).any(|j| self.raw(j).is_some_and(|t| t.id == r.id)) {
                return Err(Error::DuplicateTensor(r.id));
            }
            let dtype = DType::from_code(r.dtype).ok_or(Error::UnknownDType {
                id: r.id,
                code: r.dtype,
            })?;
            if dtype != want {
                return Err(Error::TensorType {
                    id: r.id,
                    found: dtype,
                });
            }
            let (rows, cols) = (r.rows as usize, r.cols as usize);
            let len = rows
                .checked_mul(cols)
                .and_then(|n| n.checked_mul(dtype.size()));
            if len != Some(r.len as usize) {
                return Err(Error::TensorLength(r.id));
            }
            let shape_ok = match id.slot {
                Slot::Weight => {
                    rows == spec.rows
                        && cols.checked_rem(spec.cols) == Some(0)
                        && (1..=rules.max_planes).contains(&(cols / spec.cols))
                }
                // Checked against the weight's planes below.
                Slot::RowQ => rows == spec.rows,
                Slot::Bias => (rows, cols) == (spec.rows, 1),
            };
            if !shape_ok {
                let expected_cols = if id.slot == Slot::Bias { 1 } else { spec.cols };
                return Err(Error::TensorShape {
                    id: r.id,
                    expected: (spec.rows, expected_cols),
                    found: (rows, cols),
                });
            }
            let off = r.offset as usize;
            if Some(off) != align_up(next) {
                return Err(Error::TensorMisplaced(r.id));
            }
            let stop = off
                .checked_add(r.len as usize)
                .filter(|&e| e <= data_end)
                .ok_or(Error::TensorOutsideData(r.id))?;
            zero_padding(
                self.bytes
                    .get(next..off)
                    .ok_or(Error::TensorMisplaced(r.id))?,
            )?;
            next = stop;
        }
        if next != data_end {
            return Err(Error::TrailingData);
        }

        // Every tensor the description calls for is there; quantization data fits its
        // weight's planes and is in range.
        let mut result = Ok(());
        d.for_each_layer(|s| {
            if result.is_ok() {
                result = self.check_layer(&rules, &s, biases >> s.index & 1 == 1);
            }
        });
        result
    }

    /// The tensors of one layer: present, and its quantization data consistent.
    fn check_layer(&self, rules: &Rules, s: &LayerSpec, has_bias: bool) -> Result<(), Error> {
        let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
        let w = self
            .find(id(Slot::Weight))
            .ok_or(Error::MissingTensor(id(Slot::Weight).to_u32()))?;
        if rules.row_q.is_some() {
            let q_id = id(Slot::RowQ);
            let q = self.find(q_id).ok_or(Error::MissingTensor(q_id.to_u32()))?;
            // The weight's shape was checked: `s.cols` divides its columns.
            let planes = w.cols.checked_div(s.cols).unwrap_or(0);
            let per_row = (rules.row_q_len)(1, s.parts) * planes;
            if q.cols != per_row {
                return Err(Error::TensorShape {
                    id: q_id.to_u32(),
                    expected: (s.rows, per_row),
                    found: (q.rows, q.cols),
                });
            }
            if !(rules.row_q_valid)(self.bytes_of(&q)?) {
                return Err(Error::BadRowQ(q_id.to_u32()));
            }
        }
        if has_bias && self.find(id(Slot::Bias)).is_none() {
            return Err(Error::MissingTensor(id(Slot::Bias).to_u32()));
        }
        Ok(())
    }

    /// Entry `i` of the tensor table as stored (`i` below [`ModelFile::tensor_count`]).
    fn raw(&self, i: usize) -> Option<RawTensor> {
        let size = core::mem::size_of::<RawTensor>();
        self.table
            .chunks_exact(size)
            .nth(i)
            .map(bytemuck::pod_read_unaligned)
    }

    /// The bytes of tensor `t` (inside the file, as `parse` checked).
    fn bytes_of(&self, t: &TensorInfo) -> Result<&'a [u8], Error> {
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

    /// Checks that every float weight, bias and scale is finite ([`Error::NonFinite`]
    /// names the first tensor that is not). [`ModelFile::parse`] does not scan values;
    /// the host tools and the writer run this after it, the firmware does not (it
    /// would read every weight at boot, and a non-finite weight cannot make the
    /// decoder fault: it only gives wrong outputs).
    pub fn check_finite(&self) -> Result<(), Error> {
        for t in self.tensors().filter(|t| t.dtype == DType::F32) {
            let bytes = self.bytes_of(&t)?;
            let finite = bytes
                .chunks_exact(4)
                .all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite());
            if !finite {
                return Err(Error::NonFinite(t.id.to_u32()));
            }
        }
        Ok(())
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

/// Checks that padding bytes are zero.
fn zero_padding(pad: &[u8]) -> Result<(), Error> {
    if pad.iter().all(|&b| b == 0) {
        Ok(())
    } else {
        Err(Error::PaddingNotZero)
    }
}
