//! `s2s quantize`: an f32 model file into `w8f32` (int8 weights, f32 math) or `w8a16`
//! (int8 weights, int16 activations, integers only), calibrated on whole sequences.
//!
//! Weights: symmetric int8 per output row, `s_r = max|w_r| / 127`. Activations in
//! `w8a16` are `Q(15-f).f` per tensor kind; `f` is fixed where the range is known (GRU
//! states, tanh and sigmoid outputs, attention weights: `Q0.15`) and calibrated where it
//! is not (embeddings from their tables, the projected memory and the keys from runs of
//! the float model over the calibration set). Each layer's requantizer per row and input
//! part folds `s_r` and the part's format into one integer multiplier and shift that
//! lands the result in the wide `Q16.15` domain; biases are stored there as `i32`.

pub mod gptq;

use std::collections::BTreeMap;
use std::fmt::Write;

use s2s_kernels::{Fmt, PrecisionKind, Requant};
use seq2seq::builder::ModelBuilder;
use seq2seq::desc::{LayerSpec, ModelDesc};
use seq2seq::format::{DType, Role, Slot, TensorId};
use seq2seq::{Observer, Probe, ScoreKind, Step, Values};

use crate::model::{decode_lines, Keep, LoadedModel};

/// The target number format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scheme {
    /// int8 weights, int16 activations, int32 accumulators.
    W8a16,
    /// int8 weights dequantized on the fly, f32 math.
    W8f32,
}

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
    /// The sequences used.
    pub lines: Vec<String>,
}

/// Largest magnitudes seen by a calibration run.
struct Ranges {
    max: BTreeMap<Probe, f32>,
    logits_max: f32,
    sequences: usize,
}

impl Observer<crate::quantize::gptq::Recording> for Ranges {
    fn encoded(&mut self, _positions: usize) {
        self.sequences += 1;
    }
    fn step(&mut self, s: &Step<'_, crate::quantize::gptq::Recording>) {
        for v in s.logits {
            self.logits_max = self.logits_max.max(v.abs());
        }
    }
    fn probe(&mut self, probe: Probe, values: Values<'_, crate::quantize::gptq::Recording>) {
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

/// Headroom kept above the calibrated maximum when choosing a format.
pub const MARGIN: f32 = 1.25;

/// Runs the float model over the calibration lines and records the ranges.
pub fn calibrate(
    m: &LoadedModel,
    lines: &[String],
    progress: impl FnMut(usize),
) -> Result<Calibration, String> {
    let file = m.file();
    if file.precision() != PrecisionKind::F32 {
        return Err(format!(
            "{}: calibration needs the f32 model, this one is {}",
            m.path.display(),
            file.precision().name()
        ));
    }
    let desc = file.desc();
    let vocab = file.src_vocab();
    let mut c = Calibration::default();
    let mut usable = vec![];
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
        } else {
            usable.push(text.to_string());
        }
    }
    if usable.is_empty() {
        return Err(if lines.is_empty() {
            "the calibration file is empty".into()
        } else {
            format!(
                "none of the {} calibration lines is usable (empty, or every symbol outside the vocabulary)",
                lines.len()
            )
        });
    }
    // One pass of the float model gives both the ranges and the layers' input
    // statistics.
    let mut ranges = Ranges {
        max: BTreeMap::new(),
        logits_max: 0.0,
        sequences: 0,
    };
    c.hessians = crate::quantize::gptq::collect(m, &usable, &mut ranges, progress)?;
    (c.max, c.logits_max, c.sequences) = (ranges.max, ranges.logits_max, ranges.sequences);
    c.lines = usable;
    Ok(c)
}

/// The most fractional bits `f` (between -8 and 15) such that `max * MARGIN` fits in
/// `Q(15-f).f`.
pub fn choose_frac(max: f32) -> i8 {
    let mut f = 15i8;
    while f > -8 && max * MARGIN * 2f32.powi(f as i32) > 32767.0 {
        f -= 1;
    }
    f
}

/// Symmetric int8 per row: the codes and the row scales.
pub fn quantize_rows(w: &[f32], cols: usize) -> (Vec<i8>, Vec<f32>) {
    let mut q = Vec::with_capacity(w.len());
    let mut scales = vec![];
    for row in w.chunks(cols.max(1)) {
        let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let s = max / 127.0;
        scales.push(s);
        for &v in row {
            q.push(if s == 0.0 {
                0
            } else {
                (v / s).round().clamp(-127.0, 127.0) as i8
            });
        }
    }
    (q, scales)
}

