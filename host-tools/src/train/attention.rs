//! Attention on candle tensors, batched, computing what `attention-core` computes:
//! scores (additive with or without its matrices, dot, scaled dot, general), the
//! padding mask, the weights and the context; for monotonic attention the expected
//! alignment it is trained with, or the hard one it is decoded with, and MoChA's
//! weights over the chunk ending at each position; local attention's window, and
//! local-p's predicted centre and Gaussian.

use candle_core::{DType, Result, Tensor, D};
use seq2seq::desc::{AttentionDesc, ModelDesc, Ordering, ScoreKind};

use super::cell::matmul_last;
use super::examples::MASKED;
use super::params::Weights;

/// The attention's weights, looked up once per batch.
pub struct Attention {
    score: ScoreKind,
    /// Additive: `W^T` and its bias (absent: the query as it is).
    query: Option<(Tensor, Option<Tensor>)>,
    /// Additive: `v^T` (`A x 1`).
    v_t: Option<Tensor>,
    /// Monotonic: `v`'s bias, the energy's offset `r`.
    offset: Option<Tensor>,
    /// Dot, scaled dot and general: the factor on `q . k`.
    scale: f64,
    /// Monotonic: the chunk width (MoChA when more than 1).
    chunk: usize,
    /// The description's attention, whose window a local attention's steps attend.
    desc: AttentionDesc,
    /// Local-p: `W_p^T`, its bias, `v_p^T` and its bias.
    predictor: Option<[Tensor; 4]>,
}

