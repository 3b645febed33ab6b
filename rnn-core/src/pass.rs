//! Passes over sequences: layers (uni- or bidirectional), stacks, lanes run in lockstep,
//! and the outputs of masked positions.

use heapless::Vec as HVec;
use s2s_kernels::part::Part;
use s2s_kernels::{Marks, Precision, ShapeError};

use crate::cell::Cell;
use crate::error::Error;
use crate::scratch::CellScratch;

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

/// A recurrent layer: a forward cell and, for a bidirectional layer, a backward cell of
/// the same kind and sizes.
pub struct RnnLayer<'a, P: Precision> {
    /// The cell run from the first position to the last.
    pub fwd: Cell<'a, P>,
    /// The cell run from the last position to the first, if bidirectional.
    pub bwd: Option<Cell<'a, P>>,
}

impl<P: Precision> Clone for RnnLayer<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for RnnLayer<'_, P> {}

impl<P: Precision> core::fmt::Debug for RnnLayer<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RnnLayer(fwd {:?}, bwd {:?})", self.fwd, self.bwd)
    }
}

impl<'a, P: Precision> RnnLayer<'a, P> {
    /// A layer; a backward cell must have the forward cell's kind and sizes.
    pub fn new(fwd: Cell<'a, P>, bwd: Option<Cell<'a, P>>) -> Result<Self, Error> {
        if let Some(b) = &bwd {
            if b.hidden() != fwd.hidden()
                || b.input() != fwd.input()
                || b.has_cell_state() != fwd.has_cell_state()
            {
                return Err(Error::DirectionMismatch);
            }
        }
        Ok(RnnLayer { fwd, bwd })
    }

    /// Number of directions, 1 or 2.
    pub fn directions(&self) -> usize {
        1 + self.bwd.is_some() as usize
    }
    /// Output size per position: `H` times the number of directions (also the size of
    /// its final states, and of its final cell states for an LSTM layer).
    pub fn output(&self) -> usize {
        self.fwd.hidden() * self.directions()
    }
    /// Input size per position.
    pub fn input(&self) -> usize {
        self.fwd.input()
    }
    /// True when the layer's cells are LSTMs.
    pub fn has_cell_state(&self) -> bool {
        self.fwd.has_cell_state()
    }

    /// Runs the layer over the first `t` positions of `input`, writing `t x output()`
    /// into `out` (`[forward; backward]` per position) and the final states into `last`
    /// (`output()` long: forward after the last position, backward after the first),
    /// and for an LSTM the final cell states into `cells` likewise (empty for a GRU).
    /// Each direction starts from zeros; `xbuf` (`input()` long) holds computed inputs.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        input: &dyn SeqInput<P>,
        t: usize,
        out: &mut [P::Act],
        last: &mut [P::Act],
        cells: &mut [P::Act],
        xbuf: &mut [P::Act],
        s: &mut CellScratch<'_, P>,
    ) -> Result<(), Error> {
        let mut lane = [SeqLane {
            input,
            len: t,
            bufs: [out, &mut []],
            lasts: last,
            cells,
            xbuf,
            scratch: s.reborrow(),
        }];
        run_stack_batch::<P, 1>(core::slice::from_ref(self), &mut lane, &mut ()).map(|_| ())
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
    /// The final cell states of every layer, laid out as `lasts` (an LSTM layer's
    /// running cell states too; a GRU layer's part is left as it is). May be empty
    /// when no layer is an LSTM.
    pub cells: &'l mut [P::Act],
    /// Holds computed inputs of layer 0 (`input.dim()` long).
    pub xbuf: &'l mut [P::Act],
    /// The lane's cell scratch.
    pub scratch: CellScratch<'l, P>,
}

