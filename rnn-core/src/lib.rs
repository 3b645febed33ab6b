//! GRU cells and sequence passes for microcontrollers, generic over the number format
//! ([`Precision`]), without heap: every buffer is passed in by the caller.
//!
//! * [`GruCell`]: one step, with separate input and recurrent biases and both forms of
//!   the candidate gate ([`ResetMode`]). Gates are stacked in the canonical order
//!   `[r, z, n]` (reset, update, candidate), as in PyTorch; importers reorder others.
//! * [`GruLayer::run`]: a pass over a sequence, uni- or bidirectional; bidirectional
//!   outputs are `[forward; backward]` per position.
//! * [`run_stack`]: stacked layers, each reading the previous one's outputs.
//!
//! ```
//! use rnn_core::{GruCell, GruScratch, ResetMode};
//! use s2s_kernels::{Linear, F32};
//!
//! // A GRU with one input and one hidden unit; all weights 0.5, no biases.
//! let w = [0.5f32; 3];
//! let w_ih = Linear::<F32>::new(3, 1, 1, &w, &[], None).unwrap();
//! let w_hh = Linear::<F32>::new(3, 1, 1, &w, &[], None).unwrap();
//! let cell = GruCell::new(w_ih, w_hh, ResetMode::After).unwrap();
//! let (mut wide, mut act) = ([0.0f32; 6], [0.0f32; 1]);
//! let mut scratch = GruScratch::new(&cell, &mut wide, &mut act).unwrap();
//! let mut h = [0.0f32];
//! cell.step(&[&[1.0]], &mut h, &mut scratch).unwrap();
//! // r = z = sigmoid(0.5), n = tanh(0.5 + r * 0), h = (1 - z) * n
//! let z = 1.0 / (1.0 + (-0.5f32).exp());
//! assert!((h[0] - (1.0 - z) * 0.5f32.tanh()).abs() < 1e-6);
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

use heapless::Vec as HVec;
use s2s_kernels::{Job, Linear, Precision, ShapeError};

/// Errors of this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// A weight, input, state or buffer had the wrong length.
    Shape(ShapeError),
    /// The recurrent matrix is not `3H x H`, or the input matrix has not `3H` rows.
    GateRows {
        /// Rows of the input matrix.
        input_rows: usize,
        /// Rows of the recurrent matrix.
        recurrent_rows: usize,
        /// Columns of the recurrent matrix (the hidden size).
        hidden: usize,
    },
    /// A sequence was longer than the buffers given for it.
    SequenceTooLong {
        /// Positions requested.
        len: usize,
        /// Positions the buffers hold.
        capacity: usize,
    },
    /// The two directions of a bidirectional layer differ in sizes.
    DirectionMismatch,
}

impl From<ShapeError> for Error {
    fn from(e: ShapeError) -> Self {
        Error::Shape(e)
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Shape(e) => write!(f, "GRU: {e}"),
            Error::GateRows {
                input_rows,
                recurrent_rows,
                hidden,
            } => write!(
                f,
                "GRU: input matrix has {input_rows} rows and recurrent matrix {recurrent_rows}x{hidden}; both need 3 x hidden rows"
            ),
            Error::SequenceTooLong { len, capacity } => {
                write!(f, "GRU: sequence of {len} positions, buffers hold {capacity}")
            }
            Error::DirectionMismatch => {
                write!(f, "GRU: the two directions of a layer differ in sizes")
            }
        }
    }
}

impl core::error::Error for Error {}

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
/// rows stacked `[r, z, n]`.
pub struct GruCell<'a, P: Precision> {
    w_ih: Linear<'a, P>,
    w_hh: Linear<'a, P>,
    mode: ResetMode,
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
            "GruCell(in {}, hidden {}, reset {:?})",
            self.input(),
            self.hidden(),
            self.mode
        )
    }
}

/// Scratch buffers of one [`GruCell::step`]: `6H` wide values and `H` activations.
pub struct GruScratch<'s, P: Precision> {
    gi: &'s mut [P::Wide],
    gh: &'s mut [P::Wide],
    rh: &'s mut [P::Act],
}

