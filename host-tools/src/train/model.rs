//! The seq2seq model on candle tensors: the encoder stack, the bridge, and the decoder,
//! teacher-forced for training ([`Model::loss`]) or greedy ([`Model::greedy`]), in the
//! order and with the arithmetic the runtime's `seq2seq::run` defines.

use candle_core::{Result, Tensor, D};
use seq2seq::desc::{Init, ModelDesc, Ordering, Part};

use super::attention::{first_alignment, Align, Attention, Memory};
use super::cell::{matmul_last, Cell, CellKind, State};
use super::examples::Batch;
use super::params::{Params, Weights};
use crate::data::rng::SplitMix64;
use crate::model::top_two;

/// A step's attention: its alignment (what the next step aligns from) and its weights.
type Attended = (Tensor, Tensor);

/// A model description with its parameters, in training (dropout, from `rng`) or
/// evaluation mode.
pub struct Model<'a> {
    desc: &'a ModelDesc,
    p: Weights,
    dropout: f32,
    rng: Option<&'a mut SplitMix64>,
    /// Label smoothing of the loss (0: plain cross-entropy).
    smoothing: f32,
    /// Quantization-aware training: the largest magnitude the integer model's memory
    /// and keys hold in their formats (values beyond saturate there, as on the device).
    bounds: Bounds,
}

/// Saturation bounds of the integer model's calibrated activations (`None`: none).
#[derive(Clone, Copy, Debug, Default)]
pub struct Bounds {
    /// The memory (projected encoder outputs).
    pub memory: Option<f64>,
    /// The stored keys (`U m`, `W m`).
    pub keys: Option<f64>,
}

impl Bounds {
    /// The bounds of the quantized model `q`'s calibrated formats.
    pub fn of(q: &ModelDesc) -> Bounds {
        let top = |f: s2s_kernels::Fmt| 32767.0 * 2f64.powi(-i32::from(f.frac));
        let keys = q.keys_stored();
        Bounds {
            memory: q.memory_proj.map(|_| top(q.fmt_memory)),
            keys: keys.then(|| top(q.attention.fmt_keys)),
        }
    }
}

/// `x` saturated at `±bound` (no gradient beyond it, as the integer model's values do
/// not move there).
pub fn saturate(x: Tensor, bound: Option<f64>) -> Result<Tensor> {
    match bound {
        Some(b) => x.clamp(-b as f32, b as f32),
        None => Ok(x),
    }
}

/// The decoder's per-batch weights.
struct Decoder {
    cells: Vec<Cell>,
    attention: Option<Attention>,
    attentional: Option<(Tensor, Tensor)>,
    out: (Tensor, Tensor),
    emb: Tensor,
}

/// One greedy decode: output ids (end token excluded) and, per step, the gap between
/// the two largest logits; when asked, every step's attention weights and logits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Greedy {
    /// Output ids.
    pub ids: Vec<u32>,
    /// Top-two logit gap of every step (the end token's step included).
    pub gaps: Vec<f32>,
    /// Attention weights of every step over the attended positions (when kept).
    pub weights: Vec<Vec<f32>>,
    /// Logits of every step (when kept).
    pub logits: Vec<Vec<f32>>,
}

impl<'a> Model<'a> {
    /// Evaluation mode: no dropout.
    pub fn eval(desc: &'a ModelDesc, p: &Params) -> Self {
        Model {
            desc,
            p: p.weights(),
            dropout: 0.0,
            rng: None,
            smoothing: 0.0,
            bounds: Bounds::default(),
        }
    }

    /// Training mode: dropout `dropout` with masks from `rng`.
    pub fn train(desc: &'a ModelDesc, p: &Params, dropout: f32, rng: &'a mut SplitMix64) -> Self {
        Model {
            desc,
            p: p.weights(),
            dropout,
            rng: Some(rng),
            smoothing: 0.0,
            bounds: Bounds::default(),
        }
    }

    /// Quantization-aware training: no dropout (the integer model it stands for has
    /// none), the weights on their int8 grid ([`Params::quantized_weights`]), the memory
    /// and keys saturated where the integer model's formats end (`bounds`).
    pub fn quantized(desc: &'a ModelDesc, p: &Params, bounds: Bounds) -> Result<Self> {
        Ok(Model {
            desc,
            p: p.quantized_weights()?,
            dropout: 0.0,
            rng: None,
            smoothing: 0.0,
            bounds,
        })
    }

    /// The same model with label smoothing `eps` in its loss: each target token's
    /// negative log-probability weighted `1 - eps`, the mean over the vocabulary `eps`.
    pub fn smoothed(self, eps: f32) -> Self {
        Model {
            smoothing: eps,
            ..self
        }
    }