fn fmt_name(f: Fmt) -> String {
    format!(
        "Q{}.{} (range ±{})",
        15 - f.frac as i32,
        f.frac,
        2f64.powi(15 - f.frac as i32)
    )
}

/// Which layers get a second (residual) weight plane.
#[derive(Clone, Debug, PartialEq)]
pub enum Planes {
    /// One plane everywhere.
    None,
    /// These layers (names as in `[weights]`).
    Layers(Vec<String>),
    /// The fewest layers, chosen by their measured effect on the calibration set, for
    /// which the model reproduces the float model's outputs on at least this percentage
    /// of the calibration sequences.
    Auto(f64),
}

/// One dense layer's int8 weights: the first plane, and the residual plane it may get.
struct QuantLayer {
    spec: LayerSpec,
    name: String,
    codes: [Vec<i8>; 2],
    scales: [Vec<f32>; 2],
}

impl QuantLayer {
    fn params(&self) -> usize {
        self.codes[0].len()
    }
    /// The weights as the quantized model sees them, with one or two planes.
    fn dequantized(&self, planes: usize) -> Vec<f32> {
        let cols = self.spec.cols;
        (0..self.codes[0].len())
            .map(|i| {
                (0..planes)
                    .map(|p| self.codes[p][i] as f32 * self.scales[p][i / cols])
                    .sum()
            })
            .collect()
    }
}

/// Rounds every layer of the f32 model to int8 (with error compensation when there is
/// a calibration) and prepares each one's residual plane.
fn round_layers(m: &LoadedModel, calib: Option<&Calibration>) -> Result<Vec<QuantLayer>, String> {
    let file = m.file();
    let desc = file.desc();
    let weight = |s: &LayerSpec| -> Result<&[f32], String> {
        let id = TensorId::new(s.role, s.layer, s.dir, Slot::Weight);
        match file.data::<f32>(id) {
            Ok(Some((_, d))) => Ok(d),
            Ok(None) => Err(format!("{}: tensor {id} is missing", m.path.display())),
            Err(e) => Err(format!("{}: {e}", m.path.display())),
        }
    };
    let mut out = vec![];
    for s in desc.layer_specs() {
        let w = weight(&s)?;
        let (mut q, mut scales) = quantize_rows(w, s.cols);
        if let Some(c) = calib {
            // Error-compensating rounding, block by block of rows that share inputs.
            let mut starts: Vec<usize> = c
                .hessians
                .map
                .keys()
                .filter(|k| (k.0, k.1, k.2) == (s.role, s.layer, s.dir))
                .map(|k| k.3)
                .collect();
            starts.sort_unstable();
            for (i, &r0) in starts.iter().enumerate() {
                let r1 = starts.get(i + 1).copied().unwrap_or(s.rows);
                let (_, h) = &c.hessians.map[&(s.role, s.layer, s.dir, r0)];
                let (block, bs) =
                    crate::quantize::gptq::quantize_rows(&w[r0 * s.cols..r1 * s.cols], s.cols, h);
                q[r0 * s.cols..r1 * s.cols].copy_from_slice(&block);
                scales[r0..r1].copy_from_slice(&bs);
            }
            if s.is_embedding() {
                // An embedding row's error reaches the model through the first GRU
                // layer's input matrix: weigh it by W^T W of those columns.
                let consumer = if s.role == Role::EncEmb {
                    Role::EncWih
                } else {
                    Role::DecWih
                };
                let n = s.cols;
                let mut h = vec![0.0f64; n * n];
                for c in desc
                    .layer_specs()
                    .iter()
                    .filter(|c| c.role == consumer && c.layer == 0)
                {
                    for row in weight(c)?.chunks(c.cols) {
                        for i in 0..n {
                            for j in i..n {
                                h[i * n + j] += row[i] as f64 * row[j] as f64;
                            }
                        }
                    }
                }
                (q, scales) = crate::quantize::gptq::quantize_rows(w, n, &h);
            }
        }
        let residual: Vec<f32> = w
            .iter()
            .enumerate()
            .map(|(i, &v)| v - q[i] as f32 * scales[i / s.cols])
            .collect();
        let (q1, s1) = quantize_rows(&residual, s.cols);
        out.push(QuantLayer {
            spec: s,
            name: crate::import::layer_name(&s),
            codes: [q, q1],
            scales: [scales, s1],
        });
    }
    Ok(out)
}

