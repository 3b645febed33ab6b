//! `s2s quantize --row-curve`: what a residual plane for single rows, instead of whole
//! layers, would buy (a measurement; the model format stores whole-layer planes).
//!
//! Every row's residual plane is ranked by what it removes from the layer's output
//! error, `e^T H e - e'^T H e'` (`e` the row's rounding error with one plane, `e'` with
//! two, `H` the calibration inputs' `sum x x^T`; `W^T W` of the consuming matrix for an
//! embedding), scaled so that each layer's rows share that layer's measured cost alone
//! on the calibration set (as `--planes auto` measures it), per stored byte. For each
//! size budget the best rows that fit get their residual, and the agreement with the
//! float model is measured on other words with the host's f32 arithmetic and the
//! quantized weights (the integer activations cost nothing measurable:
//! `s2s check --sensitivity`, docs/NUMERICS.md).

use std::fmt::Write;

use seq2seq::desc::LayerSpec;

use super::calibrate::Calibration;
use super::planes::{embedding_hessian, float_weights, hessian_blocks, solo_costs, QuantLayer};
use crate::error::Result;
use crate::eval::check::Agreement;
use crate::eval::rates::{Report, BUCKETS};
use crate::eval::sensitivity::{agreement_by_length, reference_outputs};
use crate::model::LoadedModel;

/// What `s2s quantize --row-curve` asks for.
#[derive(Clone, Debug)]
pub struct CurveRequest<'p> {
    /// Sources to measure the agreement on, one per line.
    pub eval: &'p std::path::Path,
    /// File sizes, percent of the f32 file.
    pub budgets: Vec<f64>,
}

/// Bytes of one row's residual plane: its codes, one requantizer (two `i32`) per input
/// part, and a 2-byte row index.
fn row_bytes(cols: usize, parts: usize) -> usize {
    cols + 8 * parts + 2
}

/// `d^T H d`, `H` symmetric with its upper triangle stored row-major `n x n`.
fn quad(h: &[f64], n: usize, d: &[f64]) -> f64 {
    (0..n)
        .map(|i| {
            let hi = &h[i * n..(i + 1) * n];
            let off: f64 = (i + 1..n).map(|j| hi[j] * d[j]).sum();
            (hi[i] * d[i] + 2.0 * off) * d[i]
        })
        .sum()
}

/// What each row's residual plane removes from layer `l`'s output error.
fn row_gains(m: &LoadedModel, l: &QuantLayer, calib: &Calibration) -> Result<Vec<f64>> {
    let s = &l.spec;
    let n = s.cols;
    let w = float_weights(m, s)?;
    let embedding = if s.is_embedding() {
        Some(embedding_hessian(m, s)?)
    } else {
        None
    };
    let blocks = hessian_blocks(calib, s);
    Ok((0..s.rows)
        .map(|r| {
            let at = r * n..(r + 1) * n;
            let e: Vec<f64> = w[at.clone()]
                .iter()
                .zip(&l.codes[0][at.clone()])
                .map(|(&v, &q)| v as f64 - q as f64 * l.scales[0][r] as f64)
                .collect();
            let e2: Vec<f64> = e
                .iter()
                .zip(&l.codes[1][at])
                .map(|(&x, &q)| x - q as f64 * l.scales[1][r] as f64)
                .collect();
            let h = embedding.as_deref().or_else(|| {
                let r0 = blocks.iter().rev().find(|&&r0| r0 <= r)?;
                Some(
                    calib.hessians.map[&(s.role, s.layer, s.dir, *r0)]
                        .1
                        .as_slice(),
                )
            });
            match h {
                Some(h) => quad(h, n, &e) - quad(h, n, &e2),
                None => e.iter().zip(&e2).map(|(a, b)| a * a - b * b).sum(),
            }
        })
        .collect())
}

/// One budget's result.
#[derive(Clone, Debug, PartialEq)]
pub struct CurvePoint {
    /// The size budget, percent of the f32 file.
    pub budget: f64,
    /// Rows given a residual plane, per layer.
    pub rows: Vec<usize>,
    /// Their bytes.
    pub bytes: usize,
    /// Agreement with the float model on the evaluation words, overall.
    pub all: Agreement,
    /// The same per bucket of [`BUCKETS`].
    pub by_length: Vec<Agreement>,
}

/// The curve: the one-plane file's size and one point per budget.
#[derive(Clone, Debug, PartialEq)]
pub struct RowCurve {
    /// Layer names, in the order of [`CurvePoint::rows`].
    pub layers: Vec<String>,
    /// Bytes of the f32 file and of the quantized file with one plane everywhere.
    pub f32_bytes: usize,
    /// See `f32_bytes`.
    pub one_plane_bytes: usize,
    /// The points, in the order of the budgets asked for.
    pub points: Vec<CurvePoint>,
}

