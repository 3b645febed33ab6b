//! Adam (Kingma and Ba, 2015) with the gradients clipped to a global norm first, as
//! PyTorch's `clip_grad_norm_` followed by `Adam.step` does.

use std::collections::HashMap;

use candle_core::backprop::GradStore;
use candle_core::{Result, Tensor};

use super::params::Params;

/// The optimizer and its state (first and second moments per variable).
pub struct Adam {
    /// Learning rate.
    pub lr: f64,
    /// Updates made so far.
    pub step: u64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
}

impl Adam {
    /// A fresh optimizer for `params` (moments zero).
    pub fn new(params: &Params, lr: f64) -> Result<Adam> {
        let zeros = || -> Result<Vec<Tensor>> {
            params
                .vars()
                .map(|(_, v)| v.as_tensor().zeros_like())
                .collect()
        };
        Ok(Adam {
            lr,
            step: 0,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            m: zeros()?,
            v: zeros()?,
        })
    }

    /// One update from `grads`, clipped to global norm `clip` (none when 0); returns the
    /// norm before clipping.
    pub fn update(&mut self, params: &Params, grads: &GradStore, clip: f64) -> Result<f64> {
        let gs: Vec<Option<&Tensor>> = params.vars().map(|(_, v)| grads.get(v)).collect();
        let mut sq = 0.0f64;
        for g in gs.iter().flatten() {
            sq += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
        }
        let norm = sq.sqrt();
        let scale = if clip > 0.0 && norm > clip {
            clip / norm
        } else {
            1.0
        };
        self.step += 1;
        let t = self.step as i32;
        let c1 = 1.0 / (1.0 - self.beta1.powi(t));
        let c2 = 1.0 / (1.0 - self.beta2.powi(t));
        for (i, ((_, var), g)) in params.vars().zip(&gs).enumerate() {
            let Some(g) = g else { continue };
            let g = if scale == 1.0 {
                (*g).clone()
            } else {
                g.affine(scale, 0.0)?
            };
            let m = self.m[i]
                .affine(self.beta1, 0.0)?
                .add(&g.affine(1.0 - self.beta1, 0.0)?)?;
            let v = self.v[i]
                .affine(self.beta2, 0.0)?
                .add(&g.sqr()?.affine(1.0 - self.beta2, 0.0)?)?;
            let step = m
                .affine(c1, 0.0)?
                .div(&v.affine(c2, 0.0)?.sqrt()?.affine(1.0, self.eps)?)?
                .affine(self.lr, 0.0)?;
            var.set(&var.as_tensor().sub(&step)?)?;
            self.m[i] = m;
            self.v[i] = v;
        }
        Ok(norm)
    }

    /// The moments by name (for checkpoints): `m/<var>` and `v/<var>`.
    pub fn tensors(&self, params: &Params) -> HashMap<String, Tensor> {
        let mut out = HashMap::new();
        for (i, (name, _)) in params.vars().enumerate() {
            out.insert(format!("m/{name}"), self.m[i].clone());
            out.insert(format!("v/{name}"), self.v[i].clone());
        }
        out
    }

    /// Restores the moments from a checkpoint.
    pub fn load(&mut self, params: &Params, map: &HashMap<String, Tensor>) -> Result<()> {
        for (i, (name, _)) in params.vars().enumerate() {
            for (prefix, slot) in [("m", &mut self.m[i]), ("v", &mut self.v[i])] {
                *slot = map
                    .get(&format!("{prefix}/{name}"))
                    .ok_or_else(|| candle_core::Error::Msg(format!("no tensor {prefix}/{name}")))?
                    .clone();
            }
        }
        Ok(())
    }
}
