//! The model handler: serves the model in the board's model region over the line
//! protocol (see `README.md`).
//!
//! At boot [`serve`] parses the model region, checks that this build runs the model's
//! precision (`cfg(precision = ...)`, see `build.rs`) and that the model fits the board's
//! [capacities](crate::capacity), binds it, prints the `MODEL` line and runs the session.
//! Each input line then gives
//!
//! ```text
//! OUT <id> <id> ...              output ids, end token excluded
//! TXT <text>                     the output tokens joined by the model's separator
//! CNT enc=<n> tok=<n>,<n>,...    instructions of the encoder pass and of each decoder step
//! ATT <step> <w0> ... <wT-1>     with attention output on: one line per decoder step
//! ```
//!
//! or `ERR <reason>`. A line starting with the byte 0x01 is a command:
//! `\x01attention on` / `\x01attention off`, answered with `OK attention on|off`.

use core::convert::Infallible;
use core::fmt;

use embedded_io::Write as _;

use s2s_kernels::{Precision, PrecisionKind};
use seq2seq::run::{Observer, Step};
use seq2seq::vocab::decode_target;
use seq2seq::{Error, ModelFile, ModelPrecision, Net, Runner};

use crate::app::{self, LineHandler};
use crate::capacity::{ARENA_BYTES, MAX_POSITIONS, MAX_STEPS};
use crate::{board, measure};

/// Why an input line failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LineError {
    /// The line is not UTF-8.
    NotUtf8,
    /// A 0x01 line that is not a known command.
    UnknownCommand,
    /// Writing the output failed.
    Output,
    /// The model rejected the input (unknown symbol, too long, empty, ...).
    Model(Error),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::NotUtf8 => f.write_str("input is not UTF-8"),
            LineError::UnknownCommand => {
                f.write_str("unknown command (\\x01attention on | \\x01attention off)")
            }
            LineError::Output => f.write_str("output failed"),
            LineError::Model(e) => write!(f, "{e}"),
        }
    }
}

impl defmt::Format for LineError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", defmt::Display2Format(self))
    }
}

impl From<Error> for LineError {
    fn from(e: Error) -> Self {
        LineError::Model(e)
    }
}

impl From<fmt::Error> for LineError {
    fn from(_: fmt::Error) -> Self {
        LineError::Output
    }
}

/// Why the model cannot be served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ServeError {
    /// No model, a bad model file, or a precision this build leaves out.
    Model(Error),
    /// A valid model beyond this board's [capacities](crate::capacity).
    Capacity(Error),
    /// Binding the model (nearly) exhausted the stack: the statics may be corrupted, so
    /// nothing more is attempted (see `measure::stack_exhausted`).
    StackOverflow {
        /// Bytes of stack the board has.
        stack: usize,
    },
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Model(e) => write!(f, "{e}"),
            ServeError::Capacity(e) => write!(
                f,
                "{e} (capacities of {}: arena {ARENA_BYTES} bytes, {MAX_POSITIONS} positions, {MAX_STEPS} steps)",
                board::NAME
            ),
            ServeError::StackOverflow { stack } => write!(
                f,
                "binding the model exhausted the {stack}-byte stack of {} (statics may be corrupted)",
                board::NAME
            ),
        }
    }
}

impl defmt::Format for ServeError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", defmt::Display2Format(self))
    }
}

impl From<Error> for ServeError {
    fn from(e: Error) -> Self {
        ServeError::Model(e)
    }
}

/// Activation values as the `ATT` lines print them: exact, and without float
/// formatting code (f32 as its bit pattern in hex, Q0.15 as a decimal integer).
pub trait RawAct: Copy {
    /// Writes the value.
    fn write_raw(self, out: &mut dyn fmt::Write) -> fmt::Result;
}

impl RawAct for f32 {
    fn write_raw(self, out: &mut dyn fmt::Write) -> fmt::Result {
        write!(out, "{:08x}", self.to_bits())
    }
}

impl RawAct for i16 {
    fn write_raw(self, out: &mut dyn fmt::Write) -> fmt::Result {
        write!(out, "{self}")
    }
}

/// Serves the model in `region` on `uart` with `arena` as its workspace; returns only
/// if the model cannot be served (the caller reports the error). On success the session
/// ends with the `DONE`/`STATS` lines and QEMU exits with status 0.
pub fn serve(
    uart: &mut board::Uart,
    region: &'static [u8],
    arena: &'static mut [u32],
) -> Result<Infallible, ServeError> {
    let file = ModelFile::parse(region)?;
    match file.precision() {
        #[cfg(precision = "f32")]
        PrecisionKind::F32 => serve_as::<s2s_kernels::F32>(uart, &file, arena),
        #[cfg(precision = "w8f32")]
        PrecisionKind::W8F32 => serve_as::<s2s_kernels::W8F32>(uart, &file, arena),
        #[cfg(precision = "w8a16")]
        PrecisionKind::W8A16 => serve_as::<s2s_kernels::W8A16>(uart, &file, arena),
        #[allow(unreachable_patterns)] // when every precision is compiled
        other => Err(Error::UnsupportedPrecision(other).into()),
    }
}

