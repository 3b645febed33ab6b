//! A minimal, read-only zip reader for `.npz` and `.keras` archives.
//!
//! Supported: single-disk archives located through the End Of Central Directory record
//! (including the zip64 EOCD record/locator and zip64 extra fields, which numpy writes
//! for every `.npz` entry), entries stored (method 0) or deflated (method 8). Every
//! extracted entry is checked against its declared size and CRC-32.
//!
//! Rejected with an error: multi-disk archives, encrypted entries, other compression
//! methods, and anything whose offsets or lengths point outside the file. The central
//! directory is authoritative for sizes and CRCs (the local header's copies may be
//! zeroed when a data descriptor is used); the local header is only used to find where
//! the entry's data starts.

use std::fmt;

const EOCD_SIG: u32 = 0x0605_4b50;
const EOCD_LEN: usize = 22;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const ZIP64_LOCATOR_LEN: usize = 20;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const ZIP64_EOCD_LEN: usize = 56;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const CENTRAL_LEN: usize = 46;
const LOCAL_SIG: u32 = 0x0403_4b50;
const LOCAL_LEN: usize = 30;
const ZIP64_EXTRA_ID: u16 = 0x0001;
/// The longest comment a zip can carry, which bounds the backwards EOCD search.
const MAX_COMMENT: usize = 0xffff;

/// What is wrong with a zip archive, optionally naming the entry concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipError {
    /// The entry the problem was found in, if it concerns one entry.
    pub entry: Option<String>,
    /// What is wrong, as one line.
    pub message: String,
}

impl ZipError {
    fn archive(message: impl Into<String>) -> Self {
        ZipError {
            entry: None,
            message: message.into(),
        }
    }

    fn entry(name: &str, message: impl Into<String>) -> Self {
        ZipError {
            entry: Some(name.to_string()),
            message: message.into(),
        }
    }
}

impl fmt::Display for ZipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.entry {
            Some(name) => write!(f, "zip entry {name}: {}", self.message),
            None => write!(f, "zip archive: {}", self.message),
        }
    }
}

impl std::error::Error for ZipError {}

/// One file inside the archive, as described by the central directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipEntry {
    /// The entry's path inside the archive (lossily decoded as UTF-8).
    pub name: String,
    /// Compression method: 0 stored, 8 deflate (others are rejected when read).
    pub method: u16,
    /// General-purpose flags; bit 0 marks an encrypted entry.
    pub flags: u16,
    /// CRC-32 (IEEE) of the uncompressed data.
    pub crc32: u32,
    /// Size of the stored (possibly compressed) data in bytes.
    pub compressed_size: u64,
    /// Size of the data once extracted.
    pub uncompressed_size: u64,
    /// Offset of the entry's local file header from the start of the archive.
    pub local_header_offset: u64,
}

/// A parsed zip archive borrowing the archive's bytes.
#[derive(Debug, Clone)]
pub struct ZipArchive<'a> {
    bytes: &'a [u8],
    entries: Vec<ZipEntry>,
}

/// Where the central directory is and how many entries it should hold.
struct Directory {
    offset: u64,
    size: u64,
    entries: u64,
}

impl<'a> ZipArchive<'a> {
    /// Parses the end-of-central-directory record and the central directory.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ZipError> {
        let eocd = find_eocd(bytes)?;
        let directory = read_directory_location(bytes, eocd)?;
        let entries = read_central_directory(bytes, &directory)?;
        Ok(ZipArchive { bytes, entries })
    }

    /// The entries in central-directory order.
    pub fn entries(&self) -> &[ZipEntry] {
        &self.entries
    }

    /// The first entry with exactly this name.
    pub fn find(&self, name: &str) -> Option<&ZipEntry> {
        self.entries.iter().find(|entry| entry.name == name)
    }

    /// Extracts one entry, checking its size and CRC-32.
    pub fn read(&self, entry: &ZipEntry) -> Result<Vec<u8>, ZipError> {
        let fail = |message: String| ZipError::entry(&entry.name, message);
        if entry.flags & 0x0001 != 0 || entry.method == 99 {
            return Err(fail("entry is encrypted (unsupported)".into()));
        }
        let raw = self.raw_data(entry).map_err(fail)?;
        let data = match entry.method {
            0 => raw.to_vec(),
            8 => inflate(raw, entry.uncompressed_size).map_err(fail)?,
            other => {
                return Err(fail(format!(
                    "compression method {other} is unsupported (only 0 stored and 8 deflate)"
                )))
            }
        };
        if data.len() as u64 != entry.uncompressed_size {
            return Err(fail(format!(
                "extracted {} bytes but the directory declares {}",
                data.len(),
                entry.uncompressed_size
            )));
        }
        let actual = crc32(&data);
        if actual != entry.crc32 {
            return Err(fail(format!(
                "CRC-32 mismatch (stored {:08x}, computed {actual:08x})",
                entry.crc32
            )));
        }
        Ok(data)
    }

    /// The entry's stored bytes, located through its local header.
    fn raw_data(&self, entry: &ZipEntry) -> Result<&'a [u8], String> {
        let start = to_usize(entry.local_header_offset)?;
        let header = slice(self.bytes, start, LOCAL_LEN)
            .ok_or_else(|| format!("local header at offset {start} is past the end of the file"))?;
        if le_u32(header, 0) != LOCAL_SIG {
            return Err(format!("no local header signature at offset {start}"));
        }
        let name_len = usize::from(le_u16(header, 26));
        let extra_len = usize::from(le_u16(header, 28));
        let data_start = start + LOCAL_LEN + name_len + extra_len;
        let size = to_usize(entry.compressed_size)?;
        slice(self.bytes, data_start, size).ok_or_else(|| {
            format!("data ({size} bytes at offset {data_start}) runs past the end of the file")
        })
    }
}

