//! `s2s explain CODE`: what an error code stands for. A firmware built with its
//! `error-codes` feature answers `ERR E<code>` (and `ERR model: E<code>`) instead of the
//! error's text; the one table of both the inference core's codes (1-99) and the
//! firmware's own (100 and up) is `s2s_device::protocol::code`.

use s2s_device::protocol::code;

use crate::error::{Error, Result};

/// The code of a `CODE` argument: the number, `64`, or as the device writes it, `E64`.
pub fn parse(arg: &str) -> Option<u16> {
    let digits = arg.strip_prefix(['E', 'e']).unwrap_or(arg);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The line of `s2s explain CODE`, `E64 InputTooLong: input too long` (the code, the
/// error's name and its text); an error naming the argument when it is not a code or
/// neither table has it.
pub fn explain_line(arg: &str) -> Result<String> {
    let Some(n) = parse(arg) else {
        return Err(Error::usage(format!(
            "{arg:?} is not an error code: give the number of `ERR E<code>`, as 64 or E64"
        )));
    };
    match code::explain(n) {
        Some(e) => Ok(e.to_string()),
        None => Err(Error::usage(format!(
            "{}: no such error code (the inference core's are 1 to 99, the firmware's own \
             100 and up)",
            code::ErrorCode(n)
        ))),
    }
}

/// `s2s explain CODE`: prints [`explain_line`] to `out`.
pub fn explain(arg: &str, out: &mut dyn std::io::Write) -> Result {
    let line = explain_line(arg)?;
    writeln!(out, "{line}").map_err(Error::io(crate::io::STDOUT_NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_explained_in_one_line() {
        for arg in ["64", "E64", "e64"] {
            assert_eq!(
                explain_line(arg).unwrap(),
                "E64 InputTooLong: input too long"
            );
        }
        assert_eq!(
            explain_line("E100").unwrap(),
            "E100 LineTooLong: line too long"
        );
        assert_eq!(
            explain_line("5").unwrap(),
            "E5 CrcMismatch: corrupted model file (CRC mismatch)"
        );
        let mut out = Vec::new();
        explain("111", &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "E111 BeyondCapacity: model beyond the board's capacities\n"
        );
    }

    #[test]
    fn an_unknown_code_or_no_code_is_an_error_naming_it() {
        let e = explain_line("E999").unwrap_err().to_string();
        assert!(e.starts_with("E999: no such error code"), "{e}");
        assert!(explain_line("0")
            .unwrap_err()
            .to_string()
            .starts_with("E0:"));
        for arg in ["", "E", "x64", "E-1", "65536", "6 4"] {
            let e = explain_line(arg).unwrap_err().to_string();
            assert!(e.contains(&format!("{arg:?} is not an error code")), "{e}");
        }
    }
}
