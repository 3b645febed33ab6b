//! A UF2 writer for `cargo xtask flash` on boards flashed by UF2 (the Pico): the loadable
//! segments of a 32-bit little-endian ELF (their load addresses, so `.data`'s image
//! lands in flash) as 256-byte UF2 blocks for a chip family.

use std::collections::BTreeMap;
use std::fmt;

/// Payload bytes per block (what the RP2040's bootloader takes).
const PAYLOAD: u32 = 256;
const MAGIC_START0: u32 = 0x0A32_4655;
const MAGIC_START1: u32 = 0x9E5D_5157;
const MAGIC_END: u32 = 0x0AB1_6F30;
/// Flag: the family ID field is set.
const FLAG_FAMILY: u32 = 0x0000_2000;

/// One loadable piece of an ELF: load address and bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub addr: u32,
    pub bytes: Vec<u8>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Why an image is not an ELF whose segments [`load_segments`] can read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ElfError {
    /// Not an ELF file, or not 32-bit little-endian.
    NotElf32Le,
    /// The ELF header or a program header ends before the file.
    Truncated,
    /// The bytes of segment `n` (in program header order) lie outside the file.
    SegmentOutside(usize),
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::NotElf32Le => f.write_str("not a 32-bit little-endian ELF file"),
            ElfError::Truncated => f.write_str("truncated ELF header or program header"),
            ElfError::SegmentOutside(i) => write!(f, "segment {i} lies outside the file"),
        }
    }
}

impl std::error::Error for ElfError {}

/// The `PT_LOAD` segments with file bytes of an ELF32 little-endian image, at their
/// physical (load) addresses.
pub(crate) fn load_segments(elf: &[u8]) -> Result<Vec<Segment>, ElfError> {
    if elf.get(..4) != Some(b"\x7fELF") || elf.get(4) != Some(&1) || elf.get(5) != Some(&1) {
        return Err(ElfError::NotElf32Le);
    }
    let bad = || ElfError::Truncated;
    let phoff = u32_at(elf, 0x1C).ok_or_else(bad)? as usize;
    let phentsize = u16_at(elf, 0x2A).ok_or_else(bad)? as usize;
    let phnum = u16_at(elf, 0x2C).ok_or_else(bad)? as usize;
    let mut segments = Vec::new();
    for i in 0..phnum {
        let h = phoff + i * phentsize;
        let kind = u32_at(elf, h).ok_or_else(bad)?;
        let offset = u32_at(elf, h + 4).ok_or_else(bad)? as usize;
        let paddr = u32_at(elf, h + 12).ok_or_else(bad)?;
        let filesz = u32_at(elf, h + 16).ok_or_else(bad)? as usize;
        if kind != 1 || filesz == 0 {
            continue; // not PT_LOAD, or nothing to write (.bss)
        }
        let bytes = elf
            .get(offset..offset + filesz)
            .ok_or(ElfError::SegmentOutside(i))?;
        segments.push(Segment {
            addr: paddr,
            bytes: bytes.to_vec(),
        });
    }
    Ok(segments)
}

