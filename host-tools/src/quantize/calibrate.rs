//! Calibration: one pass of the float model over the calibration sources records the
//! largest magnitude of every tensor kind and each dense layer's input statistics.

use std::collections::BTreeMap;

use s2s_kernels::PrecisionKind;
use seq2seq::{Observer, Prefix, Probe, Step, Values};

use crate::error::{Error, Result};
use crate::model::hostf32::HostF32;
use crate::model::LoadedModel;

/// Largest `|x|` seen per probe over the calibration set.
#[derive(Clone, Debug, Default)]
pub struct Calibration {
    /// Sequences used.
    pub sequences: usize,
    /// Lines left out (empty, or every symbol outside the vocabulary), with the reason.
    pub skipped: Vec<String>,
    /// Largest magnitude per probe.
    pub max: BTreeMap<Probe, f32>,
    /// Largest logit magnitude.
    pub logits_max: f32,
    /// Input statistics of every dense layer, for error-compensating rounding.
    pub hessians: crate::quantize::gptq::Hessians,
    /// Largest `|c|` of the encoder's and the decoder's LSTM cell states, every step.
    pub cell_max: [f32; 2],
    /// The sequences used.
    pub lines: Vec<String>,
}

/// Largest magnitudes seen by a calibration run (one per thread).
#[derive(Default)]
struct Ranges {
    max: BTreeMap<Probe, f32>,
    logits_max: f32,
    sequences: usize,
}

impl<P: s2s_kernels::Precision<Act = f32, Wide = f32>> Observer<P> for Ranges {
    fn encoded(&mut self, _positions: usize) {
        self.sequences += 1;
    }
    fn step(&mut self, s: &Step<'_, P>) {
        for v in s.logits {
            self.logits_max = self.logits_max.max(v.abs());
        }
    }
    fn probe(&mut self, probe: Probe, values: Values<'_, P>) {
        let e = self.max.entry(probe).or_insert(0.0);
        let vals: &[f32] = match values {
            Values::Act(a, _) => a,
            Values::Wide(w) => w,
        };
        for v in vals {
            *e = e.max(v.abs());
        }
    }
}

/// Runs the float model over the calibration lines and records the ranges.
pub fn calibrate(
    m: &LoadedModel,
    lines: &[String],
    progress: impl FnMut(usize),
) -> Result<Calibration> {
    let (mut c, usable) = usable_lines(m, lines)?;
    // One pass of the float model gives both the ranges and the layers' input
    // statistics; each thread's ranges are merged (largest values and counts, so the
    // same whatever the thread count).
    let (rec, ranges) = crate::quantize::gptq::collect(m, &usable, Ranges::default, progress)?;
    (c.hessians, c.cell_max) = (rec.hessians, rec.cell_max);
    merge(&mut c, ranges);
    c.lines = usable;
    Ok(c)
}

