//! The session of the line protocol (`s2s_device::protocol`) over the link, generic over
//! `embedded_io::{Read, Write}` and the board's [`Counter`]: `READY`, then each request
//! line handed to a [`LineHandler`] (`ERR <reason>` when it fails), then `DONE` and
//! `STATS` at the end of the session; once the host has acknowledged them
//! (`protocol::ACK`, [`await_ack`]) QEMU exits with status 0, and a real board says
//! `READY` again and serves the next session ([`end`]).

use core::fmt;

use embedded_io::{Read, Write};
use s2s_device::exit::Exit;
use s2s_device::protocol::code::DeviceCode;
use s2s_device::protocol::{self, Command, Request};
use s2s_kernels::text::{Describe, Sink};

use crate::{measure, Counter, BOARD};

/// Longest accepted input line in bytes, without the `\n` (per board, see
/// [`crate::capacity`]). A longer line gets `ERR line too long` (`ERR E100` with the
/// `error-codes` feature; the whole line is dropped; the session goes on).
pub use crate::capacity::MAX_LINE;

/// A line the session refuses by itself (too long, an unknown command): one of the
/// firmware's own errors of the protocol's table ([`DeviceCode`]), its code and its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerError(Kept);

/// What a [`HandlerError`] keeps: with `error-codes` its code, else its text (taken from
/// the table where the error is made, so that it folds to the one text). The other is
/// looked up in the table only where asked for (the defmt log), so that a build links
/// neither the table nor a text it does not write.
#[cfg(feature = "error-codes")]
type Kept = DeviceCode;
/// What a [`HandlerError`] keeps: with `error-codes` its code, else its text (taken from
/// the table where the error is made, so that it folds to the one text). The other is
/// looked up in the table only where asked for, so that a build links neither the table
/// nor a text it does not write.
#[cfg(not(feature = "error-codes"))]
type Kept = &'static str;

impl HandlerError {
    /// The error `e`.
    pub const fn new(e: DeviceCode) -> Self {
        #[cfg(feature = "error-codes")]
        let kept = e;
        #[cfg(not(feature = "error-codes"))]
        let kept = e.as_str();
        HandlerError(kept)
    }

    /// Its code ([`DeviceCode::code`]).
    pub fn code(&self) -> u16 {
        #[cfg(feature = "error-codes")]
        let code = self.0.code();
        // The text is one of the table's (`new`).
        #[cfg(not(feature = "error-codes"))]
        let code = DeviceCode::ALL
            .iter()
            .find(|d| d.as_str() == self.0)
            .map_or(DeviceCode::UnknownCommand.code(), |d| d.code());
        code
    }

    /// Its text ([`DeviceCode::as_str`]).
    pub fn as_str(&self) -> &'static str {
        #[cfg(feature = "error-codes")]
        let text = self.0.as_str();
        #[cfg(not(feature = "error-codes"))]
        let text = self.0;
        text
    }
}

impl Describe for HandlerError {
    fn describe(&self, out: &mut dyn Sink) -> fmt::Result {
        out.put(self.as_str())
    }
}

impl defmt::Format for HandlerError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.as_str())
    }
}

/// The link while a source line streams through the handler ([`LineHandler::stream`]):
/// the line's bytes as they arrive, and the output, written as it is decided.
pub trait StreamLink: Sink {
    /// The line's next byte (`\r` dropped); `None` at its end: its `\n`, or the end of
    /// the input, or a failed read (the session then ends).
    fn next_byte(&mut self) -> Option<u8>;
}

/// Handles one request line, writing zero or more output lines to `out` (each ends with
/// `\n`; the protocol's writers do it). An error makes the session answer `ERR <error>`
/// and go on with the next line.
pub trait LineHandler {
    /// Why a line failed: shown as `ERR <message>` on the UART and logged with defmt.
    type Error: Describe + defmt::Format + From<HandlerError>;

    /// Handles a source line (without `\n` and `\r`).
    fn handle(&mut self, line: &[u8], out: &mut dyn Sink) -> Result<(), Self::Error>;

    /// Handles a command; by default none is known.
    fn command(&mut self, cmd: Command<'_>, out: &mut dyn Sink) -> Result<(), Self::Error> {
        let _ = (cmd, out);
        Err(UNKNOWN_COMMAND.into())
    }

    /// Whether this handler ever streams a line: the session then looks, after each
    /// line, whether the next one is streamed ([`LineHandler::streaming`]); without, it
    /// compiles none of it.
    const STREAMS: bool = false;

    /// Whether the next source line is streamed ([`LineHandler::stream`]) instead of
    /// read whole; by default never.
    fn streaming(&self) -> bool {
        false
    }