/// Source positions the workspace is planned for: the model's fixed length, else
/// [`MAX_POSITIONS`].
fn positions_for(desc: &seq2seq::ModelDesc) -> Result<usize, Error> {
    match desc.src_pad_to {
        0 => Ok(MAX_POSITIONS),
        n if n <= MAX_POSITIONS => Ok(n),
        n => Err(Error::InputTooLong {
            len: n,
            max: MAX_POSITIONS,
        }),
    }
}

// Stack use: the pieces below are kept out of line, and the `Net` and the handler are
// used where they were returned instead of being moved, so that binding's temporaries
// (layer specifications, the `Net` under construction) are off the stack before the
// session starts and no large value is held twice. The micro:bit has ~6 KB of stack.

/// Binds the model at precision `P` and serves it.
#[inline(never)]
fn serve_as<P>(
    uart: &mut board::Uart,
    file: &ModelFile<'static>,
    arena: &'static mut [u32],
) -> Result<Infallible, ServeError>
where
    P: ModelPrecision,
    P::Act: RawAct,
{
    // Bound in place (see `Net::bind_into`): the `Net` is held once.
    let mut bound = Err(Error::EmptyInput);
    bind::<P>(file, &mut bound);
    if measure::stack_exhausted() {
        return Err(ServeError::StackOverflow {
            stack: measure::memory_stats().stack_size,
        });
    }
    let net = match &bound {
        Ok(net) => net,
        Err(e) => return Err(ServeError::Model(*e)),
    };
    if net.desc.max_steps > MAX_STEPS {
        return Err(ServeError::Capacity(Error::OutputTooSmall {
            needed: net.desc.max_steps,
            available: MAX_STEPS,
        }));
    }
    session(uart, file, net, arena)
}

/// `Net::bind_into`, out of line: its temporaries leave the stack when it returns.
#[inline(never)]
fn bind<P: ModelPrecision>(file: &ModelFile<'static>, slot: &mut Result<Net<'static, P>, Error>) {
    Net::<P>::bind_into(file, slot)
}

/// Carves the workspace, prints the `MODEL` line and runs the session.
#[inline(never)]
fn session<P>(
    uart: &mut board::Uart,
    file: &ModelFile<'static>,
    net: &Net<'static, P>,
    arena: &'static mut [u32],
) -> Result<Infallible, ServeError>
where
    P: ModelPrecision,
    P::Act: RawAct,
{
    let positions = positions_for(&net.desc).map_err(ServeError::Capacity)?;
    let mut made = ModelHandler::new(net, arena, positions);
    let handler = match &mut made {
        Ok(h) => h,
        Err(e) => return Err(ServeError::Capacity(*e)),
    };
    let bytes = file.bytes().len();
    model_line(
        uart,
        P::KIND,
        file.parameters(),
        bytes,
        handler.runner.plan().bytes(),
        positions,
    );
    defmt::debug!(
        "stack peak after binding: {=usize} bytes",
        measure::stack_peak_bytes()
    );
    app::finish(uart, handler, bytes)
}

/// Prints (and logs) the `MODEL` line.
#[inline(never)]
fn model_line(
    uart: &mut board::Uart,
    kind: PrecisionKind,
    params: usize,
    bytes: usize,
    plan_bytes: usize,
    positions: usize,
) {
    let precision = kind.name();
    defmt::info!(
        "MODEL {=str} params={=usize} bytes={=usize} arena={=usize}/{=usize} positions={=usize}",
        precision,
        params,
        bytes,
        plan_bytes,
        ARENA_BYTES,
        positions
    );
    if writeln!(
        uart,
        "MODEL {precision} params={params} bytes={bytes} arena={plan_bytes}/{ARENA_BYTES} positions={positions}"
    )
    .is_err()
    {
        panic!("UART write failed");
    }
}

/// Runs each input line through the model and prints the `OUT`/`TXT`/`CNT` (and `ATT`)
/// lines.
struct ModelHandler<'n, 'w, P: Precision> {
    runner: Runner<'n, 'static, 'w, P>,
    net: &'n Net<'static, P>,
    ids: [u16; MAX_STEPS],
    /// Counter ticks of each decoder step of the last line.
    ticks: [u32; MAX_STEPS],
    attention: bool,
    counter: board::Counter,
}

/// Times the encoder pass and each decoder step with the board counter.
struct Meter<'c> {
    counter: &'c mut board::Counter,
    enc: u32,
    ticks: &'c mut [u32],
    steps: usize,
}

