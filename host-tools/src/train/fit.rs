//! The training loop: epochs of shuffled mini-batches, each a teacher-forced loss,
//! its gradients and one clipped Adam update; after each epoch the validation loss and
//! the greedy decoding's token and sequence error rates, early stopping on the token
//! error, the learning rate halved (by `lr_decay`) after an epoch without improvement,
//! and a checkpoint.

use std::time::Instant;

use candle_core::{Device, Result as CResult};
use seq2seq::ModelDesc;

use super::adam::Adam;
use super::checkpoint::{Checkpoints, EpochRow, TrainState};
use super::examples::{epoch_batches, eval_batches, make_batch, Example};
use super::log::{write_csv, Progress};
use super::model::{Bounds, Greedy, Model};
use super::params::Params;
use super::quant::{self, Quantizer};
use super::TrainOptions;
use crate::data::rng::SplitMix64;
use crate::error::Result;
use crate::eval::rates::Counts;
use crate::model::LoadedModel;

/// With `--quantize`, the integer model's calibrated formats are measured again every
/// this many batches (and after every epoch): while a model learns, its memory and keys
/// grow out of the formats measured an epoch before (measured on the CMUdict Bahdanau
/// model from scratch: calibrated once per epoch, its keys saturated within the first
/// epoch and the float and integer losses parted, 2.7 against 1.4 after 300 batches).
pub const RECALIBRATE: usize = 100;

/// Examples decoded per batch during validation.
const EVAL_BATCH: usize = 256;

/// Everything a run trains with.
pub struct Fit<'a> {
    /// The model.
    pub desc: &'a ModelDesc,
    /// Its parameters (updated in place).
    pub params: &'a Params,
    /// Training and validation examples.
    pub train: &'a [Example],
    /// See `train`.
    pub valid: &'a [Example],
    /// The options.
    pub opt: &'a TrainOptions,
    /// Where checkpoints go.
    pub ckpt: &'a Checkpoints,
    /// The CSV log.
    pub log: &'a std::path::Path,
    /// Quantization-aware training: the quantizer, and the f32 model file of
    /// parameters (which it quantizes).
    pub quant: Option<(&'a std::sync::Mutex<Quantizer>, &'a ToModel<'a>)>,
}

/// The f32 model file of parameters.
pub type ToModel<'a> = dyn Fn(&Params) -> Result<LoadedModel> + Sync + 'a;

/// The random numbers of epoch `epoch`: from the seed and the epoch alone, so a resumed
/// run draws what an uninterrupted one would.
pub fn epoch_rng(seed: u64, epoch: usize) -> SplitMix64 {
    let mut r = SplitMix64::new(seed ^ (epoch as u64).wrapping_mul(0xd1b5_4a32_d192_ed03));
    r.next_u64();
    r
}

/// Validation loss per token, token and sequence error rates (percent), over `ex`.
pub fn evaluate(desc: &ModelDesc, p: &Params, ex: &[Example]) -> CResult<(f64, f64, f64)> {
    let (start, end) = (u32::from(desc.tgt_start), u32::from(desc.tgt_end));
    let mut loss = 0.0;
    let mut tokens = 0usize;
    let mut counts = Counts::default();
    for idx in eval_batches(ex, EVAL_BATCH) {
        let refs: Vec<&Example> = idx.iter().map(|&i| &ex[i]).collect();
        let b = make_batch(&refs, start, end, &Device::Cpu)?;
        let l = Model::eval(desc, p).loss(&b)?.to_scalar::<f32>()?;
        loss += f64::from(l) * b.tokens as f64;
        tokens += b.tokens;
        for (g, e) in Model::eval(desc, p).greedy(&b, false)?.iter().zip(&refs) {
            counts.add(&g.ids, &e.tgt);
        }
    }
    Ok((
        loss / tokens.max(1) as f64,
        100.0 * counts.ter(),
        100.0 * counts.ser(),
    ))
}

/// Greedy decodes of `ex` in their order.
pub fn decode_all(
    desc: &ModelDesc,
    p: &Params,
    ex: &[Example],
    weights: bool,
) -> CResult<Vec<Greedy>> {
    let (start, end) = (u32::from(desc.tgt_start), u32::from(desc.tgt_end));
    let mut out = vec![Greedy::default(); ex.len()];
    for idx in eval_batches(ex, EVAL_BATCH) {
        let refs: Vec<&Example> = idx.iter().map(|&i| &ex[i]).collect();
        let b = make_batch(&refs, start, end, &Device::Cpu)?;
        for (g, &i) in Model::eval(desc, p)
            .greedy(&b, weights)?
            .into_iter()
            .zip(&idx)
        {
            out[i] = g;
        }
    }
    Ok(out)
}

