//! From string pairs to padded batches: the vocabularies (given in the configuration, or
//! built from the data by the rule of [`build_vocabularies`]), the token ids of
//! every pair (sources through the core's own [`encode_source`], so training sees
//! exactly what `s2s run` will), and mini-batches with their padding masks.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use candle_core::{Device, Result as CResult, Tensor};
use seq2seq::vocab::encode_source;
use seq2seq::ModelFile;
use seq2seq::Prefix;

use crate::data::Pair;
use crate::error::{Error, Place, Result};
use crate::eval::rates::split_tokens;
use crate::import::config::{Config, SplitName};

/// Added to the attention score of a masked position (its weight becomes exactly 0).
pub const MASKED: f32 = -1e9;

/// The symbols of a source as the configuration's model splits them.
fn source_symbols(cfg: &Config, line: &str) -> Vec<String> {
    let words = cfg.source.split == SplitName::Whitespace;
    symbols(line, words, cfg.source.lowercase)
}

/// The symbols of a source line: its white-space separated words (`words`) or its
/// characters, ASCII-lowercased when `lowercase`.
pub fn symbols(line: &str, words: bool, lowercase: bool) -> Vec<String> {
    let lower = |s: &str| {
        if lowercase {
            s.to_ascii_lowercase()
        } else {
            s.to_string()
        }
    };
    if words {
        line.split_whitespace().map(lower).collect()
    } else {
        line.chars().map(|c| lower(&c.to_string())).collect()
    }
}

/// Fills in the vocabularies a configuration leaves out, from the pairs (training and
/// validation: a validation token never seen in training stays a token the model
/// learns never to produce):
///
/// * source: the padding token, then the unknown and end tokens when the
///   configuration names them, then every other source symbol of the data (characters
///   or words, as `split` says, after `lowercase`), sorted by code point;
/// * target: the start and end tokens, then every other target token of the data
///   (characters when `separator` is empty, else the words), sorted by code point.
///
/// A vocabulary the configuration gives is kept as it is.
pub fn build_vocabularies<'p>(cfg: &mut Config, pairs: impl Iterator<Item = &'p Pair> + Clone) {
    if cfg.source.tokens.is_empty() {
        let s = &cfg.source;
        let specials = [Some(&s.pad), s.unk.as_ref(), s.eos.as_ref()];
        let symbols = pairs.clone().flat_map(|p| source_symbols(cfg, &p.source));
        cfg.source.tokens = vocabulary(specials.into_iter().flatten(), symbols);
    }
    if cfg.target.tokens.is_empty() {
        let t = &cfg.target;
        let symbols = pairs.flat_map(|p| split_tokens(&p.target, &t.separator));
        cfg.target.tokens = vocabulary([&t.start, &t.end].into_iter(), symbols);
    }
}

/// The special tokens (each once, in order), then the other symbols, sorted.
fn vocabulary<'s>(
    specials: impl Iterator<Item = &'s String>,
    symbols: impl Iterator<Item = String>,
) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    for s in specials {
        if !tokens.contains(s) {
            tokens.push(s.clone());
        }
    }
    let rest: BTreeSet<String> = symbols.filter(|s| !tokens.contains(s)).collect();
    tokens.extend(rest);
    tokens
}

/// One pair as ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    /// Source ids as the runtime makes them (end token and fixed-length padding
    /// included).
    pub src: Vec<u32>,
    /// Positions the runtime attends to: the unpadded length, or all of them when the
    /// model attends to its padding.
    pub attend: usize,
    /// Target ids, without the start and end tokens.
    pub tgt: Vec<u32>,
}

/// Turns pairs into examples with the vocabularies of `file` (a model file of the
/// configuration being trained); errors name `path` and the line.
pub fn encode_pairs(file: &ModelFile<'_>, pairs: &[Pair], path: &Path) -> Result<Vec<Example>> {
    let desc = file.desc();
    let src_vocab = file.src_vocab();
    let slots = file.slots();
    let tgt_vocab = file.tgt_vocab();
    let sep = file.separator();
    let tgt_ids: HashMap<&str, u32> = (0..tgt_vocab.len() as u16)
        .filter_map(|i| tgt_vocab.get(i).map(|s| (s, i as u32)))
        .rev()
        .collect();
    let mut buf = vec![0u16; crate::model::HOST_MAX_POSITIONS];
    pairs
        .iter()
        .map(|p| {
            let bad = |m: String| Error::invalid(path.display(), Place::Line(p.line), m);
            let (n, valid) =
                encode_source(desc, &src_vocab, &slots, &Prefix::NONE, &p.source, &mut buf)
                    .map_err(|e| bad(format!("source: {e}")))?;
            let tgt = split_tokens(&p.target, sep)
                .iter()
                .map(|t| {
                    tgt_ids.get(t.as_str()).copied().ok_or_else(|| {
                        bad(format!(
                            "target token {t:?} is not in the target vocabulary"
                        ))
                    })
                })
                .collect::<Result<Vec<u32>>>()?;
            if tgt.len() + 1 > desc.max_steps {
                return Err(bad(format!(
                    "the target has {} tokens; with the end token that is more than max_steps = {}",
                    tgt.len(),
                    desc.max_steps
                )));
            }
            Ok(Example {
                src: buf[..n].iter().map(|&i| u32::from(i)).collect(),
                attend: if desc.attention.mask_padding {
                    n
                } else {
                    valid
                },
                tgt,
            })
        })
        .collect()
}

