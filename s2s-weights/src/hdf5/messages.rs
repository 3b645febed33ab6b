//! Decoders for the header messages the reader needs: dataspace, datatype, data
//! layout, filter pipeline, links, link info, symbol table and continuation.

use super::reader::{Reader, Sizes};
use crate::convert::{ByteOrder, FloatKind};
use crate::error::Problem;

/// Dataspace: the dataset's dimensions.
pub(super) const DATASPACE: u16 = 0x0001;
/// Link info: where a new-style group keeps links that do not fit in the header.
pub(super) const LINK_INFO: u16 = 0x0002;
/// Datatype: the element type.
pub(super) const DATATYPE: u16 = 0x0003;
/// Link: one named link of a compact new-style group.
pub(super) const LINK: u16 = 0x0006;
/// External data files: raw data stored in other files.
pub(super) const EXTERNAL_FILES: u16 = 0x0007;
/// Data layout: where and how the raw data is stored.
pub(super) const LAYOUT: u16 = 0x0008;
/// Filter pipeline: compression and other filters applied to chunks.
pub(super) const FILTER_PIPELINE: u16 = 0x000b;
/// Continuation: another block of header messages.
pub(super) const CONTINUATION: u16 = 0x0010;
/// Symbol table: an old-style group's B-tree and local heap.
pub(super) const SYMBOL_TABLE: u16 = 0x0011;

/// HDF5's limit on the number of dimensions.
const MAX_RANK: usize = 32;

/// The shape of a dataset's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Dataspace {
    /// A null dataspace: the dataset holds no elements at all.
    Null,
    /// Scalar (no dimensions) or simple.
    Shape {
        /// Current dimensions.
        dims: Vec<usize>,
        /// Maximum dimensions (`u64::MAX` = unlimited); equal to `dims` if not stored.
        max_dims: Vec<u64>,
    },
}

/// Dataspace message, versions 1 and 2.
pub(super) fn parse_dataspace(data: &[u8], sizes: Sizes) -> Result<Dataspace, Problem> {
    let mut reader = Reader::new(data, sizes, "dataspace message");
    let version = reader.u8()?;
    let rank = usize::from(reader.u8()?);
    let flags = reader.u8()?;
    match version {
        1 => reader.skip(5)?,
        2 => match reader.u8()? {
            0 | 1 => {}
            2 => return Ok(Dataspace::Null),
            other => return Err(Problem(format!("dataspace type {other} is invalid"))),
        },
        _ => {
            return Err(Problem(format!(
                "dataspace message version {version} is unsupported"
            )))
        }
    }
    if rank > MAX_RANK {
        return Err(Problem(format!("dataspace rank {rank} exceeds {MAX_RANK}")));
    }
    let raw = (0..rank)
        .map(|_| reader.length())
        .collect::<Result<Vec<u64>, Problem>>()?;
    let max_dims = if flags & 0x01 != 0 {
        let width = sizes.length;
        let unlimited = if width >= 8 {
            u64::MAX
        } else {
            (1u64 << (width * 8)) - 1
        };
        (0..rank)
            .map(|_| {
                let max = reader.length()?;
                Ok(if max == unlimited { u64::MAX } else { max })
            })
            .collect::<Result<Vec<u64>, Problem>>()?
    } else {
        raw.clone()
    };
    let dims = raw
        .iter()
        .map(|&dim| {
            usize::try_from(dim).map_err(|_| Problem(format!("dimension {dim} is too large")))
        })
        .collect::<Result<Vec<usize>, Problem>>()?;
    Ok(Dataspace::Shape { dims, max_dims })
}

/// What the datatype message says about the elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Element {
    /// An IEEE float of a supported width.
    Float(FloatKind, ByteOrder),
    /// Any other class (integer, string, compound...): the dataset is not read but
    /// listed with this name of its element type (`int64`, `uint8`, `string`...).
    NotFloat(String),
}

