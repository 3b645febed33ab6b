//! A minimal, read-only, pure-Rust HDF5 reader for the weight files h5py and Keras 3
//! write (`model.weights.h5`): it lists every float dataset with its full path.
//!
//! Why a subset: the project needs float arrays out of files written by one library
//! (HDF5 via h5py), not a general HDF5 implementation, and a C dependency is not an
//! option. Everything below is what h5py produces with `libver='earliest'` (its
//! default, used by Keras) and with `libver='latest'`.
//!
//! Why our own and not a crate (verdict of issue 9, measured 2026-12): `hdf5-reader`
//! 0.12.1, pure Rust, reads all four fixtures of `tests/fixtures/hdf5/` (the dense link
//! storage of `dense.h5` too, which this reader refuses) and netra's `model.weights.h5`,
//! and reads attributes (what Keras 2 `.h5` files need: `layer_names`, `weight_names`).
//! But over every truncation and single-byte flip of `earliest.h5` (17 KB), with its
//! default options one damaged file made it allocate past 20 GB (the process was killed
//! by the OOM killer); with explicit limits (`max_read_bytes`, `max_chunk_bytes` 16 MiB,
//! `max_object_header_bytes` 1 MiB) it neither panicked nor failed on any of the four
//! fixtures' damaged copies, yet peaked at 448 MB resident for that 17 KB file, against
//! 11.5 MB for this reader over all truncations and flips of all four fixtures. It also
//! brings rayon, ndarray, parking_lot, lru, lz4_flex and memmap2. A weights reader meets
//! files from elsewhere, so the bounded one stays; revisit when Keras 2 `.h5` import
//! needs attributes and dense links (add them here, or adopt `hdf5-reader` with its
//! limits and a peak-memory test).
//!
//! Supported:
//! - superblock versions 0, 1 (base address = superblock position, so user blocks
//!   work), 2 and 3 (checksum verified); 2-, 4- and 8-byte addresses and lengths;
//! - object headers version 1 and version 2 (`OHDR`, `OCHK` continuation blocks,
//!   checksums verified), continuation messages;
//! - groups stored as symbol tables (v1 B-tree + local heap + `SNOD`) or as compact
//!   link messages; hard links are followed, soft and external links are skipped;
//! - dataspace messages v1/v2 (scalar and simple), datatype class 1 (IEEE half,
//!   single, double and bfloat16, either byte order), data layout messages v3/v4:
//!   compact, contiguous, and unfiltered chunked data (v1 B-tree index from layout v3;
//!   single-chunk, implicit and unpaged fixed-array indexes from layout v4).
//!
//! Rejected with a clear error: dense link storage (fractal heaps, used by
//! `libver='latest'` groups with more than 8 links), shared/committed datatypes,
//! filtered (compressed) chunks, external raw-data files, virtual datasets, layout
//! messages v1/v2, float types with non-IEEE layouts, datasets never written
//! (undefined data address). Non-float datasets (integers such as the Keras optimizer's
//! iteration counter, strings, compounds...) are not read but listed with their element
//! type (`Weights::skipped`); attributes are skipped.
//!
//! Robustness: every read is bounds-checked, object headers and B-tree nodes are
//! visited at most once, group nesting is capped at [`MAX_DEPTH`] and B-tree levels
//! must strictly decrease, so a corrupt file yields an error, never a panic or a loop.

mod chunks;
mod groups;
mod header;
mod messages;
mod reader;

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use crate::convert::decode;
use crate::error::{Error, Place, Problem, Result};
use crate::tensor::{Tensor, Weights};
use chunks::{read_chunked, Geometry};
use header::{read_object_header, Message};
use messages::{
    filter_count, parse_dataspace, parse_datatype, parse_layout, parse_link, parse_symbol_table,
    uses_dense_links, Dataspace, Element, Layout, DATASPACE, DATATYPE, EXTERNAL_FILES,
    FILTER_PIPELINE, LAYOUT, LINK, LINK_INFO, SYMBOL_TABLE,
};
use reader::{verify_checksum, File, Reader, Sizes};

