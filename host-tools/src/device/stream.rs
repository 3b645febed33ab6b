//! Streamed sources on a board under QEMU against the host (`s2s qemu --stream N`):
//! each input is sent after `\x01stream N` in one piece, the board reads it a byte at a
//! time into its window of encoder states and answers with its ids as they are decided
//! (`OUT` lines) and a `STREAMED` line; the host streams the same source through the
//! same core ([`seq2seq::Runner::stream_chars`]) and every id is compared.

use std::path::{Path, PathBuf};

use s2s_device::protocol::{write_request, Command, Reply, Request};
use s2s_device::Board;

use super::report::thousands;
use super::session::{read_end, read_model, DeviceStats, Ending, Lines, ModelInfo};
use super::{build_elf, check_run, link::Pace, qemu, QemuOptions};
use crate::error::{Error, Result};
use crate::model::{forget_layers, LoadedModel};

/// One streamed input on both sides.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedLine {
    /// Characters sent.
    pub chars: usize,
    /// The board's `STREAMED` line: positions read, tokens, instructions, and whether
    /// the decoder ended (else the step cap); or its `ERR` reason.
    pub device: std::result::Result<s2s_device::protocol::Streamed, String>,
    /// The host's output ids (those before its error, if any) and its error.
    pub host: (Vec<u16>, Option<seq2seq::Error>),
    /// The board's output ids (those before its error, if any).
    pub ids: Vec<u16>,
    /// The first index at which the ids differ, if they do (or the error sides differ).
    pub mismatch: Option<usize>,
}

/// A streamed run's report.
#[derive(Clone, Debug)]
pub struct StreamReport {
    /// The board.
    pub board: &'static Board,
    /// The model file.
    pub model: PathBuf,
    /// The `MODEL` line: the workspace (`arena`) is the window of `positions` encoder
    /// states, whatever a source's length.
    pub info: ModelInfo,
    /// The `STATS` line.
    pub stats: DeviceStats,
    /// Every input.
    pub lines: Vec<StreamedLine>,
}

impl StreamReport {
    /// Inputs on which the board and the host differ.
    pub fn mismatches(&self) -> usize {
        self.lines.iter().filter(|l| l.mismatch.is_some()).count()
    }

    /// The report's text: the window, then a line per input (its sizes, whether it
    /// matches, its instructions per output token), then the stack.
    pub fn render(&self) -> String {
        let n = |x: u64| thousands(x as usize);
        let mut s = format!(
            "{} (QEMU), {}: {} streamed inputs through a window of {} source positions ({} of {} bytes of arena, whatever the source's length)\n",
            self.board.name,
            self.model.display(),
            self.lines.len(),
            self.info.positions,
            n(self.info.arena as u64),
            n(self.info.arena_capacity as u64),
        );
        for (i, l) in self.lines.iter().enumerate() {
            let verdict = match l.mismatch {
                None => "matches the host".to_string(),
                Some(at) => format!("DIFFERS from the host at output token {}", at + 1),
            };
            s += &match &l.device {
                Ok(d) => format!(
                    "input {}: {} characters, {} positions, {} tokens{}, {verdict}; {} instructions, {} per token\n",
                    i + 1,
                    n(l.chars as u64),
                    n(d.positions),
                    n(d.tokens),
                    if d.ended { "" } else { " (step cap)" },
                    n(d.insns),
                    n(d.insns / d.tokens.max(1)),
                ),
                Err(reason) => format!(
                    "input {}: {} characters, refused after {} tokens: {reason}; {verdict}\n",
                    i + 1,
                    n(l.chars as u64),
                    l.ids.len()
                ),
            };
        }
        s += &format!(
            "stack peak {} of {} bytes\n",
            n(self.stats.stack_peak as u64),
            n(self.stats.stack_size as u64)
        );
        s
    }
}

