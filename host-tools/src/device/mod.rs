//! `s2s qemu`: a model on a Cortex-M board under QEMU, checked token for token against
//! the host running the same core.
//!
//! The firmware (`firmware/`, built for the board) loads the model from its model region
//! and answers each input line on the UART (protocol: `firmware/README.md`):
//!
//! ```text
//! READY <board>
//! MODEL <precision> params=<n> bytes=<n> arena=<plan bytes>/<ARENA_BYTES> positions=<n>
//! OUT <ids>  /  TXT <text>  /  CNT enc=<insns> tok=<insns>,...  /  ATT <step> <w>...
//! ERR <reason>                 (an input the model rejects)
//! DONE ... / STATS ram_static=.. stack_peak=.. stack_size=.. flash_runtime=.. model_bytes=..
//! ```
//!
//! or `ERR model: <reason>` and exit status [`EXIT_MODEL_ERROR`] when it cannot serve the
//! model. [`run_on_board`] runs and parses a session, [`compare`] checks it against the
//! host ([`HostRunner`] at the device's number of positions, so capacity errors agree
//! too), [`qemu_check`] does both.

pub mod qemu;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::io::read_lines;
use crate::model::inspect::thousands;
use crate::model::{Decoded, HostRunner, Keep, LoadedModel};
use qemu::{Board, QemuError, QemuRun};

/// Exit status of the firmware when it cannot serve the model (after `ERR model: ...`).
pub const EXIT_MODEL_ERROR: i32 = 3;
/// The in-band command that turns the `ATT` lines on (a line starting with byte 0x01).
pub const ATTENTION_ON: &str = "\u{1}attention on";
/// The in-band command that turns the `ATT` lines off.
pub const ATTENTION_OFF: &str = "\u{1}attention off";
/// Default timeout of a QEMU run, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
/// Mismatches shown in full by [`QemuReport::render`].
pub const SHOWN_MISMATCHES: usize = 5;

/// Arguments of `s2s qemu`.
#[derive(clap::Args, Clone, Debug)]
pub struct QemuArgs {
    /// Model file, loaded into the board's model region.
    pub model: PathBuf,
    /// Board: mps2-an386, mps2-an505, lm3s6965evb or microbit.
    #[arg(long, default_value = "mps2-an386")]
    pub board: Board,
    /// Input file, one source per line (standard input by default).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Also compare the attention weights of every step, exactly.
    #[arg(long)]
    pub attention: bool,
    /// Seconds before QEMU is killed.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
    /// Use a debug build of the firmware (release by default; debug builds fit only the
    /// mps2 boards' runtime flash).
    #[arg(long)]
    pub debug: bool,
}

/// The `MODEL` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelInfo {
    /// `f32`, `w8f32` or `w8a16`.
    pub precision: String,
    /// Parameters.
    pub params: usize,
    /// Model file bytes.
    pub bytes: usize,
    /// Workspace bytes (`Plan::bytes`) for `positions`.
    pub arena: usize,
    /// The board's arena (`ARENA_BYTES`).
    pub arena_capacity: usize,
    /// Source positions the workspace holds.
    pub positions: usize,
}

/// The device's answer to one input line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceOutput {
    /// Output ids (end token excluded).
    pub ids: Vec<u16>,
    /// The `TXT` text as sent (`\`, newline and carriage return escaped).
    pub text: String,
    /// Instructions of the encoder pass (tokenizing and the initial state included).
    pub enc_insns: u64,
    /// Instructions of each decoder step, the end token's included.
    pub step_insns: Vec<u64>,
    /// Attention rows as stored (f32 bits or Q0.15 values, zero-extended), when asked.
    pub attention: Vec<Vec<i64>>,
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

/// A parsed firmware session.
#[derive(Clone, Debug)]
pub struct DeviceSession {
    /// The board.
    pub board: Board,
    /// The `MODEL` line.
    pub model: ModelInfo,
    /// One entry per input line: the output, or the `ERR` reason.
    pub outputs: Vec<Result<DeviceOutput, String>>,
    /// The `STATS` line.
    pub stats: DeviceStats,
    /// Wall-clock time of the QEMU run.
    pub elapsed: Duration,
}

/// One input on which the device and the host disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Input line number, from 1.
    pub line: usize,
    /// The input.
    pub input: String,
    /// What differs.
    pub what: String,
}

