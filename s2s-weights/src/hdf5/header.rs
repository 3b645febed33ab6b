//! Object headers: version 1 (no signature, 8-byte aligned messages) and version 2
//! (`OHDR` prefix, `OCHK` continuation blocks, lookup3 checksums), including the
//! continuation messages that chain further blocks of messages.

use std::collections::HashSet;

use super::messages::{parse_continuation, CONTINUATION};
use super::reader::{verify_checksum, File, Reader};
use crate::error::Problem;

/// More continuation blocks than this in one header is treated as corruption; real
/// headers have a handful.
const MAX_HEADER_BLOCKS: usize = 1024;

/// One header message: its type, flags and undecoded body.
#[derive(Debug, Clone, Copy)]
pub(super) struct Message<'a> {
    /// Message type, e.g. 0x0001 dataspace.
    pub kind: u16,
    /// Message flags; bit 1 (0x02) marks a shared message stored elsewhere.
    pub flags: u8,
    /// The message body.
    pub data: &'a [u8],
}

impl Message<'_> {
    /// True if the body is a reference to a shared message rather than the message.
    pub(super) fn is_shared(&self) -> bool {
        self.flags & 0x02 != 0
    }
}

/// Reads every message of the object header at `address`, following continuations.
pub(super) fn read_object_header<'a>(
    file: &File<'a>,
    address: u64,
) -> Result<Vec<Message<'a>>, Problem> {
    let start = file.region(address, 4, "object header")?;
    let version2 = start == b"OHDR";
    let (mut messages, track_order) = if version2 {
        let prefix = parse_v2_prefix(file, address)?;
        let messages = read_v2_messages(file, prefix.block, prefix.track_order)?;
        (messages, prefix.track_order)
    } else {
        (read_v1_prefix(file, address)?, false)
    };
    let mut visited = HashSet::from([address]);
    let mut next = 0;
    while next < messages.len() {
        let message = messages[next];
        next += 1;
        if message.kind != CONTINUATION {
            continue;
        }
        let (block, len) = parse_continuation(message.data, file.sizes)?;
        if !visited.insert(block) || visited.len() > MAX_HEADER_BLOCKS {
            return Err(Problem(format!(
                "object header continuation at {block:#x} repeats or chains too far"
            )));
        }
        let bytes = file.region(block, len, "object header continuation")?;
        let more = if version2 {
            read_v2_continuation(file, bytes, track_order)?
        } else {
            read_v1_messages(file, bytes)?
        };
        messages.extend(more);
    }
    Ok(messages)
}

/// Version 1 prefix: version, reserved, message count, reference count, header size,
/// padding to 16 bytes; the first block of messages follows.
fn read_v1_prefix<'a>(file: &File<'a>, address: u64) -> Result<Vec<Message<'a>>, Problem> {
    let mut reader = file.reader_at(address, "object header")?;
    let version = reader.u8()?;
    if version != 1 {
        return Err(Problem(format!(
            "no object header at {address:#x} (version byte {version}, no OHDR signature)"
        )));
    }
    reader.skip(1 + 2 + 4)?;
    let size = reader.u32()?;
    reader.skip(4)?;
    let block = reader.take(size as usize)?;
    read_v1_messages(file, block)
}

/// Version 1 messages: type (2), size (2), flags (1), reserved (3), body.
fn read_v1_messages<'a>(file: &File<'a>, block: &'a [u8]) -> Result<Vec<Message<'a>>, Problem> {
    let mut reader = Reader::new(block, file.sizes, "object header message");
    let mut messages = Vec::new();
    while reader.remaining() >= 8 {
        let kind = reader.u16()?;
        let size = reader.u16()?;
        let flags = reader.u8()?;
        reader.skip(3)?;
        let data = reader.take(usize::from(size))?;
        messages.push(Message { kind, flags, data });
    }
    Ok(messages)
}

/// A version 2 prefix: the first block of messages and whether each message carries a
/// creation-order field.
struct V2Prefix<'a> {
    block: &'a [u8],
    track_order: bool,
}

/// Signature, version, flags, optional times and phase-change values, block size, the
/// block, then a checksum over everything before it.
fn parse_v2_prefix<'a>(file: &File<'a>, address: u64) -> Result<V2Prefix<'a>, Problem> {
    let mut reader = file.reader_at(address, "object header")?;
    reader.expect_signature(b"OHDR")?;
    let version = reader.u8()?;
    if version != 2 {
        return Err(Problem(format!(
            "object header version {version} is unsupported"
        )));
    }
    let flags = reader.u8()?;
    if flags & 0x20 != 0 {
        reader.skip(16)?; // access, modification, change and birth times
    }
    if flags & 0x10 != 0 {
        reader.skip(4)?; // attribute phase-change values
    }
    let size = reader.uint(1 << (flags & 0x03))?;
    let block = reader.take(usize::try_from(size).unwrap_or(usize::MAX))?;
    let covered = reader.consumed();
    let stored = reader.u32()?;
    verify_checksum(covered, stored, "object header")?;
    Ok(V2Prefix {
        block,
        track_order: flags & 0x04 != 0,
    })
}