impl<'s, P: Precision> GruScratch<'s, P> {
    /// Wide values a cell of hidden size `h` needs.
    pub const fn wide_len(h: usize) -> usize {
        6 * h
    }
    /// Activations a cell of hidden size `h` needs.
    pub const fn act_len(h: usize) -> usize {
        h
    }

    /// Scratch for cells of hidden size up to that of `cell`, carved from the two buffers
    /// (which may be longer than needed).
    pub fn new(
        cell: &GruCell<'_, P>,
        wide: &'s mut [P::Wide],
        act: &'s mut [P::Act],
    ) -> Result<Self, Error> {
        Self::with_hidden(cell.hidden(), wide, act)
    }

    /// Scratch for cells of hidden size up to `h`.
    pub fn with_hidden(
        h: usize,
        wide: &'s mut [P::Wide],
        act: &'s mut [P::Act],
    ) -> Result<Self, Error> {
        if wide.len() < 6 * h || act.len() < h {
            return Err(Error::Shape(ShapeError {
                what: "GRU scratch",
                expected: 6 * h,
                found: wide.len(),
            }));
        }
        let (gi, rest) = wide.split_at_mut(3 * h);
        Ok(GruScratch {
            gi,
            gh: &mut rest[..3 * h],
            rh: &mut act[..h],
        })
    }
}

impl<'a, P: Precision> GruCell<'a, P> {
    /// A cell from its two layers; checks that they have `3H` rows for `H = w_hh.cols()`.
    pub fn new(w_ih: Linear<'a, P>, w_hh: Linear<'a, P>, mode: ResetMode) -> Result<Self, Error> {
        let h = w_hh.cols();
        if h == 0 || w_hh.rows() != 3 * h || w_ih.rows() != 3 * h || w_hh.parts() != 1 {
            return Err(Error::GateRows {
                input_rows: w_ih.rows(),
                recurrent_rows: w_hh.rows(),
                hidden: h,
            });
        }
        Ok(GruCell { w_ih, w_hh, mode })
    }