/// What attention needs from the encoder, per batch.
pub struct Memory {
    /// Values, `batch x positions x M`.
    pub values: Tensor,
    /// Keys (precomputed `U m`, `W m`, or the values), `batch x positions x K`.
    pub keys: Tensor,
    /// 0 where a sequence attends, a large negative number elsewhere.
    pub mask: Tensor,
    /// The positions each sequence attends (the zeros of `mask`).
    pub lens: Vec<usize>,
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
        let offset = match desc.attention.ordering {
            Ordering::Monotonic => p.linear("attention.v").1.cloned(),
            _ => None,
        };
        let predictor = match desc.attention.predicted() {
            true => {
                let layer = |name| -> Result<[Tensor; 2]> {
                    let (w, b) = p.linear(name);
                    let b = b.unwrap_or_else(|| panic!("{name} has a bias in training"));
                    Ok([w.t()?, b.clone()])
                };
                let ([w, bw], [v, bv]) = (
                    layer("attention.position_w")?,
                    layer("attention.position_v")?,
                );
                Some([w, bw, v, bv])
            }
            false => None,
        };
        Ok(Some(Attention {
            predictor,
            score: desc.attention.score,
            query,
            v_t,
            offset,
            scale: f64::from(desc.attention.scale),
            chunk: usize::from(desc.attention.chunk),
            desc: desc.attention,
        }))
    }

    /// The keys of `values` (`batch x positions x M`): `U m` (+ bias) for an additive
    /// score with a key matrix, `W m` for the general score (saturated at `key_bound`),
    /// else the values; with the batch's attention mask and the positions each sequence
    /// attends.
    pub fn memory(
        desc: &ModelDesc,
        p: &Weights,
        values: Tensor,
        (mask, lens): (Tensor, Vec<usize>),
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
        Ok(Memory {
            values,
            keys,
            mask,
            lens,
        })
    }

    /// Alignment and weights (`batch x positions`) and context (`batch x M`) for the
    /// queries `q` (`batch x D`); a monotonic attention's alignment from `align` (see
    /// [`Align`]; `None` for the other orderings). The alignment is what the next step
    /// aligns from; the weights, which make the context, are the alignment itself
    /// except for MoChA (its chunk's softmax weighted by the alignment). `step` is the
    /// decoder step's index, which places a local attention's window.
    pub fn attend(
        &self,
        q: &Tensor,
        m: &Memory,
        align: Option<Align<'_>>,
        step: usize,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let scores = self.scores(q, m)?;
        // Local-p: the predicted centres `p` (`batch x 1`), which place the windows.
        let predicted = self.predict(q, m)?;
        let centres = match &predicted {
            Some(p) => p.squeeze(1)?.to_vec1::<f32>()?,
            None => Vec::new(),
        };
        let window;
        let mask = match self.desc.local() {
            true => {
                window = m.mask.add(&self.window_mask(m, step, &centres)?)?;
                &window
            }
            false => &m.mask,
        };
        let chunked = align.is_some() && self.chunk > 1;
        let alignment = match (&self.offset, align) {
            (Some(r), Some(Align::Expected { prev, noise })) => {
                let e = scores.broadcast_add(r)?;
                let e = match noise {
                    Some(n) => e.add(n)?,
                    None => e,
                };
                expected_alignment(&candle_nn::ops::sigmoid(&e)?, prev, m)?
            }
            (Some(r), Some(Align::Hard { prev })) => {
                hard_alignment(&scores.broadcast_add(r)?, prev, m)?
            }
            _ => softmax_last(&scores.add(mask)?)?,
        };
        let weights = match chunked {
            true => chunk_weights(&alignment, &scores.add(mask)?, self.chunk)?,
            false => alignment.clone(),
        };
        // Local-p: the window's softmax times the Gaussian `exp(-(s - p)^2 / (2 sigma^2))`,
        // `sigma = D / 2`, through which the predictor learns.
        let (alignment, weights) = match &predicted {
            Some(p) => {
                let t = m.mask.dim(1)?;
                let s = Tensor::arange(0u32, t as u32, q.device())?.to_dtype(DType::F32)?;
                let d = f64::from(self.desc.window);
                let g = s
                    .unsqueeze(0)?
                    .broadcast_sub(p)?
                    .sqr()?
                    .affine(-2.0 / (d * d), 0.0)?;
                let w = weights.mul(&g.exp()?)?;
                (w.clone(), w)
            }
            None => (alignment, weights),
        };
        let context = weights.unsqueeze(1)?.matmul(&m.values)?.squeeze(1)?;
        Ok((alignment, weights, context))
    }

    /// Local attention's window at decoder step `step` (`batch x positions`): 0 at the
    /// positions each sequence's step attends (`AttentionDesc::reach`, as the runtime
    /// places it: about the step's index, or for local-p about the position nearest
    /// each sequence's predicted one in `centres`), [`MASKED`] elsewhere.
    fn window_mask(&self, m: &Memory, step: usize, centres: &[f32]) -> Result<Tensor> {
        let (b, t) = m.mask.dims2()?;
        let mut v = vec![MASKED; b * t];
        for (i, (row, &n)) in v.chunks_exact_mut(t).zip(&m.lens).enumerate() {
            // (As `s2s_kernels::Precision::nearest` rounds: `as` saturates.)
            let centre = centres.get(i).map_or(step, |&p| (p + 0.5) as usize);
            row[self.desc.reach(centre, n)].fill(0.0);
        }
        Tensor::from_vec(v, (b, t), m.mask.device())
    }

    /// Local-p's predicted positions `p = n sigmoid(v_p . tanh(W_p q))` (`batch x 1`)
    /// of the queries `q` over each sequence's `n` attended positions; `None` for the
    /// other attentions.
    fn predict(&self, q: &Tensor, m: &Memory) -> Result<Option<Tensor>> {
        let Some([w, bw, v, bv]) = &self.predictor else {
            return Ok(None);
        };
        let h = q.matmul(w)?.broadcast_add(bw)?.tanh()?;
        let s = candle_nn::ops::sigmoid(&h.matmul(v)?.broadcast_add(bv)?)?;
        let n: Vec<f32> = m.lens.iter().map(|&n| n as f32).collect();
        let n = Tensor::from_vec(n, (m.lens.len(), 1), q.device())?;
        Ok(Some(s.mul(&n)?))
    }

    /// The scores (`batch x positions`) of the queries `q` (`batch x D`).
    fn scores(&self, q: &Tensor, m: &Memory) -> Result<Tensor> {
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
        Ok(scores)
    }
}

/// How a monotonic attention aligns, from the previous step's weights `prev` (`batch
/// x positions`; one-hot at position 0 before the first step: [`first_alignment`]).
#[derive(Clone, Copy)]
pub enum Align<'t> {
    /// Training: the expected alignment of Raffel et al. (2017), eq. 9, from stopping
    /// probabilities `sigmoid(energy + noise)`.
    Expected {
        /// The previous step's expected alignment.
        prev: &'t Tensor,
        /// Gaussian noise on the energies (training), which pushes the probabilities
        /// to 0 or 1 as the hard decisions of decoding need.
        noise: Option<&'t Tensor>,
    },
    /// Decoding as the runtime does: from the position attended at the previous step,
    /// the first whose energy is at least 0; one-hot weights, all 0 when none stops.
    Hard {
        /// The previous step's weights.
        prev: &'t Tensor,
    },
}

