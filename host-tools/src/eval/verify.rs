//! `s2s verify`: does a model file reproduce its framework's own decodes?
//!
//! The reference decodes come in a JSON Lines file, one object per source (blank lines
//! are skipped; line numbers count every line):
//!
//! ```json
//! {"source": "kelso", "ids": [5, 12, 13, 2, 6, 24], "probs": [0.979, 0.596, 0.961, 0.725, 0.987, 0.509, 0.906], "gaps": [0.962, 0.259, 0.936, 0.451, 0.978, 0.271, 0.881]}
//! {"source": "kelso", "ids": [5, 12, 13, 2, 6, 24], "beam": 3}
//! ```
//!
//! * `source` (a string, required): the input as `s2s run` takes it.
//! * `ids` (required): the output's target token ids, in the model's target
//!   vocabulary, without the start token and without the end token (what
//!   `s2s run --ids` prints); `[]` for an output that ended at once.
//! * `beam` (optional): the beam width of the framework's search (1 to
//!   [`seq2seq::beam::MAX_WIDTH`]), decoded with the variant the model file records;
//!   without it the decode is greedy.
//! * `probs` (optional, greedy only): the framework's top-1 probability at each step:
//!   one per id, and one more for the step that chose the end token when the decode
//!   ended (`ids.len()` or `ids.len() + 1` values).
//! * `gaps` (optional, greedy only): the framework's top-two gap at each step (the two
//!   largest probabilities' difference), as many as `probs` may have.
//!
//! Every source is decoded with the model file the way `s2s run` decodes it (the same
//! host code, any precision). A source agrees when its ids are the reference's. For a
//! disagreement the report gives the first step that differs, both tokens, and the
//! top-two gap there: of our logits for a greedy decode (the prefix before it is the
//! same, so both decoders saw the same inputs), of our two best final scores (natural
//! log) for a beam search. It is a near tie when that gap, or the reference's own gap at
//! that step when the line gives `gaps`, is below [`NEAR_TIE`], the project's rule
//! (`crate::model::tie`). A near tie is labelled as one but still counts as a
//! disagreement. With `probs`, each source's largest `|p_ref - p_ours|` over the steps
//! both decoders took with the same prefix (up to the first difference) is measured.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Place, Result};
use crate::io::LineReader;
use crate::model::beam::BeamOptions;
use crate::model::{decode_each, is_near_tie, top_two, Decoded, Keep, LoadedModel, NEAR_TIE};

/// The fields of a reference line, for the message naming an unknown one.
const FIELDS: &str = "source, ids, beam, probs, gaps";

/// One reference decode: a line of the expect file.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    /// The line number, from 1.
    pub line: usize,
    /// The source.
    pub source: String,
    /// The output's target ids (no start or end token).
    pub ids: Vec<u16>,
    /// Beam width; `None` for greedy decoding.
    pub beam: Option<usize>,
    /// The framework's top-1 probability at each step.
    pub probs: Option<Vec<f64>>,
    /// The framework's top-two gap at each step.
    pub gaps: Option<Vec<f64>>,
}

/// What a reference line must fit: the model's target vocabulary.
struct Targets {
    size: usize,
    end: u16,
    end_text: String,
}

