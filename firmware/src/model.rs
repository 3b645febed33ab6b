//! The model handler: serves the model in the board's model region over the line
//! protocol (`s2s_device::protocol`).
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
//!     [enc_phases=.. tok_phases=.. marks=..]   with the `profile` feature: the same by
//!                                 phase (`s2s_kernels::Phase`), and the marks counted
//! ATT <step> <w0> ... <wT-1>     with attention output on: one line per decoder step
//! ```
//!
//! or `ERR <reason>` (`ERR E<code>` with the `error-codes` feature, see
//! `s2s_device::protocol::code`). A line starting with the byte 0x01 is a command:
//! `\x01attention on` / `\x01attention off`, answered with `OK attention on|off`, and
//! `\x01beam K`, answered with `OK beam K`: the following lines are beam-searched `K`
//! wide in the model's own variant (`beam 1`, the default, is greedy decoding). The
//! widest beam is the board's `max_beam` as far as the arena holds it beside the
//! model's workspace; a wider one is refused with `ERR`. Under a beam search the `CNT`
//! line counts each search step (every live hypothesis expanded by one decoder step),
//! and no `ATT` lines are written.

use core::convert::Infallible;
use core::fmt;

use s2s_device::exit::Exit;
use s2s_device::protocol::{self, Command};

use s2s_kernels::text::Sink;
use s2s_kernels::{Precision, PrecisionKind};
use seq2seq::run::Observer;
use seq2seq::vocab::decode_target;
#[cfg(not(s2s_embedded))]
use seq2seq::ModelFile;
use seq2seq::{BeamPlan, Error, ModelPrecision, Net, Plan, Prefix, Runner, Search};

use embedded_hal::digital::OutputPin;
use embedded_io::{Read, Write};

mod error;
mod observe;

pub use error::{LineError, ServeError};
pub use observe::RawAct;
use observe::{AttPrinter, LineObserver};

use crate::app::{self, FmtOut, LineHandler};
use crate::capacity::{ARENA_BYTES, MAX_BEAM, MAX_POSITIONS, MAX_STEPS};
use crate::meter::Meter;
#[cfg(feature = "profile")]
use crate::meter::{write_cnt_phases, Profile};
use crate::{measure, Counter, BOARD};

/// What the model runner drives on the board: the link to the host, the counter type
/// `C` it times with, and a pin raised while each line is decoded (`NoPin` for none).
pub struct Io<'l, L, B> {
    /// The link to the host.
    pub link: &'l mut L,
    /// High from the start of each line's decoding to its end (before its output is
    /// written): a logic analyser's view of the decode time.
    pub busy: B,
}

/// Serves the model in `region` on `io.link` with `arena` as its workspace and a counter
/// `C`; returns only if the model cannot be served (the caller reports the error). Each
/// session ends with the `DONE`/`STATS` lines; then QEMU exits with status 0, and a real
/// board says `READY` and `MODEL` again and serves the next session (`app::end`).
#[cfg(not(s2s_embedded))]
pub fn serve<L: Read + Write, C: Counter, B: OutputPin>(
    io: Io<'_, L, B>,
    region: &'static [u8],
    arena: &'static mut [u32],
) -> Result<Infallible, ServeError> {
    let file = ModelFile::parse(region)?;
    match file.precision() {
        #[cfg(precision = "f32")]
        PrecisionKind::F32 => serve_as::<s2s_kernels::F32, L, C, B>(io, &file, arena),
        #[cfg(precision = "w8f32")]
        PrecisionKind::W8F32 => serve_as::<s2s_kernels::W8F32, L, C, B>(io, &file, arena),
        #[cfg(precision = "w8a16")]
        PrecisionKind::W8A16 => serve_as::<s2s_kernels::W8A16, L, C, B>(io, &file, arena),
        #[allow(unreachable_patterns)] // when every precision is compiled
        other => Err(Error::UnsupportedPrecision(other).into()),
    }
}