/// The 8-byte HDF5 signature that starts the superblock.
pub(crate) const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";
/// Deepest group nesting accepted (h5py/Keras files are a few levels deep).
pub(crate) const MAX_DEPTH: usize = 64;

/// What is wrong with an HDF5 file, optionally naming the object concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hdf5Error {
    /// The object the problem was found in, e.g. `dataset layers/gru/cell/vars/0`.
    pub(crate) object: Option<String>,
    /// One line describing the problem.
    pub(crate) message: String,
}

impl Hdf5Error {
    fn file(message: Problem) -> Self {
        Hdf5Error {
            object: None,
            message: message.0,
        }
    }

    fn at(kind: &str, path: &str, message: Problem) -> Self {
        let object = if path.is_empty() {
            format!("root {kind}")
        } else {
            format!("{kind} {path}")
        };
        Hdf5Error {
            object: Some(object),
            message: message.0,
        }
    }
}

impl fmt::Display for Hdf5Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            Some(object) => write!(f, "{object}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Hdf5Error {}

/// Returns true if `bytes` holds an HDF5 signature where a superblock may start
/// (offset 0, 512, 1024, 2048, ...).
pub(crate) fn is_hdf5(bytes: &[u8]) -> bool {
    find_superblock(bytes).is_some()
}

/// Reads every float dataset, named by its path without the leading `/`, and lists
/// the others with their element type.
pub(crate) fn read_hdf5(bytes: &[u8]) -> Result<Weights, Hdf5Error> {
    let at =
        find_superblock(bytes).ok_or_else(|| Hdf5Error::file("no HDF5 signature found".into()))?;
    let (file, root) = parse_superblock(bytes, at).map_err(Hdf5Error::file)?;
    let mut walker = Walker {
        file,
        visited: HashSet::from([root]),
        weights: Weights::default(),
    };
    walker.visit(root, "", 0)?;
    Ok(walker.weights)
}

/// Reads HDF5 bytes; errors name `origin` and the object.
pub(crate) fn read_hdf5_in(bytes: &[u8], origin: &str) -> Result<Weights> {
    read_hdf5(bytes).map_err(|e| {
        let place = e.object.map_or(Place::File, Place::Inside);
        Error::Hdf5 {
            file: origin.to_string(),
            place,
            message: e.message,
        }
    })
}

/// Position of the first signature at 0 or a power of two from 512 on.
fn find_superblock(bytes: &[u8]) -> Option<usize> {
    let mut at = 0usize;
    while at < bytes.len() {
        if bytes.get(at..at + SIGNATURE.len()) == Some(SIGNATURE.as_slice()) {
            return Some(at);
        }
        at = if at == 0 { 512 } else { at.checked_mul(2)? };
    }
    None
}

/// Parses the superblock at `at`, returning the file view and the root group's
/// object header address.
fn parse_superblock(bytes: &[u8], at: usize) -> Result<(File<'_>, u64), Problem> {
    let mut reader = Reader::new(
        &bytes[at..],
        Sizes {
            offset: 8,
            length: 8,
        },
        "superblock",
    );
    reader.skip(SIGNATURE.len())?;
    let version = reader.u8()?;
    let (sizes, root) = match version {
        0 | 1 => {
            reader.skip(4)?; // free-space, root entry and shared-header versions, reserved
            let sizes = read_sizes(&mut reader)?;
            reader.skip(1 + 2 + 2 + 4)?; // reserved, group leaf/internal K, flags
            if version == 1 {
                reader.skip(4)?; // indexed storage K, reserved
            }
            let mut reader = reader.with_sizes(sizes);
            for _ in 0..4 {
                reader.address()?; // base, free-space info, end of file, driver info
            }
            reader.uint(sizes.offset)?; // root entry: link name offset
            let root = reader.address()?;
            (sizes, root)
        }
        2 | 3 => {
            let sizes = read_sizes(&mut reader)?;
            reader.skip(1)?; // file consistency flags
            let mut reader = reader.with_sizes(sizes);
            for _ in 0..3 {
                reader.address()?; // base, superblock extension, end of file
            }
            let root = reader.address()?;
            let covered = reader.consumed();
            verify_checksum(covered, reader.u32()?, "superblock")?;
            (sizes, root)
        }
        _ => {
            return Err(Problem(format!(
                "superblock version {version} is unsupported"
            )))
        }
    };
    let root = root.ok_or("the root group address is undefined")?;
    let file = File {
        bytes,
        base: at,
        sizes,
    };
    Ok((file, root))
}

/// Reads the address and length widths.
fn read_sizes(reader: &mut Reader<'_>) -> Result<Sizes, Problem> {
    let offset = usize::from(reader.u8()?);
    let length = usize::from(reader.u8()?);
    for (what, size) in [("address", offset), ("length", length)] {
        if ![2, 4, 8].contains(&size) {
            return Err(Problem(format!(
                "{size}-byte {what} fields are unsupported"
            )));
        }
    }
    Ok(Sizes { offset, length })
}

/// Depth-first traversal of the group hierarchy from the root.
struct Walker<'a> {
    file: File<'a>,
    /// Object header addresses already reached: each object is read once, even if
    /// hard-linked under several names, and link cycles end here.
    visited: HashSet<u64>,
    weights: Weights,
}