impl<P: Precision> Observer<P> for Meter<'_> {
    fn encoded(&mut self, _positions: usize) {
        self.enc = self.counter.read();
        self.counter.start();
    }

    fn step(&mut self, step: &Step<'_, P>) {
        let ticks = self.counter.read();
        if let Some(slot) = self.ticks.get_mut(step.index) {
            *slot = ticks;
        }
        self.steps = step.index + 1;
        self.counter.start();
    }
}

/// Prints one `ATT` line per decoder step.
struct AttPrinter<'o> {
    out: &'o mut dyn fmt::Write,
    failed: bool,
}

impl<P: Precision> Observer<P> for AttPrinter<'_>
where
    P::Act: RawAct,
{
    fn step(&mut self, step: &Step<'_, P>) {
        let Some(weights) = step.weights else {
            return;
        };
        let mut line = || -> fmt::Result {
            write!(self.out, "ATT {}", step.index)?;
            for &w in weights {
                self.out.write_char(' ')?;
                w.write_raw(self.out)?;
            }
            self.out.write_char('\n')
        };
        if !self.failed && line().is_err() {
            self.failed = true;
        }
    }
}

/// Writes `s` with `\`, newline and carriage return escaped (`\\`, `\n`, `\r`), so that
/// the text stays on one line.
fn write_escaped(out: &mut dyn fmt::Write, s: &str) -> fmt::Result {
    let mut rest = s;
    while let Some(i) = rest.find(['\\', '\n', '\r']) {
        out.write_str(&rest[..i])?;
        out.write_str(match rest.as_bytes()[i] {
            b'\n' => "\\n",
            b'\r' => "\\r",
            _ => "\\\\",
        })?;
        rest = &rest[i + 1..];
    }
    out.write_str(rest)
}

impl<'n, 'w, P: Precision> ModelHandler<'n, 'w, P>
where
    P::Act: RawAct,
{
    #[inline(never)]
    fn new(
        net: &'n Net<'static, P>,
        arena: &'w mut [u32],
        positions: usize,
    ) -> Result<Self, Error> {
        Ok(ModelHandler {
            runner: Runner::new(net, arena, positions)?,
            net,
            ids: [0; MAX_STEPS],
            ticks: [0; MAX_STEPS],
            attention: false,
            counter: board::Counter::new(),
        })
    }

    fn command(&mut self, cmd: &[u8], out: &mut dyn fmt::Write) -> Result<(), LineError> {
        self.attention = match cmd {
            b"attention on" => true,
            b"attention off" => false,
            _ => return Err(LineError::UnknownCommand),
        };
        let state = if self.attention { "on" } else { "off" };
        defmt::info!("attention {=str}", state);
        writeln!(out, "OK attention {state}")?;
        Ok(())
    }
}

impl<P: Precision> LineHandler for ModelHandler<'_, '_, P>
where
    P::Act: RawAct,
{
    type Error = LineError;

    fn handle(&mut self, line: &[u8], out: &mut dyn fmt::Write) -> Result<(), LineError> {
        if let Some(cmd) = line.strip_prefix(&[0x01]) {
            return self.command(cmd, out);
        }
        let text = core::str::from_utf8(line).map_err(|_| LineError::NotUtf8)?;

        let mut meter = Meter {
            counter: &mut self.counter,
            enc: 0,
            ticks: &mut self.ticks,
            steps: 0,
        };
        meter.counter.start();
        let n = self
            .runner
            .translate_line::<Error>(text, &mut self.ids, &mut meter, |_| Ok(()))?;
        let (enc, steps) = (meter.enc, meter.steps);

        out.write_str("OUT")?;
        for id in &self.ids[..n] {
            write!(out, " {id}")?;
        }
        out.write_str("\nTXT ")?;
        decode_target(
            &self.net.tgt_vocab,
            self.net.separator,
            &self.ids[..n],
            |s| write_escaped(out, s),
        )?;
        let insns = |ticks: u32| measure::ticks_to_insns(u64::from(ticks));
        write!(out, "\nCNT enc={} tok=", insns(enc))?;
        for (i, &t) in self.ticks[..steps].iter().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            write!(out, "{}", insns(t))?;
        }
        out.write_char('\n')?;

        // The attention rows come from a second run of the same line: the decoder is
        // deterministic, the counts above stay those of an unobserved run, and no RAM
        // holds steps x positions weights.
        if self.attention && self.net.attention.is_some() {
            let mut printer = AttPrinter { out, failed: false };
            self.runner
                .translate_line::<Error>(text, &mut self.ids, &mut printer, |_| Ok(()))?;
            if printer.failed {
                return Err(LineError::Output);
            }
        }
        Ok(())
    }
}
