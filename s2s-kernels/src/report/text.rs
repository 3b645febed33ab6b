//! Messages written without `core::fmt` formatting.
//!
//! `write!` goes through `core::fmt::write` and the `Formatter` machinery, which carry
//! panic paths and several kilobytes of code. The errors of the core crates and the
//! firmware's protocol lines are written through [`fmt::Write::write_str`] only, with
//! the number writers below, into a [`Sink`], so that a device prints any of them with
//! neither. Each
//! error type's [`Describe::describe`] is the one definition of its message; its
//! `Display` calls it.
//!
//! ```
//! use s2s_kernels::text::{put_hex32, put_i64, put_u64, Describe, Sink};
//!
//! struct Late(u64);
//! impl Describe for Late {
//!     fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
//!         out.put("late by ")?;
//!         put_u64(out, self.0)?;
//!         out.put(" ms")
//!     }
//! }
//! let mut s = String::new();
//! Late(1500).describe(&mut s).unwrap();
//! s.push(' ');
//! put_i64(&mut s, -7).unwrap();
//! s.push(' ');
//! put_hex32(&mut s, 0xbeef).unwrap();
//! assert_eq!(s, "late by 1500 ms -7 0000beef");
//! ```

use core::fmt::{self, Write};

/// Where text goes: [`Write::write_str`] alone, as a trait object.
///
/// Every `core::fmt::Write` is one. Writers take `&mut dyn Sink` rather than being
/// generic, so that each message exists once in a device's flash however many outputs
/// it is written to; and not `&mut dyn core::fmt::Write`, whose vtable would link
/// `write_fmt`, and with it `core::fmt`'s formatting machinery and its panics.
pub trait Sink {
    /// Writes `s`.
    fn put(&mut self, s: &str) -> fmt::Result;
}

impl<T: Write> Sink for T {
    fn put(&mut self, s: &str) -> fmt::Result {
        self.write_str(s)
    }
}

impl Write for dyn Sink + '_ {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.put(s)
    }
}

/// A message written through a [`Sink`] (see the [module](self) documentation).
pub trait Describe {
    /// Writes the message to `out`.
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result;
}

impl Describe for str {
    // Out of line: a message is a chain of these calls, each a few bytes; inlined (LTO
    // sees through the `dyn Sink` when a device has one output) each would carry a copy
    // of the output's writer.
    #[inline(never)]
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        out.put(self)
    }
}

impl<T: Describe + ?Sized> Describe for &T {
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        (**self).describe(out)
    }
}

/// Unsigned integers in decimal.
macro_rules! describe_unsigned {
    ($($t:ty),*) => {$(
        impl Describe for $t {
            #[inline(never)]
            fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
                put_u64(out, *self as u64)
            }
        }
    )*};
}
describe_unsigned!(u8, u16, u32, u64, usize);

/// Signed integers in decimal.
macro_rules! describe_signed {
    ($($t:ty),*) => {$(
        impl Describe for $t {
            #[inline(never)]
            fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
                put_i64(out, i64::from(*self))
            }
        }
    )*};
}
describe_signed!(i8, i16, i32, i64);

/// A `u32` as `{:#010x}` writes it: `0x` and eight hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hex32(pub u32);

impl Describe for Hex32 {
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        out.put("0x")?;
        put_hex32(out, self.0)
    }
}

/// A `char` in single quotes, escaped as `{:?}` escapes it (see [`put_char_quoted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotedChar(pub char);

impl Describe for QuotedChar {
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        put_char_quoted(out, self.0)
    }
}

/// Writes pieces (anything [`Describe`]: string literals, integers, [`Hex32`], other
/// messages) one after the other to a [`Sink`], returning on the first error:
/// `say!(out; "found ", n, " of ", max)` writes what `write!(out, "found {n} of {max}")`
/// writes, without `core::fmt`. For use in a function returning `core::fmt::Result`.
#[macro_export]
macro_rules! say {
    ($out:expr; $($piece:expr),+ $(,)?) => {{
        let out: &mut dyn $crate::text::Sink = &mut *$out;
        $( $crate::text::Describe::describe(&$piece, &mut *out)?; )+
        Ok(())
    }};
}

/// `(v / 10, v % 10)` in 32-bit divisions: the long division of `v`'s four 16-bit limbs
/// by 10 (each partial dividend, `remainder << 16 | limb`, is below `10 << 16`). A
/// Cortex-M has no 64-bit divide: this keeps the library's 64-bit division routine
/// (about 1 KB on the micro:bit) out of a device's image.
fn div10(v: u64) -> (u64, u32) {
    let (mut q, mut rem) = (0u64, 0u32);
    for shift in [48, 32, 16, 0] {
        let d = (rem << 16) | ((v >> shift) as u32 & 0xffff);
        q |= u64::from(d / 10) << shift;
        rem = d % 10;
    }
    (q, rem)
}

/// Writes `v` in decimal. Out of line and in 32-bit arithmetic: a device calls it for
/// every number it writes.
#[inline(never)]
pub fn put_u64(out: &mut dyn Sink, v: u64) -> fmt::Result {
    // The digits, last first, from the end of `buf` (20 places hold u64::MAX).
    let mut buf = [0u8; 20];
    let mut slots = buf.iter_mut().rev();
    let mut used = 0;
    let mut wide = v;
    while wide > u64::from(u32::MAX) {
        let (q, digit) = div10(wide);
        if let Some(slot) = slots.next() {
            *slot = b'0' + digit as u8;
            used += 1;
        }
        wide = q;
    }
    let mut narrow = wide as u32;
    for slot in slots {
        *slot = b'0' + (narrow % 10) as u8;
        used += 1;
        narrow /= 10;
        if narrow == 0 {
            break;
        }
    }
    let start = buf.len().saturating_sub(used);
    ascii(out, buf.get(start..).unwrap_or(&[]))
}