/// What an object header describes.
enum ObjectKind {
    Group,
    Dataset,
    Other,
}

impl Walker<'_> {
    /// Reads the object at `address` (named `path`) and everything below it.
    fn visit(&mut self, address: u64, path: &str, depth: usize) -> Result<(), Hdf5Error> {
        let messages = read_object_header(&self.file, address)
            .map_err(|message| Hdf5Error::at("object", path, message))?;
        match classify(&messages) {
            ObjectKind::Group => self.walk_group(&messages, path, depth),
            ObjectKind::Dataset => {
                match read_dataset(&self.file, &messages, path)
                    .map_err(|message| Hdf5Error::at("dataset", path, message))?
                {
                    Dataset::Float(tensor) => self.weights.tensors.push(tensor),
                    Dataset::NotFloat(dtype) => {
                        self.weights.skipped.push((path.to_string(), dtype))
                    }
                }
                Ok(())
            }
            ObjectKind::Other => Ok(()),
        }
    }

    fn walk_group(
        &mut self,
        messages: &[Message<'_>],
        path: &str,
        depth: usize,
    ) -> Result<(), Hdf5Error> {
        let fail = |message: Problem| Hdf5Error::at("group", path, message);
        if depth > MAX_DEPTH {
            return Err(fail(Problem(format!(
                "groups are nested more than {MAX_DEPTH} deep"
            ))));
        }
        let links = group_links(&self.file, messages).map_err(fail)?;
        for (name, address) in links {
            let child = if path.is_empty() {
                name
            } else {
                format!("{path}/{name}")
            };
            if self.visited.insert(address) {
                self.visit(address, &child, depth + 1)?;
            }
        }
        Ok(())
    }
}

fn classify(messages: &[Message<'_>]) -> ObjectKind {
    let has = |kind: u16| messages.iter().any(|message| message.kind == kind);
    if has(LAYOUT) {
        ObjectKind::Dataset
    } else if has(SYMBOL_TABLE) || has(LINK) || has(LINK_INFO) {
        ObjectKind::Group
    } else {
        ObjectKind::Other
    }
}

/// The hard links of a group, from its symbol table or its link messages.
fn group_links(file: &File<'_>, messages: &[Message<'_>]) -> Result<Vec<(String, u64)>, Problem> {
    let mut links = Vec::new();
    for message in messages {
        match message.kind {
            SYMBOL_TABLE => {
                let (btree, heap) = parse_symbol_table(message.data, file.sizes)?;
                links.extend(groups::symbol_table_links(file, btree, heap)?);
            }
            LINK => links.extend(parse_link(message.data, file.sizes)?),
            LINK_INFO if uses_dense_links(message.data, file.sizes)? => {
                return Err("links in dense storage (fractal heap) are unsupported; \
                            write the file with libver='earliest' or at most 8 links per group"
                    .into())
            }
            _ => {}
        }
    }
    Ok(links)
}

