//! Chunked raw data without filters.
//!
//! Chunk indexes read: the version 1 B-tree of type 1 (layout message v3, what h5py
//! writes with `libver='earliest'`), and from layout message v4 the single-chunk,
//! implicit and (unpaged) fixed-array indexes that `libver='latest'` uses for datasets
//! whose maximum shape is fixed. Extensible arrays and v2 B-trees (resizable datasets)
//! are rejected, as are filtered chunks and datasets with unallocated chunks.
//!
//! Memory is bounded by the file size: every chunk inside the dataset's extent must be
//! present exactly once, and the chunks may not overlap in the file, so the assembled
//! data is never larger than the file itself.

use std::collections::HashSet;

use super::messages::{ChunkIndex, ChunkLayout};
use super::reader::{verify_checksum, File};
use crate::error::Problem;

/// The dataset geometry chunks are placed into.
pub(super) struct Geometry<'s> {
    /// Current dimensions.
    pub shape: &'s [usize],
    /// Maximum dimensions (`u64::MAX` for unlimited), which fix the chunk grid of the
    /// implicit and fixed-array indexes.
    pub max_dims: &'s [u64],
    /// Bytes per element.
    pub element_size: usize,
}

/// One allocated chunk: the coordinates of its first element and its address.
struct ChunkRef {
    origin: Vec<u64>,
    address: u64,
}

/// Reads and assembles a chunked dataset into row-major bytes.
pub(super) fn read_chunked(
    file: &File<'_>,
    geometry: &Geometry<'_>,
    layout: &ChunkLayout,
) -> Result<Vec<u8>, Problem> {
    let rank = geometry.shape.len();
    if layout.dims.len() != rank || geometry.max_dims.len() != rank {
        return Err(Problem(format!(
            "chunk rank {} differs from the dataspace rank {rank}",
            layout.dims.len()
        )));
    }
    if layout.element_size != geometry.element_size as u64 {
        return Err(Problem(format!(
            "chunk element size {} differs from the datatype size {}",
            layout.element_size, geometry.element_size
        )));
    }
    let chunk_bytes = product(&layout.dims)
        .and_then(|n| n.checked_mul(geometry.element_size))
        .ok_or("chunk size overflows")?;
    let grid: Vec<usize> = geometry
        .shape
        .iter()
        .zip(&layout.dims)
        .map(|(&extent, &chunk)| extent.div_ceil(chunk))
        .collect();
    let needed = product(&grid).ok_or("chunk count overflows")?;
    if needed == 0 {
        return Ok(Vec::new());
    }
    if needed > file.bytes.len() / chunk_bytes {
        return Err(Problem(format!(
            "needs {needed} chunks of {chunk_bytes} bytes, more than the file holds"
        )));
    }
    let address = layout
        .address
        .ok_or("has no data written (undefined chunk index address)")?;
    let chunks = match layout.index {
        ChunkIndex::BTreeV1 => btree_chunks(file, address, rank, chunk_bytes)?,
        ChunkIndex::SingleChunk => vec![ChunkRef {
            origin: vec![0; rank],
            address,
        }],
        ChunkIndex::Implicit => implicit_chunks(
            file,
            address,
            &index_grid(geometry, layout)?,
            layout,
            chunk_bytes,
        )?,
        ChunkIndex::FixedArray => {
            fixed_array_chunks(file, address, &index_grid(geometry, layout)?, layout)?
        }
        ChunkIndex::Unsupported(name) => {
            return Err(Problem(format!("chunk index type '{name}' is unsupported")))
        }
    };
    assemble(file, geometry, &layout.dims, chunk_bytes, needed, chunks)
}

/// Product of `values`, `None` on overflow.
fn product(values: &[usize]) -> Option<usize> {
    values.iter().try_fold(1usize, |acc, &v| acc.checked_mul(v))
}

/// Chunks per dimension over the *maximum* dimensions, which grid-based indexes
/// (implicit, fixed array) linearise in row-major order.
fn index_grid(geometry: &Geometry<'_>, layout: &ChunkLayout) -> Result<Vec<u64>, Problem> {
    geometry
        .max_dims
        .iter()
        .zip(&layout.dims)
        .map(|(&max, &chunk)| {
            if max == u64::MAX {
                Err("unlimited dimension with a fixed-size chunk index".into())
            } else {
                Ok(max.div_ceil(chunk as u64))
            }
        })
        .collect()
}

/// Element coordinates of chunk number `linear` in a row-major chunk grid.
fn chunk_origin(mut linear: u64, grid: &[u64], dims: &[usize]) -> Vec<u64> {
    let mut origin = vec![0u64; grid.len()];
    for axis in (0..grid.len()).rev() {
        let count = grid[axis].max(1);
        origin[axis] = (linear % count).saturating_mul(dims[axis] as u64);
        linear /= count;
    }
    origin
}

