//! `s2s train`: a model trained from string pairs, on `candle` (CPU, all cores), written
//! through the same model-file builder as `s2s import`.
//!
//! * [`examples`]: vocabularies (given, or built from the data), ids, padded batches;
//! * [`params`]: the parameters, named and shaped as the model file's layers;
//! * [`cell`], [`attention`], [`model`]: the network as the runtime computes it,
//!   teacher-forced and greedy;
//! * [`adam`], [`fit`]: clipped Adam, the epoch loop, early stopping;
//! * [`checkpoint`], [`log`]: resumable checkpoints, progress and the CSV log;
//! * [`agree`]: the written file against the training code's own decoding.

pub mod adam;
pub mod agree;
pub mod attention;
pub mod cell;
pub mod checkpoint;
pub mod examples;
pub mod fit;
pub mod limits;
pub mod log;
pub mod model;
pub mod params;
pub mod quant;
mod start;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::Device;
use serde::Serialize;

use crate::data::rng::SplitMix64;
use crate::data::{read_pairs, Pair};
use crate::error::{Error, Place, Result};
use crate::io::write_atomic;
use crate::model::{decode_lines, Keep, LoadedModel};
use adam::Adam;
use agree::Agreement;
use checkpoint::{Checkpoints, TrainState};
use examples::encode_pairs;
use fit::{decode_all, evaluate, Fit, ToModel};
use params::Params;
use quant::Quantizer;
use start::{check_sources, from_config, from_model};
pub use start::{trainable, Start};

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Error::Training(e.to_string())
    }
}

/// How to train.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Most epochs.
    pub epochs: usize,
    /// Sequences per mini-batch.
    pub batch: usize,
    /// Adam's learning rate.
    pub lr: f64,
    /// Factor on the learning rate after an epoch without a better validation token
    /// error (1: constant).
    pub lr_decay: f64,
    /// Global gradient norm clipped to (0: no clipping).
    pub clip: f64,
    /// Dropout on embeddings, between stacked layers and before the output layer.
    pub dropout: f32,
    /// Label smoothing of the training loss (0: none; the validation loss is never
    /// smoothed).
    pub label_smoothing: f32,
    /// Stop after this many epochs without a better validation token error.
    pub patience: usize,
    /// Seed of every random number (initial weights, order, dropout, held-out pairs).
    pub seed: u64,
    /// Threads (0: one per core).
    pub threads: usize,
    /// Checkpoint directory (default: the output with the extension `.ckpt`).
    pub checkpoints: Option<PathBuf>,
    /// Continue from the checkpoint instead of refusing to overwrite it.
    pub resume: bool,
    /// The CSV log (default: the output with the extension `.csv`).
    pub log: Option<PathBuf>,
    /// A JSON summary of the run ([`TrainReport`]) to write.
    pub report: Option<PathBuf>,
    /// No progress output.
    pub quiet: bool,
    /// Quantization-aware training for this number format; the written file is in it.
    pub quantize: Option<crate::quantize::Scheme>,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: 30,
            batch: 64,
            lr: 1e-3,
            lr_decay: 0.5,
            clip: 1.0,
            dropout: 0.1,
            label_smoothing: 0.0,
            patience: 5,
            seed: 0,
            threads: 0,
            checkpoints: None,
            resume: false,
            log: None,
            report: None,
            quiet: false,
            quantize: None,
        }
    }
}

/// Share of the training pairs held out for validation when no validation file is
/// given.
pub const HOLDOUT_SHARE: f64 = 0.05;

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct TrainReport {
    /// Trainable values.
    pub parameters: usize,
    /// Training and validation pairs.
    pub train_pairs: usize,
    /// See `train_pairs`.
    pub valid_pairs: usize,
    /// Epochs run (in all sessions).
    pub epochs: usize,
    /// The epoch whose weights were written.
    pub best_epoch: usize,
    /// Validation loss before training and at the best epoch.
    pub initial_valid_loss: f64,
    /// See `initial_valid_loss`.
    pub best_valid_loss: f64,
    /// Validation token and sequence error rates at the best epoch, percent.
    pub valid_ter: f64,
    /// See `valid_ter`.
    pub valid_ser: f64,
    /// Mean seconds of training per epoch (validation excluded).
    pub seconds_per_epoch: f64,
    /// Seconds this invocation took.
    pub wall_seconds: f64,
    /// Threads used.
    pub threads: usize,
    /// The written file against the training code's decoding.
    pub agreement: Agreement,
    /// Bytes written.
    pub file_bytes: usize,
    /// The written file's precision (`f32`, or the `--quantize` format).
    pub precision: String,
}

