//! The GRU cell.

use heapless::Vec as HVec;
use s2s_kernels::part::Part;
use s2s_kernels::{Job, Linear, Marks, Phase, Precision, ShapeError};

use crate::error::Error;
use crate::gates::GateLayers;
use crate::recurrent::Recurrent;
use crate::scratch::CellScratch;

/// Where the reset gate acts in the candidate `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum ResetMode {
    /// `n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`: PyTorch, Keras
    /// `reset_after=True`, ONNX `linear_before_reset=1`.
    After = 0,
    /// `n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)`: Keras `reset_after=False`,
    /// ONNX `linear_before_reset=0`.
    Before = 1,
}

impl ResetMode {
    /// The mode with this file id.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::After),
            1 => Some(Self::Before),
            _ => None,
        }
    }
}

/// One GRU cell: `W_ih` (`3H x I`, with `b_ih`) and `W_hh` (`3H x H`, with `b_hh`),
/// rows stacked `[r, z, n]`; `r` and `z` use the recurrent activation (the logistic
/// sigmoid unless [`GruCell::with_recurrent`] says otherwise).
pub struct GruCell<'a, P: Precision> {
    layers: GateLayers<'a, P>,
    mode: ResetMode,
    rec: Recurrent,
}

impl<P: Precision> Clone for GruCell<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for GruCell<'_, P> {}

impl<P: Precision> core::fmt::Debug for GruCell<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "GruCell(in {}, hidden {}, reset {:?}, {:?})",
            self.input(),
            self.hidden(),
            self.mode,
            self.rec
        )
    }
}

/// The gates' activation as a type, so that the element-wise loops are compiled once
/// for the logistic sigmoid (what nearly every GRU uses, with no per-element dispatch)
/// and once for any [`Recurrent`]; the matrix products are shared.
trait GateFn<P: Precision>: Copy {
    fn gate(self, x: P::Wide) -> P::Act;
}

#[derive(Clone, Copy)]
struct Sigmoid;

impl<P: Precision> GateFn<P> for Sigmoid {
    #[inline]
    fn gate(self, x: P::Wide) -> P::Act {
        P::sigmoid(x)
    }
}

impl<P: Precision> GateFn<P> for Recurrent {
    #[inline]
    fn gate(self, x: P::Wide) -> P::Act {
        self.apply::<P>(x)
    }
}

impl<'a, P: Precision> GruCell<'a, P> {
    /// A cell from its two layers; checks that they have `3H` rows for `H = w_hh.cols()`.
    pub fn new(w_ih: Linear<'a, P>, w_hh: Linear<'a, P>, mode: ResetMode) -> Result<Self, Error> {
        GateLayers::check(3, &w_ih, &w_hh)?;
        Ok(GruCell {
            layers: GateLayers { w_ih, w_hh },
            mode,
            rec: Recurrent::Sigmoid,
        })
    }

    /// The same cell with the recurrent activation `rec` for its `r` and `z` gates.
    pub fn with_recurrent(self, rec: Recurrent) -> Self {
        GruCell { rec, ..self }
    }