/// Finds the End Of Central Directory record by scanning backwards from the end.
fn find_eocd(bytes: &[u8]) -> Result<usize, ZipError> {
    if bytes.len() < EOCD_LEN {
        return Err(ZipError::archive(format!(
            "file is {} bytes, too short for an end-of-central-directory record",
            bytes.len()
        )));
    }
    let last = bytes.len() - EOCD_LEN;
    let first = last.saturating_sub(MAX_COMMENT);
    (first..=last)
        .rev()
        .find(|&pos| {
            le_u32(bytes, pos) == EOCD_SIG
                && pos + EOCD_LEN + usize::from(le_u16(bytes, pos + 20)) <= bytes.len()
        })
        .ok_or_else(|| {
            ZipError::archive("no end-of-central-directory record (truncated or not a zip)")
        })
}

/// Reads the directory location from the EOCD, following the zip64 locator if needed.
fn read_directory_location(bytes: &[u8], eocd: usize) -> Result<Directory, ZipError> {
    let this_disk = le_u16(bytes, eocd + 4);
    let directory_disk = le_u16(bytes, eocd + 6);
    let entries_here = le_u16(bytes, eocd + 8);
    let entries = le_u16(bytes, eocd + 10);
    let size = le_u32(bytes, eocd + 12);
    let offset = le_u32(bytes, eocd + 16);
    let needs_zip64 = entries == 0xffff || size == 0xffff_ffff || offset == 0xffff_ffff;
    let has_locator =
        eocd >= ZIP64_LOCATOR_LEN && le_u32(bytes, eocd - ZIP64_LOCATOR_LEN) == ZIP64_LOCATOR_SIG;
    if has_locator {
        return read_zip64_directory_location(bytes, eocd - ZIP64_LOCATOR_LEN);
    }
    if needs_zip64 {
        return Err(ZipError::archive(
            "zip64 values in the end-of-central-directory record but no zip64 locator",
        ));
    }
    if this_disk != 0 || directory_disk != 0 || entries_here != entries {
        return Err(ZipError::archive("multi-disk archives are unsupported"));
    }
    Ok(Directory {
        offset: u64::from(offset),
        size: u64::from(size),
        entries: u64::from(entries),
    })
}

/// Reads the zip64 end-of-central-directory record that the locator at `locator` names.
fn read_zip64_directory_location(bytes: &[u8], locator: usize) -> Result<Directory, ZipError> {
    let total_disks = le_u32(bytes, locator + 16);
    let record = to_usize(le_u64(bytes, locator + 8)).map_err(ZipError::archive)?;
    if total_disks > 1 {
        return Err(ZipError::archive("multi-disk archives are unsupported"));
    }
    let fields = slice(bytes, record, ZIP64_EOCD_LEN)
        .filter(|fields| le_u32(fields, 0) == ZIP64_EOCD_SIG)
        .ok_or_else(|| {
            ZipError::archive(format!(
                "no zip64 end-of-central-directory record at {record}"
            ))
        })?;
    if le_u32(fields, 16) != 0
        || le_u32(fields, 20) != 0
        || le_u64(fields, 24) != le_u64(fields, 32)
    {
        return Err(ZipError::archive("multi-disk archives are unsupported"));
    }
    Ok(Directory {
        entries: le_u64(fields, 32),
        size: le_u64(fields, 40),
        offset: le_u64(fields, 48),
    })
}

