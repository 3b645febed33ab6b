//! Old-style ("symbol table") groups: a version 1 B-tree of type 0 whose leaves point
//! to symbol nodes (`SNOD`), whose entries name their links through a local heap
//! (`HEAP`). This is what h5py writes by default (`libver='earliest'`), and so what
//! Keras' `model.weights.h5` uses.

use std::collections::HashSet;

use super::messages::link_name;
use super::reader::File;
use crate::error::Problem;

/// Symbol table entries caching a soft link's value use this cache type.
const SOFT_LINK_CACHE: u32 = 2;

/// The hard links of a symbol-table group, as (name, object header address).
pub(super) fn symbol_table_links(
    file: &File<'_>,
    btree: u64,
    heap: u64,
) -> Result<Vec<(String, u64)>, Problem> {
    let names = local_heap_data(file, heap)?;
    let mut nodes = Vec::new();
    collect_symbol_nodes(file, btree, None, &mut HashSet::new(), &mut nodes)?;
    let mut links = Vec::new();
    for node in nodes {
        read_symbol_node(file, node, names, &mut links)?;
    }
    Ok(links)
}

/// The data segment of a local heap: signature, version 0, reserved, segment size,
/// free-list offset, segment address.
fn local_heap_data<'a>(file: &File<'a>, address: u64) -> Result<&'a [u8], Problem> {
    let mut reader = file.reader_at(address, "local heap")?;
    reader.expect_signature(b"HEAP")?;
    let version = reader.u8()?;
    if version != 0 {
        return Err(Problem(format!(
            "local heap version {version} is unsupported"
        )));
    }
    reader.skip(3)?;
    let size = reader.length()?;
    let _free_list = reader.length()?;
    let data = reader
        .address()?
        .ok_or("local heap has an undefined data segment address")?;
    file.region(data, size, "local heap data segment")
}

/// Walks a group B-tree node and its descendants, collecting symbol node addresses.
/// Levels must decrease by one per step, which bounds the recursion; `visited`
/// rejects cycles.
fn collect_symbol_nodes(
    file: &File<'_>,
    address: u64,
    expected_level: Option<u8>,
    visited: &mut HashSet<u64>,
    nodes: &mut Vec<u64>,
) -> Result<(), Problem> {
    if !visited.insert(address) {
        return Err(Problem(format!(
            "group B-tree node {address:#x} is reached twice"
        )));
    }
    let mut reader = file.reader_at(address, "group B-tree node")?;
    reader.expect_signature(b"TREE")?;
    let node_type = reader.u8()?;
    if node_type != 0 {
        return Err(Problem(format!(
            "group B-tree node {address:#x} has type {node_type}, expected 0"
        )));
    }
    let level = reader.u8()?;
    if expected_level.is_some_and(|expected| expected != level) {
        return Err(Problem(format!(
            "group B-tree node {address:#x} has level {level}, expected {expected_level:?}"
        )));
    }
    let entries = reader.u16()?;
    reader.address()?; // left sibling
    reader.address()?; // right sibling
    let mut children = Vec::with_capacity(usize::from(entries));
    for _ in 0..entries {
        reader.length()?; // key: heap offset of the largest name in the child
        children.push(
            reader
                .address()?
                .ok_or("group B-tree child address is undefined")?,
        );
    }
    for child in children {
        match level.checked_sub(1) {
            None => nodes.push(child),
            Some(below) => collect_symbol_nodes(file, child, Some(below), visited, nodes)?,
        }
    }
    Ok(())
}

/// Reads a symbol node: signature, version 1, reserved, entry count, then entries of
/// name offset, object header address, cache type, reserved and a 16-byte scratch pad.
fn read_symbol_node(
    file: &File<'_>,
    address: u64,
    names: &[u8],
    links: &mut Vec<(String, u64)>,
) -> Result<(), Problem> {
    let mut reader = file.reader_at(address, "symbol table node")?;
    reader.expect_signature(b"SNOD")?;
    let version = reader.u8()?;
    if version != 1 {
        return Err(Problem(format!(
            "symbol table node version {version} is unsupported"
        )));
    }
    reader.skip(1)?;
    let count = reader.u16()?;
    for _ in 0..count {
        let name_offset = reader.uint(reader.sizes().offset)?;
        let header = reader.address()?;
        let cache_type = reader.u32()?;
        reader.skip(4 + 16)?;
        let name = heap_string(names, name_offset)?;
        if cache_type == SOFT_LINK_CACHE {
            continue; // soft links are not followed
        }
        let header =
            header.ok_or_else(|| Problem(format!("link {name} has an undefined address")))?;
        links.push((name, header));
    }
    Ok(())
}

/// The NUL-terminated name at `offset` in a local heap's data segment.
fn heap_string(heap: &[u8], offset: u64) -> Result<String, Problem> {
    let tail = usize::try_from(offset)
        .ok()
        .and_then(|offset| heap.get(offset..))
        .ok_or_else(|| {
            Problem(format!(
                "link name offset {offset} is outside the local heap"
            ))
        })?;
    let end = tail
        .iter()
        .position(|&byte| byte == 0)
        .ok_or("link name in the local heap is not terminated")?;
    link_name(&tail[..end])
}