    /// Hidden size `H`.
    pub fn hidden(&self) -> usize {
        self.w_hh.cols()
    }
    /// Input size `I` (all parts).
    pub fn input(&self) -> usize {
        self.w_ih.cols()
    }
    /// The input layer `W_ih` (with `b_ih`).
    pub fn w_ih(&self) -> &Linear<'a, P> {
        &self.w_ih
    }
    /// The recurrent layer `W_hh` (with `b_hh`).
    pub fn w_hh(&self) -> &Linear<'a, P> {
        &self.w_hh
    }
    /// Where the reset gate acts.
    pub fn mode(&self) -> ResetMode {
        self.mode
    }
    /// Multiply-accumulates of one step.
    pub fn macs(&self) -> usize {
        self.w_ih.macs() + self.w_hh.macs()
    }

    /// One step: `h <- GRU(x, h)`, where the input `x` may come in parts (a
    /// concatenation that is never copied; as many parts as the input layer declares).
    pub fn step(
        &self,
        x: &[&[P::Act]],
        h: &mut [P::Act],
        s: &mut GruScratch<'_, P>,
    ) -> Result<(), Error> {
        self.step_batch::<1>(&[x], &mut [h], &mut [s])
    }

    /// One step of up to `N` independent sequences at once (`x[i]`, `h[i]`, `s[i]` are
    /// lane `i`'s): the matrix products go through [`Linear::apply_batch`], so a
    /// precision can share the weight traffic between lanes; every lane gets exactly
    /// what [`GruCell::step`] would give it.
    pub fn step_batch<const N: usize>(
        &self,
        x: &[&[&[P::Act]]],
        h: &mut [&mut [P::Act]],
        s: &mut [&mut GruScratch<'_, P>],
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
            if hi.len() != n || si.gi.len() < 3 * n || si.rh.len() < n {
                return Err(Error::Shape(ShapeError {
                    what: "GRU state",
                    expected: n,
                    found: hi.len(),
                }));
            }
        }
        // gi = W_ih x + b_ih for every lane.
        {
            let mut jobs: HVec<Job<'_, P>, N> = HVec::new();
            for (xi, si) in x.iter().zip(s.iter_mut()) {
                let _ = jobs.push(Job {
                    x: xi,
                    out: &mut si.gi[..3 * n],
                });
            }
            self.w_ih.apply_batch(&mut jobs)?;
        }
        // gh = W_hh h + b_hh (rows r, z and, reset after, n).
        let direct = match self.mode {
            ResetMode::After => 3 * n,
            ResetMode::Before => 2 * n,
        };
        let rows = self.w_hh.row_range(0..direct)?;
        self.recurrent::<N>(&rows, h, s, direct, false)?;
        if self.mode == ResetMode::Before {
            // rh = r * h, then the candidate rows read it.
            for (hi, si) in h.iter().zip(s.iter_mut()) {
                for j in 0..n {
                    let r = P::sigmoid(P::add(si.gi[j], si.gh[j]));
                    si.rh[j] = P::gate_act(r, hi[j]);
                }
            }
            let rows = self.w_hh.row_range(2 * n..3 * n)?;
            self.recurrent::<N>(&rows, h, s, n, true)?;
        }
        for (hi, si) in h.iter_mut().zip(s.iter()) {
            let (gi, gh) = (&si.gi[..3 * n], &si.gh[..3 * n]);
            for j in 0..n {
                let z = P::sigmoid(P::add(gi[n + j], gh[n + j]));
                let c = match self.mode {
                    ResetMode::After => {
                        let r = P::sigmoid(P::add(gi[j], gh[j]));
                        P::add(gi[2 * n + j], P::gate(r, gh[2 * n + j]))
                    }
                    ResetMode::Before => P::add(gi[2 * n + j], gh[2 * n + j]),
                };
                hi[j] = P::blend(z, hi[j], P::tanh(c));
            }
        }
        Ok(())
    }

    /// `gh[off..off + rows] = rows . v + b` for every lane, where `v` is the state, or
    /// `r * h` for the candidate rows of the reset-before form.
    fn recurrent<const N: usize>(
        &self,
        rows: &Linear<'_, P>,
        h: &[&mut [P::Act]],
        s: &mut [&mut GruScratch<'_, P>],
        len: usize,
        candidate: bool,
    ) -> Result<(), ShapeError> {
        let n = self.hidden();
        let off = if candidate { 2 * n } else { 0 };
        let mut inputs: HVec<[&[P::Act]; 1], N> = HVec::new();
        let mut outs: HVec<&mut [P::Wide], N> = HVec::new();
        for (hi, si) in h.iter().zip(s.iter_mut()) {
            let GruScratch { gh, rh, .. } = &mut **si;
            let v: &[P::Act] = if candidate { &rh[..n] } else { &hi[..] };
            let _ = inputs.push([v]);
            let _ = outs.push(&mut gh[off..off + len]);
        }
        let mut jobs: HVec<Job<'_, P>, N> = HVec::new();
        for (xi, o) in inputs.iter().zip(outs.iter_mut()) {
            let _ = jobs.push(Job { x: xi, out: o });
        }
        rows.apply_batch(&mut jobs)
    }
}

/// The inputs of a sequence pass, one vector per position: stored rows, or computed on
/// demand (an embedding lookup, say) so that the whole input need not be stored.
pub trait SeqInput<P: Precision> {
    /// Input size per position.
    fn dim(&self) -> usize;
    /// Number of positions available.
    fn len(&self) -> usize;
    /// True when there is no position.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The input at position `p`: a view of stored data, or computed into `buf`
    /// (`dim()` long).
    fn at<'s>(&'s self, p: usize, buf: &'s mut [P::Act]) -> Result<&'s [P::Act], Error>;
}

/// Inputs stored as rows of `dim` activations, row-major.
pub struct Rows<'a, P: Precision> {
    data: &'a [P::Act],
    dim: usize,
}

impl<'a, P: Precision> Rows<'a, P> {
    /// `data.len() / dim` rows of `dim` activations.
    pub fn new(data: &'a [P::Act], dim: usize) -> Self {
        Rows { data, dim }
    }
}

impl<P: Precision> SeqInput<P> for Rows<'_, P> {
    fn dim(&self) -> usize {
        self.dim
    }
    fn len(&self) -> usize {
        self.data.len() / self.dim.max(1)
    }
    fn at<'s>(&'s self, p: usize, _: &'s mut [P::Act]) -> Result<&'s [P::Act], Error> {
        self.data
            .get(p * self.dim..(p + 1) * self.dim)
            .ok_or(Error::SequenceTooLong {
                len: p + 1,
                capacity: self.len(),
            })
    }
}

