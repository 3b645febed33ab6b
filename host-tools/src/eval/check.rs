//! `s2s check`: a quantized model against its float reference, on the same inputs.
//!
//! Outputs are compared whole (sequence agreement) and position by position (token
//! agreement). Attention weights, logits and intermediate tensors are compared on the
//! steps where both models decoded the same prefix (after the first differing token
//! they no longer see the same inputs); the signal-to-quantization-noise ratio of a
//! tensor kind is `10 log10(sum ref^2 / sum (q - ref)^2)` over those values.

use std::collections::BTreeMap;
use std::fmt::Write;

use seq2seq::Probe;

use crate::error::{Error, Result};
use crate::eval::rates::{split_tokens, Report, BUCKETS};
use crate::model::{decode_each, Decoded, Keep, LoadedModel};

/// Sums for one compared quantity.
#[derive(Clone, Copy, Debug, Default)]
pub struct Diff {
    /// Values compared.
    pub n: usize,
    /// Largest absolute difference.
    pub max: f64,
    /// Sum of absolute differences.
    pub sum_abs: f64,
    /// Sum of squared reference values.
    pub signal: f64,
    /// Sum of squared differences.
    pub noise: f64,
}

impl Diff {
    fn add(&mut self, q: &[f32], r: &[f32]) {
        for (a, b) in q.iter().zip(r) {
            let d = (*a as f64 - *b as f64).abs();
            self.n += 1;
            self.max = self.max.max(d);
            self.sum_abs += d;
            self.signal += (*b as f64).powi(2);
            self.noise += d * d;
        }
    }
    /// Mean absolute difference.
    pub fn mean(&self) -> f64 {
        self.sum_abs / self.n.max(1) as f64
    }
    /// SQNR in dB (infinite when identical).
    pub fn sqnr_db(&self) -> f64 {
        10.0 * (self.signal / self.noise).log10()
    }
}

/// Sequences compared and sequences with identical outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agreement {
    /// Sequences compared.
    pub sequences: usize,
    /// Of them, identical.
    pub same: usize,
}

impl Agreement {
    /// In percent (0 for no sequences).
    pub fn percent(&self) -> f64 {
        100.0 * self.same as f64 / self.sequences.max(1) as f64
    }
}

/// The result of a check.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// Sequences compared.
    pub sequences: usize,
    /// Sequences with identical outputs.
    pub same_sequences: usize,
    /// Positions compared (the longer output of each pair).
    pub tokens: usize,
    /// Positions with the same token.
    pub same_tokens: usize,
    /// Attention weights on aligned steps.
    pub attention: Diff,
    /// Logits on aligned steps.
    pub logits: Diff,
    /// Intermediate tensors by kind.
    pub probes: BTreeMap<&'static str, Diff>,
    /// Error rates of the quantized and the reference model, with references.
    pub rates: Option<(Report, Report)>,
    /// Sequence agreement by source length (characters): each of [`BUCKETS`] with its
    /// sequences compared and identical.
    pub by_length: Vec<((usize, usize), Agreement)>,
    /// A few differing outputs: (input, reference output, quantized output).
    pub examples: Vec<(String, String, String)>,
    /// Inputs left out because a model could not decode them: (index among the
    /// sources, why).
    pub failed: Vec<(usize, String)>,
}

impl Default for CheckReport {
    fn default() -> Self {
        CheckReport {
            sequences: 0,
            same_sequences: 0,
            tokens: 0,
            same_tokens: 0,
            attention: Diff::default(),
            logits: Diff::default(),
            probes: BTreeMap::new(),
            rates: None,
            by_length: BUCKETS.iter().map(|&b| (b, Agreement::default())).collect(),
            examples: Vec::new(),
            failed: Vec::new(),
        }
    }
}

impl CheckReport {
    /// Sequence agreement in percent.
    pub fn sequence_agreement(&self) -> f64 {
        100.0 * self.same_sequences as f64 / self.sequences.max(1) as f64
    }
    /// Token agreement in percent.
    pub fn token_agreement(&self) -> f64 {
        100.0 * self.same_tokens as f64 / self.tokens.max(1) as f64
    }