impl Fit<'_> {
    /// Trains from `state` (fresh or resumed) until early stopping or the epoch limit,
    /// with a checkpoint after every epoch; returns the final state. `adam` holds the
    /// optimizer state matching `state`.
    pub fn run(&self, mut state: TrainState, adam: &mut Adam) -> Result<TrainState> {
        let opt = self.opt;
        let desc = self.desc;
        let (start, end) = (u32::from(desc.tgt_start), u32::from(desc.tgt_end));
        let mut progress = Progress::new(opt.quiet);
        if state.history.is_empty() {
            let t = Instant::now();
            let (loss, ter, ser) = self.validate()?;
            let row = EpochRow {
                epoch: 0,
                valid_loss: loss,
                valid_ter: ter,
                valid_ser: ser,
                lr: opt.lr,
                valid_seconds: t.elapsed().as_secs_f64(),
                best: true,
                ..EpochRow::default()
            };
            progress.end_epoch(&row, opt.epochs);
            // The untrained model is the baseline of the log, not a rival: a first
            // epoch whose output is worse than the untrained model's (too long, where
            // the untrained one says nothing) must not count against the patience.
            state.best_ter = f64::INFINITY;
            state.history.push(row);
            self.checkpoint(&mut state, adam, true)?;
        }
        while !state.finished && state.epoch < opt.epochs {
            let epoch = state.epoch + 1;
            let mut rng = epoch_rng(opt.seed, epoch);
            let batches = epoch_batches(self.train, opt.batch, &mut rng);
            progress.start_epoch(epoch, opt.epochs, batches.len());
            adam.lr = state.lr;
            let t = Instant::now();
            let (mut sum, mut tokens) = (0.0f64, 0usize);
            for (i, idx) in batches.iter().enumerate() {
                if let (Some((q, to_model)), true) = (self.quant, i > 0 && i % RECALIBRATE == 0) {
                    lock(q).calibrate(&to_model(self.params)?)?;
                }
                let refs: Vec<&Example> = idx.iter().map(|&i| &self.train[i]).collect();
                let b = make_batch(&refs, start, end, &Device::Cpu)?;
                let loss = match self.quant {
                    Some((q, to_model)) => {
                        let m = lock(q).quantize(&to_model(self.params)?)?;
                        let exact = quant::forced_logits(&m, &refs, b.steps, &b.tgt_mask)?;
                        let bounds = Bounds::of(m.file().desc());
                        Model::quantized(desc, self.params, bounds)?
                            .smoothed(opt.label_smoothing)
                            .loss_with(&b, Some(&exact))?
                    }
                    None => Model::train(desc, self.params, opt.dropout, &mut rng)
                        .smoothed(opt.label_smoothing)
                        .loss(&b)?,
                };
                let grads = loss.backward()?;
                adam.update(self.params, &grads, opt.clip)?;
                sum += f64::from(loss.to_scalar::<f32>()?) * b.tokens as f64;
                tokens += b.tokens;
                progress.batch(sum / tokens as f64);
            }
            let train_seconds = t.elapsed().as_secs_f64();
            progress.validating();
            let t = Instant::now();
            let (valid_loss, ter, ser) = self.validate()?;
            let better = ter < state.best_ter;
            let row = EpochRow {
                epoch,
                train_loss: sum / tokens.max(1) as f64,
                valid_loss,
                valid_ter: ter,
                valid_ser: ser,
                lr: state.lr,
                train_seconds,
                valid_seconds: t.elapsed().as_secs_f64(),
                best: better,
            };
            progress.end_epoch(&row, opt.epochs);
            state.history.push(row);
            state.epoch = epoch;
            state.step = adam.step;
            if better {
                state.best_ter = ter;
                state.best_epoch = epoch;
                state.bad_epochs = 0;
            } else {
                state.bad_epochs += 1;
                state.lr *= opt.lr_decay;
            }
            state.finished = state.bad_epochs >= opt.patience;
            self.checkpoint(&mut state, adam, better)?;
        }
        Ok(state)
    }

    /// Validation loss, token and sequence error rates: of the float model, or with
    /// `--quantize` of the integer model, its formats calibrated on the parameters as
    /// they are now (the calibration the next epoch trains with and a file of these
    /// parameters is written with).
    fn validate(&self) -> Result<(f64, f64, f64)> {
        match self.quant {
            Some((q, to_model)) => {
                let f32_model = to_model(self.params)?;
                let mut q = lock(q);
                q.calibrate(&f32_model)?;
                quant::evaluate(&q.quantize(&f32_model)?, self.valid)
            }
            None => Ok(evaluate(self.desc, self.params, self.valid)?),
        }
    }

    fn checkpoint(&self, state: &mut TrainState, adam: &Adam, best: bool) -> Result {
        let mut last = self.params.tensors("p/");
        last.extend(adam.tensors(self.params));
        let best = best.then(|| self.params.tensors("p/"));
        self.ckpt.save(last, best, state)?;
        write_csv(self.log, &state.history)
    }
}

/// The quantizer (a poisoned lock: a thread panicked with it, which the run reports).
fn lock<'q>(q: &'q std::sync::Mutex<Quantizer>) -> std::sync::MutexGuard<'q, Quantizer> {
    q.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