/// The name of a datatype class other than floating point: `int64`, `uint8` for the
/// fixed-point class (its sign bit and size), the class's name for the others.
fn class_name(class: u8, bits0: u8, size: u32) -> String {
    match class {
        0 => {
            let sign = if bits0 & 0x08 != 0 { "int" } else { "uint" };
            format!("{sign}{}", u64::from(size) * 8)
        }
        2 => "time".into(),
        3 => "string".into(),
        4 => "bitfield".into(),
        5 => "opaque".into(),
        6 => "compound".into(),
        7 => "reference".into(),
        8 => "enumerated".into(),
        9 => "variable-length".into(),
        10 => "array".into(),
        other => format!("datatype class {other}"),
    }
}

/// Datatype message: only the floating-point class (1) is decoded; its bit layout must
/// be exactly IEEE half, single or double precision, or bfloat16.
pub(super) fn parse_datatype(data: &[u8], sizes: Sizes) -> Result<Element, Problem> {
    let mut reader = Reader::new(data, sizes, "datatype message");
    let class_and_version = reader.u8()?;
    let bits = reader.take(3)?;
    let size = reader.u32()?;
    let class = class_and_version & 0x0f;
    if class != 1 {
        return Ok(Element::NotFloat(class_name(class, bits[0], size)));
    }
    let order = match (bits[0] & 0x01, bits[0] & 0x40) {
        (0, 0) => ByteOrder::Little,
        (1, 0) => ByteOrder::Big,
        _ => {
            return Err(Problem(format!(
                "unsupported datatype (class 1, size {size}, VAX byte order)"
            )))
        }
    };
    let layout = FloatLayout {
        size,
        sign: bits[1],
        offset: reader.u16()?,
        precision: reader.u16()?,
        exponent_at: reader.u8()?,
        exponent_bits: reader.u8()?,
        mantissa_at: reader.u8()?,
        mantissa_bits: reader.u8()?,
        bias: reader.u32()?,
    };
    let kind = layout.kind().ok_or_else(|| {
        Problem(format!(
            "unsupported datatype (class 1, size {size}, {layout})"
        ))
    })?;
    Ok(Element::Float(kind, order))
}

/// The bit layout fields of a floating-point datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FloatLayout {
    size: u32,
    sign: u8,
    offset: u16,
    precision: u16,
    exponent_at: u8,
    exponent_bits: u8,
    mantissa_at: u8,
    mantissa_bits: u8,
    bias: u32,
}

impl FloatLayout {
    /// Matches the layout against the encodings `convert` understands.
    fn kind(&self) -> Option<FloatKind> {
        let fields = (
            self.size,
            self.sign,
            self.offset,
            self.precision,
            self.exponent_at,
            self.exponent_bits,
            self.mantissa_at,
            self.mantissa_bits,
            self.bias,
        );
        match fields {
            (2, 15, 0, 16, 10, 5, 0, 10, 15) => Some(FloatKind::F16),
            (2, 15, 0, 16, 7, 8, 0, 7, 127) => Some(FloatKind::Bf16),
            (4, 31, 0, 32, 23, 8, 0, 23, 127) => Some(FloatKind::F32),
            (8, 63, 0, 64, 52, 11, 0, 52, 1023) => Some(FloatKind::F64),
            _ => None,
        }
    }
}

impl std::fmt::Display for FloatLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bits with {} exponent and {} mantissa bits, bias {}",
            self.precision, self.exponent_bits, self.mantissa_bits, self.bias
        )
    }
}

/// Where a dataset's raw data is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Layout<'a> {
    /// Stored inside the layout message itself.
    Compact(&'a [u8]),
    /// One block of `size` bytes at `address` (undefined if never written).
    Contiguous { address: Option<u64>, size: u64 },
    /// Split into equal chunks found through an index.
    Chunked(ChunkLayout),
}