/// Implicit index: every chunk of the grid is allocated, back to back from `address`.
fn implicit_chunks(
    file: &File<'_>,
    address: u64,
    grid: &[u64],
    layout: &ChunkLayout,
    chunk_bytes: usize,
) -> Result<Vec<ChunkRef>, Problem> {
    let total = grid
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .filter(|&total| total <= (file.bytes.len() / chunk_bytes) as u64)
        .ok_or("implicit chunk index covers more chunks than the file holds")?;
    Ok((0..total)
        .map(|linear| ChunkRef {
            origin: chunk_origin(linear, grid, &layout.dims),
            // Cannot overflow: total * chunk_bytes <= file length.
            address: address.saturating_add(linear * chunk_bytes as u64),
        })
        .collect())
}

/// Fixed-array index: a `FAHD` header pointing to an unpaged `FADB` data block that
/// holds one chunk address per grid cell (undefined for unallocated chunks).
fn fixed_array_chunks(
    file: &File<'_>,
    address: u64,
    grid: &[u64],
    layout: &ChunkLayout,
) -> Result<Vec<ChunkRef>, Problem> {
    let mut header = file.reader_at(address, "fixed array header")?;
    header.expect_signature(b"FAHD")?;
    let _version = header.u8()?;
    if header.u8()? != 0 {
        return Err("filtered chunks are unsupported".into());
    }
    let entry_size = usize::from(header.u8()?);
    let page_bits = header.u8()?;
    let entries = header.length()?;
    let block = header
        .address()?
        .ok_or("fixed array has no data block (no data written)")?;
    let covered = header.consumed();
    verify_checksum(covered, header.u32()?, "fixed array header")?;
    let expected = grid.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n));
    if Some(entries) != expected {
        return Err(Problem(format!(
            "fixed array holds {entries} entries, expected {expected:?}"
        )));
    }
    if entry_size != file.sizes.offset {
        return Err(Problem(format!(
            "fixed array entry size {entry_size} is unsupported"
        )));
    }
    if u32::from(page_bits) < 64 && entries > 1u64 << page_bits {
        return Err("paged fixed array chunk index is unsupported".into());
    }
    let mut data = file.reader_at(block, "fixed array data block")?;
    data.expect_signature(b"FADB")?;
    data.skip(2)?; // version, client id
    data.address()?; // header address
    let mut chunks = Vec::new();
    for linear in 0..entries {
        if let Some(chunk) = data.address()? {
            chunks.push(ChunkRef {
                origin: chunk_origin(linear, grid, &layout.dims),
                address: chunk,
            });
        }
    }
    let covered = data.consumed();
    verify_checksum(covered, data.u32()?, "fixed array data block")?;
    Ok(chunks)
}

/// Collects the chunks of a type-1 version 1 B-tree.
fn btree_chunks(
    file: &File<'_>,
    root: u64,
    rank: usize,
    chunk_bytes: usize,
) -> Result<Vec<ChunkRef>, Problem> {
    let mut chunks = Vec::new();
    let mut walk = BTreeWalk {
        file,
        rank,
        chunk_bytes,
        visited: HashSet::new(),
    };
    walk.collect(root, None, &mut chunks)?;
    Ok(chunks)
}

/// State of a chunk B-tree traversal.
struct BTreeWalk<'f, 'a> {
    file: &'f File<'a>,
    rank: usize,
    chunk_bytes: usize,
    visited: HashSet<u64>,
}

/// A key/child pair of a chunk B-tree node.
struct ChunkEntry {
    size: u32,
    filter_mask: u32,
    origin: Vec<u64>,
    child: u64,
}

impl BTreeWalk<'_, '_> {
    /// Reads the node at `address`; levels must decrease by one per step (bounding the
    /// recursion) and a node is read at most once (rejecting cycles).
    fn collect(
        &mut self,
        address: u64,
        expected_level: Option<u8>,
        chunks: &mut Vec<ChunkRef>,
    ) -> Result<(), Problem> {
        if !self.visited.insert(address) {
            return Err(Problem(format!(
                "chunk B-tree node {address:#x} is reached twice"
            )));
        }
        let (level, entries) = self.read_node(address)?;
        if expected_level.is_some_and(|expected| expected != level) {
            return Err(Problem(format!(
                "chunk B-tree node {address:#x} has level {level}, expected {expected_level:?}"
            )));
        }
        for mut entry in entries {
            if let Some(below) = level.checked_sub(1) {
                self.collect(entry.child, Some(below), chunks)?;
                continue;
            }
            entry.origin.truncate(self.rank);
            if entry.filter_mask != 0 {
                return Err(Problem(format!(
                    "chunk at {:?} has filters applied (unsupported)",
                    entry.origin
                )));
            }
            if entry.size as usize != self.chunk_bytes {
                return Err(Problem(format!(
                    "chunk at {:?} is {} bytes, expected {}",
                    entry.origin, entry.size, self.chunk_bytes
                )));
            }
            chunks.push(ChunkRef {
                origin: entry.origin,
                address: entry.child,
            });
        }
        Ok(())
    }