    /// Hidden size `H`.
    pub fn hidden(&self) -> usize {
        self.layers.hidden()
    }
    /// Input size `I` (all parts).
    pub fn input(&self) -> usize {
        self.layers.input()
    }
    /// The input layer `W_ih` (with `b_ih`).
    pub fn w_ih(&self) -> &Linear<'a, P> {
        &self.layers.w_ih
    }
    /// The recurrent layer `W_hh` (with `b_hh`).
    pub fn w_hh(&self) -> &Linear<'a, P> {
        &self.layers.w_hh
    }
    /// Where the reset gate acts.
    pub fn mode(&self) -> ResetMode {
        self.mode
    }
    /// The activation of the `r` and `z` gates.
    pub fn recurrent(&self) -> Recurrent {
        self.rec
    }
    /// Multiply-accumulates of one step.
    pub fn macs(&self) -> usize {
        self.layers.macs()
    }

    /// One step: `h <- GRU(x, h)`, where the input `x` may come in parts (a
    /// concatenation that is never copied; as many parts as the input layer declares).
    pub fn step(
        &self,
        x: &[&[P::Act]],
        h: &mut [P::Act],
        s: &mut CellScratch<'_, P>,
    ) -> Result<(), Error> {
        self.step_batch::<1>(&[x], &mut [h], &mut [s], &mut ())
    }

    /// One step of up to `N` independent sequences at once (`x[i]`, `h[i]`, `s[i]` are
    /// lane `i`'s): the matrix products go through [`Linear::apply_batch`], so a
    /// precision can share the weight traffic between lanes; every lane gets exactly
    /// what [`GruCell::step`] would give it. (Kept out of line, as the LSTM's: a step
    /// through [`crate::Cell`] needs the stack of one cell's locals, not of both.)
    /// The matrix products are marked [`Phase::Recurrent`] on `marks`, the rest
    /// [`Phase::Rest`].
    #[inline(never)]
    pub fn step_batch<const N: usize>(
        &self,
        x: &[&[&[P::Act]]],
        h: &mut [&mut [P::Act]],
        s: &mut [&mut CellScratch<'_, P>],
        marks: &mut impl Marks,
    ) -> Result<(), Error> {
        let n = self.hidden();
        let lanes = x.len();
        if lanes > N || h.len() != lanes || s.len() != lanes {
            return Err(Error::Shape(ShapeError {
                what: "GRU lanes",
                expected: lanes.min(N),
                found: h.len().min(s.len()),
            }));
        }
        for (hi, si) in h.iter().zip(s.iter()) {
            if hi.len() != n || si.wide.len() < 6 * n || si.act.len() < n {
                return Err(Error::Shape(ShapeError {
                    what: "GRU state",
                    expected: n,
                    found: hi.len(),
                }));
            }
        }
        // gi = W_ih x + b_ih for every lane.
        marks.mark(Phase::Recurrent);
        self.layers
            .input_products::<N>(x, s, 3 * n, "GRU scratch")?;
        // gh = W_hh h + b_hh: every row (reset after), or rows r and z (reset before).
        match self.mode {
            ResetMode::After => {
                self.recurrent_rows::<N>(&self.layers.w_hh, h, s, 3 * n, false)?;
            }
            ResetMode::Before => self.recurrent_range::<N>(0..2 * n, h, s, false)?,
        }
        marks.mark(Phase::Rest);
        if self.mode == ResetMode::Before {
            // rh = r * h, then the candidate rows read it.
            match self.rec {
                Recurrent::Sigmoid => reset_h(Sigmoid, n, h, s)?,
                rec => reset_h(rec, n, h, s)?,
            }
            marks.mark(Phase::Recurrent);
            self.recurrent_range::<N>(2 * n..3 * n, h, s, true)?;
            marks.mark(Phase::Rest);
        }
        match self.rec {
            Recurrent::Sigmoid => update(Sigmoid, self.mode, n, h, s)?,
            rec => update(rec, self.mode, n, h, s)?,
        }
        Ok(())
    }

    /// [`GruCell::recurrent_rows`] of the rows `range` of `W_hh` (the reset-before
    /// form's). Out of line: the view of those rows is on the stack only during the call,
    /// not in the step's frame, which the reset-after form (every row: `W_hh` itself)
    /// keeps smaller.
    #[inline(never)]
    fn recurrent_range<const N: usize>(
        &self,
        range: core::ops::Range<usize>,
        h: &[&mut [P::Act]],
        s: &mut [&mut CellScratch<'_, P>],
        candidate: bool,
    ) -> Result<(), ShapeError> {
        let len = range.len();
        let rows = self.layers.w_hh.row_range(range)?;
        self.recurrent_rows::<N>(&rows, h, s, len, candidate)
    }

    /// `gh[off..off + rows] = rows . v + b` for every lane, where `v` is the state, or
    /// `r * h` for the candidate rows of the reset-before form.
    fn recurrent_rows<const N: usize>(
        &self,
        rows: &Linear<'_, P>,
        h: &[&mut [P::Act]],
        s: &mut [&mut CellScratch<'_, P>],
        len: usize,
        candidate: bool,
    ) -> Result<(), ShapeError> {
        let n = self.hidden();
        let off = if candidate { 2 * n } else { 0 };
        let mut inputs: HVec<[&[P::Act]; 1], N> = HVec::new();
        let mut outs: HVec<&mut [P::Wide], N> = HVec::new();
        for (hi, si) in h.iter().zip(s.iter_mut()) {
            let CellScratch { wide, act } = &mut **si;
            let v: &[P::Act] = if candidate {
                act.part(..n, "GRU scratch")?
            } else {
                hi
            };
            let _ = inputs.push([v]);
            let _ = outs.push(wide.part_mut(3 * n + off..3 * n + off + len, "GRU scratch")?);
        }
        let mut jobs: HVec<Job<'_, P>, N> = HVec::new();
        for (xi, o) in inputs.iter().zip(outs.iter_mut()) {
            let _ = jobs.push(Job { x: xi, out: o });
        }
        rows.apply_batch(&mut jobs)
    }
}

/// `rh = r * h` for every lane (the reset-before form), `r` from the summed gate rows.
fn reset_h<P: Precision, A: GateFn<P>>(
    f: A,
    n: usize,
    h: &[&mut [P::Act]],
    s: &mut [&mut CellScratch<'_, P>],
) -> Result<(), ShapeError> {
    const W: &str = "GRU scratch";
    for (hi, si) in h.iter().zip(s.iter_mut()) {
        let CellScratch { wide, act } = &mut **si;
        let (gi, gh) = wide.cut(3 * n, W)?;
        let ((gi_r, _), (gh_r, _)) = (gi.cut(n, W)?, gh.cut(n, W)?);
        let rh = act.part_mut(..n, W)?;
        for ((rh, &h), (&gi, &gh)) in rh.iter_mut().zip(hi.iter()).zip(gi_r.iter().zip(gh_r)) {
            let r = f.gate(P::add(gi, gh));
            *rh = P::gate_act(r, h);
        }
    }
    Ok(())
}

/// The gates and the new state of every lane from `gi` and `gh`.
fn update<P: Precision, A: GateFn<P>>(
    f: A,
    mode: ResetMode,
    n: usize,
    h: &mut [&mut [P::Act]],
    s: &[&mut CellScratch<'_, P>],
) -> Result<(), ShapeError> {
    const W: &str = "GRU scratch";
    for (hi, si) in h.iter_mut().zip(s.iter()) {
        let (gi_r, g) = si.wide.cut(n, W)?;
        let (gi_z, g) = g.cut(n, W)?;
        let (gi_n, g) = g.cut(n, W)?;
        let (gh_r, g) = g.cut(n, W)?;
        let (gh_z, g) = g.cut(n, W)?;
        let (gh_n, _) = g.cut(n, W)?;
        // Zipped: indexed, the rows kept some bounds checks on the opt-level "s" boards.
        let (r, z, c) = (
            gi_r.iter().zip(gh_r),
            gi_z.iter().zip(gh_z),
            gi_n.iter().zip(gh_n),
        );
        for (h, (((&ir, &hr), (&iz, &hz)), (&ic, &hc))) in hi.iter_mut().zip(r.zip(z).zip(c)) {
            let z = f.gate(P::add(iz, hz));
            let c = match mode {
                ResetMode::After => {
                    let r = f.gate(P::add(ir, hr));
                    P::add(ic, P::gate(r, hc))
                }
                ResetMode::Before => P::add(ic, hc),
            };
            *h = P::blend(z, *h, P::tanh(c));
        }
    }
    Ok(())
}
