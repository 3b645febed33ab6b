//! One decode of a source, recorded step by step for the page: greedy decoding with
//! every step's attention row, its entropy and the most probable next tokens, and, for
//! a beam width over 1, the beam search of that width with the hypotheses after each
//! step. Both run through `seq2seq`'s [`Runner`] at the file's precision, as on the
//! device.

use s2s_kernels::logprob::Score as _;
use s2s_kernels::Precision;
use seq2seq::beam::BeamView;
use seq2seq::run::{Observer, Step};
use seq2seq::vocab::encode_source;
use seq2seq::{Hypothesis, Net, Plan, Prefix, Runner, Search};
use serde::Serialize;

use seq2seq::with_net;

use crate::model::{Error, Model};

/// Longest source in positions (end token included) for a model without a fixed
/// length: the host tools' limit (`HOST_MAX_POSITIONS` of host-tools).
pub const MAX_POSITIONS: usize = 512;

/// Next tokens listed per step.
pub const TOP_K: usize = 5;

/// What one decode gives the page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    /// The source as typed.
    pub source: String,
    /// The source tokens the model saw (prefix, end token and padding included).
    pub source_tokens: Vec<String>,
    /// The output: the beam search's best with a beam, else greedy decoding's.
    pub output: Output,
    /// Greedy decoding's output (the steps below are its steps).
    pub greedy: Output,
    /// Greedy decoding's steps, the end token's included.
    pub steps: Vec<StepTrace>,
    /// The beam search, for a width over 1.
    pub beam: Option<BeamTrace>,
}

/// An output: ids (end token excluded), tokens and text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Output {
    /// Target ids, end token excluded.
    pub ids: Vec<u16>,
    /// Their tokens.
    pub tokens: Vec<String>,
    /// The tokens joined by the model's separator.
    pub text: String,
}

/// One greedy decoder step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepTrace {
    /// The token chosen (the end token on the last step of a finished output).
    pub id: u16,
    /// Its text.
    pub token: String,
    /// The attention weights over the source positions (none without attention).
    pub weights: Option<Vec<f32>>,
    /// Their entropy in nats (`attention_core::entropy`).
    pub entropy: Option<f32>,
    /// The [`TOP_K`] most probable tokens (softmax of the logits), most probable first.
    pub top: Vec<Next>,
}

/// A candidate next token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Next {
    /// Target id.
    pub id: u16,
    /// Its text.
    pub token: String,
    /// Its probability.
    pub p: f32,
}

/// A beam search, step by step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BeamTrace {
    /// The width.
    pub width: usize,
    /// After each step: the hypotheses going on and the finished set.
    pub steps: Vec<BeamStep>,
}

/// A beam search after one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BeamStep {
    /// Hypotheses going on (slot order).
    pub live: Vec<Hyp>,
    /// The finished set (finished-set and netra searches).
    pub finished: Vec<Hyp>,
}

/// One hypothesis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hyp {
    /// Ids, end token excluded.
    pub ids: Vec<u16>,
    /// Text.
    pub text: String,
    /// Sum of the natural-log probabilities of its tokens.
    pub score: f64,
    /// Whether it ended with the end token.
    pub ended: bool,
}

/// Decodes `source` through `model` with its default prefix: greedy, and a beam search
/// of width `beam` when `beam > 1`. An error is one line naming the model.
pub fn decode(model: &Model, source: &str, beam: usize) -> Result<Trace, Error> {
    let file = model.file()?;
    let fail = |e| model.error(e);
    with_net!(&file, |net: P| {
        let net = net.map_err(fail)?;
        decode_with::<P>(&net, source, beam).map_err(fail)
    })
}