/// A chunked layout: the chunk shape and how the chunks are indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ChunkLayout {
    /// Chunk dimensions in elements, one per dataset dimension.
    pub dims: Vec<usize>,
    /// Element size in bytes, as recorded with the chunk dimensions.
    pub element_size: u64,
    /// How chunk addresses are found.
    pub index: ChunkIndex,
    /// Address of the index (or of the data, for single-chunk and implicit indexes).
    pub address: Option<u64>,
}

/// The chunk index types of layout messages v3 (always a v1 B-tree) and v4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChunkIndex {
    /// Version 1 B-tree of type 1 (layout message version 3).
    BTreeV1,
    /// One chunk holding the whole dataset.
    SingleChunk,
    /// Chunks stored back to back in row-major chunk order.
    Implicit,
    /// A fixed array (`FAHD`/`FADB`) of chunk addresses.
    FixedArray,
    /// Index types this reader does not implement (extensible array, v2 B-tree).
    Unsupported(&'static str),
}

/// Data layout message, versions 3 and 4.
pub(super) fn parse_layout<'a>(data: &'a [u8], sizes: Sizes) -> Result<Layout<'a>, Problem> {
    let mut reader = Reader::new(data, sizes, "data layout message");
    let version = reader.u8()?;
    if !(3..=4).contains(&version) {
        return Err(Problem(format!(
            "data layout message version {version} is unsupported (only 3 and 4)"
        )));
    }
    match reader.u8()? {
        0 => {
            let size = reader.u16()?;
            Ok(Layout::Compact(reader.take(usize::from(size))?))
        }
        1 => Ok(Layout::Contiguous {
            address: reader.address()?,
            size: reader.length()?,
        }),
        2 if version == 3 => parse_chunked_v3(&mut reader).map(Layout::Chunked),
        2 => parse_chunked_v4(&mut reader).map(Layout::Chunked),
        3 => Err("virtual dataset layout is unsupported".into()),
        other => Err(Problem(format!("data layout class {other} is invalid"))),
    }
}

/// v3 chunked: dimensionality, B-tree address, then that many 4-byte sizes (the last
/// one being the element size).
fn parse_chunked_v3(reader: &mut Reader<'_>) -> Result<ChunkLayout, Problem> {
    let count = usize::from(reader.u8()?);
    let address = reader.address()?;
    let sizes = (0..count)
        .map(|_| reader.u32().map(u64::from))
        .collect::<Result<Vec<u64>, Problem>>()?;
    chunk_layout(&sizes, ChunkIndex::BTreeV1, address)
}

/// v4 chunked: flags, dimensionality, size width, sizes, index type and its parameters,
/// then the index address.
fn parse_chunked_v4(reader: &mut Reader<'_>) -> Result<ChunkLayout, Problem> {
    let flags = reader.u8()?;
    let count = usize::from(reader.u8()?);
    let width = usize::from(reader.u8()?);
    let sizes = (0..count)
        .map(|_| reader.uint(width))
        .collect::<Result<Vec<u64>, Problem>>()?;
    let index = match reader.u8()? {
        1 => {
            if flags & 0x02 != 0 {
                // Size and filter mask of a filtered single chunk; filtered data is
                // rejected later through the filter pipeline message.
                reader.length()?;
                reader.skip(4)?;
            }
            ChunkIndex::SingleChunk
        }
        2 => ChunkIndex::Implicit,
        3 => {
            reader.skip(1)?; // page bits; also recorded in the array header
            ChunkIndex::FixedArray
        }
        4 => {
            reader.skip(5)?;
            ChunkIndex::Unsupported("extensible array")
        }
        5 => {
            reader.skip(6)?;
            ChunkIndex::Unsupported("version 2 B-tree")
        }
        other => return Err(Problem(format!("chunk index type {other} is invalid"))),
    };
    let address = reader.address()?;
    chunk_layout(&sizes, index, address)
}

