//! One session of the line protocol (`s2s_device::protocol`) over a board's UART,
//! whatever carries the bytes: QEMU's UART socket ([`super::qemu`]) or a serial port
//! ([`super::serial`], feature `serial`). Both are a [`Link`]; [`converse`] is the
//! session, and [`super::session::parse_session`] reads its lines.
//!
//! The handshake holds on a link that drops what is sent too early and loses what is
//! left unread when the board's side goes away (a pseudo-terminal under QEMU):
//! - nothing is sent before the `READY <board>` line: the board's UART is set up then;
//! - with [`Pace::Answers`] each request goes out once the previous one's answer is
//!   complete (a polled UART holds a byte or a few while the board decodes);
//! - the session ends with `.`, the board's `DONE` and `STATS`, and [`ACK`] from the
//!   host: the board ends the session (QEMU exits) only after it;
//! - a second `READY` means the board was reset: an error naming the line.

use std::io;
use std::time::{Duration, Instant};

use s2s_device::protocol::{parse_reply, Command, ModelInfo, Reply, ACK, END};

use crate::error::{Error, Result};

/// A byte stream to and from a board's UART.
pub trait Link {
    /// What errors name: the board under QEMU, the port's path for a serial port.
    fn name(&self) -> &str;
    /// Reads what has arrived, waiting at most `timeout` for the first byte: `Ok(0)` once
    /// the board's side has closed, an error of kind `TimedOut` after `timeout`.
    fn read(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize>;
    /// Sends `bytes`.
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// What to do when no `READY` line comes, for the error (none by default).
    fn ready_hint(&self) -> &str {
        ""
    }
}

/// How the requests go out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// All at once after `READY`, then the end of the session; the lines are read until
    /// the board's side closes. For any firmware of the protocol (its answers need not
    /// be known), on a link that holds what is sent until the board reads it (QEMU).
    Bulk,
    /// One at a time, each after the whole answer to the previous one (the model
    /// runner's answers: `OK` or `ERR` to a command; `ERR`, or `OUT`, `TXT`, `CNT` and,
    /// with attention on, an `ATT` line per step to a source), after a `MODEL` line;
    /// `attends`: the model has attention. For serial ports.
    Answers {
        /// The model has attention (its `ATT` lines follow `CNT` when asked for).
        attends: bool,
    },
}

/// What a session read.
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    /// The lines from `READY` on, without `\n`/`\r` (a last line without `\n`
    /// included).
    pub lines: Vec<String>,
    /// Lines before `READY` that were dropped (a real board's port may hold the end of
    /// an earlier session).
    pub dropped: usize,
    /// `STATS` was read and acknowledged.
    pub acknowledged: bool,
}

/// How long to wait.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// For each line.
    pub line: Duration,
    /// For the whole session, if it has a limit.
    pub deadline: Option<Instant>,
}

/// Reads lines from a link.
struct Talk<'l> {
    link: &'l mut dyn Link,
    limits: Limits,
    pending: Vec<u8>,
    closed: bool,
    t: Transcript,
}

impl Talk<'_> {
    /// The next line, `None` once the board's side has closed; an error after the
    /// limits, saying what was awaited.
    fn line(&mut self, what: &str) -> Result<Option<String>> {
        let started = Instant::now();
        let until = self
            .limits
            .deadline
            .map_or(started + self.limits.line, |d| {
                d.min(started + self.limits.line)
            });
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let rest = self.pending.split_off(end + 1);
                let line = std::mem::replace(&mut self.pending, rest);
                return Ok(Some(text(&line)));
            }
            if self.closed {
                let last = std::mem::take(&mut self.pending);
                return Ok((!last.is_empty()).then(|| text(&last)));
            }
            let now = Instant::now();
            if now >= until {
                return Err(self.fail(format!(
                    "no {what} within {:.0} s",
                    (now - started).as_secs_f64().max(1.0)
                )));
            }
            let mut chunk = [0u8; 4096];
            match self.link.read(&mut chunk, until - now) {
                Ok(0) => self.closed = true,
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(format!("reading failed: {e}"))),
            }
        }
    }

    /// The next line, kept in the transcript, as a [`Got`]. A second `READY` is an
    /// error.
    fn reply(&mut self, what: &str) -> Result<Got> {
        let Some(line) = self.line(what)? else {
            return Ok(Got::End);
        };
        self.t.lines.push(line);
        let at = self.t.lines.len();
        let line: &str = &self.t.lines[at - 1];
        match parse_reply(line).ok().map(owned) {
            Some(Reply::Ready(_)) => Err(self.fail(format!(
                "the board was reset: a second READY at UART line {at} ({line:?})"
            ))),
            Some(reply) => Ok(Got::Reply(reply)),
            None => Ok(Got::Other),
        }
    }

    fn send(&mut self, text: &str) -> Result<()> {
        self.link
            .write_all(text.as_bytes())
            .map_err(|e| self.fail(format!("writing failed: {e}")))
    }

    /// An error naming the link, with the last lines read.
    fn fail(&self, message: String) -> Error {
        let tail = &self.t.lines[self.t.lines.len().saturating_sub(5)..];
        Error::device(
            self.link.name(),
            format!("{message}; last UART lines: {tail:?}"),
        )
    }
}

