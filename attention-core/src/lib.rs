//! Attention for microcontrollers, generic over the number format ([`Precision`]),
//! without heap: scores, masks, weights, context and entropy.
//!
//! Scores `e_i` of a query `q` against the keys `k_i` of every source position:
//!
//! | [`Score`] | `e_i` | keys precomputed once per source |
//! |---|---|---|
//! | `Additive` (Bahdanau) | `v^T tanh(W q + U k_i)` (+ biases) | `U k_i + b_U` |
//! | `Additive` without matrices (Keras `AdditiveAttention`) | `sum_j scale_j tanh(q_j + k_ij)` | none |
//! | `Dot` | `s * q . k_i` with `s = 1` (dot) or `1/sqrt(d)` (scaled dot) | none |
//! | `General` | `s * q^T W k_i` | `W k_i` |
//!
//! The weights are `alpha = softmax(e)` over the attended positions (all of them, or
//! the valid length only: [`Mask`]), the context is `c = sum_i alpha_i h_i` over the
//! memory `h` (the values), and [`entropy`] is `-sum_i alpha_i ln alpha_i`.
//!
//! ```
//! use attention_core::{Attention, AttnScratch, Mask, Score};
//! use s2s_kernels::{Fmt, F32};
//!
//! // Dot attention of a 2-d query over three 2-d memory rows (keys = values).
//! let att = Attention::<F32>::new(Score::Dot { scale: 1.0 }, 2, 2, Fmt::Q15, Fmt::Q15).unwrap();
//! let memory = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
//! let (mut scores, mut qw, mut tv) = ([0.0; 3], [0.0; 0], [0.0; 0]);
//! let mut scratch = AttnScratch { scores: &mut scores, query: &mut qw, tanh: &mut tv };
//! let (mut weights, mut context) = ([0.0; 3], [0.0; 2]);
//! att.attend(&[0.0, 2.0], &memory, &memory, 3, Mask::None, &mut scratch, &mut weights, &mut context)
//!     .unwrap();
//! // Scores (0, 2, 2): the last two rows share the weight.
//! assert!((weights[1] - weights[2]).abs() < 1e-7 && weights[0] < weights[1]);
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
// A build without any score (for models without attention): every score path is
// unreachable, and what only the scores read is unused.
#![cfg_attr(
    not(any(feature = "additive", feature = "multiplicative")),
    allow(unused_imports, unused_variables, unreachable_code, dead_code)
)]

use s2s_kernels::part::Part;
use s2s_kernels::text::{Describe, Sink};
use s2s_kernels::{float, say, Fmt, Linear, Marks, Phase, Precision, ShapeError};

mod monotonic;

/// Positions a monotonic step scores at once ([`Attention::monotonic_marked`]): a step
/// usually stops within a few positions of the last one, and each chunk costs a query
/// projection.
pub const MONOTONIC_CHUNK: usize = 8;

/// Errors of this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// A query, key, memory or buffer had the wrong length.
    Shape(ShapeError),
    /// The score's matrices do not fit the query and memory sizes.
    Dimensions {
        /// Query size.
        query: usize,
        /// Memory (value) size per position.
        memory: usize,
    },
    /// Monotonic alignment asked of a score other than the additive one (whose `v`
    /// bias is the energy's offset).
    NotAdditive,
    /// A mask's valid length is 0 or beyond the attended positions.
    BadMask {
        /// The valid length given.
        valid: usize,
        /// Positions attended.
        positions: usize,
    },
}

impl From<ShapeError> for Error {
    fn from(e: ShapeError) -> Self {
        Error::Shape(e)
    }
}

