//! A firmware session read back from its UART lines with the protocol's parser
//! (`s2s_device::protocol`).

use std::time::Duration;

use s2s_device::exit::Exit;
use s2s_device::protocol::code::Reason;
use s2s_device::protocol::{parse_reply, unescape, AttWeight, PhaseCounts, Reply};
use s2s_device::Board;

use super::qemu::QemuRun;
use crate::error::{Error, Result};

/// The `MODEL` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelInfo {
    /// `f32`, `w8f32` or `w8a16`.
    pub precision: String,
    /// Parameters.
    pub params: usize,
    /// Model file bytes.
    pub bytes: usize,
    /// The CRC-32 stored at the end of the model file.
    pub crc: u32,
    /// Workspace bytes (`Plan::bytes`) for `positions`.
    pub arena: usize,
    /// The board's arena.
    pub arena_capacity: usize,
    /// Source positions the workspace holds.
    pub positions: usize,
}

/// The device's answer to one input line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceOutput {
    /// Output ids (end token excluded).
    pub ids: Vec<u16>,
    /// The `TXT` text, unescaped.
    pub text: String,
    /// Instructions of the encoder pass (tokenizing and the initial state included).
    pub enc_insns: u64,
    /// Instructions of each decoder step, the end token's included.
    pub step_insns: Vec<u64>,
    /// Attention rows as stored (f32 bits or Q0.15 values, zero-extended), when asked.
    pub attention: Vec<Vec<i64>>,
    /// The same instructions by phase, from a `profile` firmware build.
    pub phases: Option<PhaseCounts>,
}

/// The `STATS` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// `.data` + `.bss` (the arena included).
    pub ram_static: usize,
    /// Deepest stack use.
    pub stack_peak: usize,
    /// Stack area.
    pub stack_size: usize,
    /// Runtime flash: vector table, code, read-only data.
    pub flash_runtime: usize,
    /// Model file bytes.
    pub model_bytes: usize,
}

/// The firmware's refusal of one input line: the reason its `ERR` reply gives. Shown as
/// written, or, from a firmware that writes codes (`error-codes`), as `E64 (input too
/// long)` ([`Reason`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", Reason(reason))]
pub struct Refused {
    /// The reason, as the firmware wrote it (words, or `E<code>`).
    pub reason: String,
}

impl Refused {
    /// The code of a reason written as one (`E<code>`).
    pub fn code(&self) -> Option<u16> {
        Reason(&self.reason).code()
    }
}

/// A parsed firmware session.
#[derive(Clone, Debug)]
pub struct DeviceSession {
    /// The board.
    pub board: &'static Board,
    /// The `MODEL` line.
    pub model: ModelInfo,
    /// One entry per input line: the output, or the `ERR` reason.
    pub outputs: Vec<Result<DeviceOutput, Refused>>,
    /// The `STATS` line.
    pub stats: DeviceStats,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// What carried the session: `QEMU`, or `serial <port>`.
    pub via: String,
}

/// How a session's lines ended, whatever carried them.
#[derive(Clone, Debug)]
pub struct Ending {
    /// The session ended as it should: QEMU exited with status 0, or a serial port's
    /// `STATS` line was acknowledged.
    pub ok: bool,
    /// How it ended, in words, for messages (`exit status 3`).
    pub status: String,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// What carried the session: `QEMU`, or `serial <port>`.
    pub via: String,
}

impl Ending {
    /// How a QEMU run ended.
    pub fn of_qemu(run: &QemuRun) -> Ending {
        Ending {
            ok: run.exit() == Some(Exit::Success),
            status: run.status(),
            elapsed: run.elapsed,
            via: "QEMU".into(),
        }
    }
}

/// Reads the UART lines of a run in order.
pub(super) struct Lines<'r> {
    pub(super) lines: &'r [String],
    pub(super) ending: &'r Ending,
    /// What errors name: the board, or the serial port.
    pub(super) name: &'r str,
    pub(super) at: usize,
}