/// Minimum, maximum and mean of a count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Values.
    pub n: usize,
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

impl Spread {
    fn of(values: impl IntoIterator<Item = u64>) -> Spread {
        let (mut n, mut min, mut max, mut sum) = (0usize, u64::MAX, 0u64, 0u128);
        for v in values {
            n += 1;
            min = min.min(v);
            max = max.max(v);
            sum += v as u128;
        }
        if n == 0 {
            return Spread::default();
        }
        Spread {
            n,
            min,
            max,
            mean: sum as f64 / n as f64,
        }
    }
}

/// A device session compared with the host.
#[derive(Clone, Debug)]
pub struct QemuReport {
    /// The board.
    pub board: Board,
    /// The model file.
    pub model: PathBuf,
    /// The `MODEL` line.
    pub info: ModelInfo,
    /// The `STATS` line.
    pub stats: DeviceStats,
    /// Inputs sent.
    pub inputs: usize,
    /// Inputs that both sides rejected with the same reason.
    pub rejected: usize,
    /// Disagreements.
    pub mismatches: Vec<Mismatch>,
    /// Attention rows compared (0 unless asked and the model attends).
    pub attention_rows: usize,
    /// Instructions per encoder pass.
    pub enc: Spread,
    /// Source positions over all decoded inputs (end token and padding included).
    pub positions: usize,
    /// Instructions per decoder step (end-token steps included).
    pub step: Spread,
    /// Encoder MACs per source position.
    pub macs_per_position: usize,
    /// Decoder MACs over all steps.
    pub dec_macs: u128,
    /// Wall-clock time of the QEMU run.
    pub elapsed: Duration,
}

impl QemuReport {
    /// True when the device agreed with the host on every input.
    pub fn agrees(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// Mean instructions per encoder step (source position).
    pub fn insns_per_position(&self) -> f64 {
        self.enc.mean * self.enc.n as f64 / self.positions.max(1) as f64
    }

    /// Encoder instructions per MAC.
    pub fn enc_insns_per_mac(&self) -> f64 {
        let macs = self.positions as f64 * self.macs_per_position as f64;
        self.enc.mean * self.enc.n as f64 / macs.max(1.0)
    }

    /// Mean decoder MACs per step.
    pub fn macs_per_step(&self) -> f64 {
        self.dec_macs as f64 / self.step.n.max(1) as f64
    }

    /// Decoder instructions per MAC.
    pub fn dec_insns_per_mac(&self) -> f64 {
        self.step.mean * self.step.n as f64 / (self.dec_macs as f64).max(1.0)
    }

    /// The summary `s2s qemu` prints.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let i = &self.info;
        let st = &self.stats;
        let f = |x: f64| thousands(x.round() as usize);
        let _ = writeln!(
            s,
            "{} on {} ({}, {} parameters)",
            self.model.display(),
            self.board,
            i.precision,
            thousands(i.params)
        );
        let _ = writeln!(
            s,
            "inputs          {} ({} rejected by both with the same reason)",
            self.inputs, self.rejected
        );
        let attention = if self.attention_rows > 0 {
            format!(
                ", {} attention rows compared",
                thousands(self.attention_rows)
            )
        } else {
            String::new()
        };
        let _ = writeln!(s, "mismatches      {}{attention}", self.mismatches.len());
        for m in self.mismatches.iter().take(SHOWN_MISMATCHES) {
            let _ = writeln!(s, "  line {} {:?}: {}", m.line, m.input, m.what);
        }
        if self.mismatches.len() > SHOWN_MISMATCHES {
            let _ = writeln!(
                s,
                "  ... and {} more",
                self.mismatches.len() - SHOWN_MISMATCHES
            );
        }
        if self.enc.n > 0 {
            let _ = writeln!(
                s,
                "encoder pass    {} instructions mean (min {}, max {}); {} per source position",
                f(self.enc.mean),
                thousands(self.enc.min as usize),
                thousands(self.enc.max as usize),
                f(self.insns_per_position())
            );
            let _ = writeln!(
                s,
                "decoded token   {} instructions mean over {} steps (min {}, max {})",
                f(self.step.mean),
                thousands(self.step.n),
                thousands(self.step.min as usize),
                thousands(self.step.max as usize)
            );
            let _ = writeln!(
                s,
                "MACs            {} per source position, {} per step; {:.2} / {:.2} instructions per MAC (encoder / decoder)",
                thousands(self.macs_per_position),
                f(self.macs_per_step()),
                self.enc_insns_per_mac(),
                self.dec_insns_per_mac()
            );
        }
        let _ = writeln!(
            s,
            "flash           runtime {} bytes, model {} bytes",
            thousands(st.flash_runtime),
            thousands(st.model_bytes)
        );
        let _ = writeln!(
            s,
            "RAM             static {} bytes, stack peak {} of {} bytes, workspace {} of the {} byte arena ({} positions)",
            thousands(st.ram_static),
            thousands(st.stack_peak),
            thousands(st.stack_size),
            thousands(i.arena),
            thousands(i.arena_capacity),
            i.positions
        );
        let _ = writeln!(s, "QEMU            {:.1} s", self.elapsed.as_secs_f64());
        s
    }
}

