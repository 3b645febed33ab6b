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

use std::collections::BTreeMap;
use std::fmt::Write;

use s2s_kernels::{Fmt, PrecisionKind, Requant};
use seq2seq::builder::ModelBuilder;
use seq2seq::desc::{LayerSpec, ModelDesc};
use seq2seq::format::{DType, Role, Slot, TensorId};
use seq2seq::{Probe, ScoreKind};

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
}

/// Headroom kept above the calibrated maximum when choosing a format.
pub const MARGIN: f32 = 1.25;

/// Runs the float model over the calibration lines and records the ranges.
pub fn calibrate(
    m: &LoadedModel,
    lines: &[String],
    mut progress: impl FnMut(usize),
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
    let keep = Keep {
        probes: true,
        logits: true,
        ..Keep::default()
    };
    for (i, chunk) in usable.chunks(64).enumerate() {
        for d in decode_lines(m, chunk, keep)? {
            for (p, occurrences) in &d.probes {
                let e = c.max.entry(*p).or_insert(0.0);
                for v in occurrences.iter().flatten() {
                    *e = e.max(v.abs());
                }
            }
            for v in d.logits.iter().flatten() {
                c.logits_max = c.logits_max.max(v.abs());
            }
            c.sequences += 1;
        }
        progress((i * 64 + chunk.len()).min(usable.len()));
    }
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

/// Quantizes an f32 model. `w8a16` needs a calibration.
pub fn quantize(
    m: &LoadedModel,
    scheme: Scheme,
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
    let weight = |s: &LayerSpec, slot| -> Result<Option<&[f32]>, String> {
        file.data::<f32>(TensorId::new(s.role, s.layer, s.dir, slot))
            .map(|o| o.map(|(_, d)| d))
            .map_err(|e| format!("{}: {e}", m.path.display()))
    };
    let mut report = String::new();
    let precision = match scheme {
        Scheme::W8a16 => PrecisionKind::W8A16,
        Scheme::W8f32 => PrecisionKind::W8F32,
    };
    if scheme == Scheme::W8a16 {
        let calib = calib.ok_or("w8a16 needs a calibration set (--calib)")?;
        let table_max = |role| -> Result<f32, String> {
            let s = desc
                .layer_spec(role, 0, 0)
                .ok_or("internal: no embedding")?;
            Ok(weight(&s, Slot::Weight)?
                .unwrap_or(&[])
                .iter()
                .fold(0.0f32, |a, v| a.max(v.abs())))
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
    }
    desc.check().map_err(|e| e.to_string())?;

    let mut b = ModelBuilder::new(precision, desc);
    b.src_vocab = (0..desc.src_vocab)
        .map(|i| file.src_vocab().get(i as u16).unwrap_or("").to_string())
        .collect();
    b.tgt_vocab = (0..desc.tgt_vocab)
        .map(|i| file.tgt_vocab().get(i as u16).unwrap_or("").to_string())
        .collect();
    b.separator = file.separator().to_string();
    let (mut rows_total, mut smin, mut smax) = (0usize, f32::MAX, 0.0f32);
    for s in desc.layer_specs() {
        let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
        let w = weight(&s, Slot::Weight)?.ok_or_else(|| {
            format!(
                "{}: tensor {} is missing",
                m.path.display(),
                id(Slot::Weight)
            )
        })?;
        let (q, scales) = quantize_rows(w, s.cols);
        rows_total += s.rows;
        for &sc in scales.iter().filter(|&&x| x > 0.0) {
            smin = smin.min(sc);
            smax = smax.max(sc);
        }
        b.tensor(id(Slot::Weight), DType::I8, s.rows, s.cols, &q);
        let bias = weight(&s, Slot::Bias)?;
        match scheme {
            Scheme::W8f32 => {
                b.tensor(id(Slot::RowQ), DType::F32, s.rows, 1, &scales);
                if let Some(bias) = bias {
                    b.tensor(id(Slot::Bias), DType::F32, s.rows, 1, bias);
                }
            }
            Scheme::W8a16 => {
                let fmts = desc.part_fmts(&s);
                let mut rq = Vec::with_capacity(s.rows * fmts.len());
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
                b.requant(id(Slot::RowQ), s.rows, fmts.len(), &rq);
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
    let _ = writeln!(
        report,
        "weights: {rows_total} rows as int8, per-row scales from {smin:.3e} to {smax:.3e}"
    );
    Ok((b, report))
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