impl Describe for Error {
    fn describe(&self, out: &mut dyn Sink) -> core::fmt::Result {
        match *self {
            Error::Shape(e) => say!(out; "attention: ", e),
            Error::Dimensions { query, memory } => say!(out;
                "attention: score matrices do not fit query size ", query, " and memory size ",
                memory
            ),
            Error::NotAdditive => say!(out;
                "attention: monotonic needs the additive score"
            ),
            Error::BadMask { valid, positions } => say!(out;
                "attention: valid length ", valid, " outside 1..=", positions,
                " attended positions"
            ),
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.describe(f)
    }
}

impl core::error::Error for Error {}

/// How the score of a query against one key is computed. `Additive` exists with the
/// crate feature `additive`, `Dot` and `General` with `multiplicative` (both by
/// default): a build without one leaves those scores' code out.
pub enum Score<'a, P: Precision> {
    /// `v^T tanh(W q + U k_i)`, each matrix optional (absent = identity), biases inside
    /// the layers. Without matrices and with `v` = Keras' `scale` this is Keras'
    /// `AdditiveAttention` (`v` all ones when `use_scale=False`).
    #[cfg(feature = "additive")]
    Additive {
        /// `W` (attention size x query size), or `None` when the query is used as is.
        query: Option<Linear<'a, P>>,
        /// `U` (attention size x memory size), or `None` when the memory is the key.
        key: Option<Linear<'a, P>>,
        /// `v` (1 x attention size).
        v: Linear<'a, P>,
    },
    /// `scale * q . k_i` (`scale` 1 for dot, `1/sqrt(d)` for scaled dot).
    #[cfg(feature = "multiplicative")]
    Dot {
        /// The factor applied to every score.
        scale: P::Scale,
    },
    /// `scale * q^T W k_i` with `W` (query size x memory size).
    #[cfg(feature = "multiplicative")]
    General {
        /// `W`.
        w: Linear<'a, P>,
        /// The factor applied to every score.
        scale: P::Scale,
    },
    /// A build without any score (a model without attention needs none): never made.
    #[cfg(not(any(feature = "additive", feature = "multiplicative")))]
    #[doc(hidden)]
    None(core::convert::Infallible, core::marker::PhantomData<&'a P>),
}

impl<P: Precision> Clone for Score<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for Score<'_, P> {}

/// Which source positions are attended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mask {
    /// Every position, padding included (models trained without a mask).
    None,
    /// The first `n` positions; the others get weight exactly 0.
    Valid(usize),
}

/// Scratch of one [`Attention::attend`]: `scores` one per source position, `query` and
/// `tanh` the sizes returned by [`Attention::query_scratch_len`].
pub struct AttnScratch<'s, P: Precision> {
    /// Scores, one per attended position.
    pub scores: &'s mut [P::Wide],
    /// The projected query (additive scores).
    pub query: &'s mut [P::Wide],
    /// One row of `tanh(W q + U k_i)` (additive scores).
    pub tanh: &'s mut [P::Act],
}

/// An attention mechanism between a decoder query and an encoder memory.
pub struct Attention<'a, P: Precision> {
    score: Score<'a, P>,
    query_dim: usize,
    memory_dim: usize,
    query_fmt: Fmt,
    key_fmt: Fmt,
}

impl<P: Precision> Clone for Attention<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for Attention<'_, P> {}

fn shape(what: &'static str, expected: usize, found: usize) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::Shape(ShapeError {
            what,
            expected,
            found,
        }))
    }
}

impl<'a, P: Precision> Attention<'a, P> {
    /// An attention of queries of `query_dim` (format `query_fmt`) over memories of
    /// `memory_dim` per position; keys, once computed, have format `key_fmt` (the
    /// memory's own format when the memory is the key).
    pub fn new(
        score: Score<'a, P>,
        query_dim: usize,
        memory_dim: usize,
        query_fmt: Fmt,
        key_fmt: Fmt,
    ) -> Result<Self, Error> {
        let bad = Error::Dimensions {
            query: query_dim,
            memory: memory_dim,
        };
        let ok: bool = match &score {
            #[cfg(feature = "additive")]
            Score::Additive { query, key, v } => {
                let a = v.cols();
                v.rows() == 1
                    && query.map_or(query_dim == a, |w| w.rows() == a && w.cols() == query_dim)
                    && key.map_or(memory_dim == a, |u| u.rows() == a && u.cols() == memory_dim)
            }
            #[cfg(feature = "multiplicative")]
            Score::Dot { .. } => query_dim == memory_dim,
            #[cfg(feature = "multiplicative")]
            Score::General { w, .. } => w.rows() == query_dim && w.cols() == memory_dim,
            #[cfg(not(any(feature = "additive", feature = "multiplicative")))]
            Score::None(never, _) => match *never {},
        };
        if !ok || query_dim == 0 || memory_dim == 0 {
            return Err(bad);
        }
        Ok(Attention {
            score,
            query_dim,
            memory_dim,
            query_fmt,
            key_fmt,
        })
    }