/// Parses one line of the expect file (see the module docs); the error message names
/// the field.
fn parse_line(line: usize, text: &str, t: &Targets) -> std::result::Result<Expected, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(o) = v else {
        return Err("not a JSON object".into());
    };
    if let Some(k) = o
        .keys()
        .find(|k| !FIELDS.split(", ").any(|f| f == k.as_str()))
    {
        return Err(format!("unknown field {k:?} (the fields: {FIELDS})"));
    }
    let source = match o.get("source") {
        Some(Value::String(s)) if s.contains(['\t', '\n', '\r']) => {
            return Err("source: a tab or line break cannot be in a source".into())
        }
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("source: a string is needed".into()),
        None => return Err("source: missing".into()),
    };
    let Some(ids_v) = o.get("ids") else {
        return Err("ids: missing".into());
    };
    let Value::Array(ids_v) = ids_v else {
        return Err("ids: a list of target token ids is needed".into());
    };
    let mut ids = Vec::with_capacity(ids_v.len());
    for (i, x) in ids_v.iter().enumerate() {
        let id = x.as_u64().filter(|&n| n < t.size as u64).ok_or_else(|| {
            format!(
                "ids[{i}]: {x} is not a target token id (0 to {} in this model)",
                t.size - 1
            )
        })?;
        let id = id as u16;
        if id == t.end {
            return Err(format!(
                "ids[{i}]: {id} is the end token {:?}, which the ids leave out",
                t.end_text
            ));
        }
        ids.push(id);
    }
    let beam = match o.get("beam") {
        None => None,
        Some(x) => {
            let max = seq2seq::beam::MAX_WIDTH;
            let k = x
                .as_u64()
                .filter(|k| (1..=max as u64).contains(k))
                .ok_or_else(|| format!("beam: {x} is not a beam width (1 to {max})"))?;
            Some(k as usize)
        }
    };
    let series = |name: &str| -> std::result::Result<Option<Vec<f64>>, String> {
        let Some(x) = o.get(name) else {
            return Ok(None);
        };
        if let Some(k) = beam {
            return Err(format!(
                "{name}: per-step values are compared for greedy decodes only (this line has beam {k})"
            ));
        }
        let Value::Array(a) = x else {
            return Err(format!("{name}: a list of numbers is needed"));
        };
        if a.len() != ids.len() && a.len() != ids.len() + 1 {
            return Err(format!(
                "{name}: {} values for {} ids: one per step is needed ({}, or {} with the end token's step)",
                a.len(),
                ids.len(),
                ids.len(),
                ids.len() + 1
            ));
        }
        a.iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .filter(|p| (0.0..=1.0).contains(p) || (name == "gaps" && *p >= 0.0))
                    .ok_or_else(|| {
                        let range = if name == "probs" {
                            "a probability, 0 to 1"
                        } else {
                            "a gap, 0 or more"
                        };
                        format!("{name}[{i}]: {x} is not {range}")
                    })
            })
            .collect::<std::result::Result<Vec<f64>, String>>()
            .map(Some)
    };
    let probs = series("probs")?;
    let gaps = series("gaps")?;
    Ok(Expected {
        line,
        source,
        ids,
        beam,
        probs,
        gaps,
    })
}

/// Where a source's decode first differs from its reference.
#[derive(Clone, Debug, PartialEq)]
pub struct FirstDifference {
    /// The step, from 0.
    pub step: usize,
    /// The reference's token there (the end token where the reference ended).
    pub expected: u16,
    /// Ours (the end token where our decode ended; `None` where it stopped at the
    /// model's step cap).
    pub got: Option<u16>,
    /// The top-two gap there: our logits' for greedy, our two best final scores' for
    /// a beam search (`None` when there is no second).
    pub ours: Option<f32>,
    /// The reference's gap at that step, when the line gives `gaps`.
    pub reference: Option<f32>,
}

impl FirstDifference {
    /// Whether it is a near tie: by the reference's gap when given, else by ours.
    pub fn near_tie(&self) -> bool {
        self.reference.or(self.ours).is_some_and(is_near_tie)
    }
}

/// The verdict on one reference line.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The line number.
    pub line: usize,
    /// The source.
    pub source: String,
    /// Beam width, `None` for greedy.
    pub beam: Option<usize>,
    /// Our output ids, or why the source could not be decoded.
    pub got: std::result::Result<Vec<u16>, String>,
    /// The first difference (`None` when the outputs agree or decoding failed).
    pub difference: Option<FirstDifference>,
    /// With `probs`: the largest `|p_ref - p_ours|` over the aligned steps.
    pub max_prob_diff: Option<f64>,
}

impl Verdict {
    /// Whether our decode is the reference's.
    pub fn agrees(&self) -> bool {
        self.got.is_ok() && self.difference.is_none()
    }
}

/// The result of `s2s verify`.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// One verdict per well-formed line, in file order.
    pub verdicts: Vec<Verdict>,
    /// The lines that are not a reference decode: (line, message naming the field).
    pub malformed: Vec<(usize, String)>,
}

impl VerifyReport {
    /// Sources whose decode is the reference's.
    pub fn agreeing(&self) -> usize {
        self.verdicts.iter().filter(|v| v.agrees()).count()
    }