/// Streams every input through `model` on the board (`o`: its build and timeout) with
/// at most `steps` decoder steps each and at most `repeats` on one position (0: no
/// limit, [`seq2seq::StreamLimits`]), and on the host, and compares the ids.
pub fn stream_check(
    model: &Path,
    inputs: &[String],
    (steps, repeats): (u16, u16),
    o: &QemuOptions,
) -> Result<StreamReport> {
    check_run(inputs, false, None)?;
    if o.attention || o.beam.is_some() {
        return Err(Error::usage(
            "--stream decodes greedily and sends no attention rows: it does not go with --attention or --beam",
        ));
    }
    let host = LoadedModel::load(model)?;
    host.file().desc().streams().map_err(Error::model(model))?;
    let prefix = super::host_prefix(&host, &o.prefix)?;
    let elf = build_elf(LoadedModel::load(model), o)?;
    let mut sent = Vec::with_capacity(2 * inputs.len() + 1);
    if !o.prefix.is_empty() {
        sent.push(command(Command::Prefix(&o.prefix.join(" "))));
    }
    for input in inputs {
        sent.push(command(Command::Stream { steps, repeats }));
        sent.push(input.clone());
    }
    let loaded = (!o.one_model).then_some(model);
    let run = qemu::run_paced(o.board, &elf, loaded, &sent, Pace::Bulk, o.timeout)?;
    let ending = Ending::of_qemu(&run);
    let mut lines = Lines {
        lines: &run.uart_lines,
        ending: &ending,
        name: o.board.name,
        at: 0,
    };
    let info = read_model(&mut lines, o.board)?;
    if !o.prefix.is_empty() {
        lines.next("expected `OK prefix`", |r| {
            matches!(r, Reply::Ok(Command::Prefix(_))).then_some(())
        })?;
    }
    let mut device = Vec::with_capacity(inputs.len());
    for n in 1..=inputs.len() {
        let what = format!("input {n}: expected `OK stream {steps}`");
        lines.next(&what, |r| {
            (r == Reply::Ok(Command::Stream { steps, repeats })).then_some(())
        })?;
        let mut ids = Vec::new();
        let end = loop {
            match lines.peek() {
                Some(Reply::Out(words)) => {
                    let got = Reply::ids(words).collect::<Option<Vec<u16>>>();
                    ids.extend(got.ok_or_else(|| lines.fail(&format!("input {n}: bad OUT")))?);
                }
                Some(Reply::Streamed(s)) => break Ok(s),
                Some(Reply::Err(reason)) => break Err(reason.to_string()),
                _ => return Err(lines.fail(&format!("input {n}: expected OUT or STREAMED"))),
            }
            lines.at += 1;
        };
        lines.at += 1;
        device.push((ids, end));
    }
    let stats = read_end(&mut lines)?;
    let host_ids = host.with_net(|any| {
        Ok(crate::dispatch!(any, |net: P| {
            forget_layers();
            let plan = seq2seq::Plan::new::<P>(&net.desc, info.positions);
            let mut arena = vec![0u32; plan.bytes().div_ceil(4)];
            let mut runner = seq2seq::Runner::new(&net, &mut arena, info.positions)
                .map_err(Error::model(model))?;
            inputs
                .iter()
                .map(|line| {
                    let (mut chars, mut out) = (line.chars(), Vec::new());
                    let done = runner.stream_chars::<seq2seq::Error>(
                        &prefix,
                        || Ok(chars.next()),
                        seq2seq::StreamLimits {
                            max_steps: steps.into(),
                            max_repeats: repeats.into(),
                        },
                        &mut (),
                        |y| {
                            out.push(y);
                            Ok(())
                        },
                    );
                    (out, done.err())
                })
                .collect::<Vec<_>>()
        }))
    })?;
    let lines = inputs
        .iter()
        .zip(device)
        .zip(host_ids)
        .map(|((input, (ids, end)), host)| {
            // The same ids (before the error, if any), and an error on both sides or
            // on neither.
            let same = host.0 == ids && host.1.is_some() == end.is_err();
            let mismatch =
                (!same).then(|| host.0.iter().zip(&ids).take_while(|(a, b)| a == b).count());
            StreamedLine {
                chars: input.chars().count(),
                device: end,
                host,
                ids,
                mismatch,
            }
        })
        .collect();
    Ok(StreamReport {
        board: o.board,
        model: model.to_path_buf(),
        info,
        stats,
        lines,
    })
}

/// A command's request line, without its newline.
fn command(cmd: Command<'_>) -> String {
    let mut line = String::new();
    let _ = write_request(&mut line, &Request::Command(cmd));
    line.trim_end().to_string()
}
