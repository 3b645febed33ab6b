//! Bounds-checked little-endian reading and the Jenkins lookup3 checksum HDF5 uses.

use crate::error::Problem;

/// Sizes of file addresses ("offsets") and lengths, from the superblock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sizes {
    /// Bytes in an address (2, 4 or 8).
    pub offset: usize,
    /// Bytes in a length (2, 4 or 8).
    pub length: usize,
}

/// The file's bytes plus what is needed to resolve addresses in it.
#[derive(Debug, Clone, Copy)]
pub(super) struct File<'a> {
    /// The whole file.
    pub bytes: &'a [u8],
    /// Where address 0 is: the superblock's position (non-zero with a user block).
    pub base: usize,
    /// Address and length widths.
    pub sizes: Sizes,
}

impl<'a> File<'a> {
    /// Converts a file address into a position in `bytes`, checking it is inside.
    pub(super) fn position(&self, address: u64, what: &str) -> Result<usize, Problem> {
        usize::try_from(address)
            .ok()
            .and_then(|address| address.checked_add(self.base))
            .filter(|&position| position < self.bytes.len())
            .ok_or_else(|| Problem(format!("{what} address {address:#x} is outside the file")))
    }

    /// The `len` bytes at `address`.
    pub(super) fn region(&self, address: u64, len: u64, what: &str) -> Result<&'a [u8], Problem> {
        let start = self.position(address, what)?;
        usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .and_then(|end| self.bytes.get(start..end))
            .ok_or_else(|| {
                Problem(format!(
                    "{what} ({len} bytes at address {address:#x}) runs past the end of the file"
                ))
            })
    }

    /// A reader positioned at `address`, able to read to the end of the file.
    pub(super) fn reader_at(
        &self,
        address: u64,
        what: &'static str,
    ) -> Result<Reader<'a>, Problem> {
        let start = self.position(address, what)?;
        Ok(Reader::new(&self.bytes[start..], self.sizes, what))
    }
}

/// A cursor over a byte slice whose every read is bounds-checked. Errors name `what`
/// is being read so a truncated structure is reported as e.g. "dataspace message is
/// truncated".
#[derive(Debug, Clone)]
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    sizes: Sizes,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], sizes: Sizes, what: &'static str) -> Self {
        Reader {
            bytes,
            pos: 0,
            sizes,
            what,
        }
    }

    /// The same cursor, reading addresses and lengths of the given widths from now on.
    pub(super) fn with_sizes(self, sizes: Sizes) -> Self {
        Reader { sizes, ..self }
    }

    pub(super) fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// The bytes read so far (from the start of the slice), for checksums.
    pub(super) fn consumed(&self) -> &'a [u8] {
        &self.bytes[..self.pos]
    }

    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `len` bytes.
    pub(super) fn take(&mut self, len: usize) -> Result<&'a [u8], Problem> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| Problem(format!("{} is truncated", self.what)))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub(super) fn skip(&mut self, len: usize) -> Result<(), Problem> {
        self.take(len).map(|_| ())
    }

    pub(super) fn u8(&mut self) -> Result<u8, Problem> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16, Problem> {
        self.uint(2).map(|v| v as u16)
    }

    pub(super) fn u32(&mut self) -> Result<u32, Problem> {
        self.uint(4).map(|v| v as u32)
    }

    pub(super) fn u64(&mut self) -> Result<u64, Problem> {
        self.uint(8)
    }

    /// A little-endian unsigned integer of `len` (at most 8) bytes.
    pub(super) fn uint(&mut self, len: usize) -> Result<u64, Problem> {
        if len > 8 {
            return Err(Problem(format!(
                "{}: {len}-byte integer field is too wide",
                self.what
            )));
        }
        let raw = self.take(len)?;
        Ok(raw
            .iter()
            .rev()
            .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte)))
    }

    /// A file address; `None` for the undefined address (all bits set).
    pub(super) fn address(&mut self) -> Result<Option<u64>, Problem> {
        let width = self.sizes.offset;
        let value = self.uint(width)?;
        let undefined = if width == 8 {
            u64::MAX
        } else {
            (1u64 << (width * 8)) - 1
        };
        Ok((value != undefined).then_some(value))
    }

    /// A length field.
    pub(super) fn length(&mut self) -> Result<u64, Problem> {
        self.uint(self.sizes.length)
    }

    /// Checks for a 4-byte signature such as `OHDR`.
    pub(super) fn expect_signature(&mut self, signature: &[u8; 4]) -> Result<(), Problem> {
        let found = self.take(4)?;
        if found == signature {
            Ok(())
        } else {
            Err(Problem(format!(
                "{}: expected signature {} but found {:?}",
                self.what,
                String::from_utf8_lossy(signature),
                String::from_utf8_lossy(found)
            )))
        }
    }
}

/// Verifies that the 4 bytes after `covered` hold lookup3(`covered`).
pub(super) fn verify_checksum(covered: &[u8], stored: u32, what: &str) -> Result<(), Problem> {
    let computed = lookup3(covered);
    if computed == stored {
        Ok(())
    } else {
        Err(Problem(format!(
            "{what}: checksum mismatch (stored {stored:08x}, computed {computed:08x})"
        )))
    }
}

/// Bob Jenkins' lookup3 `hashlittle` with seed 0, as HDF5's `H5_checksum_lookup3`.
pub(super) fn lookup3(data: &[u8]) -> u32 {
    // Seed 0; the length is added modulo 2^32 exactly as the C code's uint32_t does.
    let init = 0xdead_beefu32.wrapping_add(data.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |block: &[u8], i: usize| {
        u32::from_le_bytes([block[i], block[i + 1], block[i + 2], block[i + 3]])
    };
    let mut rest = data;
    while rest.len() > 12 {
        a = a.wrapping_add(word(rest, 0));
        b = b.wrapping_add(word(rest, 4));
        c = c.wrapping_add(word(rest, 8));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    // The final 1..=12 bytes, zero-padded, are added as three little-endian words.
    let mut tail = [0u8; 12];
    tail[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(word(&tail, 0));
    b = b.wrapping_add(word(&tail, 4));
    c = c.wrapping_add(word(&tail, 8));
    finish(&mut a, &mut b, &mut c);
    c
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup3_reference_values() {
        // From the self-test in Jenkins' lookup3.c: hashlittle("", 0, 0) and
        // hashlittle("Four score and seven years ago", 30, 0).
        assert_eq!(lookup3(b""), 0xdead_beef);
        assert_eq!(lookup3(b"Four score and seven years ago"), 0x1777_0551);
    }

    #[test]
    fn reader_bounds_and_undefined_address() {
        let sizes = Sizes {
            offset: 4,
            length: 2,
        };
        let bytes = [0xff, 0xff, 0xff, 0xff, 0x34, 0x12, 0x01];
        let mut reader = Reader::new(&bytes, sizes, "test structure");
        assert_eq!(reader.address(), Ok(None));
        assert_eq!(reader.length(), Ok(0x1234));
        assert_eq!(reader.remaining(), 1);
        assert_eq!(reader.u16(), Err("test structure is truncated".into()));
    }
}
