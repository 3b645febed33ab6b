//! Errors as numbers: `ERR E<code>` and `ERR model: E<code>` from a firmware that keeps
//! no error texts (its `error-codes` feature), and the one table that tells a code back
//! on the host ([`explain`], `s2s explain CODE`).
//!
//! One number space: 1 to 99 are the inference core's errors ([`seq2seq::Error::code`],
//! its table), 100 and up the firmware's own, [`DeviceCode`] (the session's 100-109,
//! serving a model 110-119). A code keeps its meaning and is never reused.
//!
//! ```
//! use s2s_device::protocol::code::{explain, DeviceCode, ErrorCode, Reason};
//!
//! let mut line = String::new();
//! s2s_device::protocol::write_err(&mut line, &ErrorCode(64)).unwrap();
//! assert_eq!(line, "ERR E64\n");
//! assert_eq!(Reason("E64").to_string(), "E64 (input too long)");
//! assert_eq!(Reason("line too long").to_string(), "line too long");
//! assert_eq!(
//!     explain(DeviceCode::LineTooLong.code()).unwrap().to_string(),
//!     "E100 LineTooLong: line too long"
//! );
//! ```

use core::fmt::{self, Display};

use s2s_kernels::text::{Describe, Sink};

/// The table of the firmware's own errors: generates [`DeviceCode`] and its look-ups
/// (a code given twice is an unreachable pattern of `from_code`, which is denied).
macro_rules! device_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal => $text:literal,)+) => {
        /// The firmware's own errors (not the inference core's): their codes, 100 and up,
        /// and texts. The firmware's error types report them ([`DeviceCode::code`], or
        /// [`DeviceCode::as_str`] in a build with texts).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        #[non_exhaustive]
        pub enum DeviceCode {
            $($(#[$doc])* $name = $code,)+
        }

        impl DeviceCode {
            /// Every code, in the table's order.
            pub const ALL: &'static [DeviceCode] = &[$(DeviceCode::$name),+];

            /// The code of `ERR E<code>`.
            pub const fn code(self) -> u16 {
                self as u16
            }

            /// The fixed text, what a firmware with texts writes.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(DeviceCode::$name => $text,)+
                }
            }

            /// The variant's name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(DeviceCode::$name => stringify!($name),)+
                }
            }

            /// The error of a code; `None` for a code that is none of the firmware's.
            #[deny(unreachable_patterns)]
            pub const fn from_code(code: u16) -> Option<DeviceCode> {
                match code {
                    $($code => Some(DeviceCode::$name),)+
                    _ => None,
                }
            }
        }
    };
}

device_codes! {
    // the session (100-109)
    /// An input line longer than the board's line buffer (the whole line is dropped).
    LineTooLong = 100 => "line too long",
    /// A command (a line starting with byte 0x01) the firmware does not know.
    UnknownCommand = 101 => "unknown command",
    /// A source line that is not UTF-8.
    NotUtf8 = 102 => "input is not UTF-8",
    /// Writing an answer failed.
    OutputFailed = 103 => "output failed",
    // serving a model (110-119)
    /// Binding the model (nearly) exhausted the stack: nothing more is attempted.
    StackExhausted = 110 => "binding the model exhausted the stack",
    /// A valid model beyond the board's capacities (arena, source positions or steps).
    BeyondCapacity = 111 => "model beyond the board's capacities",
}

impl Describe for DeviceCode {
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        out.put(self.as_str())
    }
}

/// An error code as the protocol writes it, `E<code>` (in decimal, without `core::fmt`
/// and in 16-bit arithmetic): `write_err(out, &ErrorCode(e.code()))` writes
/// `ERR E<code>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode(pub u16);

impl Describe for ErrorCode {
    // Out of line: every coded error of a firmware comes here.
    #[inline(never)]
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
        // The digits, last first, from the end (five places hold u16::MAX); divisions
        // by 10 only, which compile to multiplications.
        let mut digits = [""; 5];
        let mut rest = self.0;
        for slot in digits.iter_mut().rev() {
            *slot = DIGITS.get(usize::from(rest % 10)).ok_or(fmt::Error)?;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        out.put("E")?;
        for digit in digits.iter().filter(|d| !d.is_empty()) {
            out.put(digit)?;
        }
        Ok(())
    }
}

impl Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(f)
    }
}

