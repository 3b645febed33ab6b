//! Beam search on the host: the core's search (`seq2seq::beam`), one source at a time,
//! with every ranked result kept.

use s2s_kernels::logprob::{Alpha, Score};
use s2s_kernels::Precision;
use seq2seq::vocab::encode_source;
use seq2seq::{BeamPlan, BeamVariant, Net, Plan, Prefix, Runner, Search};

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
/// `i` after `prefixes[i]` (the model's defaults past the end of `prefixes`); each
/// result holds the best hypothesis as its output and every ranked one in `nbest`.
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
        .saturating_add(BeamPlan::new::<P>(d, search.width).bytes());
    let mut arena = vec![0u32; bytes.div_ceil(4)];
    let mut runner = match Runner::with_beam(net, &mut arena, positions, search.width) {
        Ok(r) => r,
        Err(e) => return lines.iter().map(|_| Err(e)).collect(),
    };
    let mut ids = vec![0u16; d.max_steps];
    let mut src = vec![0u16; positions];
    let text_of = |ids: &[u16]| -> (Vec<String>, String) {
        let tokens: Vec<String> = ids
            .iter()
            .map(|&i| net.tgt_vocab.get(i).unwrap_or("?").to_string())
            .collect();
        let text = tokens.join(net.separator);
        (tokens, text)
    };
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let prefix = prefixes.get(i).unwrap_or(&Prefix::NONE);
            let n = runner.beam_line::<seq2seq::Error>(
                line,
                prefix,
                search,
                &mut ids,
                &mut (),
                |_| Ok(()),
            )?;
            let mut out = Decoded::default();
            if let Ok((t, _)) =
                encode_source(d, &net.src_vocab, &net.slots(), prefix, line, &mut src)
            {
                out.source = src[..t]
                    .iter()
                    .map(|&i| net.src_vocab.get(i).unwrap_or("?").to_string())
                    .collect();
            }
            out.ids = ids[..n].to_vec();
            (out.tokens, out.text) = text_of(&out.ids);
            out.nbest = (0..runner.hypotheses())
                .filter_map(|r| runner.hypothesis(r))
                .map(|h| Ranked {
                    ids: h.tokens.to_vec(),
                    text: text_of(h.tokens).1,
                    score: h.score.nats(),
                    len: h.len,
                    ended: h.ended,
                })
                .collect();
            Ok(out)
        })
        .collect()
}