/// `s2s qemu`: builds the firmware for the board, runs the model on the inputs under
/// QEMU, runs the same inputs on the host and prints the comparison. Fails on any
/// mismatch, a model the firmware rejects, a firmware fault, or a timeout.
pub fn qemu_command(a: &QemuArgs) -> Result<(), String> {
    let lines = read_lines(a.input.as_deref())?;
    let total = lines.len();
    // An empty line or `.` would end the session.
    let inputs: Vec<String> = lines
        .into_iter()
        .filter(|l| !l.is_empty() && l != ".")
        .collect();
    if inputs.len() < total {
        eprintln!(
            "skipped {} empty or `.` lines (they end a firmware session)",
            total - inputs.len()
        );
    }
    let report = qemu_check(
        &a.model,
        a.board,
        &inputs,
        a.attention,
        Duration::from_secs(a.timeout),
        !a.debug,
    )?;
    print!("{}", report.render());
    if report.agrees() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} inputs differ between {} and the host",
            report.mismatches.len(),
            report.inputs,
            a.board
        ))
    }
}

/// Runs `inputs` through `model` on `board` and on the host, and compares them.
pub fn qemu_check(
    model: &Path,
    board: Board,
    inputs: &[String],
    attention: bool,
    timeout: Duration,
    release: bool,
) -> Result<QemuReport, String> {
    let session = run_on_board(model, board, inputs, attention, timeout, release)?;
    let host = LoadedModel::load(model)?;
    compare(&host, &session, inputs, attention)
}

/// Builds the firmware for `board` (cargo rebuilds only what changed), runs `inputs`
/// through `model` under QEMU (with the `ATT` lines if `attention`) and parses the
/// session. Errors carry the firmware's own error line when it has one.
pub fn run_on_board(
    model: &Path,
    board: Board,
    inputs: &[String],
    attention: bool,
    timeout: Duration,
    release: bool,
) -> Result<DeviceSession, String> {
    if let Some(bad) = inputs
        .iter()
        .find(|l| l.is_empty() || *l == "." || l.starts_with('\u{1}') || l.contains('\n'))
    {
        return Err(format!(
            "input {bad:?} cannot be sent: empty and `.` lines end the session, 0x01 starts a command"
        ));
    }
    let elf = qemu::build_firmware(board, release).map_err(|e| e.to_string())?;
    let mut sent = Vec::with_capacity(inputs.len() + 1);
    if attention {
        sent.push(ATTENTION_ON.to_string());
    }
    sent.extend_from_slice(inputs);
    let run = qemu::run(board, &elf, Some(model), &sent, timeout).map_err(|e| match e {
        QemuError::Timeout { after, partial } => format!(
            "{board}: QEMU timed out after {} s and was killed; last UART lines: {:?}",
            after.as_secs(),
            tail(&partial.uart_lines)
        ),
        e => format!("{board}: {e}"),
    })?;
    parse_session(&run, board, inputs.len(), attention)
        .map_err(|e| format!("{board}, model {}: {e}", model.display()))
}

fn tail(lines: &[String]) -> &[String] {
    &lines[lines.len().saturating_sub(5)..]
}

