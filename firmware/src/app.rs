//! The line protocol over the UART, generic over `embedded_io::{Read, Write}`.
//!
//! ```text
//! firmware -> READY <board>
//! firmware -> <what the firmware prints before the session, e.g. the MODEL line>
//! host     -> <line>                 (`\n`-terminated, `\r` ignored, at most MAX_LINE bytes)
//! firmware -> <the handler's output lines>, or `ERR <reason>`
//! ...
//! host     -> .                      (or an empty line, or end of input: ends the session)
//! firmware -> DONE lines=<n> errors=<n> handler_ticks=<n> handler_insns=<n>
//! firmware -> STATS ram_static=<bytes> stack_peak=<bytes> stack_size=<bytes>
//!             flash_runtime=<bytes> model_region=0x<start>+<bytes> model_bytes=<bytes>
//! (QEMU exits with status 0)
//! ```

use core::fmt::{self, Write as _};

use embedded_io::{Read, Write};

use crate::{board, fault, measure};

/// Longest accepted input line in bytes, without the `\n` (per board, see
/// [`crate::capacity`]). A longer line gets `ERR line too long` (the whole line is
/// dropped; the session goes on).
pub use crate::capacity::MAX_LINE;

/// A failed line with a fixed reason, for handlers that need nothing more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, defmt::Format)]
pub struct HandlerError(pub &'static str);

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Handles one input line (without `\n` and `\r`), writing zero or more output lines
/// to `out` (each ends with `\n`; `writeln!` does it). An error makes the session answer
/// `ERR <error>` and go on with the next line.
pub trait LineHandler {
    /// Why a line failed: shown as `ERR <Display>` on the UART and logged with defmt.
    type Error: fmt::Display + defmt::Format;

    /// Handles `line`.
    fn handle(&mut self, line: &[u8], out: &mut dyn fmt::Write) -> Result<(), Self::Error>;
}

/// `core::fmt::Write` over an `embedded_io::Write`: keeps the first I/O error.
struct FmtOut<'a, IO: Write> {
    io: &'a mut IO,
    failed: Option<IO::Error>,
}

impl<IO: Write> fmt::Write for FmtOut<'_, IO> {
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
/// exact count of its computation reads a `board::Counter` itself.
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
/// each to `handler` and writes its output lines back. Uses `line` (its length is the
/// maximum line length) as the line buffer. Returns the counts, or the first I/O error.
pub fn session<IO: Read + Write, H: LineHandler + ?Sized>(
    io: &mut IO,
    handler: &mut H,
    line: &mut [u8],
) -> Result<Summary, IO::Error> {
    let mut summary = Summary::default();
    let mut counter = board::Counter::new();
    let mut len = 0;
    let mut too_long = false;
    let mut chunk = [0u8; 32];
    loop {
        let n = io.read(&mut chunk)?;
        if n == 0 {
            return Ok(summary); // end of input
        }
        for &byte in &chunk[..n] {
            match byte {
                b'\r' => {}
                b'\n' => {
                    let text = &line[..len];
                    if !too_long && (text.is_empty() || text == b".") {
                        return Ok(summary);
                    }
                    summary.lines += 1;
                    if too_long {
                        summary.errors += 1;
                        defmt::warn!("line {=u32}: too long", summary.lines);
                        io.write_all(b"ERR line too long\n")?;
                    } else {
                        let mut out = FmtOut {
                            io: &mut *io,
                            failed: None,
                        };
                        counter.start();
                        let result = handler.handle(text, &mut out);
                        let ticks = counter.read();
                        summary.handler_ticks += u64::from(ticks);
                        defmt::debug!("line {=u32}: {=u32} ticks", summary.lines, ticks);
                        if let Err(e) = result {
                            summary.errors += 1;
                            defmt::warn!("line {=u32}: ERR {}", summary.lines, e);
                            if out.failed.is_none() {
                                let _ = writeln!(out, "ERR {e}");
                            }
                        }
                        if let Some(e) = out.failed {
                            return Err(e);
                        }
                    }
                    len = 0;
                    too_long = false;
                }
                _ if len < line.len() => {
                    line[len] = byte;
                    len += 1;
                }
                _ => too_long = true,
            }
        }
    }
}

/// Start of a firmware run: paints the stack, opens the board's UART and prints
/// `READY <board>` (panics if the UART fails).
pub fn start() -> board::Uart {
    measure::paint_stack();
    let mut uart = board::Uart::new();
    defmt::info!("READY {=str}", board::NAME);
    if writeln!(uart, "READY {}", board::NAME).is_err() {
        panic!("UART write failed");
    }
    uart
}

/// The rest of a firmware run after [`start`]: runs the [`session`] with `handler`,
/// prints the `DONE` and `STATS` lines (`model_bytes`: the size of the model served, 0
/// for none) and exits QEMU with status 0 (or panics on an I/O error).
pub fn finish<H: LineHandler + ?Sized>(
    uart: &mut board::Uart,
    handler: &mut H,
    model_bytes: usize,
) -> ! {
    let mut line = [0u8; MAX_LINE];
    let summary = match session(uart, handler, &mut line) {
        Ok(s) => s,
        Err(_) => panic!("UART I/O failed"),
    };
    report(uart, &summary, model_bytes);
    fault::exit(fault::EXIT_SUCCESS)
}

/// The whole firmware run of a handler that needs no set-up: [`start`], then
/// [`finish`] without a model.
pub fn run<H: LineHandler + ?Sized>(handler: &mut H) -> ! {
    let mut uart = start();
    finish(&mut uart, handler, 0)
}

/// Writes the `DONE` and `STATS` lines (and logs them with defmt); `model_bytes` is the
/// size of the model served (0 for none).
pub fn report<W: Write>(out: &mut W, summary: &Summary, model_bytes: usize) {
    let insns = measure::ticks_to_insns(summary.handler_ticks);
    let mem = measure::memory_stats();
    let stack_peak = measure::stack_peak_bytes();
    defmt::info!("DONE {} handler_insns={=u64}", summary, insns);
    defmt::info!(
        "STATS {} stack_peak={=usize} model_bytes={=usize}",
        mem,
        stack_peak,
        model_bytes
    );
    let written = writeln!(
        out,
        "DONE lines={} errors={} handler_ticks={} handler_insns={}",
        summary.lines, summary.errors, summary.handler_ticks, insns
    )
    .and_then(|()| {
        writeln!(
            out,
            "STATS ram_static={} stack_peak={} stack_size={} flash_runtime={} model_region=0x{:08x}+{} model_bytes={}",
            mem.ram_static, stack_peak, mem.stack_size, mem.flash_runtime, mem.model_start, mem.model_size, model_bytes
        )
    });
    if written.is_err() || out.flush().is_err() {
        panic!("UART write failed");
    }
}