/// The UF2 file of `segments` for chip family `family_id`: one 512-byte block per
/// 256-byte-aligned piece of flash they touch (bytes they leave out are 0).
pub(crate) fn uf2(segments: &[Segment], family_id: u32) -> Vec<u8> {
    let mut blocks: BTreeMap<u32, [u8; PAYLOAD as usize]> = BTreeMap::new();
    for s in segments {
        for (i, &b) in s.bytes.iter().enumerate() {
            let addr = s.addr.wrapping_add(i as u32);
            let block = blocks
                .entry(addr & !(PAYLOAD - 1))
                .or_insert([0; PAYLOAD as usize]);
            block[(addr % PAYLOAD) as usize] = b;
        }
    }
    let total = blocks.len() as u32;
    let mut out = Vec::with_capacity(blocks.len() * 512);
    for (n, (addr, payload)) in blocks.iter().enumerate() {
        let start = out.len();
        for word in [
            MAGIC_START0,
            MAGIC_START1,
            FLAG_FAMILY,
            *addr,
            PAYLOAD,
            n as u32,
            total,
            family_id,
        ] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(payload);
        out.resize(start + 508, 0);
        out.extend_from_slice(&MAGIC_END.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF32 LE header with `segments` as (type, paddr, bytes) program headers.
    fn elf(segments: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut e = vec![0u8; 52];
        e[..6].copy_from_slice(b"\x7fELF\x01\x01");
        e[0x1C..0x20].copy_from_slice(&52u32.to_le_bytes());
        e[0x2A..0x2C].copy_from_slice(&32u16.to_le_bytes());
        e[0x2C..0x2E].copy_from_slice(&(segments.len() as u16).to_le_bytes());
        let data_at = 52 + 32 * segments.len();
        let mut data = Vec::new();
        for (kind, paddr, bytes) in segments {
            let mut h = [0u8; 32];
            h[..4].copy_from_slice(&kind.to_le_bytes());
            h[4..8].copy_from_slice(&((data_at + data.len()) as u32).to_le_bytes());
            h[8..12].copy_from_slice(&0x2000_0000u32.to_le_bytes()); // vaddr: not used
            h[12..16].copy_from_slice(&paddr.to_le_bytes());
            h[16..20].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
            e.extend_from_slice(&h);
            data.extend_from_slice(bytes);
        }
        e.extend_from_slice(&data);
        e
    }

    #[test]
    fn load_segments_are_read_at_their_load_addresses() {
        let image = elf(&[
            (1, 0x1000_0000, &[1, 2, 3]),
            (6, 0, &[9]),
            (1, 0x1008_0000, &[7; 300]),
        ]);
        let s = load_segments(&image).unwrap();
        assert_eq!(s.len(), 2, "the non-PT_LOAD header is skipped");
        assert_eq!(
            (s[0].addr, &s[0].bytes[..]),
            (0x1000_0000, &[1u8, 2, 3][..])
        );
        assert_eq!((s[1].addr, s[1].bytes.len()), (0x1008_0000, 300));
        assert_eq!(load_segments(b"\x7fELF\x02\x01"), Err(ElfError::NotElf32Le));
        assert!(load_segments(&image[..60]).is_err());
    }

    #[test]
    fn blocks_cover_each_256_bytes_touched_once() {
        let segments = [
            Segment {
                addr: 0x1000_00F0,
                bytes: vec![0xAA; 0x20], // straddles two blocks
            },
            Segment {
                addr: 0x1008_0000,
                bytes: vec![0x55; 300],
            },
        ];
        let f = uf2(&segments, 0xE48B_FF56);
        assert_eq!(f.len(), 4 * 512);
        let word = |block: usize, i: usize| u32_at(&f, block * 512 + 4 * i).unwrap();
        let addrs: Vec<u32> = (0..4).map(|b| word(b, 3)).collect();
        assert_eq!(addrs, [0x1000_0000, 0x1000_0100, 0x1008_0000, 0x1008_0100]);
        for b in 0..4 {
            assert_eq!(
                [word(b, 0), word(b, 1), word(b, 2)],
                [MAGIC_START0, MAGIC_START1, FLAG_FAMILY]
            );
            assert_eq!([word(b, 4), word(b, 5), word(b, 6)], [256, b as u32, 4]);
            assert_eq!(word(b, 7), 0xE48B_FF56);
            assert_eq!(u32_at(&f, b * 512 + 508).unwrap(), MAGIC_END);
        }
        let payload = |b: usize| &f[b * 512 + 32..b * 512 + 32 + 256];
        assert_eq!(payload(0)[0xEF], 0);
        assert_eq!(payload(0)[0xF0..], [0xAA; 16]);
        assert_eq!(payload(1)[..16], [0xAA; 16]);
        assert_eq!(payload(1)[16], 0);
        assert_eq!(payload(3)[..44], [0x55; 44]);
        assert_eq!(payload(3)[44], 0);
    }
}
