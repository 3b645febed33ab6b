//! What a run starts from: a configuration (fresh weights, vocabularies built from
//! the data where it leaves them out) or an f32 model file to fine-tune (`--init`), and
//! what `s2s train` can train.

use std::path::Path;

use crate::data::Pair;
use crate::error::{Error, Place, Result};
use crate::import::config::Config;
use crate::model::LoadedModel;

use super::examples::{self, build_vocabularies};

/// Where a run's model comes from.
#[derive(Clone, Copy, Debug)]
pub enum Start<'a> {
    /// A configuration (architecture, vocabularies or none): fresh weights.
    Config(&'a Path),
    /// An f32 model file (`--init`): its architecture, vocabularies and weights.
    Init(&'a Path),
}

/// What `s2s train` cannot train, as one message (`None`: it can): LSTM cells, hard
/// sigmoids, masked outputs, a mean or shared bridge, input feeding, another
/// attentional activation, prefix slots, a minimum output length.
pub fn trainable(desc: &seq2seq::ModelDesc) -> std::result::Result<(), &'static str> {
    if desc.cells != seq2seq::Cells::GRU {
        return Err(
            "s2s train trains GRU cells with the logistic sigmoid and an unmasked encoder; \
             this model has LSTM cells, a hard sigmoid or `masked_output` \
             (import such a model trained elsewhere with `s2s import`)",
        );
    }
    let x = &desc.extras;
    if desc.init == seq2seq::desc::Init::Mean
        || x.bridge_shared
        || x.input_feed
        || x.att_act != seq2seq::desc::Activation::Tanh
    {
        return Err(
            "s2s train trains per-layer bridges of the final states, no input feeding and a \
             tanh attentional layer; this model has a mean or shared bridge, input feeding \
             or another attentional activation (import such a model trained elsewhere with \
             `s2s import`)",
        );
    }
    if x.slots().next().is_some() || x.min_steps > 0 {
        return Err(
            "s2s train trains models without prefix slots or a minimum output length; \
             this model has source.prefix_slots or target.min_steps (import such a model \
             trained elsewhere with `s2s import`)",
        );
    }
    Ok(())
}

/// The model a run trains: its description, vocabularies, first weights and what
/// names it.
pub(super) struct Setup {
    pub(super) desc: seq2seq::ModelDesc,
    pub(super) src_vocab: Vec<String>,
    pub(super) tgt_vocab: Vec<String>,
    pub(super) separator: String,
    pub(super) name: String,
    pub(super) boards: Vec<&'static s2s_device::Board>,
    /// The configuration (its keys name a size the machine cannot train).
    pub(super) cfg: Option<Config>,
    /// `--init`: the model file (its weights are the first ones).
    pub(super) init: Option<LoadedModel>,
    /// The bytes the checkpoint's fingerprint covers (configuration or model file).
    pub(super) source_bytes: Vec<u8>,
}

/// Reads the configuration (vocabularies built from `pairs` where it leaves them out).
pub(super) fn from_config<'p>(
    config: &Path,
    pairs: impl Iterator<Item = &'p Pair> + Clone,
) -> Result<Setup> {
    let mut cfg = Config::load(config)?;
    if !cfg.weights.is_empty() {
        return Err(cfg.error(
            Place::File,
            "[weights] maps a weights file for `s2s import`; training makes its own weights: remove it",
        ));
    }
    let boards = cfg
        .model
        .boards
        .iter()
        .map(|name| {
            s2s_device::board::find(name).ok_or_else(|| {
                let names: Vec<&str> = s2s_device::board::names().collect();
                cfg.error(
                    Place::Inside("[model] boards".into()),
                    format!("unknown board {name:?} (boards: {})", names.join(", ")),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    build_vocabularies(&mut cfg, pairs);
    let desc = cfg.desc()?;
    trainable(&desc).map_err(|m| cfg.error(Place::File, m))?;
    Ok(Setup {
        desc,
        src_vocab: cfg.source.tokens.clone(),
        tgt_vocab: cfg.target.tokens.clone(),
        separator: cfg.target.separator.clone(),
        name: cfg.model.name.clone(),
        boards,
        source_bytes: std::fs::read(config).map_err(Error::io(config))?,
        cfg: Some(cfg),
        init: None,
    })
}

/// Reads the f32 model file of `--init`: its description (which `s2s train` must be
/// able to train), vocabularies and weights.
pub(super) fn from_model(path: &Path) -> Result<Setup> {
    let m = LoadedModel::load(path)?;
    let file = m.file();
    let bad = |msg: String| Error::invalid(path.display(), Place::File, msg);
    if file.precision() != s2s_kernels::PrecisionKind::F32 {
        return Err(bad(format!(
            "--init needs an f32 model file, this one is {} (start from the f32 file it was \
             quantized from)",
            file.precision().name()
        )));
    }
    let desc = *file.desc();
    trainable(&desc).map_err(|msg| bad(msg.to_string()))?;
    let words = |v: seq2seq::vocab::Vocab<'_>| -> Vec<String> {
        (0..v.len() as u16)
            .filter_map(|i| v.get(i).map(str::to_string))
            .collect()
    };
    let name = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    Ok(Setup {
        desc,
        src_vocab: words(file.src_vocab()),
        tgt_vocab: words(file.tgt_vocab()),
        separator: file.separator().to_string(),
        name,
        boards: Vec::new(),
        cfg: None,
        source_bytes: m.bytes().to_vec(),
        init: Some(m),
    })
}

/// With `--init`, refuses data whose sources have symbols the model's vocabulary lacks
/// (they would all read as its unknown token, or not at all): one line naming the
/// file, the line and the symbol. (Target tokens outside the vocabulary are refused
/// when the pairs are encoded.)
pub(super) fn check_sources(m: &LoadedModel, pairs: &[Pair], path: &Path) -> Result {
    let file = m.file();
    let (desc, vocab) = (file.desc(), file.src_vocab());
    let words = desc.split == seq2seq::desc::Split::Whitespace;
    for p in pairs {
        let unknown = examples::symbols(&p.source, words, desc.lowercase)
            .into_iter()
            .find(|s| vocab.find(s).is_none());
        if let Some(sym) = unknown {
            return Err(Error::invalid(
                path.display(),
                Place::Line(p.line),
                format!(
                    "source symbol {sym:?} is not in the vocabulary of {} (--init trains on \
                     data its vocabularies cover)",
                    m.path.display()
                ),
            ));
        }
    }
    Ok(())
}