    /// Inverted dropout: each value kept with probability `1 - p` and scaled by
    /// `1 / (1 - p)`; the identity in evaluation mode.
    fn drop(&mut self, x: Tensor) -> Result<Tensor> {
        let p = self.dropout;
        let Some(rng) = self.rng.as_deref_mut().filter(|_| p > 0.0) else {
            return Ok(x);
        };
        let keep = 1.0 / (1.0 - p);
        let mask: Vec<f32> = (0..x.elem_count())
            .map(|_| if rng.unit_f32() < p { 0.0 } else { keep })
            .collect();
        x.mul(&Tensor::from_vec(mask, x.shape(), x.device())?)
    }

    /// Standard normal noise the shape of `like` in training (Raffel et al.'s noise on
    /// monotonic energies), none in evaluation.
    fn noise(&mut self, like: &Tensor) -> Result<Option<Tensor>> {
        let Some(rng) = self.rng.as_deref_mut() else {
            return Ok(None);
        };
        // Box-Muller: two uniforms per value (the first kept above 0 for its logarithm).
        let n: Vec<f32> = (0..like.elem_count())
            .map(|_| {
                let (u, v) = (1.0 - rng.unit_f32(), rng.unit_f32());
                (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
            })
            .collect();
        Tensor::from_vec(n, like.shape(), like.device()).map(Some)
    }

    fn embed(table: &Tensor, ids: &Tensor) -> Result<Tensor> {
        let dims = ids.dims().to_vec();
        let flat = table.index_select(&ids.flatten_all()?, 0)?;
        let mut shape = dims;
        shape.push(table.dim(1)?);
        flat.reshape(shape)
    }

    /// The encoder: memory and keys for attention, and the decoder's initial states.
    fn encode(&mut self, b: &Batch) -> Result<(Option<Memory>, Vec<State>)> {
        let d = self.desc;
        let kind = CellKind::Gru(d.enc_reset);
        let mut x = Self::embed(self.p.linear("encoder.embedding").0, &b.src)?;
        x = self.drop(x)?;
        let mut lasts = Vec::new();
        for l in 0..d.enc_layers {
            let mut outs = Vec::new();
            let mut finals = Vec::new();
            for (dir, name) in ["fwd", "bwd"]
                .iter()
                .enumerate()
                .take(1 + d.enc_bidir as usize)
            {
                let cell = Cell::new(
                    &self.p,
                    kind,
                    &format!("encoder.w_ih.l{l}.{name}"),
                    &format!("encoder.w_hh.l{l}.{name}"),
                )?;
                // positions x batch x gates*H
                let gi = cell.project(&x)?.transpose(0, 1)?.contiguous()?;
                let mut s = cell.zeros(b.size, &x)?;
                let mut hs = vec![None; b.positions];
                let order: Vec<usize> = if dir == 0 {
                    (0..b.positions).collect()
                } else {
                    (0..b.positions).rev().collect()
                };
                for t in order {
                    let new = cell.step(&gi.get(t)?, &s)?;
                    s = match &b.running {
                        Some(run) if t >= b.shortest => s.masked(new, &run.get(t)?)?,
                        _ => new,
                    };
                    hs[t] = Some(s.h.clone());
                }
                let hs: Vec<Tensor> = hs.into_iter().flatten().collect();
                outs.push(Tensor::stack(&hs, 1)?);
                finals.push(s.h);
            }
            x = Tensor::cat(&outs, 2)?;
            lasts.push(Tensor::cat(&finals, 1)?);
            if l + 1 < d.enc_layers {
                x = self.drop(x)?;
            }
        }
        let memory = if d.has_attention() {
            let values = match d.memory_proj {
                Some(_) => {
                    let (w, bias) = self.p.linear("memory_proj");
                    let v = matmul_last(&x, &w.t()?)?;
                    match bias {
                        Some(bias) => v.broadcast_add(bias)?,
                        None => v,
                    }
                }
                None => x,
            };
            let values = saturate(values, self.bounds.memory)?;
            Some(Attention::memory(
                d,
                &self.p,
                values,
                (b.attend.clone(), b.lens.clone()),
                self.bounds.keys,
            )?)
        } else {
            None
        };
        let init = (0..d.dec_layers)
            .map(|l| {
                let h = match d.init {
                    Init::Zeros => {
                        Tensor::zeros((b.size, d.dec_hidden), lasts[0].dtype(), lasts[0].device())?
                    }
                    Init::Last => lasts[l + d.enc_layers - d.dec_layers].clone(),
                    // `s2s train` refuses the mean bridge before it gets here.
                    Init::Mean => candle_core::bail!("s2s train has no mean bridge"),
                    Init::Dense => {
                        let (w, bias) = self.p.linear(&format!("bridge.l{l}"));
                        let top = &lasts[d.enc_layers - 1];
                        let y = top.matmul(&w.t()?)?;
                        match bias {
                            Some(bias) => y.broadcast_add(bias)?,
                            None => y,
                        }
                        .tanh()?
                    }
                };
                Ok(State { h, c: None })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((memory, init))
    }

    fn decoder(&self) -> Result<Decoder> {
        let d = self.desc;
        let kind = CellKind::Gru(d.dec_reset);
        let cells = (0..d.dec_layers)
            .map(|l| {
                Cell::new(
                    &self.p,
                    kind,
                    &format!("decoder.w_ih.l{l}"),
                    &format!("decoder.w_hh.l{l}"),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let dense = |name: &str| -> Result<(Tensor, Tensor)> {
            let (w, b) = self.p.linear(name);
            Ok((w.t()?, b.expect("dense layers have a bias").clone()))
        };
        Ok(Decoder {
            cells,
            attention: Attention::new(d, &self.p)?,
            attentional: d.attentional.map(|_| dense("attentional")).transpose()?,
            out: dense("output")?,
            emb: self.p.linear("decoder.embedding").0.clone(),
        })
    }

    /// One decoder step from the embedding `e` of its input token and `gi0`, the
    /// embedding's part of layer 0's gates (bias included). Returns the new states,
    /// the output layer's input and the attention's alignment and weights.
    ///
    /// A monotonic attention aligns from `prev`, the previous step's weights: their
    /// expected value, or with `hard` the runtime's hard alignment. `index` is the step's
    /// index, which places a local attention's window.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        dec: &Decoder,
        e: &Tensor,
        gi0: Tensor,
        states: &[State],
        mem: Option<&Memory>,
        prev: Option<&Tensor>,
        hard: bool,
        index: usize,
    ) -> Result<(Vec<State>, Tensor, Option<Attended>)> {
        let d = self.desc;
        let noise = match (prev, mem, hard) {
            (Some(_), Some(m), false) => self.noise(&m.mask)?,
            _ => None,
        };
        let attend = |q: &Tensor| -> Result<Option<(Tensor, Tensor, Tensor)>> {
            let (Some(a), Some(m)) = (&dec.attention, mem) else {
                return Ok(None);
            };
            let align = prev.map(|prev| match hard {
                true => Align::Hard { prev },
                false => Align::Expected {
                    prev,
                    noise: noise.as_ref(),
                },
            });
            a.attend(q, m, align, index).map(Some)
        };
        let mut att = None;
        let mut gi = gi0;
        if d.attention.ordering.context_first() {
            let top = &states[d.dec_layers - 1].h;
            att = attend(top)?;
            if let Some((_, _, c)) = &att {
                gi = gi.add(&dec.cells[0].project_columns(c, d.dec_emb)?)?;
            }
        }
        let mut new = Vec::with_capacity(states.len());
        for (l, cell) in dec.cells.iter().enumerate() {
            if l > 0 {
                let below = self.drop(
                    new.last()
                        .map(|s: &State| s.h.clone())
                        .expect("layer below"),
                )?;
                gi = cell.project(&below)?;
            }
            new.push(cell.step(&gi, &states[l])?);
        }
        let top = new[d.dec_layers - 1].h.clone();
        if d.attention.ordering == Ordering::Luong {
            att = attend(&top)?;
        }
        let context = att.as_ref().map(|(_, _, c)| c.clone());
        let attentional = match (&dec.attentional, &context) {
            (Some((w_t, b)), Some(c)) => Some(
                Tensor::cat(&[&top, c], 1)?
                    .matmul(w_t)?
                    .broadcast_add(b)?
                    .tanh()?,
            ),
            _ => None,
        };
        let parts: Vec<Tensor> = d
            .out_parts()
            .map(|p| match p {
                Part::State => top.clone(),
                Part::Context => context.clone().expect("context part needs attention"),
                Part::Embedding => e.clone(),
                Part::Attentional => attentional
                    .clone()
                    .expect("attentional part needs the layer"),
            })
            .collect();
        Ok((new, Tensor::cat(&parts, 1)?, att.map(|(a, w, _)| (a, w))))
    }

    /// A monotonic attention's alignment before the first step (none for the others).
    fn first_alignment(&self, mem: Option<&Memory>) -> Result<Option<Tensor>> {
        match mem {
            Some(m) if self.desc.attention.ordering == Ordering::Monotonic => {
                first_alignment(m).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The mean cross-entropy of the batch's targets under teacher forcing.
    pub fn loss(&mut self, b: &Batch) -> Result<Tensor> {
        self.loss_with(b, None)
    }

    /// [`Model::loss`] with the logits' forward values taken from `exact` (`batch x
    /// steps x vocab`, the integer model's: quantization-aware training), the gradient
    /// through this model's.
    pub fn loss_with(&mut self, b: &Batch, exact: Option<&Tensor>) -> Result<Tensor> {
        let (mem, mut states) = self.encode(b)?;
        let dec = self.decoder()?;
        let emb = Self::embed(&dec.emb, &b.tgt_in)?;
        let emb = self.drop(emb)?;
        // The embedding's share of layer 0's gates, for every step at once.
        let gi0 = dec.cells[0].project(&emb)?.transpose(0, 1)?.contiguous()?;
        let emb_t = emb.transpose(0, 1)?.contiguous()?;
        let mut parts = Vec::with_capacity(b.steps);
        let mut prev = self.first_alignment(mem.as_ref())?;
        for t in 0..b.steps {
            let (next, x, w) = self.step(
                &dec,
                &emb_t.get(t)?,
                gi0.get(t)?,
                &states,
                mem.as_ref(),
                prev.as_ref(),
                false,
                t,
            )?;
            states = next;
            prev = prev.and(w.map(|(alignment, _)| alignment));
            parts.push(x);
        }
        let x = self.drop(Tensor::stack(&parts, 1)?)?;
        let logits = matmul_last(&x, &dec.out.0)?.broadcast_add(&dec.out.1)?;
        let logits = match exact {
            Some(e) => super::quant::straight_through(&logits, e)?,
            None => logits,
        };
        let v = logits.dim(D::Minus1)?;
        let logp = candle_nn::ops::log_softmax(&logits.reshape((b.size * b.steps, v))?, 1)?;
        let mut picked = logp.gather(&b.tgt_out, 1)?.squeeze(1)?;
        if self.smoothing > 0.0 {
            let eps = f64::from(self.smoothing);
            let mean = logp.mean(1)?;
            picked = picked
                .affine(1.0 - eps, 0.0)?
                .add(&mean.affine(eps, 0.0)?)?;
        }
        let total = picked.mul(&b.tgt_mask)?.sum_all()?;
        total.affine(-1.0 / b.tokens as f64, 0.0)
    }

    /// Greedy decoding of the batch's sources (their targets are not used): from the
    /// start token until the end token or `max_steps`, as the runtime decodes; with
    /// `keep`, every step's attention weights and logits too.
    pub fn greedy(&mut self, b: &Batch, keep: bool) -> Result<Vec<Greedy>> {
        let d = self.desc;
        let (mem, mut states) = self.encode(b)?;
        let dec = self.decoder()?;
        let mut out = vec![Greedy::default(); b.size];
        let mut done = vec![false; b.size];
        let mut y = vec![u32::from(d.tgt_start); b.size];
        let attend = match &mem {
            Some(m) => m.lens.clone(),
            None => vec![0; b.size],
        };
        let mut prev = self.first_alignment(mem.as_ref())?;
        for index in 0..d.max_steps {
            if done.iter().all(|&x| x) {
                break;
            }
            let ids = Tensor::from_vec(y.clone(), b.size, b.src.device())?;
            let e = Self::embed(&dec.emb, &ids)?;
            let gi0 = dec.cells[0].project(&e)?;
            let (next, x, att) = self.step(
                &dec,
                &e,
                gi0,
                &states,
                mem.as_ref(),
                prev.as_ref(),
                true,
                index,
            )?;
            let (alignment, weights) = att.unzip();
            prev = prev.and(alignment);
            // No gradient flows through a greedy decode: the states are cut from the
            // previous steps' graph, so that a long decode is no deep chain of tensors
            // (whose drop would recurse once per step).
            states = next.iter().map(State::detach).collect();
            let logits: Vec<Vec<f32>> =
                x.matmul(&dec.out.0)?.broadcast_add(&dec.out.1)?.to_vec2()?;
            let weights: Option<Vec<Vec<f32>>> = match (&weights, keep) {
                (Some(w), true) => Some(w.to_vec2()?),
                _ => None,
            };
            for (i, row) in logits.iter().enumerate() {
                if done[i] {
                    continue;
                }
                let (best, gap) = top_two(row);
                out[i].gaps.push(gap);
                if let Some(w) = &weights {
                    out[i].weights.push(w[i][..attend[i]].to_vec());
                }
                if keep {
                    out[i].logits.push(row.clone());
                }
                y[i] = best;
                if best == u32::from(d.tgt_end) {
                    done[i] = true;
                } else {
                    out[i].ids.push(best);
                }
            }
        }
        Ok(out)
    }
}
