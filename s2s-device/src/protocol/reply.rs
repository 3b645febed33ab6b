//! The lines the firmware writes: one writer each, and [`parse_reply`] for them all.

use core::fmt::{self, Display, Write};

use s2s_kernels::text::{Describe, Sink};
use s2s_kernels::Phase;

use super::fields::{field, hex, num, put_field, put_hex32, put_i64, put_u64, Escape};
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
    /// `ERR model: <reason>`: the model cannot be served.
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
    Ok(Command),
    /// `ERR <reason>`: this request failed.
    Err(&'a str),
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

/// A line that is none of the [`Reply`] lines, or a malformed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The line's keyword, or `"an unknown line"`.
    pub line: &'static str,
}

impl Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {} line", self.line)
    }
}

impl core::error::Error for ParseError {}

const MODEL_ERROR: &str = "ERR model: ";

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

/// Exactly `N` comma-separated numbers.
fn list<const N: usize>(s: &str) -> Option<[u64; N]> {
    let mut v = [0; N];
    let mut words = s.split(',');
    for slot in v.iter_mut() {
        *slot = words.next()?.parse().ok()?;
    }
    words.next().is_none().then_some(v)
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
pub fn write_ok(out: &mut dyn Sink, cmd: Command) -> fmt::Result {
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

/// `DONE lines=.. errors=.. handler_ticks=.. handler_insns=..`.
pub fn write_done(out: &mut dyn Sink, d: &Done) -> fmt::Result {
    out.put("DONE")?;
    put_field(out, "lines", d.lines)?;
    put_field(out, "errors", d.errors)?;
    put_field(out, "handler_ticks", d.handler_ticks)?;
    put_field(out, "handler_insns", d.handler_insns)?;
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

/// Parses one line the firmware wrote (without its `\n`).
pub fn parse_reply(line: &str) -> Result<Reply<'_>, ParseError> {
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let bad = |line| ParseError { line };
    Ok(match word {
        "READY" if !rest.is_empty() => Reply::Ready(rest),
        "MODEL" => {
            let m = || {
                let (precision, fields) = rest.split_once(' ')?;
                let (arena, cap) = field(fields, "arena")?.split_once('/')?;
                Some(ModelInfo {
                    precision,
                    params: num(fields, "params")?,
                    bytes: num(fields, "bytes")?,
                    crc: hex(field(fields, "crc")?)?,
                    arena: arena.parse().ok()?,
                    arena_capacity: cap.parse().ok()?,
                    positions: num(fields, "positions")?,
                })
            };
            Reply::Model(m().ok_or(bad("MODEL"))?)
        }
        "ERR" => match line.strip_prefix(MODEL_ERROR) {
            Some(reason) => Reply::ModelError(reason),
            None => Reply::Err(rest),
        },
        "OUT" => {
            if Reply::ids(rest).any(|id| id.is_none()) {
                return Err(bad("OUT"));
            }
            Reply::Out(rest)
        }
        "TXT" => Reply::Txt(rest),
        "CNT" => {
            let enc = num(rest, "enc").ok_or(bad("CNT"))?;
            let tok = field(rest, "tok").ok_or(bad("CNT"))?;
            let phases = match field(rest, "enc_phases") {
                None => None,
                Some(enc) => Some(PhaseCounts {
                    enc: list(enc).ok_or(bad("CNT"))?,
                    tok: list(field(rest, "tok_phases").ok_or(bad("CNT"))?).ok_or(bad("CNT"))?,
                    marks: list(field(rest, "marks").ok_or(bad("CNT"))?).ok_or(bad("CNT"))?,
                    mark_insns: num(rest, "mark_insns").ok_or(bad("CNT"))?,
                }),
            };
            let cnt = Cnt { enc, tok, phases };
            if cnt.steps().any(|s| s.is_none()) {
                return Err(bad("CNT"));
            }
            Reply::Cnt(cnt)
        }
        "ATT" => {
            let (step, words) = rest.split_once(' ').unwrap_or((rest, ""));
            let step = step.parse().map_err(|_| bad("ATT"))?;
            Reply::Att(Att { step, words })
        }
        "OK" => Reply::Ok(Command::parse(rest).ok_or(bad("OK"))?),
        "DONE" => {
            let d = || {
                Some(Done {
                    lines: num(rest, "lines")?,
                    errors: num(rest, "errors")?,
                    handler_ticks: num(rest, "handler_ticks")?,
                    handler_insns: num(rest, "handler_insns")?,
                })
            };
            Reply::Done(d().ok_or(bad("DONE"))?)
        }
        "STATS" => {
            let s = || {
                let (start, size) = field(rest, "model_region")?.split_once('+')?;
                Some(Stats {
                    ram_static: num(rest, "ram_static")?,
                    stack_peak: num(rest, "stack_peak")?,
                    stack_size: num(rest, "stack_size")?,
                    flash_runtime: num(rest, "flash_runtime")?,
                    model_start: hex(start)?,
                    model_size: size.parse().ok()?,
                    model_bytes: num(rest, "model_bytes")?,
                })
            };
            Reply::Stats(s().ok_or(bad("STATS"))?)
        }
        "PANIC" => Reply::Panic(rest),
        "HARDFAULT" => {
            let f = || {
                Some(Fault {
                    pc: hex(field(rest, "pc")?)?,
                    lr: hex(field(rest, "lr")?)?,
                    xpsr: hex(field(rest, "xpsr")?)?,
                })
            };
            Reply::HardFault(f().ok_or(bad("HARDFAULT"))?)
        }
        _ => return Err(bad("an unknown")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes with `write`, checks the single line, and parses it back.
    fn round_trip(write: impl FnOnce(&mut String) -> fmt::Result) -> (String, Reply<'static>) {
        let mut s = String::new();
        write(&mut s).unwrap();
        assert!(s.ends_with('\n') && s.matches('\n').count() == 1, "{s:?}");
        let line: &'static str = Box::leak(s.trim_end_matches('\n').to_string().into_boxed_str());
        (
            line.to_string(),
            parse_reply(line).unwrap_or_else(|e| panic!("{e}: {line}")),
        )
    }

    #[test]
    fn every_line_parses_back_to_what_was_written() {
        let model = ModelInfo {
            precision: "w8a16",
            params: 78_705,
            bytes: 129_072,
            crc: 0x0a1b_2c3d,
            arena: 10_064,
            arena_capacity: 10_240,
            positions: 25,
        };
        let (line, r) = round_trip(|s| write_model(s, &model));
        assert_eq!(
            line,
            "MODEL w8a16 params=78705 bytes=129072 crc=0x0a1b2c3d arena=10064/10240 positions=25"
        );
        assert_eq!(r, Reply::Model(model));
        assert_eq!(
            round_trip(|s| write_ready(s, "microbit")).1,
            Reply::Ready("microbit")
        );
        let (line, r) = round_trip(|s| write_model_error(s, &"corrupted: CRC 0x1"));
        assert_eq!(line, "ERR model: corrupted: CRC 0x1");
        assert_eq!(r, Reply::ModelError("corrupted: CRC 0x1"));
        assert_eq!(
            round_trip(|s| write_err(s, &"line too long")).1,
            Reply::Err("line too long")
        );
        let (line, r) = round_trip(|s| write_out(s, &[3, 65535, 0]));
        assert_eq!(
            (line.as_str(), r),
            ("OUT 3 65535 0", Reply::Out("3 65535 0"))
        );
        let ids: Vec<_> = Reply::ids("3 65535 0").map(Option::unwrap).collect();
        assert_eq!(ids, [3, 65535, 0]);
        assert_eq!(round_trip(|s| write_out(s, &[])).1, Reply::Out(""));
        let (line, r) = round_trip(|s| write_txt(s, |e| e.write_str("a\nb\\")));
        assert_eq!(
            (line.as_str(), r),
            ("TXT a\\nb\\\\", Reply::Txt("a\\nb\\\\"))
        );
        let (line, r) = round_trip(|s| write_cnt(s, 100, [10, 11, 12], None));
        assert_eq!(line, "CNT enc=100 tok=10,11,12");
        let Reply::Cnt(c) = r else { panic!() };
        assert_eq!(
            (c.enc, c.steps().map(Option::unwrap).collect::<Vec<_>>()),
            (100, vec![10, 11, 12])
        );
        assert_eq!(c.phases, None);
        let Reply::Cnt(c) = round_trip(|s| write_cnt(s, 7, [], None)).1 else {
            panic!()
        };
        assert_eq!(c.steps().count(), 0);
        let phases = PhaseCounts {
            enc: [60, 30, 0, 0, 0, 10],
            tok: [20, 4, 3, 2, 1, 3],
            marks: [9, 12],
            mark_insns: 21,
        };
        let (line, r) = round_trip(|s| write_cnt(s, 100, [16, 17], Some(&phases)));
        assert_eq!(
            line,
            "CNT enc=100 tok=16,17 enc_phases=60,30,0,0,0,10 tok_phases=20,4,3,2,1,3 marks=9,12 mark_insns=21"
        );
        let Reply::Cnt(c) = r else { panic!() };
        assert_eq!((c.enc, c.phases), (100, Some(phases)));
        let q = [AttWeight::Q15(32767), AttWeight::Q15(-1), AttWeight::Q15(0)];
        let (line, r) = round_trip(|s| write_att(s, 2, q));
        assert_eq!(line, "ATT 2 32767 -1 0");
        let Reply::Att(a) = r else { panic!() };
        assert_eq!(
            (
                a.step,
                a.weights(false).map(Option::unwrap).collect::<Vec<_>>()
            ),
            (2, q.to_vec())
        );
        let f = [AttWeight::F32Bits(0x3f80_0000), AttWeight::F32Bits(0)];
        let (line, r) = round_trip(|s| write_att(s, 0, f));
        assert_eq!(line, "ATT 0 3f800000 00000000");
        let Reply::Att(a) = r else { panic!() };
        assert_eq!(
            a.weights(true).map(Option::unwrap).collect::<Vec<_>>(),
            f.to_vec()
        );
        for cmd in [
            Command::Attention(true),
            Command::Attention(false),
            Command::Beam(3),
        ] {
            assert_eq!(round_trip(|s| write_ok(s, cmd)).1, Reply::Ok(cmd));
        }
        let done = Done {
            lines: 4,
            errors: 1,
            handler_ticks: 1000,
            handler_insns: 312,
        };
        assert_eq!(round_trip(|s| write_done(s, &done)).1, Reply::Done(done));
        let stats = Stats {
            ram_static: 1,
            stack_peak: 2,
            stack_size: 3,
            flash_runtime: 4,
            model_start: 0x1004_0000,
            model_size: 196_608,
            model_bytes: 200,
        };
        let (line, r) = round_trip(|s| write_stats(s, &stats));
        assert!(line.contains("model_region=0x10040000+196608"), "{line}");
        assert_eq!(r, Reply::Stats(stats));
        let (line, r) = round_trip(|s| write_panic(s, "oops", "x.rs", 7));
        assert_eq!(
            (line.as_str(), r),
            ("PANIC oops at x.rs:7", Reply::Panic("oops at x.rs:7"))
        );
        let fault = Fault {
            pc: 0x100,
            lr: 0xffff_fff9,
            xpsr: 0x0100_0003,
        };
        let (line, r) = round_trip(|s| write_hardfault(s, &fault));
        assert_eq!(
            line,
            "HARDFAULT pc=0x00000100 lr=0xfffffff9 xpsr=0x01000003"
        );
        assert_eq!(r, Reply::HardFault(fault));
    }

    #[test]
    fn malformed_lines_are_errors() {
        for (line, kind) in [
            ("MODEL w8a16 params=x", "MODEL"),
            (
                "MODEL w8a16 params=1 bytes=2 arena=3/4 positions=5",
                "MODEL",
            ),
            ("OUT 1 x", "OUT"),
            ("CNT enc=1", "CNT"),
            ("CNT enc=1 tok=1,,x", "CNT"),
            ("CNT enc=1 tok=1 enc_phases=1,0,0,0,0,0", "CNT"),
            (
                "CNT enc=1 tok=1 enc_phases=1,0,0,0,0 tok_phases=1,0,0,0,0,0 marks=1,1",
                "CNT",
            ),
            (
                "CNT enc=1 tok=1 enc_phases=1,0,0,0,0,0 tok_phases=1,0,0,0,0,0 marks=1",
                "CNT",
            ),
            ("ATT x 1", "ATT"),
            ("OK beam", "OK"),
            ("DONE lines=1", "DONE"),
            ("STATS ram_static=1", "STATS"),
            ("HARDFAULT pc=1", "HARDFAULT"),
            ("hello", "an unknown"),
            ("READY", "an unknown"),
        ] {
            assert_eq!(parse_reply(line), Err(ParseError { line: kind }), "{line}");
        }
        // Unknown fields are skipped: more counters can join a line.
        let Ok(Reply::Cnt(c)) = parse_reply("CNT enc=5 att=3 tok=1,2") else {
            panic!()
        };
        assert_eq!(c.enc, 5);
    }
}