/// Parses a firmware session from its UART lines: `inputs` input lines were sent
/// (after the attention command when `attention`).
pub fn parse_session(
    run: &QemuRun,
    board: Board,
    inputs: usize,
    attention: bool,
) -> Result<DeviceSession, String> {
    let lines = &run.uart_lines;
    let status = || match (run.exit_code, run.signal) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "no exit status".to_string(),
    };
    let fail = |at: usize, what: &str| -> String {
        let seen = lines
            .get(at)
            .map_or("end of output".to_string(), |l| format!("{l:?}"));
        format!(
            "{what}: got {seen} (UART line {}, {}); last UART lines: {:?}",
            at + 1,
            status(),
            tail(lines)
        )
    };
    let mut at = 0;
    let ready = format!("READY {}", board.name());
    if lines.first().map(String::as_str) != Some(ready.as_str()) {
        return Err(fail(0, &format!("expected `{ready}`")));
    }
    at += 1;
    let line = lines.get(at).map(String::as_str).unwrap_or("");
    if line.starts_with("ERR model: ") {
        return Err(format!(
            "the firmware cannot serve the model: {line} ({})",
            status()
        ));
    }
    let model = parse_model_line(line).ok_or_else(|| fail(at, "expected the MODEL line"))?;
    at += 1;
    if attention {
        if lines.get(at).map(String::as_str) != Some("OK attention on") {
            return Err(fail(at, "expected `OK attention on`"));
        }
        at += 1;
    }
    let float = model.precision != "w8a16";
    let mut outputs = Vec::with_capacity(inputs);
    for n in 0..inputs {
        let line = lines.get(at).map(String::as_str).unwrap_or("");
        if let Some(reason) = line.strip_prefix("ERR ") {
            outputs.push(Err(reason.to_string()));
            at += 1;
            continue;
        }
        let what = format!("input {}: expected OUT or ERR", n + 1);
        let ids = line
            .strip_prefix("OUT")
            .and_then(|r| {
                r.split_whitespace()
                    .map(|t| t.parse::<u16>().ok())
                    .collect::<Option<Vec<u16>>>()
            })
            .ok_or_else(|| fail(at, &what))?;
        at += 1;
        let text = lines
            .get(at)
            .and_then(|l| l.strip_prefix("TXT "))
            .ok_or_else(|| fail(at, &format!("input {}: expected TXT", n + 1)))?
            .to_string();
        at += 1;
        let (enc_insns, step_insns) = lines
            .get(at)
            .and_then(|l| parse_cnt(l))
            .ok_or_else(|| fail(at, &format!("input {}: expected CNT", n + 1)))?;
        at += 1;
        let mut rows = Vec::new();
        while let Some(row) = lines.get(at).and_then(|l| l.strip_prefix("ATT ")) {
            let row = parse_att(row, rows.len(), float)
                .ok_or_else(|| fail(at, &format!("input {}: bad ATT line", n + 1)))?;
            rows.push(row);
            at += 1;
        }
        outputs.push(Ok(DeviceOutput {
            ids,
            text,
            enc_insns,
            step_insns,
            attention: rows,
        }));
    }
    if !lines.get(at).is_some_and(|l| l.starts_with("DONE ")) {
        return Err(fail(at, "expected DONE"));
    }
    at += 1;
    let stats = lines
        .get(at)
        .and_then(|l| parse_stats(l))
        .ok_or_else(|| fail(at, "expected STATS"))?;
    if !run.success() {
        return Err(fail(at + 1, "the firmware did not exit with status 0"));
    }
    Ok(DeviceSession {
        board,
        model,
        outputs,
        stats,
        elapsed: run.elapsed,
    })
}

/// `key=value` fields of a line after its first word.
fn field<'l>(line: &'l str, key: &str) -> Option<&'l str> {
    line.split_whitespace()
        .skip(1)
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

fn num(line: &str, key: &str) -> Option<usize> {
    field(line, key)?.parse().ok()
}

fn parse_model_line(line: &str) -> Option<ModelInfo> {
    let mut words = line.split_whitespace();
    if words.next()? != "MODEL" {
        return None;
    }
    let precision = words.next()?.to_string();
    let (arena, capacity) = field(line, "arena")?.split_once('/')?;
    Some(ModelInfo {
        precision,
        params: num(line, "params")?,
        bytes: num(line, "bytes")?,
        arena: arena.parse().ok()?,
        arena_capacity: capacity.parse().ok()?,
        positions: num(line, "positions")?,
    })
}

fn parse_cnt(line: &str) -> Option<(u64, Vec<u64>)> {
    if !line.starts_with("CNT ") {
        return None;
    }
    let enc = field(line, "enc")?.parse().ok()?;
    let tok = field(line, "tok")?;
    let steps = if tok.is_empty() {
        Vec::new()
    } else {
        tok.split(',')
            .map(|t| t.parse().ok())
            .collect::<Option<Vec<u64>>>()?
    };
    Some((enc, steps))
}

