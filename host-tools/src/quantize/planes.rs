//! Rounding every layer to int8 and choosing the layers that get a second, residual
//! plane, by their measured effect on the calibration set.

use std::fmt::Write;

use seq2seq::desc::LayerSpec;
use seq2seq::format::{Role, Slot, TensorId};

use super::calibrate::Calibration;
use super::quantize_rows;
use crate::error::{Error, Result};
use crate::model::dequant::missing;
use crate::model::{decode_lines, Keep, LoadedModel};

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
pub(crate) struct QuantLayer {
    pub(crate) spec: LayerSpec,
    pub(crate) name: String,
    pub(crate) codes: [Vec<i8>; 2],
    pub(crate) scales: [Vec<f32>; 2],
}

impl QuantLayer {
    pub(crate) fn params(&self) -> usize {
        self.codes[0].len()
    }
    /// The weights as the quantized model sees them, with one or two planes.
    fn dequantized(&self, planes: usize) -> Vec<f32> {
        self.dequantized_rows(&vec![planes > 1; self.spec.rows])
    }
    /// The weights with the residual plane in the rows marked `two` only.
    pub(crate) fn dequantized_rows(&self, two: &[bool]) -> Vec<f32> {
        let cols = self.spec.cols;
        (0..self.codes[0].len())
            .map(|i| {
                let planes = 1 + two[i / cols] as usize;
                (0..planes)
                    .map(|p| self.codes[p][i] as f32 * self.scales[p][i / cols])
                    .sum()
            })
            .collect()
    }
}

/// The f32 weights of layer `s` of the f32 model `m`.
pub(crate) fn float_weights<'m>(m: &'m LoadedModel, s: &LayerSpec) -> Result<&'m [f32]> {
    let id = TensorId::new(s.role, s.layer, s.dir, Slot::Weight);
    match m.file().data::<f32>(id) {
        Ok(Some((_, d))) => Ok(d),
        Ok(None) => Err(missing(m, id)),
        Err(e) => Err(Error::model(&m.path)(e)),
    }
}

/// What stands for an embedding's input statistics: an embedding row's error reaches
/// the model through the first recurrent layer's input matrix, so it is weighed by
/// `W^T W` of that matrix's first `cols` columns (upper triangle, `cols x cols`).
pub(crate) fn embedding_hessian(m: &LoadedModel, s: &LayerSpec) -> Result<Vec<f64>> {
    let consumer = if s.role == Role::EncEmb {
        Role::EncWih
    } else {
        Role::DecWih
    };
    let n = s.cols;
    let mut h = vec![0.0f64; n * n];
    for c in m
        .file()
        .desc()
        .layer_specs()
        .iter()
        .filter(|c| c.role == consumer && c.layer == 0)
    {
        for row in float_weights(m, c)?.chunks(c.cols) {
            for i in 0..n {
                for j in i..n {
                    h[i * n + j] += row[i] as f64 * row[j] as f64;
                }
            }
        }
    }
    Ok(h)
}

/// The first rows of the blocks of layer `s` that share inputs (and so a Hessian in
/// the calibration), in order.
pub(crate) fn hessian_blocks(c: &Calibration, s: &LayerSpec) -> Vec<usize> {
    let mut starts: Vec<usize> = c
        .hessians
        .map
        .keys()
        .filter(|k| (k.0, k.1, k.2) == (s.role, s.layer, s.dir))
        .map(|k| k.3)
        .collect();
    starts.sort_unstable();
    starts
}

/// Rounds every layer of the f32 model to int8 (with error compensation when there is
/// a calibration) and prepares each one's residual plane.
pub(crate) fn round_layers(
    m: &LoadedModel,
    calib: Option<&Calibration>,
) -> Result<Vec<QuantLayer>> {
    let desc = *m.file().desc();
    let mut out = vec![];
    for s in desc.layer_specs() {
        let w = float_weights(m, &s)?;
        let (mut q, mut scales) = quantize_rows(w, s.cols);
        if let Some(c) = calib {
            // Error-compensating rounding, block by block of rows that share inputs.
            let starts = hessian_blocks(c, &s);
            for (i, &r0) in starts.iter().enumerate() {
                let r1 = starts.get(i + 1).copied().unwrap_or(s.rows);
                let (_, h) = &c.hessians.map[&(s.role, s.layer, s.dir, r0)];
                let (block, bs) =
                    crate::quantize::gptq::quantize_rows(&w[r0 * s.cols..r1 * s.cols], s.cols, h);
                q[r0 * s.cols..r1 * s.cols].copy_from_slice(&block);
                scales[r0..r1].copy_from_slice(&bs);
            }
            if s.is_embedding() {
                let h = embedding_hessian(m, &s)?;
                (q, scales) = crate::quantize::gptq::quantize_rows(w, s.cols, &h);
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
fn with_weights(m: &LoadedModel, layers: &[QuantLayer], planes: &[usize]) -> Result<LoadedModel> {
    let weights: Vec<(LayerSpec, Vec<f32>)> = layers
        .iter()
        .zip(planes)
        .filter(|(_, &p)| p > 0)
        .map(|(l, &p)| (l.spec, l.dequantized(p)))
        .collect();
    let replaced: Vec<(LayerSpec, &[f32])> =
        weights.iter().map(|(s, w)| (*s, w.as_slice())).collect();
    crate::model::dequant::with_weights(m, &replaced)
}

/// Percentage of `lines` on which `m` gives the same output ids as `reference`.
fn agreement(m: &LoadedModel, lines: &[String], reference: &[Vec<u16>]) -> Result<f64> {
    let out = decode_lines(m, lines, Keep::default())?;
    let same = out
        .iter()
        .zip(reference)
        .filter(|(a, b)| &a.ids == *b)
        .count();
    Ok(100.0 * same as f64 / lines.len().max(1) as f64)
}

/// Chooses the layers that get a residual plane (see [`Planes`]); reports what it did.
pub(crate) fn choose_planes(
    m: &LoadedModel,
    layers: &[QuantLayer],
    planes: &Planes,
    calib: Option<&Calibration>,
    report: &mut String,
) -> Result<Vec<bool>> {
    let target = match planes {
        Planes::None => return Ok(vec![false; layers.len()]),
        Planes::Layers(names) => {
            for n in names {
                if !layers.iter().any(|l| &l.name == n) {
                    let all: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
                    return Err(Error::usage(format!(
                        "--planes: {n:?} is not a layer of this model ({})",
                        all.join(", ")
                    )));
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
pub(crate) fn solo_costs(
    m: &LoadedModel,
    layers: &[QuantLayer],
    lines: &[String],
    reference: &[Vec<u16>],
) -> Result<Vec<f64>> {
    (0..layers.len())
        .map(|i| {
            let mut planes = vec![0; layers.len()];
            planes[i] = 1;
            Ok(100.0 - agreement(&with_weights(m, layers, &planes)?, lines, reference)?)
        })
        .collect()
}