    /// Whether every line is well-formed and every source agrees.
    pub fn passes(&self) -> bool {
        self.malformed.is_empty() && self.agreeing() == self.verdicts.len()
    }
}

/// The probability of the most likely token of a logit row (softmax in f64).
fn top_probability(logits: &[f32]) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    1.0 / sum
}

/// Compares one decode with its reference.
fn judge(e: &Expected, d: &Decoded, end: u16, max_steps: usize) -> Verdict {
    let got = &d.ids;
    let step = e.ids.iter().zip(got).take_while(|(a, b)| a == b).count();
    let difference = (e.ids != *got).then(|| {
        let ours = if e.beam.is_some() {
            match d.nbest.as_slice() {
                [a, b, ..] => Some((a.score - b.score) as f32),
                _ => None,
            }
        } else {
            d.logits.get(step).map(|row| top_two(row).1)
        };
        FirstDifference {
            step,
            expected: e.ids.get(step).copied().unwrap_or(end),
            got: match got.get(step) {
                Some(&id) => Some(id),
                None if got.len() < max_steps => Some(end),
                None => None,
            },
            ours,
            reference: e.gaps.as_ref().and_then(|g| g.get(step)).map(|&g| g as f32),
        }
    });
    // The steps both decoders took from the same prefix: up to the first difference
    // (its step included: the same inputs, a different choice).
    let max_prob_diff = e.probs.as_ref().map(|probs| {
        probs
            .iter()
            .zip(&d.logits)
            .take(step + 1)
            .map(|(p, row)| (p - top_probability(row)).abs())
            .fold(0.0, f64::max)
    });
    Verdict {
        line: e.line,
        source: e.source.clone(),
        beam: e.beam,
        got: Ok(got.clone()),
        difference,
        max_prob_diff,
    }
}