impl<'r> Lines<'r> {
    pub(super) fn peek(&self) -> Option<Reply<'r>> {
        self.lines.get(self.at).and_then(|l| parse_reply(l).ok())
    }

    /// The error for an unexpected line at the current position.
    pub(super) fn fail(&self, what: &str) -> Error {
        let seen = self
            .lines
            .get(self.at)
            .map_or("end of output".to_string(), |l| format!("{l:?}"));
        let tail = &self.lines[self.lines.len().saturating_sub(5)..];
        Error::device(
            self.name,
            format!(
                "{what}: got {seen} (UART line {}, {}); last UART lines: {tail:?}",
                self.at + 1,
                self.ending.status,
            ),
        )
    }

    /// The next line, which `pick` must accept.
    pub(super) fn next<T>(
        &mut self,
        what: &str,
        pick: impl FnOnce(Reply<'r>) -> Option<T>,
    ) -> Result<T> {
        let v = self.peek().and_then(pick).ok_or_else(|| self.fail(what))?;
        self.at += 1;
        Ok(v)
    }
}

/// Parses a firmware session from the UART lines of a QEMU run: `inputs` input lines
/// were sent (after the attention command when `attention`, and the beam command when
/// `beam`).
pub fn parse_session(
    run: &QemuRun,
    board: &'static Board,
    inputs: usize,
    attention: bool,
    beam: Option<u16>,
) -> Result<DeviceSession> {
    let ending = Ending::of_qemu(run);
    parse_lines(
        &run.uart_lines,
        &ending,
        board,
        board.name,
        inputs,
        attention,
        beam,
    )
}

/// [`parse_session`] over any link: the UART `lines` of a session that ended as
/// `ending`; errors name `name` (the board, or the serial port).
pub fn parse_lines(
    lines: &[String],
    ending: &Ending,
    board: &'static Board,
    name: &str,
    inputs: usize,
    attention: bool,
    beam: Option<u16>,
) -> Result<DeviceSession> {
    let mut lines = Lines {
        lines,
        ending,
        name,
        at: 0,
    };
    let model = read_model(&mut lines, board)?;
    if attention {
        lines.next("expected `OK attention on`", |r| match r {
            Reply::Ok(s2s_device::protocol::Command::Attention(true)) => Some(()),
            _ => None,
        })?;
    }
    if let Some(k) = beam {
        if let Some(Reply::Err(reason)) = lines.peek() {
            return Err(Error::device(
                name,
                format!("the firmware refuses `beam {k}`: ERR {}", Reason(reason)),
            ));
        }
        lines.next(&format!("expected `OK beam {k}`"), |r| {
            (r == Reply::Ok(s2s_device::protocol::Command::Beam(k))).then_some(())
        })?;
    }
    // The answer to a prefix command (the host checked its fields against the same
    // model with the same code, so the board takes them too).
    if let Some(Reply::Ok(s2s_device::protocol::Command::Prefix(_))) = lines.peek() {
        lines.at += 1;
    }
    let float = model.precision != "w8a16";
    let mut outputs = Vec::with_capacity(inputs);
    for n in 1..=inputs {
        if let Some(Reply::Err(reason)) = lines.peek() {
            outputs.push(Err(Refused {
                reason: reason.to_string(),
            }));
            lines.at += 1;
            continue;
        }
        outputs.push(Ok(read_output(&mut lines, n, float)?));
    }
    let stats = read_end(&mut lines)?;
    Ok(DeviceSession {
        board,
        model,
        outputs,
        stats,
        elapsed: ending.elapsed,
        via: ending.via.clone(),
    })
}