/// A GRU layer: a forward cell and, for a bidirectional layer, a backward cell.
pub struct GruLayer<'a, P: Precision> {
    /// The cell run from the first position to the last.
    pub fwd: GruCell<'a, P>,
    /// The cell run from the last position to the first, if bidirectional.
    pub bwd: Option<GruCell<'a, P>>,
}

impl<P: Precision> Clone for GruLayer<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for GruLayer<'_, P> {}

impl<'a, P: Precision> GruLayer<'a, P> {
    /// A layer; a backward cell must have the forward cell's sizes and mode.
    pub fn new(fwd: GruCell<'a, P>, bwd: Option<GruCell<'a, P>>) -> Result<Self, Error> {
        if let Some(b) = &bwd {
            if b.hidden() != fwd.hidden() || b.input() != fwd.input() {
                return Err(Error::DirectionMismatch);
            }
        }
        Ok(GruLayer { fwd, bwd })
    }

    /// Number of directions, 1 or 2.
    pub fn directions(&self) -> usize {
        1 + self.bwd.is_some() as usize
    }
    /// Output size per position: `H` times the number of directions.
    pub fn output(&self) -> usize {
        self.fwd.hidden() * self.directions()
    }
    /// Input size per position.
    pub fn input(&self) -> usize {
        self.fwd.input()
    }

    /// Runs the layer over the first `t` positions of `input`, writing `t x output()`
    /// into `out` (`[forward; backward]` per position) and the final states into `last`
    /// (`output()` long: forward after the last position, backward after the first).
    /// Each direction starts from zeros; `xbuf` (`input()` long) holds computed inputs.
    pub fn run(
        &self,
        input: &dyn SeqInput<P>,
        t: usize,
        out: &mut [P::Act],
        last: &mut [P::Act],
        xbuf: &mut [P::Act],
        s: &mut GruScratch<'_, P>,
    ) -> Result<(), Error> {
        let mut lane = [SeqLane {
            input,
            len: t,
            bufs: [out, &mut []],
            lasts: last,
            xbuf,
            scratch: s.reborrow(),
        }];
        run_stack_batch::<P, 1>(core::slice::from_ref(self), &mut lane).map(|_| ())
    }
}

/// One sequence of a batched pass (see [`run_stack_batch`]).
pub struct SeqLane<'l, P: Precision> {
    /// The inputs of layer 0.
    pub input: &'l dyn SeqInput<P>,
    /// Positions to run.
    pub len: usize,
    /// Layer `l` writes `len x output` into `bufs[l % 2]`; `bufs[1]` may be empty for
    /// a single layer.
    pub bufs: [&'l mut [P::Act]; 2],
    /// The final states of every layer, one after the other (`output()` each: forward
    /// after the last position, backward after the first); also the running states.
    pub lasts: &'l mut [P::Act],
    /// Holds computed inputs of layer 0 (`input.dim()` long).
    pub xbuf: &'l mut [P::Act],
    /// The lane's GRU scratch.
    pub scratch: GruScratch<'l, P>,
}

impl<'s, P: Precision> GruScratch<'s, P> {
    /// The same buffers, borrowed for a shorter time.
    pub fn reborrow(&mut self) -> GruScratch<'_, P> {
        GruScratch {
            gi: self.gi,
            gh: self.gh,
            rh: self.rh,
        }
    }
}

