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

use s2s_kernels::{Linear, Precision, ShapeError};

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
        let n = self.hidden();
        if h.len() != n || s.gi.len() < 3 * n || s.rh.len() < n {
            return Err(Error::Shape(ShapeError {
                what: "GRU state",
                expected: n,
                found: h.len(),
            }));
        }
        let (gi, gh, rh) = (&mut s.gi[..3 * n], &mut s.gh[..3 * n], &mut s.rh[..n]);
        self.w_ih.apply(x, gi)?;
        match self.mode {
            ResetMode::After => {
                self.w_hh.apply(&[h], gh)?;
                for j in 0..n {
                    let r = P::sigmoid(P::add(gi[j], gh[j]));
                    let z = P::sigmoid(P::add(gi[n + j], gh[n + j]));
                    let c = P::tanh(P::add(gi[2 * n + j], P::gate(r, gh[2 * n + j])));
                    h[j] = P::blend(z, h[j], c);
                }
            }
            ResetMode::Before => {
                self.w_hh
                    .row_range(0..2 * n)?
                    .apply(&[h], &mut gh[..2 * n])?;
                for j in 0..n {
                    let r = P::sigmoid(P::add(gi[j], gh[j]));
                    rh[j] = P::gate_act(r, h[j]);
                }
                self.w_hh
                    .row_range(2 * n..3 * n)?
                    .apply(&[rh], &mut gh[2 * n..])?;
                for j in 0..n {
                    let z = P::sigmoid(P::add(gi[n + j], gh[n + j]));
                    let c = P::tanh(P::add(gi[2 * n + j], gh[2 * n + j]));
                    h[j] = P::blend(z, h[j], c);
                }
            }
        }
        Ok(())
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
        let (d, h) = (self.output(), self.fwd.hidden());
        if input.dim() != self.input() || xbuf.len() < input.dim() {
            return Err(Error::Shape(ShapeError {
                what: "layer input",
                expected: self.input(),
                found: input.dim(),
            }));
        }
        if input.len() < t || out.len() < t * d {
            return Err(Error::SequenceTooLong {
                len: t,
                capacity: input.len().min(out.len() / d.max(1)),
            });
        }
        if last.len() != d {
            return Err(Error::Shape(ShapeError {
                what: "final state",
                expected: d,
                found: last.len(),
            }));
        }
        let (last_f, last_b) = last.split_at_mut(h);
        let xbuf = &mut xbuf[..input.dim()];
        run_direction(&self.fwd, input, t, false, out, 0, d, last_f, xbuf, s)?;
        if let Some(bwd) = &self.bwd {
            run_direction(bwd, input, t, true, out, h, d, last_b, xbuf, s)?;
        }
        Ok(())
    }
}

/// One direction over `t` positions from a zero state; the output of position `p` goes
/// to `out[p * stride + offset..][..H]`.
#[allow(clippy::too_many_arguments)]
fn run_direction<P: Precision>(
    cell: &GruCell<'_, P>,
    input: &dyn SeqInput<P>,
    t: usize,
    reverse: bool,
    out: &mut [P::Act],
    offset: usize,
    stride: usize,
    state: &mut [P::Act],
    xbuf: &mut [P::Act],
    s: &mut GruScratch<'_, P>,
) -> Result<(), Error> {
    let h = cell.hidden();
    state.fill(P::Act::default());
    for k in 0..t {
        let p = if reverse { t - 1 - k } else { k };
        let x = input.at(p, xbuf)?;
        cell.step(&[x], state, s)?;
        out[p * stride + offset..][..h].copy_from_slice(state);
    }
    Ok(())
}

/// Runs stacked layers over `t` positions: layer 0 reads `input`, each further layer
/// reads the previous one's outputs. Layer `l` writes into `bufs[l % 2]`, so `bufs[1]`
/// may be empty for a single layer; each buffer needs `t` times the largest layer
/// output. Returns the index of the buffer holding the top layer's outputs.
/// `lasts[l]` receives layer `l`'s final states; `xbuf` is as in [`GruLayer::run`].
pub fn run_stack<P: Precision>(
    layers: &[GruLayer<'_, P>],
    input: &dyn SeqInput<P>,
    t: usize,
    bufs: [&mut [P::Act]; 2],
    lasts: &mut [&mut [P::Act]],
    xbuf: &mut [P::Act],
    s: &mut GruScratch<'_, P>,
) -> Result<usize, Error> {
    if lasts.len() < layers.len() {
        return Err(Error::Shape(ShapeError {
            what: "final states",
            expected: layers.len(),
            found: lasts.len(),
        }));
    }
    let [a, b] = bufs;
    for (l, (layer, last)) in layers.iter().zip(lasts.iter_mut()).enumerate() {
        let (src, dst) = if l % 2 == 0 {
            (&*b, &mut *a)
        } else {
            (&*a, &mut *b)
        };
        if l == 0 {
            layer.run(input, t, dst, last, xbuf, s)?;
        } else {
            let prev = Rows::<P>::new(&src[..t * layers[l - 1].output()], layers[l - 1].output());
            layer.run(&prev, t, dst, last, xbuf, s)?;
        }
    }
    Ok(layers.len().saturating_sub(1) % 2)
}

#[cfg(test)]
mod tests;
