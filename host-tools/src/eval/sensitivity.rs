//! Per-layer sensitivity (`s2s check --sensitivity`): what each layer's quantized
//! weights cost alone.
//!
//! For each dense layer the float reference runs with that layer's weights replaced by
//! the ones the quantized file stores (its int8 planes times their row scales,
//! [`crate::model::dequant`]), every other layer and all the arithmetic in f32, on
//! the host's own f32 precision; the sequence agreement with the reference is that
//! layer's row. A last row has every layer's quantized weights with f32 arithmetic:
//! the gap between it and the quantized file's own agreement is what the integer
//! activations cost.

use std::fmt::Write;

use seq2seq::desc::LayerSpec;

use super::check::Agreement;
use super::rates::{Report, BUCKETS};
use crate::error::Result;
use crate::model::dequant::{dequantize, with_weights};
use crate::model::{decode_each, Keep, LoadedModel};

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The layer's name (as in `[weights]`), or what the row has quantized.
    pub name: String,
    /// Weights quantized in this row.
    pub weights: usize,
    /// The layer's int8 planes (0 for the row of all layers).
    pub planes: usize,
    /// Sequence agreement with the reference, overall.
    pub all: Agreement,
    /// The same by source length, per bucket of [`BUCKETS`].
    pub by_length: Vec<Agreement>,
}

/// The table: one row per layer, then all layers together.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sensitivity {
    /// The rows.
    pub rows: Vec<Row>,
}

/// The lines of `sources` the float `reference` decodes, with its outputs.
pub(crate) fn reference_outputs(
    reference: &LoadedModel,
    sources: &[String],
) -> Result<(Vec<String>, Vec<Vec<u16>>)> {
    Ok(decode_each(reference, sources, &[], Keep::default())?
        .into_iter()
        .zip(sources)
        .filter_map(|(d, src)| Some((src.clone(), d.ok()?.ids)))
        .unzip())
}

/// How many of `lines` model `m` decodes to `want`, overall and per bucket of
/// [`BUCKETS`] of source length.
pub(crate) fn agreement_by_length(
    m: &LoadedModel,
    lines: &[String],
    want: &[Vec<u16>],
) -> Result<(Agreement, Vec<Agreement>)> {
    let got = decode_each(m, lines, &[], Keep::default())?;
    let mut all = Agreement::default();
    let mut by = vec![Agreement::default(); BUCKETS.len()];
    for ((g, w), src) in got.iter().zip(want).zip(lines) {
        let same = g.as_ref().is_ok_and(|g| &g.ids == w) as usize;
        let len = src.chars().count();
        all.sequences += 1;
        all.same += same;
        if let Some(b) = BUCKETS
            .iter()
            .position(|(lo, hi)| (*lo..=*hi).contains(&len))
        {
            by[b].sequences += 1;
            by[b].same += same;
        }
    }
    Ok((all, by))
}

/// Measures the sensitivity of every layer of the quantized `quant` (w8a16 or w8f32)
/// against its f32 `reference` on `sources`. Lines the reference cannot decode are left
/// out (`s2s check` reports them).
pub fn sensitivity(
    quant: &LoadedModel,
    reference: &LoadedModel,
    sources: &[String],
) -> Result<Sensitivity> {
    let (lines, want) = reference_outputs(reference, sources)?;
    let measure = |replaced: &[(LayerSpec, &[f32])]| -> Result<(Agreement, Vec<Agreement>)> {
        agreement_by_length(&with_weights(reference, replaced)?, &lines, &want)
    };
    let specs = quant.file().desc().layer_specs();
    let mut weights = Vec::with_capacity(specs.len());
    for s in specs.iter() {
        weights.push((*s, dequantize(quant, s)?));
    }
    let mut rows = Vec::with_capacity(weights.len() + 1);
    for (s, (w, planes)) in &weights {
        let (all, by_length) = measure(&[(*s, w)])?;
        rows.push(Row {
            name: crate::import::layer_name(s),
            weights: w.len(),
            planes: *planes,
            all,
            by_length,
        });
    }
    let every: Vec<(LayerSpec, &[f32])> = weights
        .iter()
        .map(|(s, (w, _))| (*s, w.as_slice()))
        .collect();
    let (all, by_length) = measure(&every)?;
    rows.push(Row {
        name: "every layer (f32 math)".into(),
        weights: every.iter().map(|(_, w)| w.len()).sum(),
        planes: 0,
        all,
        by_length,
    });
    Ok(Sensitivity { rows })
}

impl Sensitivity {
    /// The table as text: agreement when only that layer's weights are quantized.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let used: Vec<usize> = (0..BUCKETS.len())
            .filter(|&b| self.rows.iter().any(|r| r.by_length[b].sequences > 0))
            .collect();
        let _ = write!(
            s,
            "\nper layer: agreement with only its weights quantized (the rest f32)\n{:<24} {:>8} {:>6} {:>9}",
            "layer", "weights", "planes", "all"
        );
        for &b in &used {
            let _ = write!(s, " {:>8}", Report::bucket_name(BUCKETS[b]));
        }
        s.push('\n');
        for r in &self.rows {
            let planes = if r.planes == 0 {
                "-".to_string()
            } else {
                r.planes.to_string()
            };
            let _ = write!(
                s,
                "{:<24} {:>8} {:>6} {:>7.2} %",
                r.name,
                r.weights,
                planes,
                r.all.percent()
            );
            for &b in &used {
                let _ = write!(s, " {:>6.2} %", r.by_length[b].percent());
            }
            s.push('\n');
        }
        s
    }
}
