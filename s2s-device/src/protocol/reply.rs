//! The lines the firmware writes: their types and one writer each (`reply_parse.rs`
//! parses them).

use core::fmt::{self, Display, Write};

use s2s_kernels::text::{Describe, Sink};
use s2s_kernels::Phase;

use super::code::ErrorCode;
use super::fields::{put_field, put_hex32, put_i64, put_u64, Escape};
use super::request::Command;

/// The `MODEL` line: the model the firmware serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelInfo<'a> {
    /// `f32`, `w8f32` or `w8a16`.
    pub precision: &'a str,
    /// Parameters.
    pub params: u64,
    /// Model file bytes.
    pub bytes: u64,
    /// The CRC-32 stored at the end of the model file (`seq2seq::ModelFile::crc`): with
    /// `bytes`, what tells the host which file the board serves.
    pub crc: u32,
    /// Workspace bytes for `positions`.
    pub arena: u64,
    /// The board's arena.
    pub arena_capacity: u64,
    /// Source positions the workspace holds.
    pub positions: u64,
}

/// The `CNT` line: counts of one decoded line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cnt<'a> {
    /// Instructions of the encoder pass.
    pub enc: u64,
    /// The `tok=` list: instructions of each decoder step (see [`Cnt::steps`]).
    pub tok: &'a str,
    /// From a `profile` firmware build: the same instructions split by phase.
    pub phases: Option<PhaseCounts>,
}

/// Instructions of one line by phase (the `enc_phases=`, `tok_phases=`, `marks=` and
/// `mark_insns=` fields of a `CNT` line), each array in the order of [`Phase::ALL`]. The counts
/// include the phase marks' own instructions (the counter reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PhaseCounts {
    /// The encoder pass's instructions by phase (they add up to `enc`).
    pub enc: [u64; PHASES],
    /// All decoder steps' instructions by phase (they add up to the sum of `tok`).
    pub tok: [u64; PHASES],
    /// Phase marks in the encoder pass and in the decoder steps.
    pub marks: [u64; 2],
    /// Instructions of one mark (the firmware counts a few in a row), in the counts.
    pub mark_insns: u64,
}

/// The number of phases, [`Phase::ALL`]'s length.
pub const PHASES: usize = Phase::ALL.len();

impl Cnt<'_> {
    /// Each step's count; `None` for a malformed one.
    pub fn steps(&self) -> impl Iterator<Item = Option<u64>> + '_ {
        self.tok
            .split(',')
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().ok())
    }
}

/// One attention weight as the firmware stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttWeight {
    /// An f32 (`f32` and `w8f32`), written as its bit pattern in hex.
    F32Bits(u32),
    /// A Q0.15 integer (`w8a16`), written in decimal.
    Q15(i16),
}

/// The `ATT` line: one decoder step's attention weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Att<'a> {
    /// The decoder step, from 0.
    pub step: u64,
    /// The weights as written (see [`Att::weights`]).
    pub words: &'a str,
}

impl Att<'_> {
    /// The weights: f32 bit patterns when `float`, else Q0.15 values; `None` for a
    /// malformed one.
    pub fn weights(&self, float: bool) -> impl Iterator<Item = Option<AttWeight>> + '_ {
        self.words
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(move |w| {
                if float {
                    u32::from_str_radix(w, 16).ok().map(AttWeight::F32Bits)
                } else {
                    w.parse().ok().map(AttWeight::Q15)
                }
            })
    }
}

/// The `DONE` line: counts of a finished session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Done {
    /// Lines handled.
    pub lines: u64,
    /// Lines answered with `ERR`.
    pub errors: u64,
    /// Counter ticks in the line handler, all lines together.
    pub handler_ticks: u64,
    /// The same in instructions (exact under QEMU `-icount`).
    pub handler_insns: u64,
}

/// The `STREAMED` line: how a streamed source went (its output ids were the `OUT`
/// lines before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Streamed {
    /// Source positions read (prefix and end tokens included).
    pub positions: u64,
    /// Output tokens decided (the end token not counted).
    pub tokens: u64,
    /// Instructions of the whole stream: encoder and decoder, reading included.
    pub insns: u64,
    /// Whether the decoder chose the end token (else it stopped at the step cap).
    pub ended: bool,
}

/// The `STATS` line: memory use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stats {
    /// `.data` + `.bss` + `.uninit` bytes.
    pub ram_static: u64,
    /// Deepest stack use.
    pub stack_peak: u64,
    /// The stack area.
    pub stack_size: u64,
    /// Runtime flash: vector table, code, read-only data, `.data`'s image.
    pub flash_runtime: u64,
    /// Start of the model region.
    pub model_start: u32,
    /// Size of the model region.
    pub model_size: u64,
    /// Bytes of the model served (0 for none).
    pub model_bytes: u64,
}