    /// Streams a source line, read from `link` a byte at a time, writing its output to
    /// it as it goes (the session reads what is left of the line afterwards).
    fn stream(&mut self, link: &mut dyn StreamLink) -> Result<(), Self::Error> {
        let _ = link;
        Err(UNKNOWN_COMMAND.into())
    }
}

/// The bytes read from the link that the session has not handled yet.
struct Pending {
    chunk: [u8; 32],
    at: usize,
    n: usize,
}

impl Pending {
    /// The next byte of `io`, `None` at the end of its input.
    fn next<IO: Read>(&mut self, io: &mut IO) -> Result<Option<u8>, IO::Error> {
        if self.at >= self.n {
            self.n = io.read(&mut self.chunk)?;
            self.at = 0;
            if self.n == 0 {
                return Ok(None);
            }
        }
        let byte = self.chunk.get(self.at).copied();
        self.at += 1;
        Ok(byte)
    }
}

/// The [`StreamLink`] of a session: its pending bytes, then the link's; the output
/// through the link's [`FmtOut`] (which keeps the first I/O error, reading or writing).
struct StreamIo<'a, IO: Write> {
    out: FmtOut<'a, IO>,
    pending: &'a mut Pending,
    /// Whether the line has ended, and whether the input has.
    line_ended: bool,
    input_ended: bool,
}

impl<IO: Read + Write> StreamLink for StreamIo<'_, IO> {
    fn next_byte(&mut self) -> Option<u8> {
        while !self.line_ended {
            match self.pending.next(&mut *self.out.io) {
                Ok(Some(b'\r')) => {}
                Ok(Some(b'\n')) => self.line_ended = true,
                Ok(Some(byte)) => return Some(byte),
                Ok(None) => (self.line_ended, self.input_ended) = (true, true),
                Err(e) => {
                    self.out.failed = Some(e);
                    (self.line_ended, self.input_ended) = (true, true);
                }
            }
        }
        None
    }
}

impl<IO: Write> fmt::Write for StreamIo<'_, IO> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.out.write_str(s)
    }
}

/// The reason given for a command the handler does not know.
pub const UNKNOWN_COMMAND: HandlerError = HandlerError::new(DeviceCode::UnknownCommand);

/// `core::fmt::Write` over an `embedded_io::Write`: keeps the first I/O error.
pub struct FmtOut<'a, IO: Write> {
    io: &'a mut IO,
    failed: Option<IO::Error>,
}

impl<'a, IO: Write> FmtOut<'a, IO> {
    /// Writes text to `io`.
    pub fn new(io: &'a mut IO) -> Self {
        FmtOut { io, failed: None }
    }
}

impl<IO: Write> fmt::Write for FmtOut<'_, IO> {
    // Out of line: every piece of every line comes here.
    #[inline(never)]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.failed.is_some() {
            return Err(fmt::Error);
        }
        self.io.write_all(s.as_bytes()).map_err(|e| {
            self.failed = Some(e);
            fmt::Error
        })
    }
}

/// Counts of a finished session.
///
/// `handler_ticks` covers each `handle` call whole, including writing its output to the
/// UART and ~10-40 instructions of counter reads per line; a handler that wants the
/// exact count of its computation reads a [`Counter`] itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, defmt::Format)]
pub struct Summary {
    /// Lines handled (over-long lines included).
    pub lines: u32,
    /// Lines answered with `ERR ...`.
    pub errors: u32,
    /// Counter ticks spent in the handler, all lines together.
    pub handler_ticks: u64,
}

