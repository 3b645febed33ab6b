//! Decoding on one thread: what a decode keeps ([`Keep`], [`Decoded`]) and the
//! runner that decodes lines [`HOST_LANES`] at a time ([`HostRunner`]).

use std::collections::BTreeMap;

use s2s_kernels::Precision;
use seq2seq::run::{Observer, Probe, Step, Values};
use seq2seq::vocab::encode_source;
use seq2seq::{Net, Plan, Prefix, Runner};

use crate::error::Result;
use crate::model::beam;

/// One decoded source, with what the observer saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decoded {
    /// The source tokens as the model saw them (after tokenization and padding).
    pub source: Vec<String>,
    /// Output ids (end token excluded).
    pub ids: Vec<u16>,
    /// Output tokens as text.
    pub tokens: Vec<String>,
    /// Output text (tokens joined by the model's separator).
    pub text: String,
    /// Attention weights of every step (the end token's step included), as f32.
    pub weights: Vec<Vec<f32>>,
    /// The same weights as stored, zero-extended to `i64`: f32 bit patterns, or the
    /// Q0.15 `i16` values of w8a16 (kept with `weights`).
    pub raw_weights: Vec<Vec<i64>>,
    /// The entropy of every step's attention weights in nats (kept when asked).
    pub entropy: Vec<f32>,
    /// Logits of every step, as f32 (kept when asked).
    pub logits: Vec<Vec<f32>>,
    /// Logits of every step in their stored integer or float bits (kept when asked).
    pub raw_logits: Vec<Vec<i64>>,
    /// Intermediate tensors as f32, every occurrence in order (kept when asked).
    pub probes: BTreeMap<Probe, Vec<Vec<f32>>>,
    /// Every result of a beam search, best first (empty for greedy decoding).
    pub nbest: Vec<Ranked>,
}

/// One ranked result of a beam search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ranked {
    /// Output ids (end token excluded).
    pub ids: Vec<u16>,
    /// Output text.
    pub text: String,
    /// Sum of the natural-log probabilities of its tokens (end token included).
    pub score: f64,
    /// Tokens the decoder produced for it, end token included.
    pub len: usize,
    /// Whether it ended with the end token.
    pub ended: bool,
}

/// How to decode, and what to keep of each step.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Attention weights (greedy decoding only).
    pub weights: bool,
    /// Each step's attention entropy without the weights (greedy decoding only): what
    /// a long source's report needs, in memory independent of its length.
    pub entropy: bool,
    /// Logits (greedy decoding only).
    pub logits: bool,
    /// Intermediate tensors.
    pub probes: bool,
    /// A beam search instead of greedy decoding.
    pub beam: Option<beam::BeamOptions>,
}

struct Recorder<'d> {
    keep: Keep,
    out: &'d mut Decoded,
}

impl<P: Precision> Observer<P> for Recorder<'_> {
    fn probe(&mut self, probe: Probe, values: Values<'_, P>) {
        if self.keep.probes {
            let v = match values {
                Values::Act(a, f) => a.iter().map(|&x| P::act_to_f32(x, f)).collect(),
                Values::Wide(w) => w.iter().map(|&x| P::wide_to_f32(x)).collect(),
            };
            self.out.probes.entry(probe).or_default().push(v);
        }
    }

    fn step(&mut self, s: &Step<'_, P>) {
        if let (true, Some(w)) = (self.keep.entropy, s.weights) {
            let w: Vec<f32> = w.iter().map(|&v| P::unit_to_f32(v)).collect();
            self.out
                .entropy
                .push(attention_core::entropy::<s2s_kernels::F32>(&w));
        }
        if self.keep.weights {
            if let Some(w) = s.weights {
                self.out
                    .weights
                    .push(w.iter().map(|&v| P::unit_to_f32(v)).collect());
                self.out.raw_weights.push(raw_bits(w));
            }
        }
        if self.keep.logits {
            self.out
                .logits
                .push(s.logits.iter().map(|&v| P::wide_to_f32(v)).collect());
            self.out.raw_logits.push(raw_bits(s.logits));
        }
    }
}

/// Sources decoded together by the host runner.
pub const HOST_LANES: usize = crate::model::hostf32::LANES;

/// Each value's stored bits (an integer, or a float's bit pattern), widened to `i64`.
fn raw_bits<T: bytemuck::Pod>(values: &[T]) -> Vec<i64> {
    values
        .iter()
        .map(|v| {
            let b = bytemuck::bytes_of(v);
            let mut x = [0u8; 8];
            x[..b.len()].copy_from_slice(b);
            i64::from_le_bytes(x)
        })
        .collect()
}

/// A runner for one model with its workspace, for decoding many sources: lines go
/// through the core [`HOST_LANES`] at a time, sharing every matrix product.
pub struct HostRunner<'n, 'a, P: Precision> {
    net: &'n Net<'a, P>,
    arena: Vec<u32>,
    positions: usize,
}