/// The f32 model with each layer's weights as `planes[i]` int8 planes give them back
/// (0: the float weights themselves).
fn with_weights(
    m: &LoadedModel,
    layers: &[QuantLayer],
    planes: &[usize],
) -> Result<LoadedModel, String> {
    let file = m.file();
    let mut b = builder_like(&file, PrecisionKind::F32, *file.desc());
    for t in file.tensors() {
        let (_, d) = file
            .data::<f32>(t.id)
            .map_err(|e| e.to_string())?
            .ok_or("internal: tensor vanished")?;
        b.tensor(t.id, DType::F32, t.rows, t.cols, d);
    }
    for (l, &p) in layers.iter().zip(planes) {
        if p > 0 {
            let s = &l.spec;
            let id = TensorId::new(s.role, s.layer, s.dir, Slot::Weight);
            b.tensor(id, DType::F32, s.rows, s.cols, &l.dequantized(p));
        }
    }
    LoadedModel::from_bytes(&m.path, &b.to_bytes())
}

/// Percentage of `lines` on which `m` gives the same output ids as `reference`.
fn agreement(m: &LoadedModel, lines: &[String], reference: &[Vec<u16>]) -> Result<f64, String> {
    let out = decode_lines(m, lines, Keep::default())?;
    let same = out
        .iter()
        .zip(reference)
        .filter(|(a, b)| &a.ids == *b)
        .count();
    Ok(100.0 * same as f64 / lines.len().max(1) as f64)
}

/// Chooses the layers that get a residual plane (see [`Planes`]); reports what it did.
fn choose_planes(
    m: &LoadedModel,
    layers: &[QuantLayer],
    planes: &Planes,
    calib: Option<&Calibration>,
    report: &mut String,
) -> Result<Vec<bool>, String> {
    let target = match planes {
        Planes::None => return Ok(vec![false; layers.len()]),
        Planes::Layers(names) => {
            for n in names {
                if !layers.iter().any(|l| &l.name == n) {
                    let all: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
                    return Err(format!(
                        "--planes: {n:?} is not a layer of this model ({})",
                        all.join(", ")
                    ));
                }
            }
            return Ok(layers.iter().map(|l| names.contains(&l.name)).collect());
        }
        Planes::Auto(t) => *t,
    };
    let Some(calib) = calib else {
        let _ = writeln!(
            report,
            "planes: no calibration set, so one int8 plane everywhere (give --calib to choose residual planes)"
        );
        return Ok(vec![false; layers.len()]);
    };
    let lines = &calib.lines;
    let reference: Vec<Vec<u16>> = decode_lines(m, lines, Keep::default())?
        .into_iter()
        .map(|d| d.ids)
        .collect();
    let mut two = vec![false; layers.len()];
    let planes = |two: &[bool]| -> Vec<usize> { two.iter().map(|&t| 1 + t as usize).collect() };
    let mut now = agreement(&with_weights(m, layers, &planes(&two))?, lines, &reference)?;
    let _ = writeln!(report, "planes: one int8 plane agrees with the float model on {now:.2} % of the calibration set (target {target} %)");
    if now >= target {
        return Ok(two);
    }
    // Each layer's own cost: the agreement lost when it alone is rounded. Layers
    // get their residual plane in order of cost per weight until the target is met.
    let costs = solo_costs(m, layers, lines, &reference)?;
    let mut order: Vec<usize> = (0..layers.len()).filter(|&i| costs[i] > 0.0).collect();
    order.sort_by(|&a, &b| {
        let ka = costs[a] / layers[a].params() as f64;
        let kb = costs[b] / layers[b].params() as f64;
        kb.total_cmp(&ka)
    });
    for i in order {
        two[i] = true;
        now = agreement(&with_weights(m, layers, &planes(&two))?, lines, &reference)?;
        let _ = writeln!(
            report,
            "planes: + {} ({} weights, alone costs {:.2} points) -> {now:.2} %",
            layers[i].name,
            layers[i].params(),
            costs[i]
        );
        if now >= target {
            break;
        }
    }
    Ok(two)
}

/// Agreement points each layer costs when it alone is rounded to one int8 plane.
fn solo_costs(
    m: &LoadedModel,
    layers: &[QuantLayer],
    lines: &[String],
    reference: &[Vec<u16>],
) -> Result<Vec<f64>, String> {
    (0..layers.len())
        .map(|i| {
            let mut planes = vec![0; layers.len()];
            planes[i] = 1;
            Ok(100.0 - agreement(&with_weights(m, layers, &planes)?, lines, reference)?)
        })
        .collect()
}