/// A padded mini-batch.
pub struct Batch {
    /// Sequences.
    pub size: usize,
    /// Source positions (the longest source).
    pub positions: usize,
    /// Source ids, `batch x positions` (padding: id 0).
    pub src: Tensor,
    /// Per position, which sequences are still running (`positions x batch x 1`, 1 or
    /// 0); `None` when every source has every position.
    pub running: Option<Tensor>,
    /// The shortest source (positions before it need no masking).
    pub shortest: usize,
    /// 0 where a sequence may attend, [`MASKED`] elsewhere: `batch x positions`.
    pub attend: Tensor,
    /// The positions each sequence may attend (the zeros of `attend`, [`Example::attend`]).
    pub lens: Vec<usize>,
    /// Decoder steps (the longest target plus its end token).
    pub steps: usize,
    /// Decoder inputs (start token, then the target), `batch x steps`.
    pub tgt_in: Tensor,
    /// Expected outputs (the target, then the end token), `batch*steps x 1`.
    pub tgt_out: Tensor,
    /// 1 for real output positions, 0 for padding, `batch*steps`.
    pub tgt_mask: Tensor,
    /// Real output tokens (end tokens included).
    pub tokens: usize,
}

/// Pads examples into a batch; `start` and `end` are the target's special ids.
pub fn make_batch(ex: &[&Example], start: u32, end: u32, device: &Device) -> CResult<Batch> {
    let b = ex.len();
    let t = ex.iter().map(|e| e.src.len()).max().unwrap_or(1);
    let shortest = ex.iter().map(|e| e.src.len()).min().unwrap_or(0);
    let s = ex.iter().map(|e| e.tgt.len() + 1).max().unwrap_or(1);
    let mut src = vec![0u32; b * t];
    let mut running = vec![0f32; t * b];
    let mut attend = vec![MASKED; b * t];
    let mut tin = vec![start; b * s];
    let mut tout = vec![end; b * s];
    let mut tmask = vec![0f32; b * s];
    for (i, e) in ex.iter().enumerate() {
        src[i * t..i * t + e.src.len()].copy_from_slice(&e.src);
        for p in 0..e.src.len() {
            running[p * b + i] = 1.0;
        }
        attend[i * t..i * t + e.attend].fill(0.0);
        for (k, &y) in e.tgt.iter().enumerate() {
            tin[i * s + k + 1] = y;
            tout[i * s + k] = y;
        }
        tmask[i * s..i * s + e.tgt.len() + 1].fill(1.0);
    }
    Ok(Batch {
        size: b,
        positions: t,
        src: Tensor::from_vec(src, (b, t), device)?,
        running: (shortest < t)
            .then(|| Tensor::from_vec(running, (t, b, 1), device))
            .transpose()?,
        shortest,
        attend: Tensor::from_vec(attend, (b, t), device)?,
        lens: ex.iter().map(|e| e.attend).collect(),
        steps: s,
        tgt_in: Tensor::from_vec(tin, (b, s), device)?,
        tgt_out: Tensor::from_vec(tout, (b * s, 1), device)?,
        tgt_mask: Tensor::from_vec(tmask, b * s, device)?,
        tokens: ex.iter().map(|e| e.tgt.len() + 1).sum(),
    })
}

/// The order of one epoch's batches: examples shuffled, then sorted by source length
/// within windows of 50 batches (so a batch holds similar lengths and pads little), cut
/// into batches, and the batches shuffled.
pub fn epoch_batches(
    ex: &[Example],
    batch: usize,
    rng: &mut crate::data::rng::SplitMix64,
) -> Vec<Vec<usize>> {
    let mut idx: Vec<usize> = (0..ex.len()).collect();
    rng.shuffle(&mut idx);
    let mut out = Vec::new();
    for window in idx.chunks_mut(batch * 50) {
        window.sort_by_key(|&i| (ex[i].src.len(), ex[i].tgt.len()));
        out.extend(window.chunks(batch).map(<[usize]>::to_vec));
    }
    rng.shuffle(&mut out);
    out
}

/// Batches in order of length, for evaluation (`order` gives each example's batch
/// position back).
pub fn eval_batches(ex: &[Example], batch: usize) -> Vec<Vec<usize>> {
    let mut idx: Vec<usize> = (0..ex.len()).collect();
    idx.sort_by_key(|&i| (ex[i].src.len(), ex[i].tgt.len()));
    idx.chunks(batch).map(<[usize]>::to_vec).collect()
}