/// The code of an `ERR` reason in the code form, `E<code>` (`E` and the decimal number
/// as [`ErrorCode`] writes it, nothing else); `None` for a reason in words.
pub fn parse_code(reason: &str) -> Option<u16> {
    let digits = reason.strip_prefix('E')?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if canonical {
        digits.parse().ok()
    } else {
        None
    }
}

/// What a code stands for: [`explain`]'s answer. Its `Display` is one line,
/// `E64 InputTooLong: input too long`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Explained {
    /// The code.
    pub code: u16,
    /// The error's name: the variant of [`seq2seq::Error`] or of [`DeviceCode`].
    pub name: &'static str,
    /// Its fixed text ([`seq2seq::Error::as_str`] or [`DeviceCode::as_str`]).
    pub text: &'static str,
}

impl Display for Explained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", ErrorCode(self.code), self.name, self.text)
    }
}

/// Looks a code up in both tables, the inference core's ([`seq2seq::Error::explain`],
/// 1-99) and the firmware's ([`DeviceCode`], 100 and up); `None` for a code that is in
/// neither.
pub fn explain(code: u16) -> Option<Explained> {
    let (name, text) = seq2seq::Error::explain(code)
        .or_else(|| DeviceCode::from_code(code).map(|d| (d.name(), d.as_str())))?;
    Some(Explained { code, name, text })
}

/// The reason of an `ERR` line (the text after `ERR ` or `ERR model: `) as the host shows
/// it: a reason in words as it is, a code with its text, `E64 (input too long)`, and a
/// code of neither table as `E999 (an unknown error code)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reason<'a>(pub &'a str);

impl Reason<'_> {
    /// The code, for a reason in the code form.
    pub fn code(&self) -> Option<u16> {
        parse_code(self.0)
    }
}

impl Display for Reason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code() {
            None => f.write_str(self.0),
            Some(code) => match explain(code) {
                Some(e) => write!(f, "{} ({})", self.0, e.text),
                None => write!(f, "{} (an unknown error code)", self.0),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_written_and_parsed_back() {
        for code in [0, 1, 9, 10, 64, 99, 100, 111, 1000, 9999, 10_000, 65_535] {
            let mut s = String::new();
            ErrorCode(code).describe(&mut s).unwrap();
            assert_eq!(s, format!("E{code}"));
            assert_eq!(ErrorCode(code).to_string(), s);
            assert_eq!(parse_code(&s), Some(code), "{s}");
        }
        for words in [
            "",
            "E",
            "E-1",
            "E+1",
            "E064",
            "E65536",
            "E6 4",
            "e64",
            "E64 ",
            "Eleven",
            "line too long",
            "empty input",
        ] {
            assert_eq!(parse_code(words), None, "{words:?}");
        }
    }

    #[test]
    fn the_firmware_codes_are_from_100_distinct_and_disjoint_from_the_core() {
        let mut seen = std::collections::BTreeSet::new();
        for &d in DeviceCode::ALL {
            assert!(d.code() >= 100, "{d:?}");
            assert!(seen.insert(d.code()), "{d:?} given twice");
            assert_eq!(DeviceCode::from_code(d.code()), Some(d));
            assert_eq!(seq2seq::Error::explain(d.code()), None, "{d:?}");
            let e = explain(d.code()).unwrap();
            assert_eq!((e.name, e.text), (d.name(), d.as_str()));
        }
        // Every code either table explains is one of the two tables'.
        for code in 0..=u16::MAX {
            let both = (seq2seq::Error::explain(code), DeviceCode::from_code(code));
            assert!(
                both.0.is_none() || both.1.is_none(),
                "{code} in both tables"
            );
            assert_eq!(
                explain(code).is_some(),
                both.0.is_some() || both.1.is_some()
            );
        }
    }

    #[test]
    fn reasons_are_shown_with_their_texts() {
        let input = seq2seq::Error::InputTooLong { len: 30, max: 25 };
        assert_eq!(
            explain(input.code()).unwrap().to_string(),
            "E64 InputTooLong: input too long"
        );
        assert_eq!(Reason("E64").to_string(), "E64 (input too long)");
        assert_eq!(Reason("E64").code(), Some(64));
        assert_eq!(
            Reason("E111").to_string(),
            "E111 (model beyond the board's capacities)"
        );
        assert_eq!(Reason("E999").to_string(), "E999 (an unknown error code)");
        let words = "symbol 'x' at position 1 is not in the source vocabulary";
        assert_eq!(Reason(words).to_string(), words);
        assert_eq!(Reason(words).code(), None);
        assert_eq!(explain(999), None);
        assert_eq!(explain(0), None);
    }
}
