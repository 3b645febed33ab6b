//! One attention map (rows = output steps, columns = source positions) and how it is
//! made from a model and a source.

use crate::error::{Error, Place, Result};
use crate::model::{decode_each, positions_for, Keep, LoadedModel};

/// One attention map: rows = output steps, columns = source positions.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionMap {
    /// Picture title, e.g. `"netra: sophea -> សុភា"`.
    pub title: String,
    /// Column labels: the source tokens (may include `"<pad>"` or `"</s>"`).
    pub source: Vec<String>,
    /// Row labels: the output tokens; the last one may be an end token such as
    /// `"</s>"` or `"\n"` (control characters are shown visibly, e.g. `⏎`).
    pub output: Vec<String>,
    /// `output.len()` rows of `source.len()` weights in `[0, 1]`, each row summing
    /// to about 1.
    pub weights: Vec<Vec<f32>>,
}

impl AttentionMap {
    /// Entropy of row `row` in nats, `-Σ p ln p` over its positive weights: 0 for a
    /// one-hot row, `ln n` for a uniform row over `n` columns.
    ///
    /// # Panics
    /// If `row >= self.weights.len()`.
    pub fn entropy(&self, row: usize) -> f32 {
        let h: f64 = self.weights[row]
            .iter()
            .filter(|p| p.is_finite() && **p > 0.0)
            .map(|&p| {
                let p = f64::from(p);
                -p * p.ln()
            })
            .sum();
        h as f32
    }

    /// The map as JSON: `{"source", "output", "weights", "entropy"}`, the entropy of
    /// each row in nats as `s2s run --attention` and the explorer compute it
    /// (`attention_core::entropy`).
    pub fn to_json(&self) -> serde_json::Value {
        let entropy: Vec<f32> = self
            .weights
            .iter()
            .map(|w| attention_core::entropy::<s2s_kernels::F32>(w))
            .collect();
        serde_json::json!({
            "source": self.source,
            "output": self.output,
            "weights": self.weights,
            "entropy": entropy,
        })
    }

    /// The weight at `(row, col)`, NaN where the map is ragged.
    pub(crate) fn weight(&self, row: usize, col: usize) -> f32 {
        self.weights
            .get(row)
            .and_then(|r| r.get(col))
            .copied()
            .unwrap_or(f32::NAN)
    }

    /// Entropy of a row, NaN where the row is missing.
    pub(crate) fn row_entropy(&self, row: usize) -> f32 {
        if row < self.weights.len() {
            self.entropy(row)
        } else {
            f32::NAN
        }
    }

    /// What is wrong when the weights do not form an `output.len() x source.len()` grid.
    pub(crate) fn shape_error(&self) -> Option<String> {
        if self.weights.len() != self.output.len() {
            return Some(format!(
                "the map has {} output labels but {} weight rows",
                self.output.len(),
                self.weights.len()
            ));
        }
        for (r, row) in self.weights.iter().enumerate() {
            if row.len() != self.source.len() {
                return Some(format!(
                    "weight row {r} has {} values for {} source labels",
                    row.len(),
                    self.source.len()
                ));
            }
        }
        None
    }
}

/// The attention map of one source through a model.
pub fn attention_map(m: &LoadedModel, source: &str) -> Result<AttentionMap> {
    let file = m.file();
    if !file.desc().has_attention() {
        return Err(Error::usage(format!(
            "{}: the model has no attention to draw",
            m.path.display()
        )));
    }
    let keep = Keep {
        weights: true,
        ..Keep::default()
    };
    // A refused source is the model's error, with the `--positions` that takes it.
    let d = decode_each(m, &[source.to_string()], &[], keep)?
        .remove(0)
        .map_err(|source| Error::Model {
            path: m.path.clone(),
            place: Place::File,
            positions: positions_for(file.desc(), &source),
            source,
        })?;
    let mut output = d.tokens.clone();
    if d.weights.len() > output.len() {
        output.push(
            file.tgt_vocab()
                .get(file.desc().tgt_end)
                .unwrap_or("?")
                .into(),
        );
    }
    let name = m
        .path
        .file_stem()
        .map_or("model".into(), |s| s.to_string_lossy().to_string());
    Ok(AttentionMap {
        title: format!("{name}: {source} -> {}", d.text),
        source: d.source,
        output,
        weights: d.weights,
    })
}