/// Source positions the workspace is planned for: the model's fixed length, else
/// [`MAX_POSITIONS`]; for a model that streams, the most of those whose workspace the
/// arena holds (its window of encoder states, whatever a streamed source's length).
fn positions_for<P: Precision>(desc: &seq2seq::ModelDesc) -> Result<usize, Error> {
    let most = BOARD
        .capacities
        .positions_for(desc.src_pad_to)
        .ok_or(Error::InputTooLong {
            len: desc.src_pad_to,
            max: MAX_POSITIONS,
        })?;
    if !streams(desc) {
        return Ok(most);
    }
    let fits = |n: usize| Plan::new::<P>(desc, n).bytes() <= ARENA_BYTES;
    Ok((1..=most).rev().find(|&n| fits(n)).unwrap_or(most))
}

/// Whether this build streams sources through `desc`'s model (`\x01stream`): with
/// the `monotonic` feature (which compiles the streaming input, for local attention
/// too), a model that streams.
fn streams(desc: &seq2seq::ModelDesc) -> bool {
    cfg!(feature = "monotonic") && desc.streams().is_ok()
}

// Stack use: the pieces below are kept out of line, and the `Net` and the handler are
// used where they were returned instead of being moved, so that binding's temporaries
// (layer specifications, the `Net` under construction) are off the stack before the
// session starts and no large value is held twice. The micro:bit has ~6 KB of stack.

/// Binds the model at precision `P` and serves it.
#[inline(never)]
#[cfg(not(s2s_embedded))]
fn serve_as<P, L: Read + Write, C: Counter, B: OutputPin>(
    io: Io<'_, L, B>,
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
    // A model that streams is served for its streamed sources; a whole line of more
    // steps than the board holds is refused on its own (`OutputTooSmall`).
    if net.desc.max_steps > MAX_STEPS && !streams(&net.desc) {
        return Err(ServeError::Capacity(Error::OutputTooSmall {
            needed: net.desc.max_steps,
            available: MAX_STEPS,
        }));
    }
    let served = Served {
        params: file.parameters(),
        bytes: file.bytes().len(),
        crc: file.crc(),
    };
    session::<P, L, C, B>(io, &served, net, arena)
}

/// Serves the model embedded at build time (`s2s embed`, `S2S_EMBED`; see
/// [`crate::embedded`]) on `io.link` with `arena` as its workspace and a counter `C`, as
/// [`serve`] serves a model file: the same session and lines, without a parser.
#[cfg(s2s_embedded)]
pub fn serve_embedded<L: Read + Write, C: Counter, B: OutputPin>(
    io: Io<'_, L, B>,
    arena: &'static mut [u32],
) -> Result<Infallible, ServeError> {
    use crate::embedded::{self, P};
    let mut bound = Err(Error::EmptyInput);
    Net::<P>::embedded_into(&embedded::MODEL, &mut bound);
    let net = match &bound {
        Ok(net) => net,
        Err(e) => return Err(ServeError::Model(*e)),
    };
    let served = Served {
        params: embedded::PARAMETERS,
        bytes: embedded::FILE_BYTES,
        crc: embedded::FILE_CRC,
    };
    session::<P, L, C, B>(io, &served, net, arena)
}

/// What the `MODEL` line says of the model served: its parameters, and its file's size
/// and CRC.
struct Served {
    params: usize,
    bytes: usize,
    crc: u32,
}

/// `Net::bind_into`, out of line: its temporaries leave the stack when it returns.
#[inline(never)]
#[cfg(not(s2s_embedded))]
fn bind<P: ModelPrecision>(file: &ModelFile<'static>, slot: &mut Result<Net<'static, P>, Error>) {
    Net::<P>::bind_into(file, slot)
}

/// Carves the workspace, prints the `MODEL` line and runs the session (on a real board,
/// session after session).
#[inline(never)]
fn session<P, L: Read + Write, C: Counter, B: OutputPin>(
    io: Io<'_, L, B>,
    served: &Served,
    net: &Net<'static, P>,
    arena: &'static mut [u32],
) -> Result<Infallible, ServeError>
where
    P: ModelPrecision,
    P::Act: RawAct,
{
    let positions = positions_for::<P>(&net.desc).map_err(ServeError::Capacity)?;
    let link = io.link;
    let mut made = ModelHandler::<P, C, B>::new(net, arena, positions, io.busy);
    let handler = match &mut made {
        Ok(h) => h,
        Err(e) => return Err(ServeError::Capacity(*e)),
    };
    let bytes = served.bytes;
    loop {
        model_line(
            link,
            P::KIND,
            served.params,
            bytes,
            served.crc,
            handler.runner.plan_bytes(),
            positions,
        );
        log!(
            debug,
            "stack peak after binding: {=usize} bytes",
            measure::stack_peak_bytes()
        );
        // Under QEMU this ends the run; a real board goes on with the next session.
        app::finish::<L, _, C>(link, handler, bytes);
    }
}

