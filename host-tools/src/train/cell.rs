//! Recurrent cells on candle tensors, computing what `rnn-core` computes, batched.
//!
//! A cell is a [`CellKind`] plus its weights ([`Cell`]); its state is a [`State`]. The
//! input projection `W_ih x + b_ih` of a whole sequence is one matrix product
//! ([`Cell::project`]); each step then adds the recurrent part ([`Cell::step`]). A new
//! kind of cell (LSTM: four gate blocks `[i, f, g, o]` and a cell state in
//! [`State::c`]) adds a variant, its gate count and its step.

use candle_core::{Result, Tensor, D};
use rnn_core::ResetMode;

use super::params::Weights;

/// The kind of recurrent cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// GRU with gates `[r, z, n]` and the reset gate where [`ResetMode`] says.
    Gru(ResetMode),
}

impl CellKind {
    /// Gate blocks in the stacked matrices (rows = `gates * hidden`).
    pub fn gates(self) -> usize {
        match self {
            CellKind::Gru(_) => 3,
        }
    }

    /// Whether the state has a cell part besides `h`.
    pub fn has_cell_state(self) -> bool {
        match self {
            CellKind::Gru(_) => false,
        }
    }
}

/// A recurrent state: `h` (`batch x hidden`) and, for cells that have one, `c`.
#[derive(Clone, Debug)]
pub struct State {
    /// The hidden state (the output).
    pub h: Tensor,
    /// The cell state (LSTM), `None` for a GRU.
    pub c: Option<Tensor>,
}

impl State {
    /// The same values without the graph that computed them (no gradient flows back).
    pub fn detach(&self) -> State {
        State {
            h: self.h.detach(),
            c: self.c.as_ref().map(Tensor::detach),
        }
    }

    /// Keeps `self` where `keep` (`batch x 1`, 1 = update) is 0 and takes `new` where it
    /// is 1: padded positions leave the state as it was.
    pub fn masked(&self, new: State, keep: &Tensor) -> Result<State> {
        let mix = |old: &Tensor, new: &Tensor| -> Result<Tensor> {
            old.add(&new.sub(old)?.broadcast_mul(keep)?)
        };
        Ok(State {
            h: mix(&self.h, &new.h)?,
            c: match (&self.c, &new.c) {
                (Some(a), Some(b)) => Some(mix(a, b)?),
                _ => None,
            },
        })
    }
}

/// One cell's weights, looked up once per batch.
pub struct Cell {
    kind: CellKind,
    hidden: usize,
    /// `W_ih^T` (`in x gates*H`), `b_ih`, `W_hh^T`, `b_hh`.
    w_ih_t: Tensor,
    b_ih: Tensor,
    w_hh_t: Tensor,
    b_hh: Tensor,
    /// For a GRU with the reset before the matmul: the candidate rows of `W_hh^T` and
    /// `b_hh` apart from the `r, z` rows.
    split: Option<[Tensor; 4]>,
}

impl Cell {
    /// The cell whose input layer is `w_ih` and recurrent layer `w_hh` (names as in the
    /// model file, e.g. `encoder.w_ih.l0.fwd`).
    pub fn new(p: &Weights, kind: CellKind, w_ih: &str, w_hh: &str) -> Result<Cell> {
        let (wi, bi) = p.linear(w_ih);
        let (wh, bh) = p.linear(w_hh);
        let bi = bi.expect("recurrent layers have an input bias");
        let bh = bh.expect("recurrent layers have a recurrent bias");
        let hidden = wh.dim(1)?;
        let w_hh_t = wh.t()?;
        let split = match kind {
            CellKind::Gru(ResetMode::Before) => Some([
                w_hh_t.narrow(1, 0, 2 * hidden)?,
                bh.narrow(0, 0, 2 * hidden)?,
                w_hh_t.narrow(1, 2 * hidden, hidden)?,
                bh.narrow(0, 2 * hidden, hidden)?,
            ]),
            CellKind::Gru(ResetMode::After) => None,
        };
        Ok(Cell {
            kind,
            hidden,
            w_ih_t: wi.t()?,
            b_ih: bi.clone(),
            w_hh_t,
            b_hh: bh.clone(),
            split,
        })
    }