fn decode_with<P: Precision>(
    net: &Net<'_, P>,
    source: &str,
    beam: usize,
) -> Result<Trace, seq2seq::Error> {
    let d = &net.desc;
    let positions = match d.src_pad_to {
        0 => MAX_POSITIONS,
        n => n,
    };
    let mut src = vec![0u16; positions];
    let (n, _) = encode_source(
        d,
        &net.src_vocab,
        &net.slots(),
        &Prefix::NONE,
        source,
        &mut src,
    )?;
    let source_tokens = src[..n].iter().map(|&i| token(&net.src_vocab, i)).collect();
    let text = |ids: &[u16]| {
        let tokens: Vec<String> = ids.iter().map(|&i| token(&net.tgt_vocab, i)).collect();
        let text = tokens.join(net.separator);
        Output {
            ids: ids.to_vec(),
            tokens,
            text,
        }
    };

    // Greedy decoding, every step recorded.
    let words = Plan::new::<P>(d, n).bytes().div_ceil(4);
    let mut arena = vec![0u32; words];
    let mut runner = Runner::new(net, &mut arena, n)?;
    let mut out = vec![0u16; d.max_steps];
    let mut rec = Recorder::<P> {
        net,
        steps: Vec::new(),
    };
    let count = runner.translate_line::<seq2seq::Error>(
        source,
        &Prefix::NONE,
        &mut out,
        &mut rec,
        |_| Ok(()),
    )?;
    let greedy = text(&out[..count]);

    // The beam search, every step's hypotheses recorded.
    let beam = match beam {
        0 | 1 => None,
        width => {
            let words = (Plan::new::<P>(d, n).bytes()
                + seq2seq::BeamPlan::new::<P>(d, width).bytes())
            .div_ceil(4);
            let mut arena = vec![0u32; words];
            let mut runner = Runner::with_beam(net, &mut arena, n, width)?;
            let mut beamed = BeamRecorder::<P> {
                net,
                steps: Vec::new(),
            };
            let count = runner.beam_line::<seq2seq::Error>(
                source,
                &Prefix::NONE,
                Search::of(d, width),
                &mut out,
                &mut beamed,
                |_| Ok(()),
            )?;
            Some((
                text(&out[..count]),
                BeamTrace {
                    width,
                    steps: beamed.steps,
                },
            ))
        }
    };
    let (output, beam) = match beam {
        Some((best, trace)) => (best, Some(trace)),
        None => (greedy.clone(), None),
    };
    Ok(Trace {
        source: source.to_string(),
        source_tokens,
        output,
        greedy,
        steps: rec.steps,
        beam,
    })
}

/// Token `id`'s text in `vocab` (`?` for an id it lacks, which a checked model never
/// produces).
fn token(vocab: &seq2seq::Vocab<'_>, id: u16) -> String {
    vocab.get(id).unwrap_or("?").to_string()
}

/// Records greedy decoding's steps.
struct Recorder<'n, 'a, P: Precision> {
    net: &'n Net<'a, P>,
    steps: Vec<StepTrace>,
}

impl<P: Precision> Observer<P> for Recorder<'_, '_, P> {
    fn step(&mut self, s: &Step<'_, P>) {
        let vocab = &self.net.tgt_vocab;
        let logits: Vec<f32> = s.logits.iter().map(|&v| P::wide_to_f32(v)).collect();
        self.steps.push(StepTrace {
            id: s.token,
            token: token(vocab, s.token),
            weights: s
                .weights
                .map(|w| w.iter().map(|&v| P::unit_to_f32(v)).collect()),
            entropy: s.weights.map(attention_core::entropy::<P>),
            top: top(&logits)
                .into_iter()
                .map(|(id, p)| Next {
                    id,
                    token: token(vocab, id),
                    p,
                })
                .collect(),
        });
    }
}

/// The [`TOP_K`] most probable ids of `logits` by their softmax (computed in f64),
/// most probable first (ties: the lower id).
fn top(logits: &[f32]) -> Vec<(u16, f32)> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f64> = logits
        .iter()
        .map(|&x| (f64::from(x) - f64::from(max)).exp())
        .collect();
    let sum: f64 = exp.iter().sum();
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| exp[b].total_cmp(&exp[a]).then(a.cmp(&b)));
    order
        .into_iter()
        .take(TOP_K)
        .filter_map(|i| Some((u16::try_from(i).ok()?, (exp[i] / sum) as f32)))
        .collect()
}

/// Records a beam search's hypotheses after each step.
struct BeamRecorder<'n, 'a, P: Precision> {
    net: &'n Net<'a, P>,
    steps: Vec<BeamStep>,
}

impl<P: Precision> BeamRecorder<'_, '_, P> {
    fn hyp(&self, h: Hypothesis<'_, P::Wide>) -> Hyp {
        let tokens: Vec<String> = h
            .tokens
            .iter()
            .map(|&i| token(&self.net.tgt_vocab, i))
            .collect();
        Hyp {
            ids: h.tokens.to_vec(),
            text: tokens.join(self.net.separator),
            score: h.score.nats(),
            ended: h.ended,
        }
    }
}

impl<P: Precision> Observer<P> for BeamRecorder<'_, '_, P> {
    fn beam(&mut self, beam: &BeamView<'_, P::Wide>) {
        let live = (0..beam.live())
            .filter_map(|i| beam.live_hypothesis(i))
            .map(|h| self.hyp(h))
            .collect();
        let finished = (0..beam.finished())
            .filter_map(|i| beam.finished_hypothesis(i))
            .map(|h| self.hyp(h))
            .collect();
        self.steps.push(BeamStep { live, finished });
    }
}