/// Reads lines from `io` until the end marker (`.` or an empty line) or end of input, hands
/// each to `handler` and writes its output lines back, timing each with a counter `C`.
/// Uses `line` (its length is the maximum line length) as the line buffer. Returns the
/// counts, or the first I/O error.
#[inline(never)]
pub fn session<IO: Read + Write, H: LineHandler + ?Sized, C: Counter>(
    io: &mut IO,
    handler: &mut H,
    line: &mut [u8],
) -> Result<Summary, IO::Error> {
    let mut summary = Summary::default();
    let mut counter = C::new();
    let mut len = 0;
    let mut too_long = false;
    let mut chunk = [0u8; 32];
    // What a streamed line left of what it read: the next lines' first bytes.
    let mut carried: Option<Pending> = None;
    loop {
        let (from, n) = match carried.take() {
            Some(p) => {
                chunk = p.chunk;
                (p.at, p.n)
            }
            None => match io.read(&mut chunk)? {
                0 => return Ok(summary), // end of input
                n => (0, n),
            },
        };
        for (i, &byte) in chunk.get(from..n).unwrap_or(&[]).iter().enumerate() {
            match byte {
                b'\r' => {}
                b'\n' => {
                    let request = protocol::parse_request(line.get(..len).unwrap_or(&[]));
                    if !too_long && request == Request::End {
                        return Ok(summary);
                    }
                    summary.lines += 1;
                    let mut out = FmtOut::new(&mut *io);
                    counter.start();
                    let result = match request {
                        _ if too_long => Err(HandlerError::new(DeviceCode::LineTooLong).into()),
                        Request::Source(text) => handler.handle(text, &mut out),
                        Request::Command(cmd) => handler.command(cmd, &mut out),
                        Request::Unknown(_) | Request::End => Err(UNKNOWN_COMMAND.into()),
                    };
                    let ticks = counter.read();
                    summary.handler_ticks += u64::from(ticks);
                    log!(debug, "line {=u32}: {=u32} ticks", summary.lines, ticks);
                    if let Err(e) = result {
                        summary.errors += 1;
                        log!(warn, "line {=u32}: ERR {}", summary.lines, e);
                        if out.failed.is_none() {
                            let _ = protocol::write_err(&mut out, &e);
                        }
                    }
                    if let Some(e) = out.failed {
                        return Err(e);
                    }
                    len = 0;
                    too_long = false;
                    // The next line streamed from the bytes after this one's end.
                    if H::STREAMS && handler.streaming() {
                        let pending = Pending {
                            chunk,
                            at: from + i + 1,
                            n,
                        };
                        match stream_line::<IO, H, C>(io, handler, pending, &mut summary)? {
                            Some(rest) => carried = Some(rest),
                            None => return Ok(summary), // end of input
                        }
                        break;
                    }
                }
                _ => match line.get_mut(len) {
                    Some(slot) => {
                        *slot = byte;
                        len += 1;
                    }
                    None => too_long = true,
                },
            }
        }
    }
}

/// A streamed line of the [`session`]: handed to `handler` a byte at a time from
/// `pending` then `io`, timed and counted in `summary`, read to its end. Returns what
/// was read past the line's end, or `None` at the end of input.
// Out of line: a session without streamed lines keeps its code as it was.
#[inline(never)]
fn stream_line<IO: Read + Write, H: LineHandler + ?Sized, C: Counter>(
    io: &mut IO,
    handler: &mut H,
    mut pending: Pending,
    summary: &mut Summary,
) -> Result<Option<Pending>, IO::Error> {
    summary.lines += 1;
    let mut counter = C::new();
    let mut link = StreamIo {
        out: FmtOut::new(io),
        pending: &mut pending,
        line_ended: false,
        input_ended: false,
    };
    counter.start();
    let result = handler.stream(&mut link);
    while link.next_byte().is_some() {}
    summary.handler_ticks += u64::from(counter.read());
    if let Err(e) = result {
        summary.errors += 1;
        log!(warn, "line {=u32}: ERR {}", summary.lines, e);
        if link.out.failed.is_none() {
            let _ = protocol::write_err(&mut link.out, &e);
        }
    }
    match (link.out.failed, link.input_ended) {
        (Some(e), _) => Err(e),
        (None, true) => Ok(None),
        (None, false) => Ok(Some(pending)),
    }
}

/// Start of a firmware run on a QEMU board: paints the stack, opens the board's UART and
/// prints `READY <board>` (exits with [`Exit::LinkFailed`] if the UART fails).
#[cfg(s2s_registers)]
pub fn start() -> crate::boards::board::Uart {
    measure::paint_stack();
    let mut uart = crate::boards::board::Uart::new();
    ready(&mut uart);
    uart
}

/// Prints (and logs) `READY <board>`; ends the run with [`Exit::LinkFailed`] if the link
/// fails (see [`end`]).
pub fn ready<W: Write>(link: &mut W) {
    log!(info, "READY {=str}", BOARD.name);
    if protocol::write_ready(&mut FmtOut::new(&mut *link), BOARD.name).is_err() {
        end(link, Exit::LinkFailed);
    }
}

/// What [`end`] returns: nothing under QEMU, where the run exits (`Infallible`, so that
/// the compiler knows a session's end does not return there), `()` on a real board,
/// which goes on.
#[cfg(s2s_semihosting)]
pub type Ended = core::convert::Infallible;
/// What [`end`] returns: nothing under QEMU, where the run exits, `()` on a real board,
/// which goes on.
#[cfg(not(s2s_semihosting))]
pub type Ended = ();