/// Prints (and logs) the `MODEL` line.
#[inline(never)]
fn model_line<L: Write>(
    link: &mut L,
    kind: PrecisionKind,
    params: usize,
    bytes: usize,
    crc: u32,
    plan_bytes: usize,
    positions: usize,
) {
    let precision = kind.name();
    log!(
        info,
        "MODEL {=str} params={=usize} bytes={=usize} arena={=usize}/{=usize} positions={=usize}",
        precision,
        params,
        bytes,
        plan_bytes,
        ARENA_BYTES,
        positions
    );
    let info = protocol::ModelInfo {
        precision,
        params: params as u64,
        bytes: bytes as u64,
        crc,
        arena: plan_bytes as u64,
        arena_capacity: ARENA_BYTES as u64,
        positions: positions as u64,
    };
    if protocol::write_model(&mut FmtOut::new(&mut *link), &info).is_err() {
        app::end(link, Exit::LinkFailed);
    }
}

/// Beam workspaces the runner holds: one with a beam search ([`MAX_BEAM`]), none
/// without (a board without one, the micro:bit's, then holds 236 bytes less of runner
/// on the stack it decodes on).
const BEAM_SLOTS: usize = if MAX_BEAM == 0 { 0 } else { 1 };

/// The model runner of [`ModelHandler`]: one lane, [`BEAM_SLOTS`] beam workspaces.
type ModelRunner<'n, 'w, P> = Runner<'n, 'static, 'w, P, 1, BEAM_SLOTS>;

/// Runs each input line through the model and prints the `OUT`/`TXT`/`CNT` (and `ATT`)
/// lines.
struct ModelHandler<'n, 'w, P: Precision, C, B> {
    runner: ModelRunner<'n, 'w, P>,
    net: &'n Net<'static, P>,
    ids: [u16; MAX_STEPS],
    /// Counter ticks of each decoder step (or search step) of the last line.
    ticks: [u32; MAX_STEPS],
    attention: bool,
    /// The beam width of the following lines (1: greedy).
    beam: u16,
    /// The prefix slots' tokens of the following lines (`\x01prefix`).
    prefix: Prefix,
    /// The limits of the next line, streamed (`\x01stream N [R]`); no steps: read it
    /// whole.
    #[cfg(feature = "monotonic")]
    stream: seq2seq::StreamLimits,
    counter: C,
    /// High while a line is decoded.
    busy: B,
    /// The phases of the line (`profile`).
    #[cfg(feature = "profile")]
    profile: Profile,
}

/// The greedy decoding of one line, out of line (as the model runner has always
/// compiled it: the QEMU boards' instruction counts depend on its code generation). On
/// the ARMv6-M parts (the only Cortex-M targets without 32-bit atomics) it is left to the
/// compiler, which inlines it into the session as it always did there: its own frame
/// would cost the micro:bit's 6 KB stack about 500 bytes it does not have.
#[cfg_attr(target_has_atomic = "32", inline(never))]
fn greedy<P: Precision, O: Observer<P>>(
    runner: &mut ModelRunner<'_, '_, P>,
    (text, prefix): (&str, &Prefix),
    ids: &mut [u16],
    observer: &mut O,
) -> Result<usize, Error> {
    runner.translate_line::<Error>(text, prefix, ids, observer, |_| Ok(()))
}

/// A [`LineObserver`] over the handler `$h`'s counter and step counts, with the `ATT`
/// printer `$att` (or `None`).
macro_rules! line_observer {
    ($h:expr, $att:expr) => {
        LineObserver {
            meter: Meter {
                counter: &mut $h.counter,
                enc: 0,
                ticks: &mut $h.ticks,
                steps: 0,
                #[cfg(feature = "profile")]
                profile: &mut $h.profile,
            },
            att: $att,
        }
    };
}