/// The `READY` and `MODEL` lines that open a session on `board` (an error with the
/// firmware's own line if it cannot serve the model).
pub(super) fn read_model(lines: &mut Lines<'_>, board: &'static Board) -> Result<ModelInfo> {
    let ready = format!("expected `READY {}`", board.name);
    lines.next(&ready, |r| (r == Reply::Ready(board.name)).then_some(()))?;
    if let Some(Reply::ModelError(reason)) = lines.peek() {
        return Err(Error::device(
            lines.name,
            format!(
                "the firmware cannot serve the model: ERR model: {} ({})",
                Reason(reason),
                lines.ending.status
            ),
        ));
    }
    let m = lines.next("expected the MODEL line", |r| match r {
        Reply::Model(m) => Some(m),
        _ => None,
    })?;
    Ok(ModelInfo {
        precision: m.precision.to_string(),
        params: m.params as usize,
        bytes: m.bytes as usize,
        crc: m.crc,
        arena: m.arena as usize,
        arena_capacity: m.arena_capacity as usize,
        positions: m.positions as usize,
    })
}

/// The `DONE` and `STATS` lines that close a session, which must have ended as it
/// should.
pub(super) fn read_end(lines: &mut Lines<'_>) -> Result<DeviceStats> {
    lines.next("expected DONE", |r| {
        matches!(r, Reply::Done(_)).then_some(())
    })?;
    let s = lines.next("expected STATS", |r| match r {
        Reply::Stats(s) => Some(s),
        _ => None,
    })?;
    if !lines.ending.ok {
        return Err(lines.fail("the session did not end as it should"));
    }
    Ok(DeviceStats {
        ram_static: s.ram_static as usize,
        stack_peak: s.stack_peak as usize,
        stack_size: s.stack_size as usize,
        flash_runtime: s.flash_runtime as usize,
        model_bytes: s.model_bytes as usize,
    })
}

/// The OUT, TXT, CNT (and ATT) lines of input `n`.
fn read_output(lines: &mut Lines<'_>, n: usize, float: bool) -> Result<DeviceOutput> {
    let ids = lines.next(&format!("input {n}: expected OUT or ERR"), |r| match r {
        Reply::Out(words) => Reply::ids(words).collect::<Option<Vec<u16>>>(),
        _ => None,
    })?;
    let text = lines.next(&format!("input {n}: expected TXT"), |r| match r {
        Reply::Txt(t) => unescape(t).collect::<Option<String>>(),
        _ => None,
    })?;
    let (enc_insns, step_insns, phases) =
        lines.next(&format!("input {n}: expected CNT"), |r| match r {
            Reply::Cnt(c) => Some((c.enc, c.steps().collect::<Option<Vec<u64>>>()?, c.phases)),
            _ => None,
        })?;
    let mut attention = Vec::new();
    while let Some(Reply::Att(a)) = lines.peek() {
        let row = (a.step == attention.len() as u64)
            .then(|| {
                a.weights(float)
                    .map(|w| w.map(raw))
                    .collect::<Option<Vec<i64>>>()
            })
            .flatten()
            .ok_or_else(|| lines.fail(&format!("input {n}: bad ATT line")))?;
        attention.push(row);
        lines.at += 1;
    }
    Ok(DeviceOutput {
        ids,
        text,
        enc_insns,
        step_insns,
        attention,
        phases,
    })
}