/// `<step> <w>...`: f32 bit patterns in hex, or Q0.15 integers; as stored, zero-extended.
fn parse_att(row: &str, expect_step: usize, float: bool) -> Option<Vec<i64>> {
    let mut words = row.split_whitespace();
    if words.next()?.parse::<usize>().ok()? != expect_step {
        return None;
    }
    words
        .map(|w| {
            if float {
                u32::from_str_radix(w, 16).ok().map(i64::from)
            } else {
                w.parse::<i16>().ok().map(|v| i64::from(v as u16))
            }
        })
        .collect()
}

fn parse_stats(line: &str) -> Option<DeviceStats> {
    if !line.starts_with("STATS ") {
        return None;
    }
    Some(DeviceStats {
        ram_static: num(line, "ram_static")?,
        stack_peak: num(line, "stack_peak")?,
        stack_size: num(line, "stack_size")?,
        flash_runtime: num(line, "flash_runtime")?,
        model_bytes: num(line, "model_bytes")?,
    })
}

/// Text as the firmware sends it in `TXT`: `\`, newline and carriage return escaped.
pub fn escape_text(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            c => s.push(c),
        }
    }
    s
}

/// The host's side: decodings at the device's number of positions, and the MACs.
struct HostSide {
    outputs: Vec<Result<Decoded, String>>,
    macs_per_position: usize,
    /// Decoder MACs per step of each input (depends on its source positions).
    macs_per_step: Vec<usize>,
}

fn host_side(
    m: &LoadedModel,
    inputs: &[String],
    positions: usize,
    keep: Keep,
) -> Result<HostSide, String> {
    m.with_net(|any| {
        Ok(crate::dispatch!(any, |net: P| {
            let mut r = HostRunner::<P>::new(&net, positions);
            let outputs: Vec<Result<Decoded, String>> = inputs
                .iter()
                .map(|l| r.decode(l, keep).map_err(|e| e.to_string()))
                .collect();
            let macs_per_step = outputs
                .iter()
                .map(|o| o.as_ref().map_or(0, |d| net.macs_per_step(d.source.len())))
                .collect();
            HostSide {
                outputs,
                macs_per_position: net.macs_per_source_position(),
                macs_per_step,
            }
        }))
    })
}

/// Compares a device session with the host running the same `inputs` (ids, text, the
/// rejection reasons, and with `attention` every attention weight, exactly).
pub fn compare(
    host: &LoadedModel,
    session: &DeviceSession,
    inputs: &[String],
    attention: bool,
) -> Result<QemuReport, String> {
    let file = host.file();
    let precision = file.precision().name();
    if session.model.precision != precision || session.model.bytes != file.bytes().len() {
        return Err(format!(
            "the device serves a {} model of {} bytes, {} is {precision} of {} bytes",
            session.model.precision,
            session.model.bytes,
            host.path.display(),
            file.bytes().len()
        ));
    }
    if session.outputs.len() != inputs.len() {
        return Err(format!(
            "{} answers for {} inputs",
            session.outputs.len(),
            inputs.len()
        ));
    }
    let attends = attention && file.desc().has_attention();
    let keep = Keep {
        weights: attends,
        ..Keep::default()
    };
    let h = host_side(host, inputs, session.model.positions, keep)?;
    let mut mismatches = Vec::new();
    let (mut rejected, mut attention_rows, mut positions, mut dec_macs) = (0, 0, 0, 0u128);
    let mut enc = Vec::new();
    let mut steps = Vec::new();
    for (i, ((input, dev), hst)) in inputs
        .iter()
        .zip(&session.outputs)
        .zip(&h.outputs)
        .enumerate()
    {
        let mut differ = |what: String| {
            mismatches.push(Mismatch {
                line: i + 1,
                input: input.clone(),
                what,
            })
        };
        match (dev, hst) {
            (Ok(d), Ok(hd)) => {
                enc.push(d.enc_insns);
                positions += hd.source.len();
                steps.extend_from_slice(&d.step_insns);
                dec_macs += h.macs_per_step[i] as u128 * d.step_insns.len() as u128;
                if d.ids != hd.ids {
                    differ(format!(
                        "ids {:?} on the device, {:?} on the host",
                        d.ids, hd.ids
                    ));
                    continue;
                }
                let text = escape_text(&hd.text);
                if d.text != text {
                    differ(format!(
                        "text {:?} on the device, {text:?} on the host",
                        d.text
                    ));
                    continue;
                }
                let want_steps = hd.ids.len() + 1;
                if d.step_insns.len() != want_steps.min(file.desc().max_steps) {
                    differ(format!(
                        "{} step counts for {} output ids",
                        d.step_insns.len(),
                        hd.ids.len()
                    ));
                    continue;
                }
                if attends {
                    if let Some(what) = compare_rows(&d.attention, &hd.raw_weights) {
                        differ(what);
                        continue;
                    }
                    attention_rows += d.attention.len();
                }
            }
            (Err(de), Err(he)) if de == he || de == "line too long" => rejected += 1,
            (Err(de), Err(he)) => differ(format!("device: ERR {de}; host: {he}")),
            (Err(de), Ok(hd)) => differ(format!("device: ERR {de}; host: ids {:?}", hd.ids)),
            (Ok(d), Err(he)) => differ(format!("device: ids {:?}; host: {he}", d.ids)),
        }
    }
    Ok(QemuReport {
        board: session.board,
        model: host.path.clone(),
        info: session.model.clone(),
        stats: session.stats,
        inputs: inputs.len(),
        rejected,
        mismatches,
        attention_rows,
        enc: Spread::of(enc),
        positions,
        step: Spread::of(steps),
        macs_per_position: h.macs_per_position,
        dec_macs,
        elapsed: session.elapsed,
    })
}