    /// The report as text.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sequence agreement  {:.2} % ({} of {})",
            self.sequence_agreement(),
            self.same_sequences,
            self.sequences
        );
        let _ = writeln!(
            s,
            "token agreement     {:.2} % ({} of {})",
            self.token_agreement(),
            self.same_tokens,
            self.tokens
        );
        let _ = writeln!(s, "\nby source length    sequences   agreement");
        for (b, a) in self.by_length.iter().filter(|(_, a)| a.sequences > 0) {
            let _ = writeln!(
                s,
                "  {:<16} {:>10} {:>9.2} %",
                Report::bucket_name(*b),
                a.sequences,
                a.percent()
            );
        }
        let _ = writeln!(
            s,
            "\n{:<18} {:>12} {:>12} {:>10}",
            "on aligned steps", "max |diff|", "mean |diff|", "SQNR dB"
        );
        let mut row = |name: &str, d: &Diff| {
            let _ = writeln!(
                s,
                "{name:<18} {:>12.3e} {:>12.3e} {:>10.1}",
                d.max,
                d.mean(),
                d.sqnr_db()
            );
        };
        if self.attention.n > 0 {
            row("attention weights", &self.attention);
        }
        row("logits", &self.logits);
        for (k, d) in &self.probes {
            if d.n > 0 {
                row(k, d);
            }
        }
        if let Some((q, r)) = &self.rates {
            let _ = writeln!(
                s,
                "\nagainst the references: TER {:.2} % / SER {:.2} % quantized, TER {:.2} % / SER {:.2} % reference",
                100.0 * q.all.ter(),
                100.0 * q.all.ser(),
                100.0 * r.all.ter(),
                100.0 * r.all.ser()
            );
        }
        if !self.examples.is_empty() {
            let _ = writeln!(s, "\nfirst differences (input: reference | quantized):");
            for (i, r, q) in &self.examples {
                let _ = writeln!(s, "  {i}: {r} | {q}");
            }
        }
        s
    }
}

fn probe_name(p: Probe) -> Option<&'static str> {
    Some(match p {
        Probe::EncoderOutputs => "encoder outputs",
        Probe::Memory => "memory",
        Probe::DecoderState => "decoder state",
        Probe::Context => "context",
        Probe::EncoderCells => "encoder cells",
        Probe::DecoderCells => "decoder cells",
        _ => return None,
    })
}

/// Compares `quant` with `reference` on `sources`; `references` (same length) adds
/// error rates of both.
pub fn check(
    quant: &LoadedModel,
    reference: &LoadedModel,
    sources: &[String],
    references: Option<&[String]>,
    beam: Option<crate::model::beam::BeamOptions>,
) -> Result<CheckReport> {
    // A beam search compares outputs only: its steps belong to many hypotheses.
    let greedy = beam.is_none();
    let keep = Keep {
        weights: greedy,
        logits: greedy,
        probes: greedy,
        beam,
        ..Keep::default()
    };
    let q = decode_each(quant, sources, &[], keep)?;
    let r = decode_each(reference, sources, &[], keep)?;
    let mut rep = CheckReport::default();
    // The lines both models decoded: (index, quantized, reference).
    let mut both = Vec::new();
    for (i, (a, b)) in q.iter().zip(&r).enumerate() {
        match (a, b) {
            (Ok(a), Ok(b)) => both.push((i, a, b)),
            (Err(e), Err(f)) if e == f => rep.failed.push((i, e.to_string())),
            (Err(e), _) => rep
                .failed
                .push((i, format!("{}: {e}", quant.path.display()))),
            (_, Err(e)) => rep
                .failed
                .push((i, format!("{}: {e}", reference.path.display()))),
        }
    }
    for &(i, a, b) in &both {
        compare(&mut rep, &sources[i], a, b);
    }
    if let Some(refs) = references {
        let sep = reference.file().separator().to_string();
        let (mut rq, mut rr) = (Report::default(), Report::default());
        for &(i, a, b) in &both {
            let (src, t) = (&sources[i], &refs[i]);
            let t = split_tokens(t, &sep);
            let len = src.chars().count();
            rq.add(len, &a.tokens, &t);
            rr.add(len, &b.tokens, &t);
        }
        rep.rates = Some((rq, rr));
    }
    Ok(rep)
}

