//! Beam search on the host: the core's search (`seq2seq::beam`), sources side by side
//! over the host runner's lanes, with every ranked result kept.

use s2s_kernels::logprob::{Alpha, Score};
use s2s_kernels::Precision;
use seq2seq::vocab::encode_source;
use seq2seq::{BeamPlan, BeamVariant, Net, Plan, Prefix, Runner, Search};

use crate::model::decode::HOST_LANES;
use crate::model::{Decoded, Ranked};

/// A beam search asked for on the command line: the width, and the variant and `alpha`
/// when they override the model's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeamOptions {
    /// Hypotheses kept per step.
    pub width: usize,
    /// The variant, instead of the model file's.
    pub variant: Option<BeamVariant>,
    /// The length-normalisation exponent, instead of the model file's.
    pub alpha: Option<Alpha>,
}

impl BeamOptions {
    /// The search for a model of description `desc`.
    pub fn search(&self, desc: &seq2seq::ModelDesc) -> Search {
        let mut s = Search::of(desc, self.width);
        if let Some(v) = self.variant {
            s.rule.variant = v;
        }
        if let Some(a) = self.alpha {
            s.rule.alpha = a;
        }
        s
    }
}

/// Beam-searches each line with `net` (sources of up to `positions` positions), line
/// `i` after `prefixes[i]` (the model's defaults past the end of `prefixes`),
/// [`HOST_LANES`] lines side by side ([`Runner::beam_batch`]: each step expands one
/// live hypothesis of every line in one decoder step over the lanes); each result holds
/// the best hypothesis as its output and every ranked one in `nbest`, as the line's
/// search alone gives them.
pub fn beam_all<P: Precision>(
    net: &Net<'_, P>,
    positions: usize,
    lines: &[&str],
    prefixes: &[Prefix],
    opts: &BeamOptions,
) -> Vec<Result<Decoded, seq2seq::Error>> {
    let d = &net.desc;
    let search = opts.search(d);
    let bytes = Plan::new::<P>(d, positions)
        .bytes()
        .saturating_add(BeamPlan::new::<P>(d, search.width).bytes())
        .saturating_mul(HOST_LANES);
    let mut arena = vec![0u32; bytes.div_ceil(4)];
    let runner = Runner::<P, HOST_LANES>::with_beam_lanes(net, &mut arena, positions, search.width);
    let mut runner = match runner {
        Ok(r) => r,
        Err(e) => return lines.iter().map(|_| Err(e)).collect(),
    };
    let mut src = vec![0u16; positions];
    let tokens_of = |ids: &[u16]| -> Vec<String> {
        ids.iter()
            .map(|&i| net.tgt_vocab.get(i).unwrap_or("?").to_string())
            .collect()
    };
    let mut results = Vec::with_capacity(lines.len());
    let slots = net.slots();
    for (c, chunk) in lines.chunks(HOST_LANES).enumerate() {
        let at = (c * HOST_LANES).min(prefixes.len());
        let chunk_prefixes = &prefixes[at..prefixes.len().min(at + HOST_LANES)];
        let mut obs = [(); HOST_LANES];
        let lanes = runner.beam_batch(chunk, chunk_prefixes, search, &mut obs);
        for (j, (line, lane)) in chunk.iter().zip(lanes).enumerate() {
            let prefix = chunk_prefixes.get(j).unwrap_or(&Prefix::NONE);
            results.push(lane.map(|lane| {
                let mut out = Decoded::default();
                let source = encode_source(d, &net.src_vocab, &slots, prefix, line, &mut src);
                if let Ok((t, _)) = source {
                    out.source = src[..t]
                        .iter()
                        .map(|&i| net.src_vocab.get(i).unwrap_or("?").to_string())
                        .collect();
                }
                out.nbest = (0..runner.hypotheses_of(lane))
                    .filter_map(|r| runner.hypothesis_of(lane, r))
                    .map(|h| Ranked {
                        ids: h.tokens.to_vec(),
                        text: tokens_of(h.tokens).join(net.separator),
                        score: h.score.nats(),
                        len: h.len,
                        ended: h.ended,
                    })
                    .collect();
                if let Some(best) = out.nbest.first() {
                    out.ids = best.ids.clone();
                }
                out.tokens = tokens_of(&out.ids);
                out.text = out.tokens.join(net.separator);
                out
            }));
        }
    }
    results
}