/// Parses every central-directory record.
fn read_central_directory(bytes: &[u8], directory: &Directory) -> Result<Vec<ZipEntry>, ZipError> {
    let start = to_usize(directory.offset).map_err(ZipError::archive)?;
    let size = to_usize(directory.size).map_err(ZipError::archive)?;
    let table = slice(bytes, start, size).ok_or_else(|| {
        ZipError::archive(format!(
            "central directory ({size} bytes at offset {start}) runs past the end of the file"
        ))
    })?;
    // Each record takes at least CENTRAL_LEN bytes, which bounds a corrupt count.
    if directory.entries > (table.len() / CENTRAL_LEN) as u64 {
        return Err(ZipError::archive(format!(
            "central directory declares {} entries but holds at most {}",
            directory.entries,
            table.len() / CENTRAL_LEN
        )));
    }
    let mut entries = Vec::new();
    let mut pos = 0;
    for index in 0..directory.entries {
        let (entry, next) = read_central_record(table, pos)
            .map_err(|message| ZipError::archive(format!("directory record {index}: {message}")))?;
        entries.push(entry);
        pos = next;
    }
    Ok(entries)
}

/// Parses the central-directory record at `pos`, returning it and the next record's offset.
fn read_central_record(table: &[u8], pos: usize) -> Result<(ZipEntry, usize), String> {
    let fixed = slice(table, pos, CENTRAL_LEN).ok_or("record is truncated")?;
    if le_u32(fixed, 0) != CENTRAL_SIG {
        return Err("bad central directory signature".into());
    }
    let name_len = usize::from(le_u16(fixed, 28));
    let extra_len = usize::from(le_u16(fixed, 30));
    let comment_len = usize::from(le_u16(fixed, 32));
    let name_bytes = slice(table, pos + CENTRAL_LEN, name_len).ok_or("name is truncated")?;
    let extra =
        slice(table, pos + CENTRAL_LEN + name_len, extra_len).ok_or("extra is truncated")?;
    let next = pos + CENTRAL_LEN + name_len + extra_len + comment_len;
    if next > table.len() {
        return Err("comment is truncated".into());
    }
    let mut entry = ZipEntry {
        name: String::from_utf8_lossy(name_bytes).into_owned(),
        method: le_u16(fixed, 10),
        flags: le_u16(fixed, 8),
        crc32: le_u32(fixed, 16),
        compressed_size: u64::from(le_u32(fixed, 20)),
        uncompressed_size: u64::from(le_u32(fixed, 24)),
        local_header_offset: u64::from(le_u32(fixed, 42)),
    };
    if le_u16(fixed, 34) != 0 && le_u16(fixed, 34) != 0xffff {
        return Err(format!("{}: entry starts on another disk", entry.name));
    }
    apply_zip64_extra(&mut entry, extra).map_err(|message| format!("{}: {message}", entry.name))?;
    Ok((entry, next))
}

/// Replaces 0xFFFFFFFF placeholders with the values from the zip64 extra field.
fn apply_zip64_extra(entry: &mut ZipEntry, extra: &[u8]) -> Result<(), String> {
    const MARK: u64 = 0xffff_ffff;
    let wanted = [
        entry.uncompressed_size == MARK,
        entry.compressed_size == MARK,
        entry.local_header_offset == MARK,
    ];
    if !wanted.contains(&true) {
        return Ok(());
    }
    let field = find_extra_field(extra, ZIP64_EXTRA_ID).ok_or("zip64 extra field is missing")?;
    let mut values = field.chunks_exact(8).map(|raw| le_u64(raw, 0));
    let mut next = || values.next().ok_or("zip64 extra field is too short");
    if wanted[0] {
        entry.uncompressed_size = next()?;
    }
    if wanted[1] {
        entry.compressed_size = next()?;
    }
    if wanted[2] {
        entry.local_header_offset = next()?;
    }
    Ok(())
}

/// Finds the extra-field block with header id `id`.
fn find_extra_field(mut extra: &[u8], id: u16) -> Option<&[u8]> {
    while extra.len() >= 4 {
        let field_len = usize::from(le_u16(extra, 2));
        let body = slice(extra, 4, field_len)?;
        if le_u16(extra, 0) == id {
            return Some(body);
        }
        extra = &extra[4 + field_len..];
    }
    None
}