/// The alignment before the first step: one-hot at position 0.
pub fn first_alignment(m: &Memory) -> Result<Tensor> {
    let (b, t) = m.mask.dims2()?;
    let one = Tensor::ones((b, 1), DType::F32, m.mask.device())?;
    match t {
        1 => Ok(one),
        _ => Tensor::cat(
            &[one, Tensor::zeros((b, t - 1), DType::F32, m.mask.device())?],
            1,
        ),
    }
}

/// The smallest exclusive product of `1 - p` divided by (as TensorFlow's and fairseq's
/// parallel form clamp it).
const CUMPROD_FLOOR: f64 = 1e-10;

/// `alpha_j = p_j prod_{l<j} (1 - p_l) sum_{k<=j} prev_k / prod_{l<k} (1 - p_l)`: the
/// expected monotonic alignment given the stopping probabilities `p` (0 past a
/// sequence's length) and the previous step's `prev`, in the parallel form (the
/// products as exponentials of sums of logarithms, clamped like the reference
/// implementations).
fn expected_alignment(p: &Tensor, prev: &Tensor, m: &Memory) -> Result<Tensor> {
    let p = p.mul(&valid(m)?)?;
    let log_keep = p.affine(-1.0, 1.0)?.clamp(CUMPROD_FLOOR, 1.0)?.log()?;
    let cumprod = log_keep.cumsum(1)?.sub(&log_keep)?.exp()?;
    let carried = prev.div(&cumprod.clamp(CUMPROD_FLOOR, 1.0)?)?.cumsum(1)?;
    p.mul(&cumprod)?.mul(&carried)?.clamp(0.0, 1.0)
}

/// MoChA's expected weights (Chiu and Raffel, 2018, eq. 20): `beta_k = sum_{j=k}^{k+w-1}
/// alpha_j exp(u_k) / sum_{l=j-w+1}^{j} exp(u_l)`, the softmax over the chunk of `w`
/// positions ending at `j` weighted by the monotonic alignment `alpha` (`batch x
/// positions`), of the energies `u` (masked: a large negative number at padding). One
/// energy serves the scan and the chunk (softmax ignores the offset). A one-hot
/// `alpha` gives the runtime's chunk: the softmax over the `w` positions ending at its
/// one.
fn chunk_weights(alpha: &Tensor, u: &Tensor, w: usize) -> Result<Tensor> {
    let max = u.max_keepdim(D::Minus1)?.detach();
    let e = u.broadcast_sub(&max)?.exp()?;
    let sums = moving_sum(&e, w - 1, 0)?.clamp(CUMPROD_FLOOR, f64::MAX)?;
    e.mul(&moving_sum(&alpha.div(&sums)?, 0, w - 1)?)
}

/// `out_j = sum_{l=j-back}^{j+ahead} x_l` along the last dimension (`batch x positions`),
/// zero past either end.
fn moving_sum(x: &Tensor, back: usize, ahead: usize) -> Result<Tensor> {
    let (b, t) = x.dims2()?;
    let zeros = |n: usize| Tensor::zeros((b, n), x.dtype(), x.device());
    let padded = Tensor::cat(&[zeros(back)?, x.clone(), zeros(ahead)?], 1)?;
    let mut sum = padded.narrow(1, 0, t)?;
    for i in 1..=back + ahead {
        sum = sum.add(&padded.narrow(1, i, t)?)?;
    }
    Ok(sum)
}

/// 1 where a sequence attends, 0 at its padding.
fn valid(m: &Memory) -> Result<Tensor> {
    m.mask.ge(0.0)?.to_dtype(DType::F32)
}

/// The hard monotonic alignment of the `energies` (`batch x positions`) from `prev`,
/// computed as the runtime computes it (one row at a time, scanning forward).
fn hard_alignment(energies: &Tensor, prev: &Tensor, m: &Memory) -> Result<Tensor> {
    let e: Vec<Vec<f32>> = energies.to_vec2()?;
    let prev: Vec<Vec<f32>> = prev.to_vec2()?;
    let valid: Vec<Vec<f32>> = valid(m)?.to_vec2()?;
    let t = e.first().map_or(0, Vec::len);
    let mut w = vec![0f32; e.len() * t];
    for (i, (row, before)) in e.iter().zip(&prev).enumerate() {
        let n = valid[i].iter().filter(|&&v| v > 0.0).count();
        // Where the last step attended; a row of zeros: nothing is left.
        let from = before.iter().position(|&v| v > 0.0).unwrap_or(n);
        if let Some(j) = (from..n).find(|&j| row[j] >= 0.0) {
            w[i * t + j] = 1.0;
        }
    }
    Tensor::from_vec(w, (e.len(), t), energies.device())
}