    /// Hidden size.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// The zero state for `batch` sequences.
    pub fn zeros(&self, batch: usize, like: &Tensor) -> Result<State> {
        let z = Tensor::zeros((batch, self.hidden), like.dtype(), like.device())?;
        Ok(State {
            c: self.kind.has_cell_state().then(|| z.clone()),
            h: z,
        })
    }

    /// `x W_ih^T + b_ih` for `x` of `n x cols` (or `b x t x cols`): the input part of
    /// every gate, computed once for a whole sequence. When `x` has fewer columns than
    /// `W_ih`, it is the first part of the input (the embedding before the context).
    pub fn project(&self, x: &Tensor) -> Result<Tensor> {
        let cols = x.dim(D::Minus1)?;
        let w = if cols == self.w_ih_t.dim(0)? {
            self.w_ih_t.clone()
        } else {
            self.w_ih_t.narrow(0, 0, cols)?
        };
        matmul_last(x, &w)?.broadcast_add(&self.b_ih)
    }

    /// The input part of the gates from input parts `x` (each `batch x cols`) whose
    /// columns start at `start` in `W_ih`, without the bias (for inputs computed step
    /// by step, such as the context, added to a [`Cell::project`] of the rest).
    pub fn project_columns(&self, x: &Tensor, start: usize) -> Result<Tensor> {
        let w = self.w_ih_t.narrow(0, start, x.dim(D::Minus1)?)?;
        x.matmul(&w)
    }

    /// One step from the input part of the gates `gi` (`batch x gates*H`, bias
    /// included) and the state.
    pub fn step(&self, gi: &Tensor, s: &State) -> Result<State> {
        let n = self.hidden;
        match self.kind {
            CellKind::Gru(mode) => {
                let h = &s.h;
                let gi_rz = gi.narrow(1, 0, 2 * n)?;
                let gi_n = gi.narrow(1, 2 * n, n)?;
                let (rz, cand) = match (mode, &self.split) {
                    (ResetMode::Before, Some([w_rz, b_rz, w_n, b_n])) => {
                        let gh_rz = h.matmul(w_rz)?.broadcast_add(b_rz)?;
                        let rz = candle_nn::ops::sigmoid(&gi_rz.add(&gh_rz)?)?;
                        let r = rz.narrow(1, 0, n)?;
                        let gh_n = r.mul(h)?.matmul(w_n)?.broadcast_add(b_n)?;
                        (rz, gi_n.add(&gh_n)?)
                    }
                    _ => {
                        let gh = h.matmul(&self.w_hh_t)?.broadcast_add(&self.b_hh)?;
                        let rz =
                            candle_nn::ops::sigmoid(&gi_rz.add(&gh.narrow(1, 0, 2 * n)?)?)?;
                        let r = rz.narrow(1, 0, n)?;
                        (rz.clone(), gi_n.add(&r.mul(&gh.narrow(1, 2 * n, n)?)?)?)
                    }
                };
                let z = rz.narrow(1, n, n)?;
                let cand = cand.tanh()?;
                // h' = (1 - z) * n + z * h = n + z * (h - n)
                let h = cand.add(&z.mul(&h.sub(&cand)?)?)?;
                Ok(State { h, c: None })
            }
        }
    }
}

/// `x @ w` for `x` of `n x k` or `b x t x k` and `w` of `k x m`.
pub fn matmul_last(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    match x.dims() {
        [b, t, k] => x
            .reshape((b * t, *k))?
            .matmul(w)?
            .reshape((*b, *t, w.dim(1)?)),
        _ => x.matmul(w),
    }
}