/// Measures the curve of the f32 model `m` calibrated on `calib`, its layers rounded
/// on it (`layers`), on the sources `eval`, for each budget (percent of the f32 file).
/// `one_plane_bytes` is the size of its quantized file with one plane everywhere.
pub(crate) fn row_curve(
    m: &LoadedModel,
    calib: &Calibration,
    layers: &[QuantLayer],
    eval: &[String],
    one_plane_bytes: usize,
    budgets: &[f64],
) -> Result<RowCurve> {
    let (calib_lines, calib_want) = reference_outputs(m, &calib.lines)?;
    let costs = solo_costs(m, layers, &calib_lines, &calib_want)?;
    let desc = *m.file().desc();
    // (score, layer, row, bytes), best first. A layer that cost nothing alone on the
    // calibration set still ranks its rows, after every costly layer's.
    let mut ranked: Vec<(f64, usize, usize, usize)> = vec![];
    for (li, l) in layers.iter().enumerate() {
        let gains = row_gains(m, l, calib)?;
        let total: f64 = gains.iter().map(|g| g.max(0.0)).sum();
        let bytes = row_bytes(l.spec.cols, desc.part_fmts(&l.spec).len().max(1));
        let cost = if costs[li] > 0.0 { costs[li] } else { 1e-3 };
        for (r, g) in gains.iter().enumerate() {
            let share = if total > 0.0 { g.max(0.0) / total } else { 0.0 };
            ranked.push((cost * share / bytes as f64, li, r, bytes));
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));

    let (lines, want) = reference_outputs(m, eval)?;
    let f32_bytes = m.bytes().len();
    let mut points = Vec::with_capacity(budgets.len());
    for &budget in budgets {
        let room = (budget / 100.0 * f32_bytes as f64) as i64 - one_plane_bytes as i64;
        let mut chosen: Vec<Vec<bool>> = layers.iter().map(|l| vec![false; l.spec.rows]).collect();
        let mut bytes = 0usize;
        for &(_, li, r, b) in &ranked {
            if (bytes + b) as i64 <= room {
                chosen[li][r] = true;
                bytes += b;
            }
        }
        let weights: Vec<(LayerSpec, Vec<f32>)> = layers
            .iter()
            .zip(&chosen)
            .map(|(l, rows)| (l.spec, l.dequantized_rows(rows)))
            .collect();
        let replaced: Vec<(LayerSpec, &[f32])> =
            weights.iter().map(|(s, w)| (*s, w.as_slice())).collect();
        let q = crate::model::dequant::with_weights(m, &replaced)?;
        let (all, by_length) = agreement_by_length(&q, &lines, &want)?;
        points.push(CurvePoint {
            budget,
            rows: chosen
                .iter()
                .map(|c| c.iter().filter(|&&x| x).count())
                .collect(),
            bytes,
            all,
            by_length,
        });
    }
    Ok(RowCurve {
        layers: layers.iter().map(|l| l.name.clone()).collect(),
        f32_bytes,
        one_plane_bytes,
        points,
    })
}

impl RowCurve {
    /// The curve as text.
    pub fn render(&self) -> String {
        let pct = |b: usize| 100.0 * b as f64 / self.f32_bytes.max(1) as f64;
        let mut s = format!(
            "row curve: one plane everywhere is {} bytes, {:.2} % of the f32 file; a residual plane for single rows, best first (weights in f32 arithmetic), agreement on {} words\n{:>8} {:>7} {:>7} {:>9}",
            self.one_plane_bytes,
            pct(self.one_plane_bytes),
            self.points.first().map_or(0, |p| p.all.sequences),
            "budget",
            "size",
            "rows",
            "all"
        );
        for b in BUCKETS {
            let _ = write!(s, " {:>8}", Report::bucket_name(b));
        }
        s += "  rows per layer\n";
        for p in &self.points {
            let _ = write!(
                s,
                "{:>6.1} % {:>5.1} % {:>7} {:>7.2} %",
                p.budget,
                pct(self.one_plane_bytes + p.bytes),
                p.rows.iter().sum::<usize>(),
                p.all.percent()
            );
            for a in &p.by_length {
                let _ = write!(s, " {:>6.2} %", a.percent());
            }
            let per: Vec<String> = self
                .layers
                .iter()
                .zip(&p.rows)
                .filter(|(_, &n)| n > 0)
                .map(|(l, n)| format!("{l} {n}"))
                .collect();
            let _ = writeln!(s, "  {}", per.join(", "));
        }
        s
    }
}
