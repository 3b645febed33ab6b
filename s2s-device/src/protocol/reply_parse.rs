//! [`parse_reply`]: the parser of every line the firmware writes (`reply.rs` has their
//! types and writers).

use core::fmt::{self, Display};

use super::fields::{field, hex, num};
use super::reply::{
    Att, Cnt, Done, Fault, ModelInfo, PhaseCounts, Reply, Stats, Streamed, MODEL_ERROR,
};
use super::request::Command;

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

/// Exactly `N` comma-separated numbers.
fn list<const N: usize>(s: &str) -> Option<[u64; N]> {
    let mut v = [0; N];
    let mut words = s.split(',');
    for slot in v.iter_mut() {
        *slot = words.next()?.parse().ok()?;
    }
    words.next().is_none().then_some(v)
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
        "STREAMED" => {
            let s = || {
                Some(Streamed {
                    positions: num(rest, "positions")?,
                    tokens: num(rest, "tokens")?,
                    insns: num(rest, "insns")?,
                    ended: match field(rest, "ended")? {
                        "0" => false,
                        "1" => true,
                        _ => return None,
                    },
                })
            };
            Reply::Streamed(s().ok_or(bad("STREAMED"))?)
        }
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
    use super::super::reply::*;
    use super::*;
    use core::fmt::Write;

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
        // The code form, from a firmware without error texts.
        let (line, r) = round_trip(|s| write_err_code(s, 64));
        assert_eq!((line.as_str(), r), ("ERR E64", Reply::Err("E64")));
        let (line, r) = round_trip(|s| write_model_error_code(s, 111));
        assert_eq!(
            (line.as_str(), r),
            ("ERR model: E111", Reply::ModelError("E111"))
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
            Command::Prefix(""),
            Command::Prefix("country=<EG>"),
            Command::Stream {
                steps: 4000,
                repeats: 3,
            },
        ] {
            assert_eq!(round_trip(|s| write_ok(s, cmd)).1, Reply::Ok(cmd));
        }
        let streamed = Streamed {
            positions: 10_001,
            tokens: 4_410,
            insns: 123_456_789,
            ended: true,
        };
        let (line, r) = round_trip(|s| write_streamed(s, &streamed));
        assert_eq!(
            line,
            "STREAMED positions=10001 tokens=4410 insns=123456789 ended=1"
        );
        assert_eq!(r, Reply::Streamed(streamed));
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
    fn coded_reasons_round_trip_through_both_err_lines() {
        use crate::protocol::code::{parse_code, DeviceCode, ErrorCode, Reason};
        let core = seq2seq::Error::UnknownSymbol {
            position: 3,
            ch: 'x',
        };
        let codes = DeviceCode::ALL.iter().map(|d| d.code());
        for code in codes.chain([core.code(), 0, 9, 65_535]) {
            let (line, r) = round_trip(|s| write_err_code(s, code));
            assert_eq!(line, format!("ERR E{code}"));
            let Reply::Err(reason) = r else {
                panic!("{line}")
            };
            assert_eq!(parse_code(reason), Some(code), "{line}");
            // The same line through `write_err` and the code's writer.
            let (again, _) = round_trip(|s| write_err(s, &ErrorCode(code)));
            assert_eq!(again, line);
            let (line, r) = round_trip(|s| write_model_error_code(s, code));
            assert_eq!(line, format!("ERR model: E{code}"));
            let Reply::ModelError(reason) = r else {
                panic!("{line}")
            };
            assert_eq!(Reason(reason).code(), Some(code), "{line}");
        }
        let Ok(Reply::Err(reason)) = parse_reply("ERR E66") else {
            panic!()
        };
        assert_eq!(
            Reason(reason).to_string(),
            "E66 (symbol not in the source vocabulary)"
        );
        // Reasons in words are read as before, and are no codes.
        for words in ["line too long", "E64 and more", "Empty input"] {
            let line = format!("ERR {words}");
            assert_eq!(parse_reply(&line), Ok(Reply::Err(words)));
            assert_eq!(Reason(words).code(), None);
            assert_eq!(Reason(words).to_string(), words);
        }
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
