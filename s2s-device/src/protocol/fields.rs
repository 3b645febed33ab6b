//! Pieces of lines: numbers written without `core::fmt` formatting, `key=value` fields,
//! and the escaping of output text.

use core::fmt::{self, Write};

/// Writes `v` in decimal. Out of line and in 32-bit arithmetic where the value allows:
/// it is called for every number the firmware writes.
#[inline(never)]
pub(crate) fn put_u64(out: &mut dyn Write, v: u64) -> fmt::Result {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut wide = v;
    while wide > u64::from(u32::MAX) {
        i -= 1;
        buf[i] = b'0' + (wide % 10) as u8;
        wide /= 10;
    }
    let mut v = wide as u32;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.write_str(core::str::from_utf8(&buf[i..]).map_err(|_| fmt::Error)?)
}

/// Writes `v` in decimal, with a `-` when negative.
pub(crate) fn put_i64(out: &mut dyn Write, v: i64) -> fmt::Result {
    if v < 0 {
        out.write_char('-')?;
    }
    put_u64(out, v.unsigned_abs())
}

/// Writes `v` as eight lower-case hex digits, without `0x`.
#[inline(never)]
pub(crate) fn put_hex32(out: &mut dyn Write, v: u32) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..8).rev() {
        out.write_char(DIGITS[(v >> (shift * 4)) as usize & 0xf] as char)?;
    }
    Ok(())
}

/// Writes ` key=v`.
#[inline(never)]
pub(crate) fn put_field(out: &mut dyn Write, key: &str, v: u64) -> fmt::Result {
    out.write_char(' ')?;
    out.write_str(key)?;
    out.write_char('=')?;
    put_u64(out, v)
}

/// The value of `key=` among the words of `fields`.
pub(crate) fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split(' ')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// The number `key=<n>` among `fields`.
pub(crate) fn num(fields: &str, key: &str) -> Option<u64> {
    field(fields, key)?.parse().ok()
}

/// `0x<hex>` as a number.
pub(crate) fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

/// A writer that escapes `\`, newline and carriage return (as `\\`, `\n`, `\r`), so that
/// any text stays on one line.
pub struct Escape<'w>(pub &'w mut dyn Write);

impl Write for Escape<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(i) = rest.find(['\\', '\n', '\r']) {
            self.0.write_str(&rest[..i])?;
            self.0.write_str(match rest.as_bytes()[i] {
                b'\n' => "\\n",
                b'\r' => "\\r",
                _ => "\\\\",
            })?;
            rest = &rest[i + 1..];
        }
        self.0.write_str(rest)
    }
}

/// The characters of text written through [`Escape`]; `None` for a `\` followed by
/// anything else than `\`, `n` or `r`.
pub fn unescape(s: &str) -> impl Iterator<Item = Option<char>> + '_ {
    let mut chars = s.chars();
    core::iter::from_fn(move || {
        let c = chars.next()?;
        Some(if c == '\\' {
            match chars.next() {
                Some('\\') => Some('\\'),
                Some('n') => Some('\n'),
                Some('r') => Some('\r'),
                _ => None,
            }
        } else {
            Some(c)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let mut s = String::new();
        put_u64(&mut s, 0).unwrap();
        s.push(' ');
        put_u64(&mut s, u64::MAX).unwrap();
        s.push(' ');
        put_i64(&mut s, i64::MIN).unwrap();
        s.push(' ');
        put_hex32(&mut s, 0x3f80_00ab).unwrap();
        assert_eq!(s, format!("0 {} {} 3f8000ab", u64::MAX, i64::MIN));
    }

    #[test]
    fn escaping_round_trips() {
        for text in ["", "a\\b\nc\r", "\\n", "ផ្នម", "\n\n\\"] {
            let mut s = String::new();
            Escape(&mut s).write_str(text).unwrap();
            assert!(!s.contains('\n') && !s.contains('\r'));
            let back: Option<String> = unescape(&s).collect();
            assert_eq!(back.as_deref(), Some(text));
        }
        assert_eq!(unescape("a\\x").collect::<Option<String>>(), None);
    }
}
