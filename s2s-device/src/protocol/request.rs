//! The lines the host sends: sources, commands and the end of the session.

use core::fmt;

use s2s_kernels::say;
use s2s_kernels::text::Sink;

/// A command: a line that starts with the byte 0x01 (no source can).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command<'a> {
    /// `attention on|off`: the `ATT` lines after each `CNT`.
    Attention(bool),
    /// `beam K`: decode the following sources with a beam search `K` wide in the
    /// model's own variant (`beam 1` is greedy decoding, the default). A width over the
    /// firmware's capacity is refused with `ERR`.
    Beam(u16),
    /// `prefix NAME=TOKEN ...`: decode the following sources after these tokens of the
    /// model's prefix slots, `NAME=TOKEN` fields separated by spaces (as
    /// `seq2seq::Prefix::with_fields` reads them); a slot not named takes its default,
    /// and `prefix` alone (the empty text) restores every default. A field the model
    /// refuses is answered with `ERR`, and the prefix stays what it was.
    Prefix(&'a str),
    /// `stream <N> [<R>]`: the next source line is streamed (read a byte at a time as
    /// it arrives, never held whole, with at most `N` decoder steps and, given `R`, at
    /// most `R` consecutive steps on one source position: `seq2seq::StreamLimits`), its
    /// output ids written as `OUT` lines as they are decided, then a `STREAMED` line.
    Stream {
        /// `N`.
        steps: u16,
        /// `R` (0 when not given: no limit).
        repeats: u16,
    },
}

impl<'a> Command<'a> {
    /// Writes the command's text (after the 0x01 byte), as in its `OK` answer.
    pub fn write_text(self, out: &mut dyn Sink) -> fmt::Result {
        match self {
            Command::Attention(true) => out.put("attention on"),
            Command::Attention(false) => out.put("attention off"),
            Command::Beam(k) => say!(out; "beam ", k),
            Command::Prefix("") => out.put("prefix"),
            Command::Prefix(fields) => say!(out; "prefix ", fields),
            Command::Stream { steps, repeats } => {
                say!(out; "stream ", steps)?;
                match repeats {
                    0 => Ok(()),
                    r => say!(out; " ", r),
                }
            }
        }
    }