/// [`calibrate`] without the layers' input statistics (no error-compensating rounding
/// can use it) nor the LSTM cell states (the models `s2s train` trains have none): the
/// ranges only, from the same float computation (`HostF32`, the recorder's own), at a
/// fraction of the cost. Quantization-aware training calibrates this way every epoch.
pub fn calibrate_ranges(m: &LoadedModel, lines: &[String]) -> Result<Calibration> {
    use rayon::prelude::*;
    let (mut c, usable) = usable_lines(m, lines)?;
    let file = m.file();
    if file.desc().cells != seq2seq::Cells::GRU {
        return Err(Error::usage(format!(
            "{}: a calibration of ranges only has no LSTM cell states",
            m.path.display()
        )));
    }
    const LANES: usize = crate::model::HOST_LANES;
    let net = seq2seq::Net::<HostF32>::bind(&file).map_err(Error::model(&m.path))?;
    let positions = m.positions();
    let bytes = seq2seq::Plan::new::<HostF32>(&net.desc, positions).bytes() * LANES;
    let share = usable
        .len()
        .div_ceil(rayon::current_num_threads().max(1))
        .max(1);
    let ranges: Vec<Ranges> = usable
        .par_chunks(share)
        .map(|chunk| -> Result<Ranges> {
            // (A model new to this thread, maybe where another one was: see
            // `forget_layers`.)
            crate::model::forget_layers();
            let mut arena = vec![0u32; bytes.div_ceil(4)];
            let mut runner =
                seq2seq::Runner::<HostF32, LANES>::with_lanes(&net, &mut arena, positions)
                    .map_err(Error::model(&m.path))?;
            let mut ids = vec![vec![0u16; net.desc.max_steps]; LANES];
            let mut lanes: Vec<Ranges> = (0..LANES).map(|_| Ranges::default()).collect();
            for lines in chunk.chunks(LANES) {
                let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                let mut outs: Vec<&mut [u16]> = ids.iter_mut().map(|v| &mut v[..]).collect();
                // Lines the model cannot read are not calibration data.
                let _ = runner.translate_batch(&lines, &[], &mut outs, &mut lanes);
            }
            let mut r = Ranges::default();
            merge_ranges(&mut r, lanes);
            Ok(r)
        })
        .collect::<Result<_>>()?;
    merge(&mut c, ranges);
    c.lines = usable;
    Ok(c)
}

/// Adds each thread's ranges (largest values and counts: the same whatever the thread
/// count).
fn merge(c: &mut Calibration, ranges: Vec<Ranges>) {
    let mut all = Ranges::default();
    merge_ranges(&mut all, ranges);
    c.max = all.max;
    c.logits_max = all.logits_max;
    c.sequences = all.sequences;
}

/// Adds ranges into `into`.
fn merge_ranges(into: &mut Ranges, ranges: Vec<Ranges>) {
    for r in ranges {
        for (probe, v) in r.max {
            let e = into.max.entry(probe).or_insert(0.0);
            *e = e.max(v);
        }
        into.logits_max = into.logits_max.max(r.logits_max);
        into.sequences += r.sequences;
    }
}

/// The calibration lines the f32 model `m` can read, and a calibration listing the
/// others as skipped; an error if it is not f32 or no line is usable.
fn usable_lines(m: &LoadedModel, lines: &[String]) -> Result<(Calibration, Vec<String>)> {
    let file = m.file();
    if file.precision() != PrecisionKind::F32 {
        return Err(Error::usage(format!(
            "{}: calibration needs the f32 model, this one is {}",
            m.path.display(),
            file.precision().name()
        )));
    }
    let desc = file.desc();
    let vocab = file.src_vocab();
    // Calibration lines take the prefix slots' defaults.
    let slots = file.slots();
    let mut c = Calibration::default();
    let mut usable = vec![];
    let mut ids = vec![0u16; m.positions()];
    for (i, l) in lines.iter().enumerate() {
        let text = l.trim();
        let known = text
            .chars()
            .filter(|ch| {
                let ch = if desc.lowercase {
                    ch.to_ascii_lowercase()
                } else {
                    *ch
                };
                vocab.find(ch.encode_utf8(&mut [0u8; 4])).is_some()
            })
            .count();
        if text.is_empty() {
            c.skipped.push(format!("line {}: empty", i + 1));
        } else if desc.split == seq2seq::Split::Chars && known == 0 {
            c.skipped.push(format!(
                "line {}: every symbol is outside the vocabulary",
                i + 1
            ));
        } else if let Err(e) =
            seq2seq::vocab::encode_source(desc, &vocab, &slots, &Prefix::NONE, text, &mut ids)
        {
            // Longer than a fixed-length model's input, say: not calibration data.
            c.skipped.push(format!("line {}: {e}", i + 1));
        } else {
            usable.push(text.to_string());
        }
    }
    if usable.is_empty() {
        return Err(Error::usage(if lines.is_empty() {
            "the calibration file is empty".into()
        } else {
            format!(
                "none of the {} calibration lines is usable (empty, or every symbol outside the vocabulary)",
                lines.len()
            )
        }));
    }
    Ok((c, usable))
}