/// Runs stacked layers over `t` positions: layer 0 reads `input`, each further layer
/// reads the previous one's outputs. Layer `l` writes into `bufs[l % 2]`, so `bufs[1]`
/// may be empty for a single layer; each buffer needs `t` times the largest layer
/// output. Returns the index of the buffer holding the top layer's outputs.
/// `lasts` receives the layers' final states one after the other; `xbuf` is as in
/// [`GruLayer::run`].
pub fn run_stack<P: Precision>(
    layers: &[GruLayer<'_, P>],
    input: &dyn SeqInput<P>,
    t: usize,
    bufs: [&mut [P::Act]; 2],
    lasts: &mut [P::Act],
    xbuf: &mut [P::Act],
    s: &mut GruScratch<'_, P>,
) -> Result<usize, Error> {
    let mut lane = [SeqLane {
        input,
        len: t,
        bufs,
        lasts,
        xbuf,
        scratch: s.reborrow(),
    }];
    run_stack_batch::<P, 1>(layers, &mut lane)
}

/// [`run_stack`] for up to `N` sequences at once, each of its own length: at every
/// position the lanes still running take one batched step ([`GruCell::step_batch`]).
/// Every lane gets exactly what [`run_stack`] would give it alone.
pub fn run_stack_batch<P: Precision, const N: usize>(
    layers: &[GruLayer<'_, P>],
    lanes: &mut [SeqLane<'_, P>],
) -> Result<usize, Error> {
    let total: usize = layers.iter().map(|l| l.output()).sum();
    for lane in lanes.iter() {
        let d_max = layers.iter().map(|l| l.output()).max().unwrap_or(0);
        let needs_b = layers.len() > 1;
        let room = |b: &[P::Act]| b.len() / d_max.max(1);
        if lane.input.len() < lane.len
            || room(lane.bufs[0]) < lane.len
            || (needs_b && room(lane.bufs[1]) < lane.len)
        {
            return Err(Error::SequenceTooLong {
                len: lane.len,
                capacity: lane.input.len().min(room(lane.bufs[0])),
            });
        }
        if lane.lasts.len() < total {
            return Err(Error::Shape(ShapeError {
                what: "final states",
                expected: total,
                found: lane.lasts.len(),
            }));
        }
        if let Some(first) = layers.first() {
            if lane.input.dim() != first.input() || lane.xbuf.len() < first.input() {
                return Err(Error::Shape(ShapeError {
                    what: "layer input",
                    expected: first.input(),
                    found: lane.input.dim(),
                }));
            }
        }
    }
    let mut last_off = 0;
    for (l, layer) in layers.iter().enumerate() {
        let (d, h) = (layer.output(), layer.fwd.hidden());
        let din = layer.input();
        let cells = [Some(&layer.fwd), layer.bwd.as_ref()];
        for (dir, cell) in cells.iter().enumerate() {
            let Some(cell) = cell else { continue };
            let state = last_off + dir * h..last_off + (dir + 1) * h;
            for lane in lanes.iter_mut() {
                lane.lasts[state.clone()].fill(P::Act::default());
            }
            let longest = lanes.iter().map(|l| l.len).max().unwrap_or(0);
            for k in 0..longest {
                let at = |len: usize| if dir == 0 { k } else { len - 1 - k };
                {
                    let mut parts: HVec<[&[P::Act]; 1], N> = HVec::new();
                    let mut hs: HVec<&mut [P::Act], N> = HVec::new();
                    let mut ss: HVec<&mut GruScratch<'_, P>, N> = HVec::new();
                    for lane in lanes.iter_mut().filter(|lane| lane.len > k) {
                        let p = at(lane.len);
                        let SeqLane {
                            input,
                            bufs,
                            lasts,
                            xbuf,
                            scratch,
                            ..
                        } = lane;
                        let x: &[P::Act] = if l == 0 {
                            input.at(p, xbuf)?
                        } else {
                            &bufs[(l - 1) % 2][p * din..(p + 1) * din]
                        };
                        if parts.push([x]).is_err() {
                            return Err(Error::Shape(ShapeError {
                                what: "GRU lanes",
                                expected: N,
                                found: N + 1,
                            }));
                        }
                        let _ = hs.push(&mut lasts[state.clone()]);
                        let _ = ss.push(scratch);
                    }
                    let mut xs: HVec<&[&[P::Act]], N> = HVec::new();
                    for x in parts.iter() {
                        let _ = xs.push(&x[..]);
                    }
                    cell.step_batch::<N>(&xs, &mut hs, &mut ss)?;
                }
                for lane in lanes.iter_mut().filter(|lane| lane.len > k) {
                    let p = at(lane.len);
                    let (src, dst) = (&lane.lasts[state.clone()], &mut lane.bufs[l % 2]);
                    dst[p * d + dir * h..][..h].copy_from_slice(src);
                }
            }
        }
        last_off += d;
    }
    Ok(layers.len().saturating_sub(1) % 2)
}

#[cfg(test)]
mod tests;
