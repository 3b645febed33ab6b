//! Attention on candle tensors, batched, computing what `attention-core` computes:
//! scores (additive with or without its matrices, dot, scaled dot, general), the
//! padding mask, the weights and the context.

use candle_core::{Result, Tensor, D};
use seq2seq::desc::{ModelDesc, ScoreKind};

use super::cell::matmul_last;
use super::params::Weights;

/// The attention's weights, looked up once per batch.
pub struct Attention {
    score: ScoreKind,
    /// Additive: `W^T` and its bias (absent: the query as it is).
    query: Option<(Tensor, Option<Tensor>)>,
    /// Additive: `v^T` (`A x 1`).
    v_t: Option<Tensor>,
    /// Dot, scaled dot and general: the factor on `q . k`.
    scale: f64,
}

/// What attention needs from the encoder, per batch.
pub struct Memory {
    /// Values, `batch x positions x M`.
    pub values: Tensor,
    /// Keys (precomputed `U m`, `W m`, or the values), `batch x positions x K`.
    pub keys: Tensor,
    /// 0 where a sequence attends, a large negative number elsewhere.
    pub mask: Tensor,
}

impl Attention {
    /// The attention of `desc`, or `None` for a decoder without attention.
    pub fn new(desc: &ModelDesc, p: &Weights) -> Result<Option<Attention>> {
        if !desc.has_attention() {
            return Ok(None);
        }
        let (query, v_t) = match desc.attention.score {
            ScoreKind::Additive => {
                let q = if desc.attention.query_proj {
                    let (w, b) = p.linear("attention.query");
                    Some((w.t()?, b.cloned()))
                } else {
                    None
                };
                (q, Some(p.linear("attention.v").0.t()?))
            }
            _ => (None, None),
        };
        Ok(Some(Attention {
            score: desc.attention.score,
            query,
            v_t,
            scale: f64::from(desc.attention.scale),
        }))
    }

    /// The keys of `values` (`batch x positions x M`): `U m` (+ bias) for an additive
    /// score with a key matrix, `W m` for the general score (saturated at `key_bound`),
    /// else the values.
    pub fn memory(
        desc: &ModelDesc,
        p: &Weights,
        values: Tensor,
        mask: Tensor,
        key_bound: Option<f64>,
    ) -> Result<Memory> {
        let layer = match desc.attention.score {
            ScoreKind::Additive if desc.attention.key_proj => Some("attention.key"),
            ScoreKind::General => Some("attention.general"),
            _ => None,
        };
        let keys = match layer {
            Some(name) => {
                let (w, b) = p.linear(name);
                let k = matmul_last(&values, &w.t()?)?;
                let k = match b {
                    Some(b) => k.broadcast_add(b)?,
                    None => k,
                };
                super::model::saturate(k, key_bound)?
            }
            None => values.clone(),
        };
        Ok(Memory { values, keys, mask })
    }

    /// Weights (`batch x positions`) and context (`batch x M`) for the queries `q`
    /// (`batch x D`).
    pub fn attend(&self, q: &Tensor, m: &Memory) -> Result<(Tensor, Tensor)> {
        let scores = match self.score {
            ScoreKind::Additive => {
                let wq = match &self.query {
                    Some((w_t, b)) => {
                        let x = q.matmul(w_t)?;
                        match b {
                            Some(b) => x.broadcast_add(b)?,
                            None => x,
                        }
                    }
                    None => q.clone(),
                };
                let e = m.keys.broadcast_add(&wq.unsqueeze(1)?)?.tanh()?;
                let v_t = self.v_t.as_ref().expect("additive scores have v");
                matmul_last(&e, v_t)?.squeeze(2)?
            }
            ScoreKind::Dot | ScoreKind::ScaledDot | ScoreKind::General => {
                let s = m.keys.matmul(&q.unsqueeze(2)?)?.squeeze(2)?;
                if self.scale == 1.0 {
                    s
                } else {
                    s.affine(self.scale, 0.0)?
                }
            }
        };
        let scores = scores.add(&m.mask)?;
        let weights = softmax_last(&scores)?;
        let context = weights.unsqueeze(1)?.matmul(&m.values)?.squeeze(1)?;
        Ok((weights, context))
    }
}

/// Softmax over the last dimension (the maximum is subtracted as a constant).
pub fn softmax_last(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let e = x.broadcast_sub(&max)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}