/// Inflates raw deflate data, refusing to produce more than `expected` bytes.
fn inflate(raw: &[u8], expected: u64) -> Result<Vec<u8>, String> {
    let limit = to_usize(expected)?;
    miniz_oxide::inflate::decompress_to_vec_with_limit(raw, limit)
        .map_err(|error| format!("deflate stream is corrupt or larger than declared ({error})"))
}

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zip stores it: the same
/// checksum as the model file's, shared.
pub use seq2seq::format::crc32;

/// `bytes[start..start + len]`, or `None` if that range is not inside `bytes`.
fn slice(bytes: &[u8], start: usize, len: usize) -> Option<&[u8]> {
    bytes.get(start..start.checked_add(len)?)
}

fn to_usize(value: u64) -> Result<usize, String> {
    usize::try_from(value).map_err(|_| format!("offset or size {value} does not fit in memory"))
}

/// Little-endian reads at a position the caller has bounds-checked; out-of-range bytes
/// read as zero so a missed check can never panic.
fn le_u16(bytes: &[u8], pos: usize) -> u16 {
    u16::from_le_bytes(fixed_bytes(bytes, pos))
}

fn le_u32(bytes: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(fixed_bytes(bytes, pos))
}

fn le_u64(bytes: &[u8], pos: usize) -> u64 {
    u64::from_le_bytes(fixed_bytes(bytes, pos))
}