impl<'n, 'a, P: Precision> HostRunner<'n, 'a, P> {
    /// A workspace for sources of up to `positions` positions.
    pub fn new(net: &'n Net<'a, P>, positions: usize) -> Self {
        forget_layers();
        Self::keeping_cache(net, positions)
    }

    /// [`HostRunner::new`] without forgetting this thread's cached layers: for a net
    /// whose layers the cache was cleared for when its decoding began.
    pub(super) fn keeping_cache(net: &'n Net<'a, P>, positions: usize) -> Self {
        let bytes = Plan::new::<P>(&net.desc, positions).bytes();
        HostRunner {
            net,
            arena: vec![0u32; HOST_LANES * bytes.div_ceil(4)],
            positions,
        }
    }

    /// Decodes one source line after `prefix`.
    pub fn decode(
        &mut self,
        line: &str,
        prefix: &Prefix,
        keep: Keep,
    ) -> Result<Decoded, seq2seq::Error> {
        self.decode_all(&[line], std::slice::from_ref(prefix), keep)
            .remove(0)
    }

    /// Decodes source lines, [`HOST_LANES`] at a time: line `i` after `prefixes[i]` (the
    /// model's defaults past the end of `prefixes`).
    pub fn decode_all(
        &mut self,
        lines: &[&str],
        prefixes: &[Prefix],
        keep: Keep,
    ) -> Vec<Result<Decoded, seq2seq::Error>> {
        let net = self.net;
        let prefix_of = |i: usize| prefixes.get(i).copied().unwrap_or_default();
        if let Some(b) = &keep.beam {
            return beam::beam_all(net, self.positions, lines, prefixes, b);
        }
        let runner = Runner::<P, HOST_LANES>::with_lanes(net, &mut self.arena, self.positions);
        let mut runner = match runner {
            Ok(r) => r,
            Err(e) => return lines.iter().map(|_| Err(e)).collect(),
        };
        // Lines of similar length share batches best: run them in order of length and
        // put the results back in input order.
        let mut order: Vec<usize> = (0..lines.len()).collect();
        order.sort_by_key(|&i| lines[i].chars().count());
        let sorted: Vec<&str> = order.iter().map(|&i| lines[i]).collect();
        let sorted_prefixes: Vec<Prefix> = order.iter().map(|&i| prefix_of(i)).collect();
        let mut results = Vec::with_capacity(lines.len());
        for (chunk, prefixes) in sorted
            .chunks(HOST_LANES)
            .zip(sorted_prefixes.chunks(HOST_LANES))
        {
            let mut decoded: Vec<Decoded> = chunk.iter().map(|_| Decoded::default()).collect();
            let mut ids = vec![vec![0u16; net.desc.max_steps]; chunk.len()];
            let counts = {
                let mut outs: Vec<&mut [u16]> = ids.iter_mut().map(|v| &mut v[..]).collect();
                let mut recs: Vec<Recorder<'_>> = decoded
                    .iter_mut()
                    .map(|out| Recorder { keep, out })
                    .collect();
                runner.translate_batch(chunk, prefixes, &mut outs, &mut recs)
            };
            let each = chunk
                .iter()
                .zip(prefixes)
                .zip(decoded)
                .zip(&ids)
                .zip(counts);
            for ((((line, prefix), mut out), ids), count) in each {
                results.push(count.map(|count| {
                    let mut src = vec![0u16; self.positions];
                    let (v, slots) = (&net.src_vocab, &net.slots());
                    if let Ok((n, _)) = encode_source(&net.desc, v, slots, prefix, line, &mut src) {
                        out.source = src[..n]
                            .iter()
                            .map(|&i| net.src_vocab.get(i).unwrap_or("?").to_string())
                            .collect();
                    }
                    out.ids = ids[..count].to_vec();
                    out.tokens = out
                        .ids
                        .iter()
                        .map(|&i| net.tgt_vocab.get(i).unwrap_or("?").to_string())
                        .collect();
                    out.text = out.tokens.join(net.separator);
                    out
                }));
            }
        }
        let mut back: Vec<Option<Result<Decoded, seq2seq::Error>>> =
            (0..lines.len()).map(|_| None).collect();
        for (r, &i) in results.into_iter().zip(&order) {
            back[i] = Some(r);
        }
        back.into_iter()
            .map(|r| r.expect("every line decoded"))
            .collect()
    }
}

/// Drops this thread's cached layers (`hostf32`, `hostw8a16`): a net's decoding
/// begins. Whoever runs a host net with a `Runner` of its own calls it first on each
/// thread: the cache knows a layer by its address and a sample of its weights, and a
/// model built where another was dropped, with weights that differ in a few values (as
/// the models of quantization-aware training do from batch to batch), would be taken
/// for it.
pub fn forget_layers() {
    crate::model::hostf32::forget_layers();
    crate::model::hostw8a16::forget_layers();
}