/// The end of a session or of the run, with `exit`. Under QEMU the run ends: exits with
/// that status. A real board has nowhere to exit to: it says `READY` again and returns,
/// so that the caller serves the next session (after a failed link too: the host may
/// come back).
pub fn end<W: Write>(link: &mut W, exit: Exit) -> Ended {
    #[cfg(s2s_semihosting)]
    {
        let _ = link;
        crate::fault::exit(exit)
    }
    #[cfg(not(s2s_semihosting))]
    {
        if exit != Exit::Success {
            log!(warn, "session ended with status {=i32}", exit.code());
        }
        log!(info, "READY {=str}", BOARD.name);
        let _ = protocol::write_ready(&mut FmtOut::new(&mut *link), BOARD.name);
    }
}

/// The rest of a session after `READY` (and the `MODEL` line): runs the [`session`] with
/// `handler` and counter `C`, prints the `DONE` and `STATS` lines (`model_bytes`: the
/// size of the model served, 0 for none), waits for the host's acknowledgement
/// ([`await_ack`]) and [`end`]s it with status 0 (or [`Exit::LinkFailed`] on an I/O
/// error).
pub fn finish<IO: Read + Write, H: LineHandler + ?Sized, C: Counter>(
    link: &mut IO,
    handler: &mut H,
    model_bytes: usize,
) -> Ended {
    let mut line = [0u8; MAX_LINE];
    let summary = match session::<IO, H, C>(link, handler, &mut line) {
        Ok(summary) => summary,
        Err(_) => return end(link, Exit::LinkFailed),
    };
    if !report(link, &summary, model_bytes) || await_ack(link).is_err() {
        return end(link, Exit::LinkFailed);
    }
    end(link, Exit::Success)
}

/// Reads lines until the host's [`protocol::ACK`] (other lines are dropped) or the end
/// of input: the host has then read the last line, so ending the session (QEMU exits,
/// closing a pseudo-terminal; a real board starts the next one) loses nothing. (The line is matched byte by byte, without
/// a buffer or the request parser: a few dozen bytes of flash.)
pub fn await_ack<IO: Read>(io: &mut IO) -> Result<(), IO::Error> {
    let ack = protocol::ACK.as_bytes();
    // Bytes of the line that match ACK so far; past `ack.len()` once the line differs.
    let mut matched = 0;
    let mut byte = [0u8; 1];
    loop {
        if io.read(&mut byte)? == 0 {
            return Ok(());
        }
        match byte[0] {
            b'\r' => {}
            b'\n' if matched == ack.len() => return Ok(()),
            b'\n' => matched = 0,
            b if ack.get(matched) == Some(&b) => matched += 1,
            _ => matched = ack.len() + 1,
        }
    }
}

/// The whole firmware run of a handler that needs no set-up on a QEMU board: [`start`],
/// then [`finish`] without a model (which exits).
#[cfg(s2s_registers)]
pub fn run<H: LineHandler + ?Sized>(handler: &mut H) -> ! {
    use crate::boards::board;
    let mut uart = start();
    match finish::<_, _, board::Counter>(&mut uart, handler, 0) {}
}

/// Writes the `DONE` and `STATS` lines (and logs them with defmt); `model_bytes` is the
/// size of the model served (0 for none); false if the link failed.
// Out of line: its frame is not on the session's (the micro:bit's stack is small).
#[inline(never)]
pub fn report<W: Write>(out: &mut W, summary: &Summary, model_bytes: usize) -> bool {
    let insns = measure::ticks_to_insns(summary.handler_ticks);
    let mem = measure::memory_stats();
    let stack_peak = measure::stack_peak_bytes();
    log!(info, "DONE {} handler_insns={=u64}", summary, insns);
    log!(
        info,
        "STATS {} stack_peak={=usize} model_bytes={=usize}",
        mem,
        stack_peak,
        model_bytes
    );
    let done = protocol::Done {
        lines: summary.lines.into(),
        errors: summary.errors.into(),
        handler_ticks: summary.handler_ticks,
        handler_insns: insns,
    };
    let stats = protocol::Stats {
        ram_static: mem.ram_static as u64,
        stack_peak: stack_peak as u64,
        stack_size: mem.stack_size as u64,
        flash_runtime: mem.flash_runtime as u64,
        model_start: mem.model_start as u32,
        model_size: mem.model_size as u64,
        model_bytes: model_bytes as u64,
    };
    let mut text = FmtOut::new(&mut *out);
    let written = protocol::write_done(&mut text, &done)
        .and_then(|()| protocol::write_stats(&mut text, &stats));
    written.is_ok() && out.flush().is_ok()
}