/// A weight as stored, zero-extended: the f32 bits, or the Q0.15 value's 16 bits.
fn raw(w: AttWeight) -> i64 {
    match w {
        AttWeight::F32Bits(b) => i64::from(b),
        AttWeight::Q15(q) => i64::from(q as u16),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(lines: &[&str], exit: i32) -> QemuRun {
        QemuRun {
            uart_lines: lines.iter().map(|s| s.to_string()).collect(),
            exit_code: Some(exit),
            ..QemuRun::default()
        }
    }

    fn microbit() -> &'static Board {
        s2s_device::board::find("microbit").unwrap()
    }

    const MODEL: &str = "MODEL w8a16 params=10 bytes=200 crc=0x0000abcd arena=64/1024 positions=25";
    const STATS: &str = "STATS ram_static=1 stack_peak=2 stack_size=3 flash_runtime=4 model_region=0x00010000+196608 model_bytes=200";

    #[test]
    fn a_session_is_parsed() {
        let run = run_of(
            &[
                "READY microbit",
                MODEL,
                "OK attention on",
                "OUT 3 4",
                "TXT a\\nb",
                "CNT enc=100 tok=10,11,12",
                "ATT 0 32767 0",
                "ATT 1 -1 5",
                "ATT 2 0 32767",
                "ERR symbol '%' at position 0 is not in the source vocabulary",
                "OUT",
                "TXT ",
                "CNT enc=90 tok=9",
                "DONE lines=4 errors=1 handler_ticks=1 handler_insns=1",
                STATS,
            ],
            0,
        );
        let s = parse_session(&run, microbit(), 3, true, None).unwrap();
        assert_eq!(s.model.arena, 64);
        assert_eq!(s.model.crc, 0xabcd);
        assert_eq!(s.model.positions, 25);
        assert_eq!(s.stats.model_bytes, 200);
        let first = s.outputs[0].as_ref().unwrap();
        assert_eq!(first.ids, [3, 4]);
        assert_eq!(first.text, "a\nb");
        assert_eq!(first.step_insns, [10, 11, 12]);
        assert_eq!(first.attention[1], [0xffff, 5]);
        assert_eq!(first.phases, None);
        assert!(s.outputs[1]
            .as_ref()
            .unwrap_err()
            .reason
            .starts_with("symbol"));
        let last = s.outputs[2].as_ref().unwrap();
        assert!(last.ids.is_empty() && last.text.is_empty());
    }

    #[test]
    fn coded_refusals_are_read_and_shown_with_their_texts() {
        let run = run_of(
            &[
                "READY microbit",
                MODEL,
                "ERR E64",
                "ERR E100",
                "ERR empty input",
                "DONE lines=3 errors=3 handler_ticks=1 handler_insns=1",
                STATS,
            ],
            0,
        );
        let s = parse_session(&run, microbit(), 3, false, None).unwrap();
        let refused: Vec<_> = s.outputs.iter().map(|o| o.as_ref().unwrap_err()).collect();
        assert_eq!(refused[0].reason, "E64");
        assert_eq!(refused[0].code(), Some(64));
        assert_eq!(refused[0].to_string(), "E64 (input too long)");
        assert_eq!(refused[1].to_string(), "E100 (line too long)");
        assert_eq!(
            (refused[2].code(), refused[2].to_string()),
            (None, "empty input".into())
        );
    }

    #[test]
    fn model_errors_and_faults_are_reported_with_the_firmware_line() {
        let run = run_of(
            &[
                "READY microbit",
                "ERR model: corrupted: CRC 0x1 does not match the stored 0x2",
            ],
            3,
        );
        let e = parse_session(&run, microbit(), 1, false, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ERR model: corrupted: CRC") && e.contains("exit status 3"),
            "{e}"
        );
        // From a firmware that writes codes (`error-codes`): the code and its text.
        let run = run_of(&["READY microbit", "ERR model: E93"], 3);
        let e = parse_session(&run, microbit(), 1, false, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ERR model: E93 (model part not compiled in this build) (exit status 3"),
            "{e}"
        );
        let run = run_of(&["READY microbit", MODEL, "PANIC oops at x.rs:1"], 101);
        let e = parse_session(&run, microbit(), 1, false, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("PANIC oops") && e.contains("exit status 101"),
            "{e}"
        );
        let run = run_of(&["READY microbit", MODEL, "DONE lines=0", STATS], 1);
        assert!(parse_session(&run, microbit(), 0, false, None).is_err());
        let run = run_of(&["READY microbit", MODEL, "ATT 1 3f800000"], 0);
        assert!(parse_session(&run, microbit(), 1, false, None).is_err());
    }
}