/// Runs stacked layers over `t` positions: layer 0 reads `input`, each further layer
/// reads the previous one's outputs. Layer `l` writes into `bufs[l % 2]`, so `bufs[1]`
/// may be empty for a single layer; each buffer needs `t` times the largest layer
/// output. Returns the index of the buffer holding the top layer's outputs.
/// `lasts` receives the layers' final states one after the other, `cells` the final
/// cell states of LSTM layers in the same layout (it may be empty without LSTM layers);
/// `xbuf` is as in [`RnnLayer::run`].
#[allow(clippy::too_many_arguments)]
pub fn run_stack<P: Precision>(
    layers: &[RnnLayer<'_, P>],
    input: &dyn SeqInput<P>,
    t: usize,
    bufs: [&mut [P::Act]; 2],
    lasts: &mut [P::Act],
    cells: &mut [P::Act],
    xbuf: &mut [P::Act],
    s: &mut CellScratch<'_, P>,
) -> Result<usize, Error> {
    let mut lane = [SeqLane {
        input,
        len: t,
        bufs,
        lasts,
        cells,
        xbuf,
        scratch: s.reborrow(),
    }];
    run_stack_batch::<P, 1>(layers, &mut lane, &mut ())
}

/// [`run_stack`] for up to `N` sequences at once, each of its own length: at every
/// position the lanes still running take one batched step ([`Cell::step_batch`]).
/// Every lane gets exactly what [`run_stack`] would give it alone. The cells' phases go
/// to `marks`.
pub fn run_stack_batch<P: Precision, const N: usize>(
    layers: &[RnnLayer<'_, P>],
    lanes: &mut [SeqLane<'_, P>],
    marks: &mut impl Marks,
) -> Result<usize, Error> {
    let total: usize = layers.iter().map(|l| l.output()).sum();
    let lstm = layers.iter().any(|l| l.has_cell_state());
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
        if lane.lasts.len() < total || (lstm && lane.cells.len() < total) {
            return Err(Error::Shape(ShapeError {
                what: "final states",
                expected: total,
                found: lane.lasts.len().min(lane.cells.len()),
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
        let has_c = layer.has_cell_state();
        let cells = [Some(&layer.fwd), layer.bwd.as_ref()];
        for (dir, cell) in cells.iter().enumerate() {
            let Some(cell) = cell else { continue };
            let state = last_off + dir * h..last_off + (dir + 1) * h;
            // A GRU's cell-state slices are empty and never read.
            let cstate = if has_c { state.clone() } else { 0..0 };
            for lane in lanes.iter_mut() {
                lane.lasts
                    .part_mut(state.clone(), "final states")?
                    .fill(P::Act::default());
                lane.cells
                    .part_mut(cstate.clone(), "final cell states")?
                    .fill(P::Act::default());
            }
            let longest = lanes.iter().map(|l| l.len).max().unwrap_or(0);
            for k in 0..longest {
                let at = |len: usize| if dir == 0 { k } else { len - 1 - k };
                {
                    let mut parts: HVec<[&[P::Act]; 1], N> = HVec::new();
                    let mut hs: HVec<&mut [P::Act], N> = HVec::new();
                    let mut cs: HVec<&mut [P::Act], N> = HVec::new();
                    let mut ss: HVec<&mut CellScratch<'_, P>, N> = HVec::new();
                    for lane in lanes.iter_mut().filter(|lane| lane.len > k) {
                        let p = at(lane.len);
                        let SeqLane {
                            input,
                            bufs,
                            lasts,
                            cells,
                            xbuf,
                            scratch,
                            ..
                        } = lane;
                        let x: &[P::Act] = if l == 0 {
                            input.at(p, xbuf)?
                        } else {
                            bufs[(l - 1) % 2].part(p * din..(p + 1) * din, "layer input")?
                        };
                        if parts.push([x]).is_err() {
                            return Err(Error::Shape(ShapeError {
                                what: "lanes",
                                expected: N,
                                found: N + 1,
                            }));
                        }
                        let _ = hs.push(lasts.part_mut(state.clone(), "final states")?);
                        let _ = cs.push(cells.part_mut(cstate.clone(), "final cell states")?);
                        let _ = ss.push(scratch);
                    }
                    let mut xs: HVec<&[&[P::Act]], N> = HVec::new();
                    for x in parts.iter() {
                        let _ = xs.push(&x[..]);
                    }
                    cell.step_batch::<N>(&xs, &mut hs, &mut cs, &mut ss, marks)?;
                }
                for lane in lanes.iter_mut().filter(|lane| lane.len > k) {
                    let p = at(lane.len);
                    let src = lane.lasts.part(state.clone(), "final states")?;
                    let at = p * d + dir * h;
                    let dst = lane.bufs[l % 2].part_mut(at..at + h, "layer output")?;
                    for (o, &v) in dst.iter_mut().zip(src) {
                        *o = v;
                    }
                }
            }
        }
        last_off += d;
    }
    Ok(layers.len().saturating_sub(1) % 2)
}

/// What a recurrent layer outputs at a masked position (a padding token of a source
/// embedded with `mask_zero=True`). At a masked step the state is kept in both cases;
/// the two Keras behaviours differ in the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Masked {
    /// The previous step's output (zeros before the first real step): Keras 2 for every
    /// recurrent layer (`zero_output_for_mask=False`), Keras 3 and tf.keras for a
    /// unidirectional layer.
    Previous = 1,
    /// Zeros: Keras 3 and tf.keras `Bidirectional` layers (which force
    /// `zero_output_for_mask=True` when they return sequences).
    Zeros = 2,
}

impl Masked {
    /// The behaviour with this file id (0 is "no mask" and has none).
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            1 => Some(Self::Previous),
            2 => Some(Self::Zeros),
            _ => None,
        }
    }
}

/// Gives the masked positions `valid..t` of a layer's outputs (`out`, `t x
/// layer.output()`, positions `0..valid` already computed by a pass over `valid`
/// positions) the outputs Keras gives them for post-padding: the forward half is the
/// last real output (`Masked::Previous`) or zeros; the backward half is always zeros
/// (the backward cell meets the padding first, before any real step, so its previous
/// output is its zero initial state). The final states are those of the pass over
/// `valid` positions: masked steps keep the state.
pub fn fill_masked<P: Precision>(
    layer: &RnnLayer<'_, P>,
    out: &mut [P::Act],
    valid: usize,
    t: usize,
    rule: Masked,
) -> Result<(), Error> {
    let (d, h) = (layer.output(), layer.fwd.hidden());
    let len = out.len();
    let too_long = || Error::SequenceTooLong {
        len: t,
        capacity: len / d.max(1),
    };
    if valid > t || len < t * d {
        return Err(too_long());
    }
    let (done, masked) = out.split_at_mut_checked(valid * d).ok_or_else(too_long)?;
    let masked = masked.part_mut(..(t - valid) * d, "outputs")?;
    // The forward half of the last real output, when it is repeated.
    let previous = match (rule, valid.checked_sub(1)) {
        (Masked::Previous, Some(last)) => Some(done.part(last * d..last * d + h, "outputs")?),
        _ => None,
    };
    // `max(1)`: outputs of size 0 leave nothing to fill (`masked` is empty).
    for row in masked.chunks_exact_mut(d.max(1)) {
        row.fill(P::Act::default());
        if let Some(previous) = previous {
            for (o, &v) in row.part_mut(..h, "outputs")?.iter_mut().zip(previous) {
                *o = v;
            }
        }
    }
    Ok(())
}