/// Tells candle how to use the threads: matrix products split over `threads` (candle
/// reads `RAYON_NUM_THREADS` at every product), element-wise operations on the calling
/// thread (`CANDLE_NUM_THREADS=1`, unless the user set it): candle's pool for those
/// spins at a barrier after every operation, which on the small tensors of these models
/// (and on a machine shared with other work) costs more than it gains. Measured on the
/// date model on 2 cores: two thirds of the time went to that spinning.
fn candle_threads(threads: usize) {
    std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
}

/// FNV-1a over the parts (a stable fingerprint of a run's inputs).
fn fingerprint(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(&[0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Holds out [`HOLDOUT_SHARE`] of the pairs (at least one), chosen by the seed.
fn hold_out(mut pairs: Vec<Pair>, seed: u64) -> (Vec<Pair>, Vec<Pair>) {
    let n = ((pairs.len() as f64 * HOLDOUT_SHARE).round() as usize).clamp(1, pairs.len() - 1);
    let mut idx: Vec<usize> = (0..pairs.len()).collect();
    SplitMix64::new(seed ^ 0x005e_ed0f_da7a).shuffle(&mut idx);
    let held: std::collections::HashSet<usize> = idx[..n].iter().copied().collect();
    let mut valid = Vec::with_capacity(n);
    let mut train = Vec::with_capacity(pairs.len() - n);
    for (i, p) in pairs.drain(..).enumerate() {
        if held.contains(&i) {
            valid.push(p);
        } else {
            train.push(p);
        }
    }
    (train, valid)
}

/// For each board, the training sources longer than the positions it plans the model
/// for (`Capacities::positions_for`, the firmware's rule; `pad_to` is the model's fixed
/// length): one line saying how many, the longest and its line. The board rejects them.
fn too_long_for(
    boards: &[&s2s_device::Board],
    pad_to: usize,
    pairs: &[crate::data::Pair],
    examples: &[examples::Example],
) -> Vec<String> {
    boards
        .iter()
        .filter_map(|b| {
            let Some(fits) = b.capacities.positions_for(pad_to) else {
                return Some(format!(
                    "the model's fixed length of {pad_to} positions is over the {} {} takes: \
                     it cannot serve the model",
                    b.capacities.max_positions, b.name
                ));
            };
            let over: Vec<(usize, usize)> = pairs
                .iter()
                .zip(examples)
                .map(|(p, e)| (p.line, e.src.len()))
                .filter(|&(_, n)| n > fits)
                .collect();
            let &(line, longest) = over
                .iter()
                .max_by_key(|&&(l, n)| (n, std::cmp::Reverse(l)))?;
            Some(format!(
                "{} of {} training sources are longer than the {fits} positions {} plans this \
                 model for, which rejects them (the longest: {longest} positions, line {line})",
                over.len(),
                pairs.len(),
                b.name
            ))
        })
        .collect()
}

/// `s2s train`: trains the model of `start` (a configuration, or an f32 model file to
/// fine-tune) on the pairs of `data` (validating on `valid`, or on [`HOLDOUT_SHARE`] of
/// `data`), and writes the best epoch's weights to `output`: an f32 model file, or with
/// `--quantize` the integer file that was trained; a checkpoint after every epoch.
pub fn train_file(
    start: Start<'_>,
    data: &Path,
    valid: Option<&Path>,
    output: &Path,
    opt: &TrainOptions,
) -> Result<TrainReport> {
    let wall = Instant::now();
    limits::check_options(opt)?;
    let log = opt
        .log
        .clone()
        .unwrap_or_else(|| output.with_extension("csv"));
    crate::io::distinct_outputs(&[
        ("--output", Some(output)),
        ("--log", Some(&log)),
        ("--report", opt.report.as_deref()),
    ])?;
    let init = match start {
        Start::Init(path) => Some(from_model(path)?),
        Start::Config(_) => None,
    };
    let pairs = read_pairs(data)?;
    let (train_pairs, valid_pairs, valid_name) = match valid {
        Some(v) => (pairs, read_pairs(v)?, v.to_path_buf()),
        None if pairs.len() >= 2 => {
            let (t, v) = hold_out(pairs, opt.seed);
            (t, v, data.to_path_buf())
        }
        None => {
            return Err(Error::invalid(
                data.display(),
                Place::File,
                "need at least 2 pairs (one is held out for validation)",
            ))
        }
    };
    if train_pairs.is_empty() || valid_pairs.is_empty() {
        return Err(Error::invalid(
            if train_pairs.is_empty() {
                data
            } else {
                &valid_name
            }
            .display(),
            Place::File,
            "no source<TAB>target pairs",
        ));
    }
    let setup = match (start, init) {
        (_, Some(s)) => s,
        (Start::Config(config), None) => {
            from_config(config, train_pairs.iter().chain(&valid_pairs))?
        }
        (Start::Init(_), None) => unreachable!("read above"),
    };
    if let Some(m) = &setup.init {
        check_sources(m, &train_pairs, data)?;
        check_sources(m, &valid_pairs, &valid_name)?;
    }
    let desc = setup.desc;
    // Source positions: a character each at most, and the prefix and end tokens.
    let positions = train_pairs
        .iter()
        .chain(&valid_pairs)
        .map(|p| p.source.chars().count() + 5)
        .max()
        .unwrap_or(0)
        .min(crate::model::HOST_MAX_POSITIONS)
        .max(desc.src_pad_to);
    let batch = opt.batch.min(train_pairs.len());
    let memory = limits::machine_memory();
    match (&setup.cfg, start) {
        (Some(cfg), _) => limits::check_sizes(cfg, &desc, batch, positions, memory)?,
        (None, Start::Init(path)) | (None, Start::Config(path)) => {
            limits::check_model_size(path, &desc, batch, positions, memory)?
        }
    }
    let threads = match opt.threads {
        0 => std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        n => n,
    };
    candle_threads(threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::usage(format!("--threads {threads}: {e}")))?;
    let ckpt = Checkpoints {
        dir: opt
            .checkpoints
            .clone()
            .unwrap_or_else(|| checkpoint::default_dir(output)),
    };
    let read = |p: &Path| std::fs::read(p).map_err(Error::io(p));
    // What was not set adds nothing: the checkpoints of runs made before an option
    // existed keep their fingerprint.
    let settings = format!(
        "{} {} {} {} {} {}{}{}",
        opt.batch,
        opt.lr,
        opt.lr_decay,
        opt.clip,
        opt.dropout,
        opt.seed,
        opt.quantize
            .map_or(String::new(), |q| format!(" {:?}", Some(q))),
        match opt.label_smoothing {
            0.0 => String::new(),
            e => format!(" smoothing {e}"),
        }
    );
    let valid_bytes = valid.map(read).transpose()?.unwrap_or_default();
    let print = fingerprint(&[
        &setup.source_bytes,
        &read(data)?,
        &valid_bytes,
        settings.as_bytes(),
    ]);

    pool.install(|| {
        let mut rng = SplitMix64::new(opt.seed);
        let params = match &setup.init {
            Some(m) => Params::from_file(&m.file()).map_err(|e| {
                Error::invalid(m.path.display(), Place::File, format!("--init: {e}"))
            })?,
            None => Params::init(&desc, &mut rng, &Device::Cpu)?,
        };
        let (src_vocab, tgt_vocab, sep) = (&setup.src_vocab, &setup.tgt_vocab, &setup.separator);
        let to_model = |p: &Params| -> Result<LoadedModel> {
            let bytes = p
                .to_builder(desc, src_vocab, tgt_vocab, sep)?
                .to_bytes()
                .map_err(Error::model(output))?;
            LoadedModel::from_bytes(output, &bytes)
        };
        let skeleton = to_model(&params)?;
        let train_ex = encode_pairs(&skeleton.file(), &train_pairs, data)?;
        let valid_ex = encode_pairs(&skeleton.file(), &valid_pairs, &valid_name)?;
        // A model that streams takes sources of any length on a board (`\x01stream`).
        if desc.streams().is_err() {
            for w in too_long_for(&setup.boards, desc.src_pad_to, &train_pairs, &train_ex) {
                eprintln!("warning: {}: {w}", data.display());
            }
        }
        let quantizer = match opt.quantize {
            Some(scheme) => {
                let sources: Vec<String> = train_pairs.iter().map(|p| p.source.clone()).collect();
                let mut q = Quantizer::new(scheme, &sources);
                quant::check(&mut q, &skeleton)?;
                Some(std::sync::Mutex::new(q))
            }
            None => None,
        };
        let mut adam = Adam::new(&params, opt.lr)?;
        let mut state = TrainState {
            fingerprint: print.clone(),
            lr: opt.lr,
            ..TrainState::default()
        };
        match ckpt.state()? {
            Some(saved) if opt.resume => {
                if saved.fingerprint != print {
                    return Err(Error::usage(format!(
                        "{}: the checkpoint was made from another configuration, data or options; remove it to start again",
                        ckpt.dir.display()
                    )));
                }
                let last = ckpt.load(&saved.last_file)?;
                params.load(&last, "p/")?;
                adam.load(&params, &last)?;
                adam.step = saved.step;
                state = saved;
                if !opt.quiet {
                    eprintln!(
                        "resuming from {} after epoch {}",
                        ckpt.dir.display(),
                        state.epoch
                    );
                }
            }
            Some(_) => {
                return Err(Error::usage(format!(
                    "{} holds a checkpoint of an earlier run: --resume to continue it, or remove it",
                    ckpt.dir.display()
                )))
            }
            None => {}
        }
        if !opt.quiet {
            eprintln!(
                "training {}{} ({} parameters) on {} pairs, validating on {}, {threads} threads",
                setup.name,
                opt.quantize
                    .map_or(String::new(), |s| format!(" for {}", quant::scheme_name(s))),
                params.count(),
                train_ex.len(),
                valid_ex.len()
            );
        }
        let fit = Fit {
            desc: &desc,
            params: &params,
            train: &train_ex,
            valid: &valid_ex,
            opt,
            ckpt: &ckpt,
            log: &log,
            quant: quantizer.as_ref().map(|q| (q, &to_model as &ToModel<'_>)),
        };
        let state = fit.run(state, &mut adam)?;

        // The best epoch's weights, through the builder import uses (and with
        // `--quantize`, the quantizer, with the formats calibrated on them, as that
        // epoch's validation did).
        params.load(&ckpt.load(&state.best_file)?, "p/")?;
        let float = to_model(&params)?;
        let sources: Vec<String> = valid_pairs.iter().map(|p| p.source.clone()).collect();
        let (bytes, ours, (best_loss, ter, ser)) = match &quantizer {
            Some(q) => {
                let mut q = q.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                q.calibrate(&float)?;
                let m = q.quantize(&float)?;
                let ours = quant::greedy(&m, &valid_ex)?;
                let figures = quant::evaluate(&m, &valid_ex)?;
                (m.bytes().to_vec(), ours, figures)
            }
            None => (
                float.bytes().to_vec(),
                decode_all(&desc, &params, &valid_ex, false)?,
                evaluate(&desc, &params, &valid_ex)?,
            ),
        };
        let written = LoadedModel::from_bytes(output, &bytes)?;
        write_atomic(output, &bytes)?;
        let theirs = decode_lines(&written, &sources, Keep::default())?;
        let agreement = Agreement::new(&sources, &ours, &theirs);
        let trained: Vec<f64> = state
            .history
            .iter()
            .filter(|r| r.epoch > 0)
            .map(|r| r.train_seconds)
            .collect();
        let report = TrainReport {
            parameters: params.count(),
            train_pairs: train_ex.len(),
            valid_pairs: valid_ex.len(),
            epochs: state.epoch,
            best_epoch: state.best_epoch,
            initial_valid_loss: state.history.first().map_or(0.0, |r| r.valid_loss),
            best_valid_loss: best_loss,
            valid_ter: ter,
            valid_ser: ser,
            seconds_per_epoch: trained.iter().sum::<f64>() / trained.len().max(1) as f64,
            wall_seconds: wall.elapsed().as_secs_f64(),
            threads,
            agreement,
            file_bytes: bytes.len(),
            precision: written.file().precision().name().to_string(),
        };
        if let Some(path) = &opt.report {
            let json = serde_json::to_string_pretty(&report).map_err(|e| Error::Io {
                path: path.clone(),
                source: e.into(),
            })?;
            write_atomic(path, json.as_bytes())?;
        }
        Ok(report)
    })
}