/// The `HARDFAULT` line: the stacked registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Program counter.
    pub pc: u32,
    /// Link register.
    pub lr: u32,
    /// Program status register.
    pub xpsr: u32,
}

/// A line the firmware writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply<'a> {
    /// `READY <board>`.
    Ready(&'a str),
    /// `MODEL ...`.
    Model(ModelInfo<'a>),
    /// `ERR model: <reason>`: the model cannot be served. The reason is words or
    /// `E<code>` ([`super::code::Reason`] shows either).
    ModelError(&'a str),
    /// `OUT <ids>`: the ids as written (see [`Reply::ids`]).
    Out(&'a str),
    /// `TXT <text>`, escaped (see [`super::unescape`]).
    Txt(&'a str),
    /// `CNT ...`.
    Cnt(Cnt<'a>),
    /// `ATT ...`.
    Att(Att<'a>),
    /// `OK <command>`.
    Ok(Command<'a>),
    /// `ERR <reason>`: this request failed. The reason is words or `E<code>`
    /// ([`super::code::Reason`] shows either).
    Err(&'a str),
    /// `STREAMED ...`.
    Streamed(Streamed),
    /// `DONE ...`.
    Done(Done),
    /// `STATS ...`.
    Stats(Stats),
    /// `PANIC <message> at <file>:<line>` (the text after `PANIC `).
    Panic(&'a str),
    /// `HARDFAULT ...`.
    HardFault(Fault),
}

impl Reply<'_> {
    /// The ids of an `OUT` line (`None` for a malformed one, or another line).
    pub fn ids(words: &str) -> impl Iterator<Item = Option<u16>> + '_ {
        words
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().ok())
    }
}

pub(super) const MODEL_ERROR: &str = "ERR model: ";

/// `READY <board>`.
pub fn write_ready(out: &mut dyn Sink, board: &str) -> fmt::Result {
    out.put("READY ")?;
    out.put(board)?;
    out.put("\n")
}

/// `MODEL <precision> params=.. bytes=.. crc=0x.. arena=../.. positions=..`.
pub fn write_model(out: &mut dyn Sink, m: &ModelInfo<'_>) -> fmt::Result {
    out.put("MODEL ")?;
    out.put(m.precision)?;
    put_field(out, "params", m.params)?;
    put_field(out, "bytes", m.bytes)?;
    out.put(" crc=0x")?;
    put_hex32(out, m.crc)?;
    put_field(out, "arena", m.arena)?;
    out.put("/")?;
    put_u64(out, m.arena_capacity)?;
    put_field(out, "positions", m.positions)?;
    out.put("\n")
}

/// `ERR model: <reason>`.
pub fn write_model_error(out: &mut dyn Sink, reason: &dyn Describe) -> fmt::Result {
    out.put(MODEL_ERROR)?;
    reason.describe(out)?;
    out.put("\n")
}

/// `ERR model: E<code>`: the model refused by its code alone ([`ErrorCode`]).
pub fn write_model_error_code(out: &mut dyn Sink, code: u16) -> fmt::Result {
    write_model_error(out, &ErrorCode(code))
}

/// `OUT <id> <id> ...` (`OUT` alone for no ids).
pub fn write_out(out: &mut dyn Sink, ids: &[u16]) -> fmt::Result {
    out.put("OUT")?;
    for &id in ids {
        out.put(" ")?;
        put_u64(out, id.into())?;
    }
    out.put("\n")
}

/// `TXT <text>`: `text` writes the output through the [`Escape`] writer it is given.
pub fn write_txt(
    out: &mut dyn Sink,
    text: impl FnOnce(&mut Escape<'_>) -> fmt::Result,
) -> fmt::Result {
    out.put("TXT ")?;
    text(&mut Escape(&mut *out))?;
    out.put("\n")
}

/// `CNT enc=<n> tok=<n>,<n>,...`, and with `phases`
/// ` enc_phases=<n>,... tok_phases=<n>,... marks=<n>,<n> mark_insns=<n>`.
pub fn write_cnt(
    out: &mut dyn Sink,
    enc: u64,
    steps: impl IntoIterator<Item = u64>,
    phases: Option<&PhaseCounts>,
) -> fmt::Result {
    out.put("CNT")?;
    put_field(out, "enc", enc)?;
    out.put(" tok=")?;
    for (i, t) in steps.into_iter().enumerate() {
        if i > 0 {
            out.put(",")?;
        }
        put_u64(out, t)?;
    }
    if let Some(p) = phases {
        put_phases(out, p)?;
    }
    out.put("\n")
}

/// ` enc_phases=<n>,... tok_phases=<n>,... marks=<n>,<n> mark_insns=<n>`. (Out of line: a build
/// without phases keeps `write_cnt` as it was without them.)
#[inline(never)]
fn put_phases(out: &mut dyn Sink, p: &PhaseCounts) -> fmt::Result {
    for (key, values) in [
        (" enc_phases=", &p.enc[..]),
        (" tok_phases=", &p.tok[..]),
        (" marks=", &p.marks[..]),
        (" mark_insns=", &[p.mark_insns][..]),
    ] {
        out.put(key)?;
        for (i, &v) in values.iter().enumerate() {
            if i > 0 {
                out.put(",")?;
            }
            put_u64(out, v)?;
        }
    }
    Ok(())
}

/// `ATT <step> <w0> <w1> ...`.
pub fn write_att(
    out: &mut dyn Sink,
    step: u64,
    weights: impl IntoIterator<Item = AttWeight>,
) -> fmt::Result {
    out.put("ATT ")?;
    put_u64(out, step)?;
    for w in weights {
        out.put(" ")?;
        match w {
            AttWeight::F32Bits(bits) => put_hex32(out, bits)?,
            AttWeight::Q15(q) => put_i64(out, q.into())?,
        }
    }
    out.put("\n")
}

/// `OK <command>`.
pub fn write_ok(out: &mut dyn Sink, cmd: Command<'_>) -> fmt::Result {
    out.put("OK ")?;
    cmd.write_text(out)?;
    out.put("\n")
}

/// `ERR <reason>`.
pub fn write_err(out: &mut dyn Sink, reason: &dyn Describe) -> fmt::Result {
    out.put("ERR ")?;
    reason.describe(out)?;
    out.put("\n")
}

/// `ERR E<code>`: a request refused by its code alone ([`ErrorCode`]).
pub fn write_err_code(out: &mut dyn Sink, code: u16) -> fmt::Result {
    write_err(out, &ErrorCode(code))
}

/// `DONE lines=.. errors=.. handler_ticks=.. handler_insns=..`.
pub fn write_done(out: &mut dyn Sink, d: &Done) -> fmt::Result {
    out.put("DONE")?;
    put_field(out, "lines", d.lines)?;
    put_field(out, "errors", d.errors)?;
    put_field(out, "handler_ticks", d.handler_ticks)?;
    put_field(out, "handler_insns", d.handler_insns)?;
    out.put("\n")
}

/// `STREAMED positions=.. tokens=.. insns=.. ended=0|1`.
pub fn write_streamed(out: &mut dyn Sink, s: &Streamed) -> fmt::Result {
    out.put("STREAMED")?;
    put_field(out, "positions", s.positions)?;
    put_field(out, "tokens", s.tokens)?;
    put_field(out, "insns", s.insns)?;
    put_field(out, "ended", u64::from(s.ended))?;
    out.put("\n")
}

/// `STATS ram_static=.. stack_peak=.. stack_size=.. flash_runtime=..
/// model_region=0x<start>+<size> model_bytes=..`.
pub fn write_stats(out: &mut dyn Sink, s: &Stats) -> fmt::Result {
    out.put("STATS")?;
    put_field(out, "ram_static", s.ram_static)?;
    put_field(out, "stack_peak", s.stack_peak)?;
    put_field(out, "stack_size", s.stack_size)?;
    put_field(out, "flash_runtime", s.flash_runtime)?;
    out.put(" model_region=0x")?;
    put_hex32(out, s.model_start)?;
    out.put("+")?;
    put_u64(out, s.model_size)?;
    put_field(out, "model_bytes", s.model_bytes)?;
    out.put("\n")
}

/// `PANIC <message> at <file>:<line>`.
pub fn write_panic(
    out: &mut dyn Sink,
    message: impl Display,
    file: &str,
    line: u32,
) -> fmt::Result {
    write!(out, "PANIC {message} at {file}:")?;
    put_u64(out, line.into())?;
    out.put("\n")
}

/// `HARDFAULT pc=0x.. lr=0x.. xpsr=0x..`.
pub fn write_hardfault(out: &mut dyn Sink, f: &Fault) -> fmt::Result {
    out.put("HARDFAULT")?;
    for (key, v) in [(" pc=0x", f.pc), (" lr=0x", f.lr), (" xpsr=0x", f.xpsr)] {
        out.put(key)?;
        put_hex32(out, v)?;
    }
    out.put("\n")
}