/// Softmax over the last dimension (the maximum is subtracted as a constant).
pub fn softmax_last(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let e = x.broadcast_sub(&max)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;

    fn memory(valid: &[usize], t: usize) -> Memory {
        let mask: Vec<f32> = valid
            .iter()
            .flat_map(|&n| (0..t).map(move |j| if j < n { 0.0 } else { -1e9 }))
            .collect();
        let mask = Tensor::from_vec(mask, (valid.len(), t), &Device::Cpu).unwrap();
        let values = Tensor::zeros((valid.len(), t, 1), DType::F32, &Device::Cpu).unwrap();
        Memory {
            keys: values.clone(),
            values,
            mask,
            lens: valid.to_vec(),
        }
    }

    fn rows(t: &Tensor) -> Vec<Vec<f32>> {
        t.to_vec2().unwrap()
    }

    #[test]
    fn the_expected_alignment_is_the_recurrence_and_the_hard_one_at_0_or_1() {
        let m = memory(&[4, 3], 4);
        let first = first_alignment(&m).unwrap();
        // From position 0 with p = 1/2 everywhere: 1/2, 1/4, 1/8, 1/16; the second
        // sequence ends at 3 positions, and what passes its end is lost.
        let half = Tensor::full(0.5f32, (2, 4), &Device::Cpu).unwrap();
        let a = rows(&expected_alignment(&half, &first, &m).unwrap());
        let expect = [[0.5, 0.25, 0.125, 0.0625], [0.5, 0.25, 0.125, 0.0]];
        for (r, e) in a.iter().zip(&expect) {
            for (x, y) in r.iter().zip(e) {
                assert!((x - y).abs() < 1e-6, "{a:?}");
            }
        }
        // Probabilities of 0 or 1 give the hard alignment: from the last position
        // attended, the first that stops.
        let p = Tensor::from_vec(
            vec![1f32, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0],
            (2, 4),
            &Device::Cpu,
        )
        .unwrap();
        let prev = Tensor::from_vec(
            vec![0f32, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            (2, 4),
            &Device::Cpu,
        )
        .unwrap();
        let soft = rows(&expected_alignment(&p, &prev, &m).unwrap());
        let energies = p.affine(2.0, -1.0).unwrap();
        let hard = rows(&hard_alignment(&energies, &prev, &m).unwrap());
        assert_eq!(hard, [[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0]]);
        for (r, e) in soft.iter().zip(&hard) {
            for (x, y) in r.iter().zip(e) {
                assert!((x - y).abs() < 1e-6, "{soft:?}");
            }
        }
        // MoChA: a one-hot alignment at j weighs the softmax of the chunk of w ending
        // at j (fewer at the start); an expected one keeps its mass, the padding's 0.
        let u = Tensor::from_vec(
            vec![0f32, 1.0, 2.0, 3.0, 0.5, -1.0, 1.5, -1e9],
            (2, 4),
            &Device::Cpu,
        )
        .unwrap();
        let onehot = rows(&chunk_weights(&prev, &u, 3).unwrap());
        let (e1, e2) = (1f32.exp(), 1.0);
        assert!((onehot[0][0] - e2 / (e1 + e2)).abs() < 1e-6, "{onehot:?}");
        assert!((onehot[0][1] - e1 / (e1 + e2)).abs() < 1e-6, "{onehot:?}");
        assert_eq!(&onehot[0][2..], [0.0, 0.0]);
        assert!((onehot[1][0] - 1.0).abs() < 1e-6 && onehot[1][1..] == [0.0; 3]);
        let alpha = expected_alignment(&half, &first, &m).unwrap();
        let beta = chunk_weights(&alpha, &u, 2).unwrap();
        for (a, b) in rows(&alpha).iter().zip(rows(&beta)) {
            let (sa, sb) = (a.iter().sum::<f32>(), b.iter().sum::<f32>());
            assert!((sa - sb).abs() < 1e-6 && b[3] >= 0.0, "{a:?} {b:?}");
        }
        assert_eq!(rows(&beta)[1][3], 0.0);
        // Nothing left to attend (a row of zeros) stays so.
        let none = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
        let hard = rows(&hard_alignment(&energies, &none, &m).unwrap());
        assert_eq!(hard, [[0.0; 4], [0.0; 4]]);
    }
}