/// A builder with the vocabularies and separator of `file`.
fn builder_like(
    file: &seq2seq::ModelFile<'_>,
    precision: PrecisionKind,
    desc: ModelDesc,
) -> ModelBuilder {
    let mut b = ModelBuilder::new(precision, desc);
    b.src_vocab = (0..desc.src_vocab)
        .map(|i| file.src_vocab().get(i as u16).unwrap_or("").to_string())
        .collect();
    b.tgt_vocab = (0..desc.tgt_vocab)
        .map(|i| file.tgt_vocab().get(i as u16).unwrap_or("").to_string())
        .collect();
    b.separator = file.separator().to_string();
    b
}

/// Quantizes an f32 model. `w8a16` needs a calibration; without one, `Planes::Auto`
/// keeps one plane everywhere.
pub fn quantize(
    m: &LoadedModel,
    scheme: Scheme,
    planes: &Planes,
    calib: Option<&Calibration>,
) -> Result<(ModelBuilder, String), String> {
    let file = m.file();
    if file.precision() != PrecisionKind::F32 {
        return Err(format!(
            "{}: quantize needs an f32 model, this one is {}",
            m.path.display(),
            file.precision().name()
        ));
    }
    let mut desc: ModelDesc = *file.desc();
    let mut report = String::new();
    let precision = match scheme {
        Scheme::W8a16 => PrecisionKind::W8A16,
        Scheme::W8f32 => PrecisionKind::W8F32,
    };
    if scheme == Scheme::W8a16 {
        let calib = calib.ok_or("w8a16 needs a calibration set (--calib)")?;
        choose_formats(m, &mut desc, calib, &mut report)?;
    }
    desc.check().map_err(|e| e.to_string())?;

    let layers = round_layers(m, calib)?;
    let two = choose_planes(m, &layers, planes, calib, &mut report)?;
    let mut b = builder_like(&file, precision, desc);
    let (mut smin, mut smax) = (f32::MAX, 0.0f32);
    for (l, &two) in layers.iter().zip(&two) {
        let s = &l.spec;
        let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
        let planes = 1 + two as usize;
        // Each row stores its planes one after the other, and so do its scales.
        let mut codes = Vec::with_capacity(planes * l.params());
        let mut scales = Vec::with_capacity(planes * s.rows);
        for r in 0..s.rows {
            for p in 0..planes {
                codes.extend_from_slice(&l.codes[p][r * s.cols..(r + 1) * s.cols]);
                scales.push(l.scales[p][r]);
            }
        }
        for &sc in l.scales[0].iter().filter(|&&x| x > 0.0) {
            smin = smin.min(sc);
            smax = smax.max(sc);
        }
        b.tensor(id(Slot::Weight), DType::I8, s.rows, s.cols * planes, &codes);
        let bias = file
            .data::<f32>(id(Slot::Bias))
            .map_err(|e| e.to_string())?
            .map(|(_, d)| d);
        match scheme {
            Scheme::W8f32 => {
                b.tensor(id(Slot::RowQ), DType::F32, s.rows, planes, &scales);
                if let Some(bias) = bias {
                    b.tensor(id(Slot::Bias), DType::F32, s.rows, 1, bias);
                }
            }
            Scheme::W8a16 => {
                let fmts = desc.part_fmts(s);
                let mut rq = Vec::with_capacity(scales.len() * fmts.len());
                for &sc in &scales {
                    for f in &fmts {
                        // Output of an embedding: an activation in its own format; of
                        // any other layer: the wide Q16.15 domain.
                        let exp = if s.is_embedding() {
                            f.frac as i32
                        } else {
                            15 - f.frac as i32
                        };
                        rq.push(Requant::from_real(sc as f64 * 2f64.powi(exp)));
                    }
                }
                b.requant(id(Slot::RowQ), s.rows, fmts.len() * planes, &rq);
                if let Some(bias) = bias {
                    let qb: Vec<i32> = bias
                        .iter()
                        .map(|&v| {
                            (v as f64 * 32768.0)
                                .round()
                                .clamp(i32::MIN as f64, i32::MAX as f64)
                                as i32
                        })
                        .collect();
                    b.tensor(id(Slot::Bias), DType::I32, s.rows, 1, &qb);
                }
            }
        }
    }
    let n2: Vec<&str> = layers
        .iter()
        .zip(&two)
        .filter(|(_, t)| **t)
        .map(|(l, _)| l.name.as_str())
        .collect();
    let _ = writeln!(
        report,
        "weights: {} layers as int8{}{}, per-row scales from {smin:.3e} to {smax:.3e}",
        layers.len(),
        if calib.is_some() {
            ", rounded with error compensation over the calibration inputs"
        } else {
            ""
        },
        if n2.is_empty() {
            String::new()
        } else {
            format!("; a residual plane for {}", n2.join(", "))
        }
    );
    Ok((b, report))
}