impl<'n, 'w, P: Precision, C: Counter, B> ModelHandler<'n, 'w, P, C, B>
where
    P::Act: RawAct,
{
    #[inline(never)]
    fn new(
        net: &'n Net<'static, P>,
        arena: &'w mut [u32],
        positions: usize,
        busy: B,
    ) -> Result<Self, Error> {
        // The widest beam up to the board's that fits beside the workspace.
        let plan = Plan::new::<P>(&net.desc, positions).bytes();
        let fits = |k| plan.saturating_add(BeamPlan::new::<P>(&net.desc, k).bytes()) <= ARENA_BYTES;
        let width = match MAX_BEAM {
            0 => None,
            max => (1..=max).rev().find(|&k| fits(k)),
        };
        let runner = match width {
            Some(k) => ModelRunner::with_beam_lanes(net, arena, positions, k)?,
            None => ModelRunner::with_lanes(net, arena, positions)?,
        };
        Ok(ModelHandler {
            runner,
            net,
            ids: [0; MAX_STEPS],
            ticks: [0; MAX_STEPS],
            attention: false,
            beam: 1,
            prefix: Prefix::NONE,
            #[cfg(feature = "monotonic")]
            stream: seq2seq::StreamLimits::default(),
            counter: C::new(),
            busy,
            #[cfg(feature = "profile")]
            profile: Profile::new(),
        })
    }
}

