//! Quantization-aware training (`s2s train --quantize w8a16|w8f32`).
//!
//! Every mini-batch, the current parameters are quantized as `s2s quantize` stores them
//! (int8 per row, rounded to nearest, one weight plane; in w8a16 the activation formats
//! of the epoch's calibration) and the batch's sources are run through that integer
//! model (`seq2seq`'s `Runner::force` at the precision `s2s run` uses, teacher-forced): its logits are the forward value of the loss, so the loss is the
//! deployed model's own, with its roundings, saturations, tables and integer softmax.
//! The gradient flows through the float network on the same int8 weights
//! ([`fake_quant_rows`], straight through the rounding): the logits enter the graph as
//! `float + (integer - float)` with the difference detached.
//!
//! The w8a16 formats that are calibrated (memory, keys, attentional vector) are measured
//! again on [`CALIB_SOURCES`] training sources at the start of every epoch; those of the
//! embeddings follow their tables at every batch. Validation decodes the integer model
//! too, so early stopping and the best epoch are the integer model's.

use candle_core::{Result as CResult, Tensor};
use rayon::prelude::*;
use s2s_kernels::Precision;
use seq2seq::run::{Observer, Step};
use seq2seq::{ModelPrecision, Net, Plan, Runner};

use super::examples::Example;
use super::model::Greedy;
use crate::error::{Error, Result};
use crate::model::{top_two, LoadedModel};
use crate::quantize::{calibrate_ranges, quantize_nearest, Calibration, Scheme};

/// Training sources the w8a16 formats are calibrated on each epoch (spread over the
/// training set).
pub const CALIB_SOURCES: usize = 1000;

/// Lanes of the integer runs (sequences sharing each weight read).
const LANES: usize = 8;

/// What an epoch quantizes with.
pub struct Quantizer {
    /// The number format.
    pub scheme: Scheme,
    sources: Vec<String>,
    calib: Option<Calibration>,
}

impl Quantizer {
    /// A quantizer calibrating on up to [`CALIB_SOURCES`] of `train_sources`.
    pub fn new(scheme: Scheme, train_sources: &[String]) -> Quantizer {
        let n = train_sources.len();
        let take = n.clamp(1, CALIB_SOURCES);
        let sources = (0..take)
            .filter_map(|i| train_sources.get(i * n / take).cloned())
            .collect();
        Quantizer {
            scheme,
            sources,
            calib: None,
        }
    }

    /// Measures the calibrated formats on the f32 model of the current parameters
    /// (w8a16; w8f32 has none).
    pub fn calibrate(&mut self, f32_model: &LoadedModel) -> Result {
        if self.scheme == Scheme::W8a16 {
            self.calib = Some(calibrate_ranges(f32_model, &self.sources)?);
        }
        Ok(())
    }

    /// The integer model of `f32_model` (its path names it in errors).
    pub fn quantize(&self, f32_model: &LoadedModel) -> Result<LoadedModel> {
        let builder = quantize_nearest(f32_model, self.scheme, self.calib.as_ref())?;
        let bytes = builder.to_bytes().map_err(Error::model(&f32_model.path))?;
        LoadedModel::from_bytes(&f32_model.path, &bytes)
    }
}

/// Every step's logits as f32, in order.
struct Logits<'v>(&'v mut Vec<f32>);

impl<P: Precision> Observer<P> for Logits<'_> {
    fn step(&mut self, s: &Step<'_, P>) {
        self.0.extend(s.logits.iter().map(|&w| P::wide_to_f32(w)));
    }
}

/// A greedy decode's ids and top-two gaps.
#[derive(Default)]
struct Gaps(Greedy);

impl<P: Precision> Observer<P> for Gaps {
    fn step(&mut self, s: &Step<'_, P>) {
        let row: Vec<f32> = s.logits.iter().map(|&w| P::wide_to_f32(w)).collect();
        self.0.gaps.push(top_two(&row).1);
    }
}

/// The ids of a batch: each source as `u16` with its valid length.
fn source_ids(ex: &[&Example]) -> Vec<(Vec<u16>, usize)> {
    ex.iter()
        .map(|e| (e.src.iter().map(|&i| i as u16).collect(), e.attend))
        .collect()
}

/// Positions of the longest source of `ex` (or the model's fixed length).
fn positions(m: &LoadedModel, ex: &[&Example]) -> usize {
    let pad = m.file().desc().src_pad_to;
    ex.iter()
        .map(|e| e.src.len())
        .max()
        .unwrap_or(1)
        .max(pad)
        .max(1)
}