/// An `OCHK` block: signature, messages, checksum.
fn read_v2_continuation<'a>(
    file: &File<'a>,
    bytes: &'a [u8],
    track_order: bool,
) -> Result<Vec<Message<'a>>, Problem> {
    if bytes.len() < 8 {
        return Err("object header continuation block is too short".into());
    }
    let (covered, checksum) = bytes.split_at(bytes.len() - 4);
    let mut reader = Reader::new(covered, file.sizes, "object header continuation");
    reader.expect_signature(b"OCHK")?;
    let stored = u32::from_le_bytes([checksum[0], checksum[1], checksum[2], checksum[3]]);
    verify_checksum(covered, stored, "object header continuation")?;
    read_v2_messages(file, &covered[4..], track_order)
}

/// Version 2 messages: type (1), size (2), flags (1), [creation order (2)], body. A tail
/// shorter than a message header is padding.
fn read_v2_messages<'a>(
    file: &File<'a>,
    block: &'a [u8],
    track_order: bool,
) -> Result<Vec<Message<'a>>, Problem> {
    let header_len = if track_order { 6 } else { 4 };
    let mut reader = Reader::new(block, file.sizes, "object header message");
    let mut messages = Vec::new();
    while reader.remaining() >= header_len {
        let kind = u16::from(reader.u8()?);
        let size = reader.u16()?;
        let flags = reader.u8()?;
        if track_order {
            reader.skip(2)?;
        }
        let data = reader.take(usize::from(size))?;
        messages.push(Message { kind, flags, data });
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdf5::reader::{lookup3, Sizes};

    fn with_checksum(mut block: Vec<u8>) -> Vec<u8> {
        let checksum = lookup3(&block);
        block.extend_from_slice(&checksum.to_le_bytes());
        block
    }

    /// A v2 header with timestamps and creation-order fields whose single dataspace
    /// message is followed by a continuation into an `OCHK` block.
    fn header_with_times_and_continuation() -> Vec<u8> {
        let message = |kind: u8, body: &[u8]| {
            let mut out = vec![kind];
            out.extend_from_slice(&(body.len() as u16).to_le_bytes());
            out.push(0); // flags
            out.extend_from_slice(&[0, 0]); // creation order
            out.extend_from_slice(body);
            out
        };
        let mut messages = message(0x01, &[2, 0, 0, 0]);
        let ochk_at = 100u64;
        let ochk = with_checksum([b"OCHK".as_slice(), &message(0x03, &[9; 3])].concat());
        let mut continuation = ochk_at.to_le_bytes().to_vec();
        continuation.extend_from_slice(&(ochk.len() as u64).to_le_bytes());
        messages.extend(message(0x10, &continuation));
        let mut prefix = b"OHDR".to_vec();
        prefix.extend_from_slice(&[2, 0x20 | 0x04]);
        prefix.extend_from_slice(&[7; 16]); // four timestamps
        prefix.push(messages.len() as u8);
        prefix.extend(messages);
        let mut file = with_checksum(prefix);
        file.resize(ochk_at as usize, 0);
        file.extend(ochk);
        file
    }

    fn file(bytes: &[u8]) -> File<'_> {
        File {
            bytes,
            base: 0,
            sizes: Sizes {
                offset: 8,
                length: 8,
            },
        }
    }

    #[test]
    fn v2_header_with_times_order_and_continuation() {
        let bytes = header_with_times_and_continuation();
        let messages = read_object_header(&file(&bytes), 0).expect("valid header");
        let kinds: Vec<u16> = messages.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, [0x01, 0x10, 0x03]);
        assert_eq!(messages[0].data, [2, 0, 0, 0]);
        assert_eq!(messages[2].data, [9, 9, 9]);
    }

    #[test]
    fn v2_checksums_are_verified_in_both_blocks() {
        let good = header_with_times_and_continuation();
        for pos in [30, good.len() - 6] {
            let mut bytes = good.clone();
            bytes[pos] ^= 0x10;
            let error = read_object_header(&file(&bytes), 0).expect_err("corrupt");
            assert!(error.contains("checksum mismatch"), "{error}");
        }
    }
}