fn fixed_bytes<const N: usize>(bytes: &[u8], pos: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = slice(bytes, pos, N) {
        out.copy_from_slice(src);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One entry to put into a test archive.
    pub(crate) struct TestEntry<'a> {
        pub name: &'a str,
        pub data: &'a [u8],
        pub deflate: bool,
    }

    /// Builds a zip archive in memory (no zip64, no data descriptors).
    pub(crate) fn build_zip(entries: &[TestEntry<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut central = Vec::new();
        for entry in entries {
            let (method, stored) = if entry.deflate {
                (8u16, miniz_oxide::deflate::compress_to_vec(entry.data, 6))
            } else {
                (0u16, entry.data.to_vec())
            };
            let offset = out.len() as u32;
            let common = |buf: &mut Vec<u8>| {
                buf.extend_from_slice(&20u16.to_le_bytes()); // version needed
                buf.extend_from_slice(&0u16.to_le_bytes()); // flags
                buf.extend_from_slice(&method.to_le_bytes());
                buf.extend_from_slice(&[0; 4]); // time, date
                buf.extend_from_slice(&crc32(entry.data).to_le_bytes());
                buf.extend_from_slice(&(stored.len() as u32).to_le_bytes());
                buf.extend_from_slice(&(entry.data.len() as u32).to_le_bytes());
                buf.extend_from_slice(&(entry.name.len() as u16).to_le_bytes());
                buf.extend_from_slice(&0u16.to_le_bytes()); // extra length
            };
            out.extend_from_slice(&LOCAL_SIG.to_le_bytes());
            common(&mut out);
            out.extend_from_slice(entry.name.as_bytes());
            out.extend_from_slice(&stored);

            central.extend_from_slice(&CENTRAL_SIG.to_le_bytes());
            central.extend_from_slice(&20u16.to_le_bytes()); // version made by
            common(&mut central);
            central.extend_from_slice(&[0; 6]); // comment len, disk, internal attrs
            central.extend_from_slice(&[0; 4]); // external attrs
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(entry.name.as_bytes());
        }
        let directory_offset = out.len() as u32;
        out.extend_from_slice(&central);
        out.extend_from_slice(&EOCD_SIG.to_le_bytes());
        out.extend_from_slice(&[0; 4]); // disk numbers
        out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        out.extend_from_slice(&(central.len() as u32).to_le_bytes());
        out.extend_from_slice(&directory_offset.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }

    fn sample() -> Vec<u8> {
        build_zip(&[
            TestEntry {
                name: "stored.txt",
                data: b"hello stored world",
                deflate: false,
            },
            TestEntry {
                name: "deflated.bin",
                data: &[7u8; 300],
                deflate: true,
            },
        ])
    }

    #[test]
    fn crc32_known_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn reads_stored_and_deflated_entries() {
        let bytes = sample();
        let archive = ZipArchive::parse(&bytes).expect("parse");
        let names: Vec<&str> = archive.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["stored.txt", "deflated.bin"]);
        let stored = archive.find("stored.txt").expect("stored entry");
        assert_eq!(stored.method, 0);
        assert_eq!(archive.read(stored).expect("read"), b"hello stored world");
        let deflated = archive.find("deflated.bin").expect("deflated entry");
        assert_eq!(deflated.method, 8);
        assert!(deflated.compressed_size < 300);
        assert_eq!(archive.read(deflated).expect("read"), vec![7u8; 300]);
    }

    #[test]
    fn detects_crc_mismatch() {
        let mut bytes = sample();
        // Flip one byte of the stored payload (right after its 30+10 byte local header).
        bytes[LOCAL_LEN + "stored.txt".len() + 2] ^= 0x20;
        let archive = ZipArchive::parse(&bytes).expect("directory still intact");
        let error = archive
            .read(archive.find("stored.txt").expect("entry"))
            .expect_err("corruption must be caught");
        assert_eq!(error.entry.as_deref(), Some("stored.txt"));
        assert!(error.message.contains("CRC-32 mismatch"), "{error}");
    }

    #[test]
    fn rejects_unsupported_method_and_encryption() {
        let bytes = sample();
        let archive = ZipArchive::parse(&bytes).expect("parse");
        let mut entry = archive.entries()[0].clone();
        entry.method = 12;
        let error = archive.read(&entry).expect_err("bzip2 unsupported");
        assert!(error.to_string().contains("method 12"), "{error}");
        entry.method = 0;
        entry.flags = 1;
        let error = archive.read(&entry).expect_err("encrypted");
        assert!(error.to_string().contains("encrypted"), "{error}");
    }

    #[test]
    fn rejects_bad_offsets() {
        let bytes = sample();
        let archive = ZipArchive::parse(&bytes).expect("parse");
        let mut entry = archive.entries()[0].clone();
        entry.local_header_offset = bytes.len() as u64 - 4;
        assert!(archive.read(&entry).is_err());
        entry.local_header_offset = 0;
        entry.compressed_size = u64::MAX;
        assert!(archive.read(&entry).is_err());
    }

    #[test]
    fn every_truncation_is_rejected_or_read_without_panic() {
        let bytes = sample();
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            // The EOCD is at the very end, so any truncation loses it.
            assert!(
                ZipArchive::parse(cut).is_err(),
                "truncated to {len} accepted"
            );
        }
    }

    #[test]
    fn every_bit_flip_is_handled_without_panic() {
        let bytes = sample();
        for pos in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[pos] ^= 0xff;
            if let Ok(archive) = ZipArchive::parse(&corrupt) {
                for entry in archive.entries() {
                    let _ = archive.read(entry);
                }
            }
        }
    }

    #[test]
    fn reads_zip64_extra_and_locator() {
        // Rewrite the single-entry archive by hand into zip64 form.
        let data = b"zip64 payload";
        let name = b"a.npy";
        let mut out = Vec::new();
        out.extend_from_slice(&LOCAL_SIG.to_le_bytes());
        out.extend_from_slice(&[45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&crc32(data).to_le_bytes());
        out.extend_from_slice(&[0xff; 8]);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&ZIP64_EXTRA_ID.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(data);
        let directory = out.len();
        out.extend_from_slice(&CENTRAL_SIG.to_le_bytes());
        out.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&crc32(data).to_le_bytes());
        out.extend_from_slice(&[0xff; 8]);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&28u16.to_le_bytes());
        out.extend_from_slice(&[0; 10]);
        out.extend_from_slice(&[0xff; 4]);
        out.extend_from_slice(name);
        out.extend_from_slice(&ZIP64_EXTRA_ID.to_le_bytes());
        out.extend_from_slice(&24u16.to_le_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        let directory_len = out.len() - directory;
        let record = out.len();
        out.extend_from_slice(&ZIP64_EOCD_SIG.to_le_bytes());
        out.extend_from_slice(&44u64.to_le_bytes());
        out.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&1u64.to_le_bytes());
        out.extend_from_slice(&1u64.to_le_bytes());
        out.extend_from_slice(&(directory_len as u64).to_le_bytes());
        out.extend_from_slice(&(directory as u64).to_le_bytes());
        out.extend_from_slice(&ZIP64_LOCATOR_SIG.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(record as u64).to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&EOCD_SIG.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&[0xff; 4]);
        out.extend_from_slice(&[0xff; 8]);
        out.extend_from_slice(&0u16.to_le_bytes());

        let archive = ZipArchive::parse(&out).expect("zip64 archive");
        let entry = archive.find("a.npy").expect("entry");
        assert_eq!(entry.uncompressed_size, data.len() as u64);
        assert_eq!(archive.read(entry).expect("read"), data);
    }
}