/// `s2s verify`: decodes every source of the reference file `expect` with `model` and
/// compares (see the module docs). Malformed lines are reported in the result and the
/// other lines are still judged; an unreadable or empty file is an error.
pub fn verify(m: &LoadedModel, expect: &Path) -> Result<VerifyReport> {
    let file = m.file();
    let desc = file.desc();
    let targets = Targets {
        size: file.tgt_vocab().len(),
        end: desc.tgt_end,
        end_text: file.tgt_vocab().get(desc.tgt_end).unwrap_or("").to_string(),
    };
    let (end, max_steps) = (desc.tgt_end, desc.max_steps);
    let mut report = VerifyReport::default();
    let mut expected = Vec::new();
    let mut lines = LineReader::open(Some(expect))?;
    while let Some(l) = lines.next_line()? {
        let text = match l.text {
            Ok(t) => t,
            Err(e) => {
                let message = match e {
                    Error::Invalid { message, .. } => message,
                    e => e.to_string(),
                };
                report.malformed.push((l.number, message));
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        match parse_line(l.number, &text, &targets) {
            Ok(e) => expected.push(e),
            Err(message) => report.malformed.push((l.number, message)),
        }
    }
    if expected.is_empty() && report.malformed.is_empty() {
        return Err(Error::invalid(
            expect.display(),
            Place::File,
            "no reference decodes: one JSON object per line is needed",
        ));
    }
    // Greedy lines together, then each beam width's, as `s2s run` decodes them.
    let mut widths: Vec<Option<usize>> = expected.iter().map(|e| e.beam).collect();
    widths.sort_unstable();
    widths.dedup();
    let mut verdicts: Vec<Option<Verdict>> = vec![None; expected.len()];
    for width in widths {
        let group: Vec<usize> = (0..expected.len())
            .filter(|&i| expected[i].beam == width)
            .collect();
        let sources: Vec<String> = group.iter().map(|&i| expected[i].source.clone()).collect();
        let keep = Keep {
            logits: width.is_none(),
            beam: width.map(|width| BeamOptions {
                width,
                variant: None,
                alpha: None,
            }),
            ..Keep::default()
        };
        for (&i, d) in group.iter().zip(decode_each(m, &sources, &[], keep)?) {
            let e = &expected[i];
            verdicts[i] = Some(match d {
                Ok(d) => judge(e, &d, end, max_steps),
                Err(why) => Verdict {
                    line: e.line,
                    source: e.source.clone(),
                    beam: e.beam,
                    got: Err(why.to_string()),
                    difference: None,
                    max_prob_diff: None,
                },
            });
        }
    }
    report.verdicts = verdicts.into_iter().flatten().collect();
    Ok(report)
}

/// A token for the report: its id and text (`end` where the decode stopped at the
/// step cap).
fn token(vocab: &seq2seq::Vocab<'_>, id: Option<u16>) -> String {
    match id {
        Some(id) => format!("{id} {:?}", vocab.get(id).unwrap_or("?")),
        None => "nothing (the model's step cap)".into(),
    }
}

/// `s2s verify` written out: the report on `out`, each malformed line and each source
/// that could not be decoded as `error: FILE:LINE: ...` on `errors`, and a last error
/// line when sources disagree. With `all`, every source gets a line, agreeing ones too.
/// Returns whether everything agrees.
pub fn verify_file(
    model: &Path,
    expect: &Path,
    all: bool,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<bool> {
    let m = LoadedModel::load(model)?;
    let report = verify(&m, expect)?;
    let vocab = m.file().tgt_vocab();
    let name = expect.display().to_string();
    let mut err = String::new();
    for (line, message) in &report.malformed {
        err += &format!(
            "error: {}\n",
            Error::invalid(&name, Place::Line(*line), message)
        );
    }
    let n = report.verdicts.len();
    let greedy = report.verdicts.iter().filter(|v| v.beam.is_none()).count();
    let beams = match n - greedy {
        0 => String::new(),
        b => format!(", {b} beam-searched"),
    };
    let mut text = format!(
        "{} against {name}: {n} sources ({greedy} greedy{beams})\n",
        model.display()
    );
    let agreeing = report.agreeing();
    text += &format!(
        "agreement     {agreeing} of {n} ({:.2} %)\n",
        100.0 * agreeing as f64 / n.max(1) as f64
    );
    let with_probs: Vec<&Verdict> = report
        .verdicts
        .iter()
        .filter(|v| v.max_prob_diff.is_some())
        .collect();
    if let Some(worst) = with_probs
        .iter()
        .max_by(|a, b| a.max_prob_diff.partial_cmp(&b.max_prob_diff).unwrap())
    {
        text += &format!(
            "probabilities largest |p_ref - p_ours| {:.2e} (line {}, {:?}), over {} sources with probs\n",
            worst.max_prob_diff.unwrap_or(0.0),
            worst.line,
            worst.source,
            with_probs.len()
        );
    }
    let mut listed = String::new();
    let mut near = 0;
    for v in &report.verdicts {
        let dp = v.max_prob_diff.map_or(String::new(), |d| {
            format!("; largest |p_ref - p_ours| {d:.2e}")
        });
        let how = v.beam.map_or("greedy".to_string(), |k| format!("beam {k}"));
        match (&v.got, &v.difference) {
            (Err(why), _) => {
                err += &format!(
                    "error: {}\n",
                    Error::invalid(&name, Place::Line(v.line), format!("{:?}: {why}", v.source))
                );
            }
            (Ok(_), Some(d)) => {
                let gap = |g: Option<f32>| g.map_or("none".to_string(), |g| format!("{g:.2e}"));
                let whose = if v.beam.is_some() {
                    "our two best scores' gap"
                } else {
                    "our top-two logit gap"
                };
                let reference = d
                    .reference
                    .map_or(String::new(), |g| format!(", the reference's {g:.2e}"));
                let tie = if d.near_tie() {
                    near += 1;
                    format!(": a near tie (< {NEAR_TIE:e})")
                } else {
                    String::new()
                };
                listed += &format!(
                    "  line {} {:?} ({how}): step {}: expected {}, got {}; {whose} {}{reference}{tie}{dp}\n",
                    v.line,
                    v.source,
                    d.step,
                    token(&vocab, Some(d.expected)),
                    token(&vocab, d.got),
                    gap(d.ours),
                );
            }
            (Ok(_), None) if all => {
                listed += &format!("  line {} {:?} ({how}): agrees{dp}\n", v.line, v.source);
            }
            (Ok(_), None) => {}
        }
    }
    if !listed.is_empty() {
        let which = if all {
            "every source (first differing step from 0"
        } else {
            "first differences (steps from 0"
        };
        text += &format!("\n{which}; a gap below {NEAR_TIE:e} is a near tie):\n");
        text += &listed;
    }
    out.write_all(text.as_bytes())
        .map_err(Error::io(crate::io::STDOUT_NAME))?;
    out.flush().map_err(Error::io(crate::io::STDOUT_NAME))?;
    let differing = report
        .verdicts
        .iter()
        .filter(|v| v.got.is_ok() && v.difference.is_some())
        .count();
    if differing > 0 {
        err += &format!(
            "error: {name}: {differing} of {n} sources decode differently from the reference ({near} at a near tie)\n"
        );
    }
    errors
        .write_all(err.as_bytes())
        .map_err(Error::io("<stderr>"))?;
    Ok(report.passes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> Targets {
        Targets {
            size: 10,
            end: 2,
            end_text: "</s>".into(),
        }
    }

    #[test]
    fn a_line_parses_with_its_optional_fields() {
        let e = parse_line(
            3,
            r#"{"source": "ab", "ids": [4, 5], "probs": [0.5, 0.9, 1.0], "gaps": [0.1, 0.2]}"#,
            &targets(),
        )
        .unwrap();
        assert_eq!(e.line, 3);
        assert_eq!(e.ids, [4, 5]);
        assert_eq!(e.probs.unwrap().len(), 3);
        assert_eq!(e.beam, None);
        let e = parse_line(1, r#"{"source": "", "ids": [], "beam": 3}"#, &targets()).unwrap();
        assert_eq!(e.beam, Some(3));
    }

    #[test]
    fn a_malformed_line_names_its_field() {
        for (line, field) in [
            (r#"{"ids": [1]}"#, "source: missing"),
            (r#"{"source": 3, "ids": [1]}"#, "source: a string"),
            (r#"{"source": "a"}"#, "ids: missing"),
            (
                r#"{"source": "a", "ids": [1, 10]}"#,
                "ids[1]: 10 is not a target token id",
            ),
            (r#"{"source": "a", "ids": [1, -1]}"#, "ids[1]: -1"),
            (
                r#"{"source": "a", "ids": [1, 2]}"#,
                "ids[1]: 2 is the end token \"</s>\"",
            ),
            (
                r#"{"source": "a", "ids": [1], "beam": 0}"#,
                "beam: 0 is not a beam width",
            ),
            (
                r#"{"source": "a", "ids": [1], "probs": [0.5, 0.5, 0.5]}"#,
                "probs: 3 values for 1 ids",
            ),
            (
                r#"{"source": "a", "ids": [1], "probs": [1.5]}"#,
                "probs[0]: 1.5 is not a probability",
            ),
            (
                r#"{"source": "a", "ids": [1], "gaps": [-1]}"#,
                "gaps[0]: -1 is not a gap",
            ),
            (
                r#"{"source": "a", "ids": [1], "beam": 2, "probs": [1]}"#,
                "probs: per-step values are compared for greedy decodes only",
            ),
            (
                r#"{"source": "a", "ids": [1], "prob": [1]}"#,
                "unknown field \"prob\"",
            ),
            (r#"["a"]"#, "not a JSON object"),
            (r#"{"source": "a""#, "not JSON"),
        ] {
            let e = parse_line(1, line, &targets()).unwrap_err();
            assert!(e.starts_with(field), "{line}: {e}");
        }
    }

    #[test]
    fn a_near_tie_is_judged_by_the_reference_gap_when_given() {
        let mut d = FirstDifference {
            step: 0,
            expected: 1,
            got: Some(3),
            ours: Some(5e-5),
            reference: None,
        };
        assert!(d.near_tie());
        d.reference = Some(0.3);
        assert!(!d.near_tie());
        d.ours = Some(0.3);
        d.reference = Some(1e-5);
        assert!(d.near_tie());
        d.reference = None;
        d.ours = None;
        assert!(!d.near_tie());
    }

    #[test]
    fn the_top_probability_is_the_softmax_maximum() {
        let p = top_probability(&[0.0, 0.0]);
        assert!((p - 0.5).abs() < 1e-12);
        let p = top_probability(&[1.0, 0.0, -1.0]);
        let want = 1.0f64.exp() / (1.0f64.exp() + 1.0 + (-1.0f64).exp());
        assert!((p - want).abs() < 1e-7, "{p} {want}");
    }
}