/// Splits "chunk dims + element size" and checks the dims are usable.
fn chunk_layout(
    sizes: &[u64],
    index: ChunkIndex,
    address: Option<u64>,
) -> Result<ChunkLayout, Problem> {
    let Some((&element_size, dims)) = sizes.split_last() else {
        return Err("chunked layout has no dimensions".into());
    };
    if dims.is_empty() || dims.len() > MAX_RANK {
        return Err(Problem(format!("chunk rank {} is invalid", dims.len())));
    }
    let dims = dims
        .iter()
        .map(|&dim| usize::try_from(dim).ok().filter(|&dim| dim > 0))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| Problem(format!("chunk dimensions {sizes:?} are invalid")))?;
    Ok(ChunkLayout {
        dims,
        element_size,
        index,
        address,
    })
}

/// Filter pipeline message: the number of filters (versions 1 and 2 agree on this).
pub(super) fn filter_count(data: &[u8], sizes: Sizes) -> Result<u8, Problem> {
    let mut reader = Reader::new(data, sizes, "filter pipeline message");
    let _version = reader.u8()?;
    reader.u8()
}

/// A link message: `Some((name, object address))` for a hard link, `None` for soft and
/// external links, which are not followed.
pub(super) fn parse_link(data: &[u8], sizes: Sizes) -> Result<Option<(String, u64)>, Problem> {
    let mut reader = Reader::new(data, sizes, "link message");
    let version = reader.u8()?;
    if version != 1 {
        return Err(Problem(format!(
            "link message version {version} is unsupported"
        )));
    }
    let flags = reader.u8()?;
    let link_type = if flags & 0x08 != 0 { reader.u8()? } else { 0 };
    if flags & 0x04 != 0 {
        reader.skip(8)?; // creation order
    }
    if flags & 0x10 != 0 {
        reader.skip(1)?; // character set
    }
    let name_len = reader.uint(1 << (flags & 0x03))?;
    let name = reader.take(usize::try_from(name_len).unwrap_or(usize::MAX))?;
    let name = link_name(name)?;
    if link_type != 0 {
        return Ok(None);
    }
    let address = reader
        .address()?
        .ok_or_else(|| Problem(format!("hard link {name} has an undefined address")))?;
    Ok(Some((name, address)))
}

/// Checks a link name is usable as a path component.
pub(super) fn link_name(raw: &[u8]) -> Result<String, Problem> {
    let name = String::from_utf8_lossy(raw).into_owned();
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Problem(format!("invalid link name {name:?}")));
    }
    Ok(name)
}

/// Link info message: true if the group keeps its links in dense storage (a fractal
/// heap), which this reader does not implement.
pub(super) fn uses_dense_links(data: &[u8], sizes: Sizes) -> Result<bool, Problem> {
    let mut reader = Reader::new(data, sizes, "link info message");
    let version = reader.u8()?;
    if version != 0 {
        return Err(Problem(format!(
            "link info message version {version} is unsupported"
        )));
    }
    let flags = reader.u8()?;
    if flags & 0x01 != 0 {
        reader.skip(8)?; // maximum creation index
    }
    Ok(reader.address()?.is_some())
}

/// Symbol table message: the group's v1 B-tree and local heap addresses.
pub(super) fn parse_symbol_table(data: &[u8], sizes: Sizes) -> Result<(u64, u64), Problem> {
    let mut reader = Reader::new(data, sizes, "symbol table message");
    let btree = reader.address()?;
    let heap = reader.address()?;
    match (btree, heap) {
        (Some(btree), Some(heap)) => Ok((btree, heap)),
        _ => Err("symbol table message has an undefined address".into()),
    }
}

/// Continuation message: address and length of the next block of messages.
pub(super) fn parse_continuation(data: &[u8], sizes: Sizes) -> Result<(u64, u64), Problem> {
    let mut reader = Reader::new(data, sizes, "continuation message");
    let address = reader
        .address()?
        .ok_or("continuation message has an undefined address")?;
    Ok((address, reader.length()?))
}
