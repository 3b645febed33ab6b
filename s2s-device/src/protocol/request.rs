//! The lines the host sends: sources, commands and the end of the session.

use core::fmt::{self, Write};

/// A command: a line that starts with the byte 0x01 (no source can).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command {
    /// `attention on|off`: the `ATT` lines after each `CNT`.
    Attention(bool),
}

impl Command {
    /// The command's text (after the 0x01 byte), as in its `OK` answer.
    pub fn text(self) -> &'static str {
        match self {
            Command::Attention(true) => "attention on",
            Command::Attention(false) => "attention off",
        }
    }

    /// The command of a text, if it is one.
    pub fn parse(text: &str) -> Option<Command> {
        [Command::Attention(true), Command::Attention(false)]
            .into_iter()
            .find(|c| c.text() == text)
    }
}

/// A line the host sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// A source to decode (see [`check_source`]).
    Source(&'a [u8]),
    /// A command.
    Command(Command),
    /// A command the firmware does not know (its text).
    Unknown(&'a [u8]),
    /// The end of the session: `.` or an empty line.
    End,
}

/// The line that ends a session.
pub const END: &str = ".";
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
pub fn write_request(out: &mut dyn Write, r: &Request<'_>) -> fmt::Result {
    match *r {
        Request::Source(s) => {
            let s = core::str::from_utf8(s).map_err(|_| fmt::Error)?;
            check_source(s).map_err(|_| fmt::Error)?;
            out.write_str(s)?;
        }
        Request::Command(c) => {
            out.write_char(COMMAND as char)?;
            out.write_str(c.text())?;
        }
        Request::Unknown(_) => return Err(fmt::Error),
        Request::End => out.write_str(END)?,
    }
    out.write_char('\n')
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
            Request::End,
        ] {
            let mut s = String::new();
            write_request(&mut s, &r).unwrap();
            assert_eq!(parse_request(s.trim_end_matches('\n').as_bytes()), r);
        }
        assert_eq!(parse_request(b""), Request::End);
        assert_eq!(parse_request(b"\x01beam 3"), Request::Unknown(b"beam 3"));
        for bad in ["", ".", "\u{1}x", "a\nb"] {
            assert!(check_source(bad).is_err(), "{bad:?}");
            assert!(write_request(&mut String::new(), &Request::Source(bad.as_bytes())).is_err());
        }
    }
}
