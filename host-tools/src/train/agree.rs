//! Does the written model file decode like the training code? Every validation source
//! goes through the training code's own greedy decoding (candle, its float arithmetic)
//! and through `s2s run`'s decoder on the written file (the no_std core). A difference
//! is accepted only at a near tie: where, at the first step the two outputs differ, the
//! training code's two best logits are less than [`NEAR_TIE`] apart.

use serde::Serialize;

use super::model::Greedy;
use crate::model::{is_near_tie, Decoded, NEAR_TIE};

/// One sequence the two decoders disagree on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The source.
    pub source: String,
    /// Training code's output ids and the model file's.
    pub training: Vec<u32>,
    /// See `training`.
    pub file: Vec<u16>,
    /// The first step where they differ.
    pub step: usize,
    /// The training code's top-two logit gap at that step.
    pub gap: f32,
}

/// The agreement of the two decoders over a set of sources.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Agreement {
    /// Sources compared.
    pub sequences: usize,
    /// Sources decoded identically.
    pub equal: usize,
    /// Every difference.
    pub differences: Vec<Difference>,
}

impl Agreement {
    /// Compares decodes of the same sources.
    pub fn new(sources: &[String], training: &[Greedy], file: &[Decoded]) -> Agreement {
        let mut a = Agreement::default();
        for ((s, t), f) in sources.iter().zip(training).zip(file) {
            a.sequences += 1;
            let same = t.ids.len() == f.ids.len()
                && t.ids.iter().zip(&f.ids).all(|(&x, &y)| x == u32::from(y));
            if same {
                a.equal += 1;
                continue;
            }
            let step = t
                .ids
                .iter()
                .zip(&f.ids)
                .take_while(|(&x, &y)| x == u32::from(y))
                .count();
            a.differences.push(Difference {
                source: s.clone(),
                training: t.ids.clone(),
                file: f.ids.clone(),
                step,
                gap: t.gaps.get(step).copied().unwrap_or(f32::INFINITY),
            });
        }
        a
    }

    /// Percentage of sources decoded identically.
    pub fn percent(&self) -> f64 {
        100.0 * self.equal as f64 / self.sequences.max(1) as f64
    }

    /// Differences that are not at a near tie.
    pub fn far(&self) -> impl Iterator<Item = &Difference> {
        self.differences.iter().filter(|d| !is_near_tie(d.gap))
    }

    /// Whether the rule holds: at least `min_percent` equal, every difference at a near
    /// tie.
    pub fn holds(&self, min_percent: f64) -> bool {
        self.percent() >= min_percent && self.far().next().is_none()
    }

    /// One line for the user.
    pub fn summary(&self) -> String {
        let far = self.far().count();
        format!(
            "the written model decodes {} of {} validation sources ({:.2} %) as the training code does; {} differ at a near tie (top-two gap < {NEAR_TIE:e}), {far} elsewhere",
            self.equal,
            self.sequences,
            self.percent(),
            self.differences.len() - far,
        )
    }
}