/// Teacher-forced logits of `ex` through `net`, `LANES` at a time: `[i][step][v]`.
fn forced<P: ModelPrecision>(
    net: &Net<'_, P>,
    positions: usize,
    ex: &[&Example],
) -> std::result::Result<Vec<Vec<f32>>, seq2seq::Error> {
    let plan = Plan::new::<P>(&net.desc, positions).bytes();
    let mut arena = vec![0u32; (plan * LANES).div_ceil(4)];
    let mut runner = Runner::<P, LANES>::with_lanes(net, &mut arena, positions)?;
    let mut out = Vec::with_capacity(ex.len());
    for chunk in ex.chunks(LANES) {
        let ids = source_ids(chunk);
        let sources: Vec<(&[u16], usize)> = ids.iter().map(|(s, v)| (&s[..], *v)).collect();
        let targets: Vec<Vec<u16>> = chunk
            .iter()
            .map(|e| e.tgt.iter().map(|&t| t as u16).collect())
            .collect();
        let targets: Vec<&[u16]> = targets.iter().map(|t| &t[..]).collect();
        let mut rows: Vec<Vec<f32>> = vec![Vec::new(); chunk.len()];
        let mut obs: Vec<Logits<'_>> = rows.iter_mut().map(Logits).collect();
        runner.force(&sources, &targets, &mut obs)?;
        out.extend(rows);
    }
    Ok(out)
}

/// Greedy decodes of `ex` through `net`, one lane.
fn greedy_lane<P: ModelPrecision>(
    net: &Net<'_, P>,
    positions: usize,
    ex: &[&Example],
) -> std::result::Result<Vec<Greedy>, seq2seq::Error> {
    let plan = Plan::new::<P>(&net.desc, positions).bytes();
    let mut arena = vec![0u32; plan.div_ceil(4)];
    let mut runner = Runner::<P>::new(net, &mut arena, positions)?;
    let mut out = vec![0u16; net.desc.max_steps];
    ex.iter()
        .map(|e| {
            let ids: Vec<u16> = e.src.iter().map(|&i| i as u16).collect();
            let mut g = Gaps::default();
            let n = runner.run(&ids, e.attend, &mut out, &mut g)?;
            g.0.ids = out[..n].iter().map(|&t| u32::from(t)).collect();
            Ok(g.0)
        })
        .collect()
}

/// Splits `ex` over the threads, runs `f` on each share and puts the results back in
/// order; errors name the model.
fn over_threads<T: Send>(
    m: &LoadedModel,
    ex: &[&Example],
    f: impl Fn(&[&Example]) -> std::result::Result<Vec<T>, seq2seq::Error> + Sync,
) -> Result<Vec<T>> {
    let share = ex
        .len()
        .div_ceil(rayon::current_num_threads().max(1))
        .max(LANES);
    // Each share starts with its thread's layer cache emptied (`forget_layers`): every
    // batch's model is new, at an address an earlier one may have had.
    let parts: Vec<std::result::Result<Vec<T>, seq2seq::Error>> = ex
        .par_chunks(share)
        .map(|part| {
            crate::model::forget_layers();
            f(part)
        })
        .collect();
    let mut out = Vec::with_capacity(ex.len());
    for p in parts {
        out.extend(p.map_err(Error::model(&m.path))?);
    }
    Ok(out)
}

/// Teacher-forced logits of `ex` (`[i][step][v]`) through the integer model as the host
/// runs it (`s2s run`'s batched integer layers, the core's integers).
fn forced_rows(m: &LoadedModel, ex: &[&Example]) -> Result<Vec<Vec<f32>>> {
    let positions = positions(m, ex);
    m.with_net(|any| {
        crate::dispatch!(any, |net: P| over_threads(m, ex, |part| forced::<P>(
            &net, positions, part
        )))
    })
}

/// The integer model's teacher-forced logits of `ex` as a `batch x steps x vocab`
/// tensor: sequence `i`'s `tgt.len() + 1` steps, zeros after them (masked out of the
/// loss).
pub fn forced_logits(
    m: &LoadedModel,
    ex: &[&Example],
    steps: usize,
    like: &Tensor,
) -> Result<Tensor> {
    let v = m.file().desc().tgt_vocab;
    let rows = forced_rows(m, ex)?;
    let mut all = vec![0f32; ex.len() * steps * v];
    for (i, r) in rows.iter().enumerate() {
        let n = r.len().min(steps * v);
        all[i * steps * v..i * steps * v + n].copy_from_slice(&r[..n]);
    }
    Ok(Tensor::from_vec(all, (ex.len(), steps, v), like.device())?)
}