/// What came next from the board.
enum Got {
    /// A line of the protocol (its text dropped, see [`owned`]).
    Reply(Reply<'static>),
    /// A line that is none of the protocol's.
    Other,
    /// The board's side closed.
    End,
}

impl Got {
    /// The reply, if it is one.
    fn reply(self) -> Option<Reply<'static>> {
        match self {
            Got::Reply(r) => Some(r),
            Got::Other | Got::End => None,
        }
    }
}

/// A reply with its borrowed text dropped (only its kind and numbers are used here).
fn owned(r: Reply<'_>) -> Reply<'static> {
    match r {
        Reply::Ready(_) => Reply::Ready(""),
        Reply::Model(m) => Reply::Model(ModelInfo { precision: "", ..m }),
        Reply::ModelError(_) => Reply::ModelError(""),
        Reply::Out(_) => Reply::Out(""),
        Reply::Txt(_) => Reply::Txt(""),
        Reply::Cnt(c) => Reply::Cnt(s2s_device::protocol::Cnt { tok: "", ..c }),
        Reply::Att(a) => Reply::Att(s2s_device::protocol::Att { words: "", ..a }),
        Reply::Ok(Command::Prefix(_)) => Reply::Ok(Command::Prefix("")),
        Reply::Ok(Command::Attention(on)) => Reply::Ok(Command::Attention(on)),
        Reply::Ok(Command::Beam(k)) => Reply::Ok(Command::Beam(k)),
        Reply::Ok(Command::Stream { steps, repeats }) => {
            Reply::Ok(Command::Stream { steps, repeats })
        }
        Reply::Err(_) => Reply::Err(""),
        Reply::Done(d) => Reply::Done(d),
        Reply::Stats(s) => Reply::Stats(s),
        Reply::Panic(_) => Reply::Panic(""),
        Reply::HardFault(f) => Reply::HardFault(f),
        _ => Reply::Err(""),
    }
}

fn text(bytes: &[u8]) -> String {
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

/// Runs one session over `link`: waits for `READY`, sends `requests` (sources and
/// command lines, see `s2s_device::protocol::write_request`) paced by `pace`, ends the
/// session and acknowledges its `STATS`. With [`Pace::Answers`], `check` sees the
/// `MODEL` line first: an error from it ends the session at once (politely: `.`, and
/// `STATS` acknowledged) and is returned. A session the board ends early (a model it
/// cannot serve, a panic, the link closed) returns what was read, for
/// [`super::session::parse_session`] to explain.
pub fn converse(
    link: &mut dyn Link,
    requests: &[String],
    pace: Pace,
    limits: Limits,
    check: &mut dyn FnMut(&ModelInfo<'_>) -> Result<()>,
) -> Result<Transcript> {
    let mut talk = Talk {
        link,
        limits,
        pending: Vec::new(),
        closed: false,
        t: Transcript::default(),
    };
    // Nothing is sent before READY.
    let ready = format!("READY line{}", talk.link.ready_hint());
    loop {
        let Some(line) = talk.line(&ready)? else {
            return Ok(talk.t);
        };
        if let Ok(Reply::Ready(_)) = parse_reply(&line) {
            talk.t.lines.push(line);
            break;
        }
        talk.t.dropped += 1;
    }
    match pace {
        Pace::Bulk => bulk(&mut talk, requests)?,
        Pace::Answers { attends } => answers(&mut talk, requests, attends, check)?,
    }
    Ok(talk.t)
}

/// [`Pace::Bulk`]: everything at once, then the lines until the board's side closes.
fn bulk(talk: &mut Talk<'_>, requests: &[String]) -> Result<()> {
    let mut text = String::new();
    for line in requests.iter().map(String::as_str).chain([END]) {
        text.push_str(line);
        text.push('\n');
    }
    // The board may end before reading everything (a model it cannot serve): a write
    // error is not the session's error.
    let _ = talk.link.write_all(text.as_bytes());
    loop {
        let reply = match talk.reply("line")? {
            Got::End => return Ok(()),
            got => got.reply(),
        };
        if let Some(Reply::Stats(_)) = reply {
            if !talk.t.acknowledged {
                // As above: a board that has gone needs no acknowledgement.
                talk.t.acknowledged = talk.link.write_all(format!("{ACK}\n").as_bytes()).is_ok();
            }
        }
    }
}

/// [`Pace::Answers`]: the `MODEL` line, then each request after the previous answer.
fn answers(
    talk: &mut Talk<'_>,
    requests: &[String],
    attends: bool,
    check: &mut dyn FnMut(&ModelInfo<'_>) -> Result<()>,
) -> Result<()> {
    let Some(Reply::Model(_)) = talk.reply("MODEL line")?.reply() else {
        return Ok(());
    };
    let model_line = talk.t.lines.last().cloned().unwrap_or_default();
    if let Ok(Reply::Model(m)) = parse_reply(&model_line) {
        if let Err(e) = check(&m) {
            let _ = end(talk);
            return Err(e);
        }
    }
    let (mut attention, mut beam) = (false, 1u16);
    for (n, request) in requests.iter().enumerate() {
        talk.send(&format!("{request}\n"))?;
        let what = format!("answer to request {} ({request:?})", n + 1);
        let first = talk.reply(&what)?.reply();
        let complete = match first {
            Some(Reply::Ok(Command::Attention(on))) => {
                attention = on;
                true
            }
            Some(Reply::Ok(Command::Beam(k))) => {
                beam = k;
                true
            }
            Some(Reply::Ok(Command::Prefix(_))) => true,
            Some(Reply::Err(_)) => true,
            Some(Reply::Out(_)) => source_answer(talk, &what, attention && attends && beam == 1)?,
            _ => false,
        };
        if !complete {
            return Ok(()); // the board ended the session: parse_session explains
        }
    }
    end(talk).map(|_| ())
}

/// The `TXT`, `CNT` (and `ATT`) lines after an `OUT` line; false if another line came.
fn source_answer(talk: &mut Talk<'_>, what: &str, att: bool) -> Result<bool> {
    if !matches!(talk.reply(what)?.reply(), Some(Reply::Txt(_))) {
        return Ok(false);
    }
    if !matches!(talk.reply(what)?.reply(), Some(Reply::Cnt(_))) {
        return Ok(false);
    }
    if att {
        // One ATT line per decoder step: as many as the CNT line's step counts.
        let cnt = talk.t.lines.last().cloned().unwrap_or_default();
        let steps = match parse_reply(&cnt) {
            Ok(Reply::Cnt(c)) => c.steps().count(),
            _ => 0,
        };
        for _ in 0..steps {
            if !matches!(talk.reply(what)?.reply(), Some(Reply::Att(_))) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Ends the session: `.`, then `DONE` and `STATS`, acknowledged; true if they came.
fn end(talk: &mut Talk<'_>) -> Result<bool> {
    talk.send(&format!("{END}\n"))?;
    if !matches!(talk.reply("DONE line")?.reply(), Some(Reply::Done(_))) {
        return Ok(false);
    }
    if !matches!(talk.reply("STATS line")?.reply(), Some(Reply::Stats(_))) {
        return Ok(false);
    }
    talk.send(&format!("{ACK}\n"))?;
    talk.t.acknowledged = true;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A board played from a script: what it has written, and what it was sent.
    struct Scripted {
        /// Chunks the board writes; each read takes one. `None` ends the stream.
        chunks: std::collections::VecDeque<Option<Vec<u8>>>,
        sent: Vec<u8>,
    }

    impl Link for Scripted {
        fn name(&self) -> &str {
            "/dev/ttyTEST"
        }
        fn read(&mut self, buf: &mut [u8], _timeout: Duration) -> io::Result<usize> {
            match self.chunks.pop_front() {
                Some(Some(c)) => {
                    buf[..c.len()].copy_from_slice(&c);
                    Ok(c.len())
                }
                Some(None) => Ok(0),
                None => Err(io::ErrorKind::TimedOut.into()),
            }
        }
        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            self.sent.extend_from_slice(bytes);
            Ok(())
        }
    }

    fn scripted(chunks: &[&str]) -> Scripted {
        Scripted {
            chunks: chunks.iter().map(|c| Some(c.as_bytes().to_vec())).collect(),
            sent: Vec::new(),
        }
    }

    const MODEL: &str =
        "MODEL w8a16 params=10 bytes=200 crc=0x00000001 arena=64/1024 positions=25\n";
    const STATS: &str = "STATS ram_static=1 stack_peak=2 stack_size=3 flash_runtime=4 model_region=0x00010000+196608 model_bytes=200\n";

    fn limits() -> Limits {
        Limits {
            line: Duration::from_millis(50),
            deadline: None,
        }
    }

    #[test]
    fn answers_are_awaited_and_stats_acknowledged() {
        let mut link = scripted(&[
            "noise from before\nREADY microbit\n",
            MODEL,
            "OK attention on\n",
            "OUT 3\nTXT a\r\n",
            "CNT enc=1 tok=2,3\nATT 0 1\n",
            "ATT 1 2\n",
            "ERR symbol\n",
            "DONE lines=3 errors=1 handler_ticks=1 handler_insns=1\n",
            STATS,
        ]);
        let requests = ["\u{1}attention on".to_string(), "a".into(), "%".into()];
        let mut seen = None;
        let t = converse(
            &mut link,
            &requests,
            Pace::Answers { attends: true },
            limits(),
            &mut |m| {
                seen = Some(m.crc);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, Some(1));
        assert_eq!((t.dropped, t.acknowledged, t.lines.len()), (1, true, 11));
        assert_eq!(t.lines[4], "TXT a");
        assert_eq!(
            String::from_utf8(link.sent).unwrap(),
            format!("\u{1}attention on\na\n%\n.\n{ACK}\n")
        );
    }

    #[test]
    fn a_reset_a_refused_model_and_silence_are_errors_naming_the_port() {
        let mut link = scripted(&["READY microbit\n", MODEL, "READY microbit\n"]);
        let e = converse(
            &mut link,
            &["a".into()],
            Pace::Answers { attends: false },
            limits(),
            &mut |_| Ok(()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("/dev/ttyTEST: the board was reset: a second READY at UART line 3"),
            "{e}"
        );
        let mut link = scripted(&[
            "READY microbit\n",
            MODEL,
            "DONE lines=0 errors=0 handler_ticks=1 handler_insns=1\n",
            STATS,
        ]);
        let e = converse(
            &mut link,
            &["a".into()],
            Pace::Answers { attends: false },
            limits(),
            &mut |_| Err(Error::device("/dev/ttyTEST", "another model")),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "/dev/ttyTEST: another model");
        // Nothing but the end of the session was sent, and STATS was acknowledged.
        assert_eq!(String::from_utf8(link.sent).unwrap(), format!(".\n{ACK}\n"));
        let mut link = scripted(&[]);
        let e = converse(&mut link, &[], Pace::Bulk, limits(), &mut |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/dev/ttyTEST: no READY line within"), "{e}");
        assert!(link.sent.is_empty());
    }

    #[test]
    fn bulk_reads_until_the_board_closes() {
        let mut link = scripted(&["READY microbit\nX 1\n", STATS, "tail"]);
        link.chunks.push_back(None);
        let t = converse(&mut link, &["a".into()], Pace::Bulk, limits(), &mut |_| {
            Ok(())
        })
        .unwrap();
        assert_eq!(t.lines.last().map(String::as_str), Some("tail"));
        assert!(t.acknowledged);
        assert_eq!(
            String::from_utf8(link.sent).unwrap(),
            format!("a\n.\n{ACK}\n")
        );
    }
}