/// Chooses the activation formats of `w8a16` from the tables and the calibration.
fn choose_formats(
    m: &LoadedModel,
    desc: &mut ModelDesc,
    calib: &Calibration,
    report: &mut String,
) -> Result<(), String> {
    let file = m.file();
    let table_max = |role| -> Result<f32, String> {
        let id = TensorId::new(role, 0, 0, Slot::Weight);
        Ok(file
            .data::<f32>(id)
            .map_err(|e| e.to_string())?
            .map_or(0.0, |(_, d)| d.iter().fold(0.0f32, |a, v| a.max(v.abs()))))
    };
    let (se, de) = (table_max(Role::EncEmb)?, table_max(Role::DecEmb)?);
    desc.fmt_src_emb = Fmt {
        frac: choose_frac(se),
    };
    desc.fmt_dec_emb = Fmt {
        frac: choose_frac(de),
    };
    let get = |p| calib.max.get(&p).copied().unwrap_or(0.0);
    if desc.memory_proj.is_some() {
        desc.fmt_memory = Fmt {
            frac: choose_frac(get(Probe::Memory)),
        };
    }
    if desc.keys_stored() {
        desc.fmt_keys = Fmt {
            frac: choose_frac(get(Probe::Keys)),
        };
    }
    if matches!(
        desc.score,
        ScoreKind::Dot | ScoreKind::ScaledDot | ScoreKind::General
    ) {
        desc.score_scale_q = Requant::from_real(desc.score_scale as f64);
    }
    let _ = writeln!(
        report,
        "calibration: {} sequences{}",
        calib.sequences,
        if calib.skipped.is_empty() {
            String::new()
        } else {
            format!(
                " ({} lines skipped: {})",
                calib.skipped.len(),
                calib
                    .skipped
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }
    );
    let _ = writeln!(report, "{:<18} {:>10}  format", "tensor", "max |x|");
    let mut row = |name: &str, max: f32, fmt: String| {
        let _ = writeln!(report, "{name:<18} {max:>10.4}  {fmt}");
    };
    row(
        "source embedding",
        se,
        fmt_name(desc.fmt_src_emb) + ", from the table",
    );
    row(
        "target embedding",
        de,
        fmt_name(desc.fmt_dec_emb) + ", from the table",
    );
    row(
        "encoder outputs",
        get(Probe::EncoderOutputs),
        "Q0.15 (GRU states)".into(),
    );
    if desc.memory_proj.is_some() {
        row("memory", get(Probe::Memory), fmt_name(desc.fmt_memory));
    }
    if desc.keys_stored() {
        row("keys", get(Probe::Keys), fmt_name(desc.fmt_keys));
    }
    row(
        "decoder states",
        get(Probe::DecoderState),
        "Q0.15 (GRU states)".into(),
    );
    if desc.has_attention() {
        row(
            "context",
            get(Probe::Context),
            "memory's format (convex combination)".into(),
        );
        row(
            "scores",
            get(Probe::Scores),
            "Q16.15 wide (range ±65536)".into(),
        );
    }
    row(
        "logits",
        calib.logits_max,
        "Q16.15 wide (range ±65536)".into(),
    );
    let wide_max = get(Probe::Scores).max(calib.logits_max);
    if wide_max * MARGIN > 65536.0 {
        let _ = writeln!(
            report,
            "warning: wide values reach {wide_max}: they will saturate at ±65536"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_leave_the_margin() {
        assert_eq!(choose_frac(0.0), 15);
        assert_eq!(choose_frac(0.5), 15);
        assert_eq!(choose_frac(0.9), 14);
        assert_eq!(choose_frac(3.0), 13);
        assert_eq!(choose_frac(1e9), -8);
    }

    #[test]
    fn rows_quantize_symmetrically() {
        let (q, s) = quantize_rows(&[1.0, -0.5, 0.25, 0.0, 0.0, 0.0], 3);
        assert_eq!(q, [127, -64, 32, 0, 0, 0]);
        assert_eq!(s, [1.0 / 127.0, 0.0]);
    }
}