/// The first difference between the device's and the host's attention rows.
fn compare_rows(dev: &[Vec<i64>], host: &[Vec<i64>]) -> Option<String> {
    if dev.len() != host.len() {
        return Some(format!(
            "{} attention rows on the device, {} on the host",
            dev.len(),
            host.len()
        ));
    }
    for (step, (d, h)) in dev.iter().zip(host).enumerate() {
        if d.len() != h.len() {
            return Some(format!(
                "attention step {step}: {} weights on the device, {} on the host",
                d.len(),
                h.len()
            ));
        }
        if let Some(p) = d.iter().zip(h).position(|(a, b)| a != b) {
            return Some(format!(
                "attention step {step} position {p}: {:#x} on the device, {:#x} on the host",
                d[p], h[p]
            ));
        }
    }
    None
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

    const MODEL: &str = "MODEL w8a16 params=10 bytes=200 arena=64/1024 positions=25";
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
        let s = parse_session(&run, Board::Microbit, 3, true).unwrap();
        assert_eq!(s.model.arena, 64);
        assert_eq!(s.model.positions, 25);
        assert_eq!(s.stats.model_bytes, 200);
        let first = s.outputs[0].as_ref().unwrap();
        assert_eq!(first.ids, [3, 4]);
        assert_eq!(first.text, "a\\nb");
        assert_eq!(first.step_insns, [10, 11, 12]);
        assert_eq!(first.attention[1], [0xffff, 5]);
        assert!(s.outputs[1].as_ref().unwrap_err().starts_with("symbol"));
        let last = s.outputs[2].as_ref().unwrap();
        assert!(last.ids.is_empty() && last.text.is_empty());
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
        let e = parse_session(&run, Board::Microbit, 1, false).unwrap_err();
        assert!(
            e.contains("ERR model: corrupted: CRC") && e.contains("exit status 3"),
            "{e}"
        );
        let run = run_of(&["READY microbit", MODEL, "PANIC oops at x.rs:1"], 101);
        let e = parse_session(&run, Board::Microbit, 1, false).unwrap_err();
        assert!(
            e.contains("PANIC oops") && e.contains("exit status 101"),
            "{e}"
        );
        let run = run_of(&["READY microbit", MODEL, "DONE lines=0", STATS], 1);
        assert!(parse_session(&run, Board::Microbit, 0, false).is_err());
    }

    #[test]
    fn float_attention_rows_are_bit_patterns() {
        assert_eq!(
            parse_att("0 3f800000 00000000", 0, true),
            Some(vec![0x3f80_0000, 0])
        );
        assert_eq!(parse_att("1 3f800000", 0, true), None);
        assert_eq!(escape_text("a\\b\nc\r"), "a\\\\b\\nc\\r");
    }
}