/// Refuses to compare two different models: `check` compares a model with the one it
/// was quantized from, so the architecture (every field of the description but the
/// number formats of the integer path), the vocabularies and the separator must be the
/// same; the precisions may be any pair.
pub fn same_model(quant: &LoadedModel, reference: &LoadedModel) -> Result {
    let (q, r) = (quant.file(), reference.file());
    let vocab = |v: seq2seq::vocab::Vocab<'_>| -> Vec<String> {
        (0..v.len())
            .map(|i| v.get(i as u16).unwrap_or("").to_string())
            .collect()
    };
    let differs = if vocab(q.src_vocab()) != vocab(r.src_vocab()) {
        Some("source vocabularies")
    } else if vocab(q.tgt_vocab()) != vocab(r.tgt_vocab()) {
        Some("target vocabularies")
    } else if q.separator() != r.separator() {
        Some("output separators")
    } else if architecture(q.desc()) != architecture(r.desc()) {
        Some("architectures")
    } else {
        None
    };
    match differs {
        None => Ok(()),
        Some(what) => Err(Error::usage(format!(
            "{} and {} are not the same model (their {what} differ): check compares a model with the one it was quantized from",
            quant.path.display(),
            reference.path.display()
        ))),
    }
}

/// A description without the integer path's number formats (which quantization sets).
fn architecture(d: &seq2seq::ModelDesc) -> seq2seq::ModelDesc {
    let mut a = *d;
    a.fmt_src_emb = Default::default();
    a.fmt_dec_emb = Default::default();
    a.fmt_memory = Default::default();
    a.attention.fmt_keys = Default::default();
    a.attention.scale_q = Default::default();
    a.cells.fmt_enc = Default::default();
    a.cells.fmt_dec = Default::default();
    a.extras.fmt_attentional = Default::default();
    a
}

fn compare(rep: &mut CheckReport, src: &str, q: &Decoded, r: &Decoded) {
    rep.sequences += 1;
    let same = q.ids == r.ids;
    rep.same_sequences += same as usize;
    let len = src.chars().count();
    if let Some((_, a)) = rep
        .by_length
        .iter_mut()
        .find(|((lo, hi), _)| (*lo..=*hi).contains(&len))
    {
        a.sequences += 1;
        a.same += same as usize;
    }
    rep.tokens += q.ids.len().max(r.ids.len());
    rep.same_tokens += q.ids.iter().zip(&r.ids).filter(|(a, b)| a == b).count();
    if !same && rep.examples.len() < 5 {
        rep.examples
            .push((src.into(), r.text.clone(), q.text.clone()));
    }
    // Steps decoded from the same prefix: up to and including the first difference.
    let first_diff = q
        .ids
        .iter()
        .zip(&r.ids)
        .position(|(a, b)| a != b)
        .unwrap_or(q.ids.len().min(r.ids.len()));
    let aligned = (first_diff + 1).min(q.logits.len()).min(r.logits.len());
    for s in 0..aligned {
        rep.logits.add(&q.logits[s], &r.logits[s]);
        if let (Some(a), Some(b)) = (q.weights.get(s), r.weights.get(s)) {
            rep.attention.add(a, b);
        }
    }
    for (p, qv) in &q.probes {
        let (Some(name), Some(rv)) = (probe_name(*p), r.probes.get(p)) else {
            continue;
        };
        // Per-source probes occur once; per-step probes once per step.
        let n = if qv.len() == 1 { 1 } else { aligned };
        let d = rep.probes.entry(name).or_default();
        for (a, b) in qv.iter().zip(rv).take(n) {
            d.add(a, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(ids: &[u16]) -> Decoded {
        Decoded {
            ids: ids.to_vec(),
            ..Decoded::default()
        }
    }

    #[test]
    fn agreement_is_counted_by_source_length_bucket() {
        let mut rep = CheckReport::default();
        for (src, q, r) in [
            ("abc", &[1u16, 2][..], &[1u16, 2][..]),
            ("abcd", &[1, 2], &[1, 3]),
            ("abcdefghi", &[4], &[4]),
            ("fourteen chars", &[5], &[6]),
            ("ស្រី", &[7], &[7]), // 4 characters, 12 bytes
        ] {
            compare(&mut rep, src, &decoded(q), &decoded(r));
        }
        let by: Vec<(String, usize, usize)> = rep
            .by_length
            .iter()
            .map(|(b, a)| (Report::bucket_name(*b), a.sequences, a.same))
            .collect();
        assert_eq!(
            by,
            [
                ("1-4".to_string(), 3, 2),
                ("5-8".to_string(), 0, 0),
                ("9-12".to_string(), 1, 1),
                ("13+".to_string(), 1, 0),
            ]
        );
        let text = rep.render();
        assert!(
            text.contains("  1-4                       3     66.67 %"),
            "{text}"
        );
        assert!(
            !text.contains("  5-8"),
            "empty buckets are not shown: {text}"
        );
    }
}