/// The unique message of `kind`, rejecting shared (committed) messages.
fn required<'m, 'a>(
    messages: &'m [Message<'a>],
    kind: u16,
    what: &str,
) -> Result<&'m Message<'a>, Problem> {
    let message = messages
        .iter()
        .find(|message| message.kind == kind)
        .ok_or_else(|| Problem(format!("has no {what} message")))?;
    if message.is_shared() {
        return Err(Problem(format!("shared {what} messages are unsupported")));
    }
    Ok(message)
}

/// What a dataset holds.
enum Dataset {
    /// Floats, read.
    Float(Tensor),
    /// Elements of another type (named), not read.
    NotFloat(String),
}

/// Reads a dataset; [`Dataset::NotFloat`] if its elements are not floating point.
fn read_dataset(file: &File<'_>, messages: &[Message<'_>], path: &str) -> Result<Dataset, Problem> {
    let datatype = required(messages, DATATYPE, "datatype")?;
    let (kind, order) = match parse_datatype(datatype.data, file.sizes)? {
        Element::Float(kind, order) => (kind, order),
        Element::NotFloat(dtype) => return Ok(Dataset::NotFloat(dtype)),
    };
    let dataspace = required(messages, DATASPACE, "dataspace")?;
    let Dataspace::Shape { dims, max_dims } = parse_dataspace(dataspace.data, file.sizes)? else {
        return Err("has a null dataspace (no data)".into());
    };
    if messages
        .iter()
        .any(|message| message.kind == EXTERNAL_FILES)
    {
        return Err("raw data stored in external files is unsupported".into());
    }
    let layout = parse_layout(required(messages, LAYOUT, "data layout")?.data, file.sizes)?;
    let size = dims
        .iter()
        .try_fold(kind.size(), |acc, &dim| acc.checked_mul(dim))
        .ok_or_else(|| Problem(format!("shape {dims:?} is too large")))?;
    let raw: Cow<'_, [u8]> = match layout {
        Layout::Compact(data) if data.len() == size => Cow::Borrowed(data),
        Layout::Compact(data) => {
            return Err(Problem(format!(
                "compact data is {} bytes, expected {size}",
                data.len()
            )))
        }
        Layout::Contiguous { .. } if size == 0 => Cow::Borrowed(&[]),
        Layout::Contiguous {
            address,
            size: stored,
        } => {
            let address = address.ok_or("has no data written (undefined data address)")?;
            if stored != size as u64 {
                return Err(Problem(format!(
                    "contiguous data is {stored} bytes, expected {size}"
                )));
            }
            Cow::Borrowed(file.region(address, stored, "raw data")?)
        }
        Layout::Chunked(layout) => {
            if let Some(filters) = messages.iter().find(|m| m.kind == FILTER_PIPELINE) {
                if filter_count(filters.data, file.sizes)? > 0 {
                    return Err("filtered (e.g. compressed) chunked data is unsupported".into());
                }
            }
            let geometry = Geometry {
                shape: &dims,
                max_dims: &max_dims,
                element_size: kind.size(),
            };
            Cow::Owned(read_chunked(file, &geometry, &layout)?)
        }
    };
    Ok(Dataset::Float(Tensor {
        name: path.to_string(),
        data: Arc::new(decode(&raw, kind, order)),
        shape: dims,
    }))
}

#[cfg(test)]
pub(crate) mod tests;