    /// Node: signature, type 1, level, entry count, siblings, then per entry a key
    /// (chunk size, filter mask, rank + 1 offsets) and a child address.
    fn read_node(&self, address: u64) -> Result<(u8, Vec<ChunkEntry>), Problem> {
        let mut reader = self.file.reader_at(address, "chunk B-tree node")?;
        reader.expect_signature(b"TREE")?;
        let node_type = reader.u8()?;
        if node_type != 1 {
            return Err(Problem(format!(
                "chunk B-tree node {address:#x} has type {node_type}, expected 1"
            )));
        }
        let level = reader.u8()?;
        let count = reader.u16()?;
        reader.address()?; // left sibling
        reader.address()?; // right sibling
        let mut entries = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            let size = reader.u32()?;
            let filter_mask = reader.u32()?;
            let origin = (0..=self.rank)
                .map(|_| reader.u64())
                .collect::<Result<Vec<u64>, Problem>>()?;
            let child = reader
                .address()?
                .ok_or("chunk B-tree child address is undefined")?;
            entries.push(ChunkEntry {
                size,
                filter_mask,
                origin,
                child,
            });
        }
        Ok((level, entries))
    }
}

/// Places every chunk inside the current extent into a row-major buffer.
fn assemble(
    file: &File<'_>,
    geometry: &Geometry<'_>,
    dims: &[usize],
    chunk_bytes: usize,
    needed: usize,
    chunks: Vec<ChunkRef>,
) -> Result<Vec<u8>, Problem> {
    let shape = geometry.shape;
    let mut placed: Vec<(Vec<usize>, &[u8])> = Vec::new();
    let mut seen = HashSet::new();
    let mut starts = Vec::new();
    for chunk in chunks {
        // Chunks allocated for the maximum extent but outside the current one are ignored.
        let Some(origin) = chunk
            .origin
            .iter()
            .zip(shape)
            .map(|(&o, &extent)| usize::try_from(o).ok().filter(|&o| o < extent))
            .collect::<Option<Vec<usize>>>()
        else {
            continue;
        };
        if origin.iter().zip(dims).any(|(&o, &d)| o % d != 0) {
            return Err(Problem(format!(
                "chunk origin {origin:?} is not on a chunk boundary"
            )));
        }
        if !seen.insert(origin.clone()) {
            return Err(Problem(format!("chunk at {origin:?} appears twice")));
        }
        let data = file.region(chunk.address, chunk_bytes as u64, "chunk")?;
        starts.push(file.position(chunk.address, "chunk")?);
        placed.push((origin, data));
    }
    if placed.len() != needed {
        return Err(Problem(format!(
            "only {} of {needed} chunks are allocated (sparse chunked data is unsupported)",
            placed.len()
        )));
    }
    starts.sort_unstable();
    if starts
        .windows(2)
        .any(|pair| pair[1] - pair[0] < chunk_bytes)
    {
        return Err("chunks overlap in the file".into());
    }
    let total = product(shape)
        .and_then(|n| n.checked_mul(geometry.element_size))
        .ok_or("dataset size overflows")?;
    let mut out = vec![0u8; total];
    for (origin, data) in placed {
        copy_chunk(&mut out, shape, dims, geometry.element_size, &origin, data)?;
    }
    Ok(out)
}

/// Copies the part of one chunk that lies inside the dataset, one row of the last
/// dimension at a time.
fn copy_chunk(
    out: &mut [u8],
    shape: &[usize],
    dims: &[usize],
    element_size: usize,
    origin: &[usize],
    data: &[u8],
) -> Result<(), Problem> {
    let rank = shape.len();
    let extent: Vec<usize> = (0..rank)
        .map(|axis| dims[axis].min(shape[axis] - origin[axis]))
        .collect();
    let row = extent[rank - 1] * element_size;
    let mut index = vec![0usize; rank - 1];
    loop {
        let (mut source, mut target) = (0usize, 0usize);
        for axis in 0..rank - 1 {
            source = source * dims[axis] + index[axis];
            target = target * shape[axis] + origin[axis] + index[axis];
        }
        source = source * dims[rank - 1] * element_size;
        target = (target * shape[rank - 1] + origin[rank - 1]) * element_size;
        let from = data.get(source..source + row);
        let to = out.get_mut(target..target + row);
        match (from, to) {
            (Some(from), Some(to)) => to.copy_from_slice(from),
            _ => return Err("chunk copy out of range".into()),
        }
        // Advance the row counter over all but the last axis.
        let mut axis = rank - 1;
        loop {
            if axis == 0 {
                return Ok(());
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < extent[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}