    /// The command of a text, if it is one.
    pub fn parse(text: &'a str) -> Option<Command<'a>> {
        match text {
            "attention on" => Some(Command::Attention(true)),
            "attention off" => Some(Command::Attention(false)),
            "prefix" => Some(Command::Prefix("")),
            _ if text.starts_with("prefix ") => text.get(7..).map(Command::Prefix),
            _ if text.starts_with("beam ") => text.get(5..).and_then(count).map(Command::Beam),
            _ => {
                // (Byte positions and `get`, not `split_once`: a firmware that parses
                // commands then links no panic path and no `core::fmt`.)
                let n = text.strip_prefix("stream ")?;
                let (steps, repeats) = match n.bytes().position(|b| b == b' ') {
                    Some(i) => (count(n.get(..i)?)?, count(n.get(i + 1..)?)?),
                    None => (count(n)?, 0),
                };
                Some(Command::Stream { steps, repeats })
            }
        }
    }
}

/// A command's count: 1 to 65,535 in digits only (no sign, no spaces, no leading zero).
fn count(k: &str) -> Option<u16> {
    if k.is_empty() || k.starts_with('0') {
        return None;
    }
    // (Digit by digit rather than `str::parse`: a few dozen bytes of every firmware.)
    k.bytes().try_fold(0u16, |n, b| {
        let digit = b.checked_sub(b'0').filter(|&d| d < 10)?;
        n.checked_mul(10)?.checked_add(u16::from(digit))
    })
}

/// A line the host sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// A source to decode (see [`check_source`]).
    Source(&'a [u8]),
    /// A command.
    Command(Command<'a>),
    /// A command the firmware does not know (its text).
    Unknown(&'a [u8]),
    /// The end of the session: `.` or an empty line.
    End,
}

/// The line that ends a session.
pub const END: &str = ".";
/// The line the host sends once it has read the `STATS` line after [`END`]: the
/// firmware ends the session only then (QEMU exits; a real board starts over), so that a
/// link which closes when the board goes away (a pseudo-terminal under QEMU) cannot
/// lose the last lines. Like a command it starts with the byte 0x01, so no source is one;
/// within a session it is an unknown command. The firmware matches it byte by byte.
pub const ACK: &str = "\u{1}ack";
/// The first byte of a command.
const COMMAND: u8 = 0x01;

/// Whether `source` can be sent as a source line: not empty, not [`END`], not starting
/// with the command byte 0x01, without a newline; the reason when not.
pub fn check_source(source: &str) -> Result<(), &'static str> {
    if source.is_empty() || source == END {
        Err("empty and `.` lines end the session")
    } else if source.as_bytes()[0] == COMMAND {
        Err("a line starting with 0x01 is a command")
    } else if source.contains(['\n', '\r']) {
        Err("a source is one line")
    } else {
        Ok(())
    }
}

/// Writes a request line (a source must pass [`check_source`]).
pub fn write_request(out: &mut dyn Sink, r: &Request<'_>) -> fmt::Result {
    match *r {
        Request::Source(s) => {
            let s = core::str::from_utf8(s).map_err(|_| fmt::Error)?;
            check_source(s).map_err(|_| fmt::Error)?;
            out.put(s)?;
        }
        Request::Command(c) => {
            s2s_kernels::text::put_char(out, COMMAND as char)?;
            c.write_text(out)?;
        }
        Request::Unknown(_) => return Err(fmt::Error),
        Request::End => out.put(END)?,
    }
    out.put("\n")
}

/// Parses a request line (without `\n`; `\r` already dropped).
pub fn parse_request(line: &[u8]) -> Request<'_> {
    match line {
        [] | b"." => Request::End,
        [COMMAND, text @ ..] => core::str::from_utf8(text)
            .ok()
            .and_then(Command::parse)
            .map_or(Request::Unknown(text), Request::Command),
        source => Request::Source(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        for r in [
            Request::Source("phnom".as_bytes()),
            Request::Source("ផ្នម x".as_bytes()),
            Request::Command(Command::Attention(true)),
            Request::Command(Command::Attention(false)),
            Request::Command(Command::Beam(1)),
            Request::Command(Command::Beam(65535)),
            Request::Command(Command::Prefix("")),
            Request::Command(Command::Prefix("country=<EG> role=x")),
            Request::Command(Command::Stream {
                steps: 12000,
                repeats: 0,
            }),
            Request::Command(Command::Stream {
                steps: 12000,
                repeats: 4,
            }),
            Request::End,
        ] {
            let mut s = String::new();
            write_request(&mut s, &r).unwrap();
            assert_eq!(parse_request(s.trim_end_matches('\n').as_bytes()), r);
        }
        assert_eq!(parse_request(b""), Request::End);
        assert_eq!(parse_request(ACK.as_bytes()), Request::Unknown(b"ack"));
        assert_eq!(
            parse_request(b"\x01beam 3"),
            Request::Command(Command::Beam(3))
        );
        assert_eq!(
            parse_request(b"\x01prefix country=<EG>"),
            Request::Command(Command::Prefix("country=<EG>"))
        );
        assert_eq!(
            parse_request(b"\x01prefixes"),
            Request::Unknown(b"prefixes")
        );
        for bad in [
            "stream",
            "stream 0",
            "stream 1x",
            "stream 5 0",
            "stream 5 ",
            "stream 5 4 3",
            "beam",
            "beam ",
            "beam 0",
            "beam 03",
            "beam -1",
            "beam 1 ",
            "beam 65536",
        ] {
            let line = [b"\x01", bad.as_bytes()].concat();
            assert_eq!(
                parse_request(&line),
                Request::Unknown(bad.as_bytes()),
                "{bad:?}"
            );
        }
        for bad in ["", ".", "\u{1}x", "a\nb"] {
            assert!(check_source(bad).is_err(), "{bad:?}");
            assert!(write_request(&mut String::new(), &Request::Source(bad.as_bytes())).is_err());
        }
    }
}