impl<P: Precision, C: Counter, B: OutputPin> LineHandler for ModelHandler<'_, '_, P, C, B>
where
    P::Act: RawAct,
{
    type Error = LineError;

    // Out of line: a command's temporaries (a prefix being chosen) stay off the stack
    // while a line decodes.
    #[inline(never)]
    fn command(&mut self, cmd: Command<'_>, out: &mut dyn Sink) -> Result<(), LineError> {
        match cmd {
            Command::Attention(on) => {
                self.attention = on;
                log!(info, "attention {=bool}", on);
            }
            Command::Beam(k) => {
                let max = self.runner.beam_width().max(1);
                if k as usize > max {
                    return Err(Error::BeamTooWide {
                        width: k.into(),
                        max,
                    }
                    .into());
                }
                self.beam = k;
                log!(info, "beam {=u16}", k);
            }
            Command::Prefix(fields) => {
                let net = self.net;
                self.prefix = Prefix::NONE.with_fields(&net.slots(), &net.src_vocab, fields)?;
                log!(info, "prefix {=str}", fields);
            }
            #[cfg(feature = "monotonic")]
            Command::Stream { steps, repeats } => {
                self.net.desc.streams()?;
                self.stream = seq2seq::StreamLimits {
                    max_steps: steps.into(),
                    max_repeats: repeats.into(),
                };
                log!(info, "stream {=u16} {=u16}", steps, repeats);
            }
            _ => return Err(app::UNKNOWN_COMMAND.into()),
        }
        protocol::write_ok(out, cmd)?;
        Ok(())
    }

    const STREAMS: bool = cfg!(feature = "monotonic");

    #[cfg(feature = "monotonic")]
    fn streaming(&self) -> bool {
        self.stream.max_steps > 0
    }

    /// The streamed line: its ids as `OUT` lines as they are decided, then `STREAMED`.
    #[cfg(feature = "monotonic")]
    #[inline(never)]
    fn stream(&mut self, link: &mut dyn app::StreamLink) -> Result<(), LineError> {
        let limits = core::mem::take(&mut self.stream);
        // The link and the counter, shared by reading and writing: the instructions
        // are summed between them (exact under QEMU: none of the waiting for a byte or
        // for the UART is counted, and the counter's 32 bits never wrap in between).
        let timed = core::cell::RefCell::new(Timed {
            link,
            counter: &mut self.counter,
            ticks: 0,
        });
        let borrow = || timed.try_borrow_mut().map_err(|_| LineError::Output);
        let _ = self.busy.set_high();
        borrow()?.counter.start();
        let streamed = self.runner.stream_chars(
            &self.prefix,
            || {
                let mut t = borrow()?;
                t.pause();
                let got = match t.link.next_byte() {
                    None => Ok(None),
                    Some(first) => seq2seq::vocab::utf8_char(first, || t.link.next_byte())
                        .map(Some)
                        .ok_or(LineError::NotUtf8),
                };
                t.counter.start();
                got
            },
            limits,
            &mut (),
            |y| {
                let mut t = borrow()?;
                t.pause();
                protocol::write_out(&mut *t.link, &[y]).map_err(|_| LineError::Output)?;
                t.counter.start();
                Ok(())
            },
        );
        let mut t = borrow()?;
        t.pause();
        let _ = self.busy.set_low();
        let done = streamed?;
        let summary = protocol::Streamed {
            positions: done.positions as u64,
            tokens: done.tokens as u64,
            insns: measure::ticks_to_insns(t.ticks),
            ended: done.ended,
        };
        protocol::write_streamed(&mut *t.link, &summary).map_err(|_| LineError::Output)
    }

    fn handle(&mut self, line: &[u8], out: &mut dyn Sink) -> Result<(), LineError> {
        let text = core::str::from_utf8(line).map_err(|_| LineError::NotUtf8)?;

        let mut meter = line_observer!(self, None);
        #[cfg(feature = "profile")]
        let mark_insns = meter.meter.mark_insns::<P>();
        // A pin error has nowhere to go: the decode goes on untimed by the analyser.
        let _ = self.busy.set_high();
        meter.meter.counter.start();
        let decoded = if MAX_BEAM != 0 && self.beam > 1 {
            let search = Search::of(&self.net.desc, self.beam.into());
            self.runner.beam_line::<Error>(
                text,
                &self.prefix,
                search,
                &mut self.ids,
                &mut meter,
                |_| Ok(()),
            )
        } else {
            greedy(
                &mut self.runner,
                (text, &self.prefix),
                &mut self.ids,
                &mut meter,
            )
        };
        let _ = self.busy.set_low();
        let n = decoded?;
        let (enc, steps) = (meter.meter.enc, meter.meter.steps);

        let ids = self.ids.get(..n).unwrap_or(&[]);
        protocol::write_out(out, ids)?;
        let (vocab, separator) = (&self.net.tgt_vocab, self.net.separator);
        protocol::write_txt(out, |text| {
            decode_target(vocab, separator, ids, |s| fmt::Write::write_str(text, s))
        })?;
        #[cfg(feature = "profile")]
        let ticks = self.ticks.get(..steps).unwrap_or(&[]);
        #[cfg(feature = "profile")]
        write_cnt_phases(out, enc, ticks, &self.profile, mark_insns)?;
        #[cfg(not(feature = "profile"))]
        {
            let insns = |ticks: &u32| measure::ticks_to_insns(u64::from(*ticks));
            protocol::write_cnt(
                out,
                insns(&enc),
                self.ticks.iter().take(steps).map(insns),
                None,
            )?;
        }

        // The attention rows come from a second run of the same line: the decoder is
        // deterministic, the counts above stay those of an unobserved run, and no RAM
        // holds steps x positions weights.
        if self.attention && self.net.attention.is_some() && self.beam == 1 {
            let mut printer = line_observer!(self, Some(AttPrinter { out, failed: false }));
            greedy(
                &mut self.runner,
                (text, &self.prefix),
                &mut self.ids,
                &mut printer,
            )?;
            if printer.att.is_some_and(|a| a.failed) {
                return Err(LineError::Output);
            }
        }
        Ok(())
    }
}

/// A streamed line's link and the counter of its instructions.
#[cfg(feature = "monotonic")]
struct Timed<'l, 'c, C> {
    link: &'l mut dyn app::StreamLink,
    counter: &'c mut C,
    /// Ticks counted so far.
    ticks: u64,
}

#[cfg(feature = "monotonic")]
impl<C: Counter> Timed<'_, '_, C> {
    /// Adds the ticks since the counter's start (before the link is used).
    fn pause(&mut self) {
        self.ticks += u64::from(self.counter.read());
    }
}