    /// The score.
    pub fn score(&self) -> &Score<'a, P> {
        &self.score
    }
    /// Query size.
    pub fn query_dim(&self) -> usize {
        self.query_dim
    }
    /// Memory size per position.
    pub fn memory_dim(&self) -> usize {
        self.memory_dim
    }

    /// Size of a key per position; when [`Attention::keys_are_memory`], the memory's.
    pub fn key_dim(&self) -> usize {
        match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { key: Some(u), .. } => u.rows(),
            #[cfg(feature = "additive")]
            Score::Additive { key: None, .. } => self.memory_dim,
            #[cfg(feature = "multiplicative")]
            Score::Dot { .. } => self.memory_dim,
            #[cfg(feature = "multiplicative")]
            Score::General { .. } => self.query_dim,
            #[cfg(not(any(feature = "additive", feature = "multiplicative")))]
            Score::None(never, _) => match *never {},
        }
    }

    /// True when the keys are the memory itself (nothing to precompute or store).
    pub fn keys_are_memory(&self) -> bool {
        match self.score {
            #[cfg(feature = "additive")]
            Score::Additive { key, .. } => key.is_none(),
            #[cfg(feature = "multiplicative")]
            Score::Dot { .. } => true,
            #[allow(unreachable_patterns)] // with both features
            _ => false,
        }
    }

    /// Sizes of the `query` (wide) and `tanh` (activation) scratch buffers.
    pub fn query_scratch_len(&self) -> (usize, usize) {
        match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { v, .. } => (v.cols(), v.cols()),
            #[allow(unreachable_patterns)] // without `multiplicative`
            _ => (0, 0),
        }
    }

    /// Multiply-accumulates of the keys of one source position (done once per source).
    pub fn key_macs(&self) -> usize {
        match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { key: Some(u), .. } => u.macs(),
            #[cfg(feature = "multiplicative")]
            Score::General { w, .. } => w.macs(),
            _ => 0,
        }
    }

    /// Multiply-accumulates of one decoder step over `t` positions, weights and context
    /// included.
    pub fn step_macs(&self, t: usize) -> usize {
        let per_pos = match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { v, .. } => v.macs(),
            #[allow(unreachable_patterns)] // without `multiplicative`
            _ => self.key_dim(),
        };
        let query = match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { query: Some(w), .. } => w.macs(),
            _ => 0,
        };
        query + t * (per_pos + self.memory_dim)
    }

    /// Computes the keys of `t` memory rows into `keys` (`t x key_dim()`), using
    /// `wide` (`key_dim()` long) as scratch. Nothing to do when the keys are the memory.
    pub fn precompute_keys(
        &self,
        memory: &[P::Act],
        t: usize,
        keys: &mut [P::Act],
        wide: &mut [P::Wide],
    ) -> Result<(), Error> {
        let layer: &Linear<'a, P> = match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { key: Some(u), .. } => u,
            #[cfg(feature = "multiplicative")]
            Score::General { w, .. } => w,
            _ => return Ok(()),
        };
        let (m, k) = (self.memory_dim, self.key_dim());
        if memory.len() < t * m || keys.len() < t * k || wide.len() < k {
            return Err(Error::Shape(ShapeError {
                what: "keys",
                expected: t * k,
                found: keys.len(),
            }));
        }
        if k == 0 {
            return Ok(()); // keys of no values
        }
        let wide = wide.part_mut(..k, "key scratch")?;
        // `max(1)`: `new` refused a memory of size 0.
        let rows = memory.chunks_exact(m.max(1));
        for (row, key) in rows.zip(keys.chunks_exact_mut(k)).take(t) {
            layer.apply(&[row], wide)?;
            for (o, &w) in key.iter_mut().zip(&*wide) {
                *o = P::narrow(w, self.key_fmt);
            }
        }
        Ok(())
    }

    /// Scores of `query` against the first `n` keys into `s.scores[..n]`.
    pub fn scores(
        &self,
        query: &[P::Act],
        keys: &[P::Act],
        n: usize,
        s: &mut AttnScratch<'_, P>,
    ) -> Result<(), Error> {
        let k = self.key_dim();
        shape("query", self.query_dim, query.len())?;
        if keys.len() < n * k || s.scores.len() < n {
            return Err(Error::Shape(ShapeError {
                what: "keys",
                expected: n * k,
                found: keys.len(),
            }));
        }
        let keys = keys.part(..n * k, "keys")?;
        let scores = s.scores.part_mut(..n, "attention scores")?;
        match &self.score {
            #[cfg(feature = "additive")]
            Score::Additive { query: w, v, .. } => {
                let a = v.cols();
                if s.query.len() < a || s.tanh.len() < a {
                    return Err(Error::Shape(ShapeError {
                        what: "attention scratch",
                        expected: a,
                        found: s.query.len().min(s.tanh.len()),
                    }));
                }
                let (qw, tv) = (&mut s.query[..a], &mut s.tanh[..a]);
                match w {
                    Some(w) => w.apply(&[query], qw)?,
                    None => {
                        for (o, &x) in qw.iter_mut().zip(query) {
                            *o = P::widen(x, self.query_fmt);
                        }
                    }
                }
                // v over the tanh rows of all positions in one call (a precision may
                // fuse it: see `Precision::additive_scores`).
                P::additive_scores(qw, keys, self.key_fmt, v, tv, scores)?;
            }
            #[cfg(feature = "multiplicative")]
            Score::Dot { scale } | Score::General { scale, .. } => {
                // `max(1)`: `new` refused queries and memories of size 0.
                for (e, key) in scores.iter_mut().zip(keys.chunks_exact(k.max(1))) {
                    *e = P::dot(query, self.query_fmt, key, self.key_fmt, *scale);
                }
            }
            #[cfg(not(any(feature = "additive", feature = "multiplicative")))]
            Score::None(never, _) => match *never {},
        }
        Ok(())
    }

    /// Scores, weights and context of `query` over `t` positions: `weights` (`t` long)
    /// receives `alpha` (0 beyond a mask's valid length) and `context` the weighted sum
    /// of the `memory` rows.
    #[allow(clippy::too_many_arguments)]
    pub fn attend(
        &self,
        query: &[P::Act],
        keys: &[P::Act],
        memory: &[P::Act],
        t: usize,
        mask: Mask,
        s: &mut AttnScratch<'_, P>,
        weights: &mut [P::Act],
        context: &mut [P::Act],
    ) -> Result<(), Error> {
        self.attend_marked(query, keys, memory, t, mask, s, weights, context, &mut ())
    }

    /// [`Attention::attend`], marking its phases ([`Phase::Scores`],
    /// [`Phase::Softmax`], [`Phase::Context`], then [`Phase::Rest`]) on `marks`.
    // Inlined into each caller, as it was with one: the decoder step's global attention
    // measured 113 instructions and 144 bytes of stack more on the micro:bit with it
    // out of line once local attention called it too.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn attend_marked(
        &self,
        query: &[P::Act],
        keys: &[P::Act],
        memory: &[P::Act],
        t: usize,
        mask: Mask,
        s: &mut AttnScratch<'_, P>,
        weights: &mut [P::Act],
        context: &mut [P::Act],
        marks: &mut impl Marks,
    ) -> Result<(), Error> {
        let bufs = (s, weights, context);
        self.attend_weighed(query, keys, memory, t, mask, bufs, |_| {}, marks)
    }

    /// [`Attention::attend_marked`] with the softmax's weights of the attended
    /// positions passed to `weigh` before they make the context (local-p attention
    /// multiplies them by its Gaussian). `bufs` is the scratch, the weights and the
    /// context.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn attend_weighed(
        &self,
        query: &[P::Act],
        keys: &[P::Act],
        memory: &[P::Act],
        t: usize,
        mask: Mask,
        (s, weights, context): (&mut AttnScratch<'_, P>, &mut [P::Act], &mut [P::Act]),
        weigh: impl FnOnce(&mut [P::Act]),
        marks: &mut impl Marks,
    ) -> Result<(), Error> {
        let n = match mask {
            Mask::None => t,
            Mask::Valid(n) => n,
        };
        if n == 0 || n > t {
            return Err(Error::BadMask {
                valid: n,
                positions: t,
            });
        }
        shape("context", self.memory_dim, context.len())?;
        if weights.len() < t || memory.len() < n * self.memory_dim {
            return Err(Error::Shape(ShapeError {
                what: "attention weights",
                expected: t,
                found: weights.len(),
            }));
        }
        marks.mark(Phase::Scores);
        self.scores(query, keys, n, s)?;
        let weights = weights.part_mut(..t, "attention weights")?;
        let (attended, masked) = weights.split_at_mut_checked(n).ok_or(Error::BadMask {
            valid: n,
            positions: t,
        })?;
        marks.mark(Phase::Softmax);
        P::softmax(s.scores.part(..n, "attention scores")?, attended);
        weigh(attended);
        masked.fill(P::Act::default());
        let rows = memory.part(..n * self.memory_dim, "memory")?;
        marks.mark(Phase::Context);
        P::weighted_sum(attended, rows, context);
        marks.mark(Phase::Rest);
        Ok(())
    }
}

/// Entropy `-sum_i alpha_i ln alpha_i` (nats) of attention weights: `ln t` for uniform
/// weights over `t` positions, near 0 when one position takes all. For reports only.
pub fn entropy<P: Precision>(weights: &[P::Act]) -> f32 {
    -weights
        .iter()
        .map(|&w| P::unit_to_f32(w))
        .filter(|&p| p > 0.0)
        .map(|p| p * float::ln(p))
        .sum::<f32>()
}

#[cfg(test)]
mod tests;
