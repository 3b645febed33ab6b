//! What `s2s qemu` found: the device's session compared with the host, and its summary.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use s2s_device::protocol::{PhaseCounts, PHASES};
use s2s_device::Board;
use s2s_kernels::Phase;

use super::session::{DeviceStats, ModelInfo};

pub use s2s_inspect::thousands;

/// Mismatches shown in full by [`QemuReport::render`].
pub const SHOWN_MISMATCHES: usize = 5;

/// Writes the first [`SHOWN_MISMATCHES`] of `lines` (line number, input, what) as
/// `  line N "input": what`, then how many more there are, followed by `more`.
fn write_shown<'a>(
    s: &mut String,
    lines: impl ExactSizeIterator<Item = (usize, &'a str, &'a str)>,
    more: &str,
) {
    let n = lines.len();
    for (line, input, what) in lines.take(SHOWN_MISMATCHES) {
        let _ = writeln!(s, "  line {line} {input:?}: {what}");
    }
    if n > SHOWN_MISMATCHES {
        let _ = writeln!(s, "  ... and {} more{more}", n - SHOWN_MISMATCHES);
    }
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

/// One input the device refused (`ERR <reason>`) and the host refused the same way when
/// held to the device's positions: e.g. longer than the board takes, or a character
/// outside the vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Input line number, from 1.
    pub line: usize,
    /// The input.
    pub input: String,
    /// The device's reason.
    pub reason: String,
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
    pub(crate) fn of(values: impl IntoIterator<Item = u64>) -> Spread {
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

/// Mean instructions by phase ([`Phase::ALL`]), from a `profile` firmware build; each
/// includes the phase marks' own instructions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerPhase {
    /// Per encoder source position.
    pub position: [f64; PHASES],
    /// Per decoder step.
    pub step: [f64; PHASES],
    /// Phase marks per source position and per step.
    pub marks: [f64; 2],
    /// Instructions of one mark.
    pub mark_insns: u64,
}

/// A device session compared with the host.
#[derive(Clone, Debug)]
pub struct QemuReport {
    /// The board.
    pub board: &'static Board,
    /// The model file.
    pub model: PathBuf,
    /// The `MODEL` line.
    pub info: ModelInfo,
    /// The `STATS` line.
    pub stats: DeviceStats,
    /// Inputs sent.
    pub inputs: usize,
    /// Inputs that both sides rejected with the same reason.
    pub rejected: Vec<Rejected>,
    /// Disagreements.
    pub mismatches: Vec<Mismatch>,
    /// Attention rows compared (0 unless asked and the model attends).
    pub attention_rows: usize,
    /// The beam width of the run (`None`: greedy).
    pub beam: Option<usize>,
    /// Instructions per encoder pass.
    pub enc: Spread,
    /// Source positions the encoder stepped over, all decoded inputs together (end
    /// token and padding included, the padding of a masked encoder excepted).
    pub positions: usize,
    /// Instructions per decoder step (end-token steps included), or per search step of
    /// a beam search.
    pub step: Spread,
    /// Encoder MACs over all decoded inputs.
    pub enc_macs: u128,
    /// Decoder MACs over all steps.
    pub dec_macs: u128,
    /// From a `profile` firmware build: the instructions by phase, all decoded inputs
    /// together (see [`QemuReport::per_phase`]).
    pub phases: Option<PhaseCounts>,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// What carried the session: `QEMU`, or `serial <port>`.
    pub via: String,
}

impl QemuReport {
    /// True when the device agreed with the host on every input.
    pub fn agrees(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// Gives the mismatches and rejections the line numbers of the input file:
    /// `numbers[i]` is the line of the `i`-th input sent (empty lines are not sent).
    pub fn renumber(&mut self, numbers: &[usize]) {
        let line = |i: usize| numbers.get(i.wrapping_sub(1)).copied().unwrap_or(i);
        for m in &mut self.mismatches {
            m.line = line(m.line);
        }
        for r in &mut self.rejected {
            r.line = line(r.line);
        }
    }

    /// Mean instructions per encoder step (source position).
    pub fn insns_per_position(&self) -> f64 {
        self.enc.mean * self.enc.n as f64 / self.positions.max(1) as f64
    }

    /// Encoder MACs per position stepped over.
    pub fn macs_per_position(&self) -> f64 {
        self.enc_macs as f64 / self.positions.max(1) as f64
    }

    /// Encoder instructions per MAC.
    pub fn enc_insns_per_mac(&self) -> f64 {
        self.enc.mean * self.enc.n as f64 / (self.enc_macs as f64).max(1.0)
    }

    /// Mean decoder MACs per step.
    pub fn macs_per_step(&self) -> f64 {
        self.dec_macs as f64 / self.step.n.max(1) as f64
    }

    /// Decoder instructions per MAC.
    pub fn dec_insns_per_mac(&self) -> f64 {
        self.step.mean * self.step.n as f64 / (self.dec_macs as f64).max(1.0)
    }

    /// Mean instructions by phase per encoder source position and per decoder step,
    /// from a `profile` firmware build.
    pub fn per_phase(&self) -> Option<PerPhase> {
        let p = self.phases.as_ref()?;
        let (positions, steps) = (self.positions.max(1) as f64, self.step.n.max(1) as f64);
        Some(PerPhase {
            position: p.enc.map(|v| v as f64 / positions),
            step: p.tok.map(|v| v as f64 / steps),
            marks: [p.marks[0] as f64 / positions, p.marks[1] as f64 / steps],
            mark_insns: p.mark_insns,
        })
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
            self.board.name,
            i.precision,
            thousands(i.params)
        );
        let _ = writeln!(
            s,
            "inputs          {} ({} rejected{})",
            self.inputs,
            self.rejected.len(),
            if self.rejected.is_empty() {
                String::new()
            } else {
                format!(
                    ": the device's reason, the same as the host's at the device's {} positions",
                    i.positions
                )
            }
        );
        let rejected = self.rejected.iter();
        write_shown(
            &mut s,
            rejected.map(|r| (r.line, r.input.as_str(), r.reason.as_str())),
            " (each on standard error)",
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
        let mismatches = self.mismatches.iter();
        write_shown(
            &mut s,
            mismatches.map(|m| (m.line, m.input.as_str(), m.what.as_str())),
            "",
        );
        if self.enc.n > 0 {
            let _ = writeln!(
                s,
                "encoder pass    {} instructions mean (min {}, max {}); {} per source position",
                f(self.enc.mean),
                thousands(self.enc.min as usize),
                thousands(self.enc.max as usize),
                f(self.insns_per_position())
            );
            let what = match self.beam {
                Some(k) => format!("search step     (beam {k}) "),
                None => "decoded token   ".to_string(),
            };
            let _ = writeln!(
                s,
                "{what}{} instructions mean over {} steps (min {}, max {})",
                f(self.step.mean),
                thousands(self.step.n),
                thousands(self.step.min as usize),
                thousands(self.step.max as usize)
            );
        }
        if self.enc.n > 0 && self.beam.is_some() {
            let _ = writeln!(
                s,
                "MACs            {} per source position; {:.2} instructions per MAC (encoder)",
                f(self.macs_per_position()),
                self.enc_insns_per_mac(),
            );
        } else if self.enc.n > 0 {
            let _ = writeln!(
                s,
                "MACs            {} per source position, {} per step; {:.2} / {:.2} instructions per MAC (encoder / decoder)",
                f(self.macs_per_position()),
                f(self.macs_per_step()),
                self.enc_insns_per_mac(),
                self.dec_insns_per_mac()
            );
        }
        if let Some(PerPhase {
            position: enc,
            step,
            marks,
            mark_insns,
        }) = self.per_phase()
        {
            let split = |v: [f64; PHASES]| {
                let parts: Vec<String> = Phase::ALL
                    .iter()
                    .zip(v)
                    .map(|(p, x)| format!("{} {}", p.name(), f(x)))
                    .collect();
                parts.join(", ")
            };
            let _ = writeln!(
                s,
                "by phase        per source position: {}; {:.1} marks\n                per step: {}; {:.1} marks (each count includes its marks, {mark_insns} instructions each)",
                split(enc),
                marks[0],
                split(step),
                marks[1]
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
        let via = match self.via.split_once(' ') {
            Some((kind, port)) => format!("{kind:<16}{:.1} s ({port})", self.elapsed.as_secs_f64()),
            None => format!("{:<16}{:.1} s", self.via, self.elapsed.as_secs_f64()),
        };
        let _ = writeln!(s, "{via}");
        s
    }
}