/// Writes `v` in decimal, with a `-` when negative.
pub fn put_i64(out: &mut dyn Sink, v: i64) -> fmt::Result {
    if v < 0 {
        out.put("-")?;
    }
    put_u64(out, v.unsigned_abs())
}

/// Writes `v` as eight lower-case hex digits, without `0x`.
#[inline(never)]
pub fn put_hex32(out: &mut dyn Sink, v: u32) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 8];
    for (i, slot) in buf.iter_mut().enumerate() {
        *slot = DIGITS[(v >> (28 - 4 * i)) as usize & 0xf];
    }
    ascii(out, &buf)
}

/// Writes `c` in single quotes as Rust's `{:?}` of a `char` writes it, for every ASCII
/// character and every printable one: `'a'`, `'\''`, `'\n'`, `'\u{7f}'`, `'ផ'`. Other
/// characters that would not show (C1 controls, the no-break and zero-width spaces, the
/// soft hyphen, directional marks, combining diacritics, the byte-order mark...) are
/// written as `\u{..}` too; without Unicode's tables (whose lookup in `core` carries
/// panic paths), a rarer unprintable character is written as it is.
pub fn put_char_quoted(out: &mut dyn Sink, c: char) -> fmt::Result {
    out.put("'")?;
    match c {
        '\0' => out.put("\\0")?,
        '\t' => out.put("\\t")?,
        '\n' => out.put("\\n")?,
        '\r' => out.put("\\r")?,
        '\'' => out.put("\\'")?,
        '\\' => out.put("\\\\")?,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{a0}'
        | '\u{ad}'
        | '\u{300}'..='\u{36f}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}' => {
            out.put("\\u{")?;
            put_hex(out, u32::from(c))?;
            out.put("}")?;
        }
        _ => put_char(out, c)?,
    }
    out.put("'")
}

/// Writes `v` in lower-case hex without leading zeros (`0` for 0).
fn put_hex(out: &mut dyn Sink, v: u32) -> fmt::Result {
    let mut buf = [0u8; 8];
    let mut digits = buf.iter_mut().rev();
    let mut used = 0;
    let mut rest = v;
    for slot in &mut digits {
        *slot = b"0123456789abcdef"[(rest & 0xf) as usize];
        used += 1;
        rest >>= 4;
        if rest == 0 {
            break;
        }
    }
    let start = buf.len().saturating_sub(used);
    ascii(out, buf.get(start..).unwrap_or(&[]))
}

/// Writes one `char`.
pub fn put_char(out: &mut dyn Sink, c: char) -> fmt::Result {
    let mut buf = [0u8; 4];
    out.put(c.encode_utf8(&mut buf))
}

/// Writes bytes known to be ASCII.
fn ascii(out: &mut dyn Sink, bytes: &[u8]) -> fmt::Result {
    out.put(core::str::from_utf8(bytes).map_err(|_| fmt::Error)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_those_of_core_fmt() {
        let cases = [
            0,
            1,
            9,
            10,
            99,
            4_294_967_295,
            4_294_967_296,
            42_949_672_950,
            10_000_000_000_000_000_000,
            u64::MAX,
        ];
        for v in cases {
            let mut s = String::new();
            put_u64(&mut s, v).unwrap();
            assert_eq!(s, v.to_string());
        }
        for v in [i64::MIN, -1, 0, 1, i64::MAX] {
            let mut s = String::new();
            put_i64(&mut s, v).unwrap();
            assert_eq!(s, v.to_string());
        }
        for v in [0, 1, 0xdead_beef, u32::MAX] {
            let mut s = String::new();
            put_hex32(&mut s, v).unwrap();
            assert_eq!(s, format!("{v:08x}"));
        }
        // Every ASCII character, and the printable or invisible ones named in the
        // documentation, as `{:?}` writes them.
        let named = [
            'ផ', 'é', '€', '\u{85}', '\u{a0}', '\u{ad}', '\u{200b}', '\u{301}', '\u{feff}',
        ];
        for c in (0u8..0x80).map(char::from).chain(named) {
            let mut s = String::new();
            put_char_quoted(&mut s, c).unwrap();
            assert_eq!(s, format!("{c:?}"));
        }
    }

    #[test]
    fn say_writes_what_write_writes() {
        fn both(n: usize, code: u32) -> core::fmt::Result {
            let mut said = String::new();
            (|| -> core::fmt::Result {
                crate::say!(&mut said; "found ", n, " at ", Hex32(code), ", ", -3i8, " ", QuotedChar('\t'))
            })()?;
            assert_eq!(said, format!("found {n} at {code:#010x}, -3 '\\t'"));
            Ok(())
        }
        both(12, 0xab).unwrap();
    }

    proptest::proptest! {
        #[test]
        fn every_u64_is_written_as_core_fmt_writes_it(v: u64) {
            let mut s = String::new();
            put_u64(&mut s, v).unwrap();
            proptest::prop_assert_eq!(s, v.to_string());
        }
    }
}
