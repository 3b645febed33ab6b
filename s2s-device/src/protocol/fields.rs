//! Pieces of lines: `key=value` fields (numbers written without `core::fmt` formatting,
//! by `s2s_kernels::text`) and the escaping of output text.

use core::fmt::{self, Write};

pub(crate) use s2s_kernels::text::{put_hex32, put_i64, put_u64, Sink};

/// Writes ` key=v`.
#[inline(never)]
pub(crate) fn put_field(out: &mut dyn Sink, key: &str, v: u64) -> fmt::Result {
    out.put(" ")?;
    out.put(key)?;
    out.put("=")?;
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
pub struct Escape<'w>(pub &'w mut dyn Sink);

impl Write for Escape<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Split at the ASCII bytes to escape: the pieces between them are whole UTF-8.
        let mut rest = s;
        while let Some((head, tail)) = rest.split_once(['\\', '\n', '\r']) {
            self.0.put(head)?;
            // The byte `split_once` removed: the one after `head`.
            let escaped = match rest.as_bytes().get(head.len()) {
                Some(b'\n') => "\\n",
                Some(b'\r') => "\\r",
                _ => "\\\\",
            };
            self.0.put(escaped)?;
            rest = tail;
        }
        self.0.put(rest)
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