/// The integer model's greedy decodes of `ex` (ids and top-two gaps) by the core's own
/// precision (`W8A16` or `W8F32`), not the host's batched layers that `s2s run` decodes
/// the written file with: the two are compared.
pub fn greedy(m: &LoadedModel, ex: &[Example]) -> Result<Vec<Greedy>> {
    let refs: Vec<&Example> = ex.iter().collect();
    let file = m.file();
    let positions = positions(m, &refs);
    match file.precision() {
        s2s_kernels::PrecisionKind::W8A16 => {
            let net = Net::<s2s_kernels::W8A16>::bind(&file).map_err(Error::model(&m.path))?;
            over_threads(m, &refs, |part| greedy_lane(&net, positions, part))
        }
        _ => {
            let net = Net::<s2s_kernels::W8F32>::bind(&file).map_err(Error::model(&m.path))?;
            over_threads(m, &refs, |part| greedy_lane(&net, positions, part))
        }
    }
}

/// `w` (`rows x cols`) with each row rounded to its int8 grid as `s2s quantize` rounds
/// it (scale `max |w_r| / 127`, codes rounded to nearest), the rounding passed straight
/// through by the gradient: `w + (q(w) - w)` with the difference detached.
pub fn fake_quant_rows(w: &Tensor) -> CResult<Tensor> {
    let max = w.abs()?.max_keepdim(1)?;
    let scale = max.affine(1.0 / 127.0, 0.0)?;
    // A zero row stays zero (its scale is 0: divide by 1 instead).
    let zero = scale.eq(0.0)?.to_dtype(w.dtype())?;
    let safe = scale.add(&zero)?;
    let q = w
        .broadcast_div(&safe)?
        .round()?
        .clamp(-127f32, 127f32)?
        .broadcast_mul(&scale)?;
    w.add(&q.sub(w)?.detach())
}

/// `float` in the graph with the forward value of `exact`.
pub fn straight_through(float: &Tensor, exact: &Tensor) -> CResult<Tensor> {
    float.add(&exact.sub(float)?.detach())
}

/// Refuses to quantize-train what the integer path cannot quantize, before training:
/// calibrates and quantizes the untrained model once; the error is one line naming
/// the option.
pub fn check(q: &mut Quantizer, f32_model: &LoadedModel) -> Result {
    q.calibrate(f32_model)
        .and_then(|()| q.quantize(f32_model))
        .map(|_| ())
        .map_err(|e| Error::usage(format!("--quantize {}: {e}", scheme_name(q.scheme))))
}

/// The scheme's name on the command line.
pub fn scheme_name(s: Scheme) -> &'static str {
    match s {
        Scheme::W8a16 => "w8a16",
        Scheme::W8f32 => "w8f32",
    }
}

/// The integer model's validation figures: loss per token (teacher-forced, the end
/// token included, as [`super::fit::evaluate`] counts it) and the greedy decodes' token
/// and sequence error rates (percent).
pub fn evaluate(m: &LoadedModel, ex: &[Example]) -> Result<(f64, f64, f64)> {
    let d = *m.file().desc();
    let v = d.tgt_vocab;
    let refs: Vec<&Example> = ex.iter().collect();
    let rows = forced_rows(m, &refs)?;
    let (mut loss, mut tokens) = (0.0f64, 0usize);
    for (e, r) in ex.iter().zip(&rows) {
        let fed = e.tgt.iter().copied().chain([u32::from(d.tgt_end)]);
        for (row, t) in r.chunks(v).zip(fed) {
            let max = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let sum: f64 = row.iter().map(|&x| f64::from(x - max).exp()).sum();
            loss += sum.ln() - f64::from(row[t as usize] - max);
            tokens += 1;
        }
    }
    // Greedy decodes as `s2s run` makes them (the host's batched integer layers).
    let positions = positions(m, &refs);
    let decoded = m.with_net(|any| {
        crate::dispatch!(any, |net: P| over_threads(
            m,
            &refs,
            |part| greedy_lane::<P>(&net, positions, part)
        ))
    })?;
    let mut counts = crate::eval::rates::Counts::default();
    for (g, e) in decoded.iter().zip(ex) {
        counts.add(&g.ids, &e.tgt);
    }
    Ok((
        loss / tokens.max(1) as f64,
        100.0 * counts.ter(),
        100.0 * counts.ser(),
    ))
}
