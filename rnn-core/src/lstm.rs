//! The LSTM cell.

use heapless::Vec as HVec;
use s2s_kernels::part::Part;
use s2s_kernels::{Fmt, Job, Linear, Marks, Phase, Precision, ShapeError};

use crate::error::Error;
use crate::gates::GateLayers;
use crate::recurrent::Recurrent;
use crate::scratch::CellScratch;

/// One LSTM cell: `W_ih` (`4H x I`, with `b_ih`) and `W_hh` (`4H x H`, with `b_hh`),
/// rows stacked `[i, f, g, o]` (input, forget, candidate, output), as PyTorch stacks
/// them (Keras' `[i, f, c, o]` is the same order). With `z = W_ih x + b_ih + W_hh h +
/// b_hh` split into those four blocks and `rec` the recurrent activation:
///
/// ```text
/// i = rec(z_i)   f = rec(z_f)   g = tanh(z_g)   o = rec(z_o)
/// c' = f * c + i * g             h' = o * tanh(c')
/// ```
///
/// The state is the pair `(h, c)`: `h` a unit value like a GRU state, `c` of the cell
/// format (plain f32, or in `W8A16` an `i16` of the calibrated format `Q(15-f).f`).
pub struct LstmCell<'a, P: Precision> {
    layers: GateLayers<'a, P>,
    rec: Recurrent,
    cell_fmt: Fmt,
}

impl<P: Precision> Clone for LstmCell<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for LstmCell<'_, P> {}

impl<P: Precision> core::fmt::Debug for LstmCell<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "LstmCell(in {}, hidden {}, {:?}, cell format {})",
            self.input(),
            self.hidden(),
            self.rec,
            self.cell_fmt.frac
        )
    }
}

impl<'a, P: Precision> LstmCell<'a, P> {
    /// A cell from its two layers, its recurrent activation and the format of its cell
    /// state; checks that both layers have `4H` rows for `H = w_hh.cols()` and that the
    /// format is `Q(15-f).f` with `0 <= f <= 15`.
    pub fn new(
        w_ih: Linear<'a, P>,
        w_hh: Linear<'a, P>,
        rec: Recurrent,
        cell_fmt: Fmt,
    ) -> Result<Self, Error> {
        GateLayers::check(4, &w_ih, &w_hh)?;
        if !(0..=15).contains(&cell_fmt.frac) {
            return Err(Error::CellFormat(cell_fmt.frac));
        }
        Ok(LstmCell {
            layers: GateLayers { w_ih, w_hh },
            rec,
            cell_fmt,
        })
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
    /// The activation of the `i`, `f` and `o` gates.
    pub fn recurrent(&self) -> Recurrent {
        self.rec
    }
    /// The format of the cell state.
    pub fn cell_fmt(&self) -> Fmt {
        self.cell_fmt
    }
    /// Multiply-accumulates of one step.
    pub fn macs(&self) -> usize {
        self.layers.macs()
    }

    /// One step: `(h, c) <- LSTM(x, (h, c))`, where the input `x` may come in parts.
    pub fn step(
        &self,
        x: &[&[P::Act]],
        h: &mut [P::Act],
        c: &mut [P::Act],
        s: &mut CellScratch<'_, P>,
    ) -> Result<(), Error> {
        self.step_batch::<1>(&[x], &mut [h], &mut [c], &mut [s], &mut ())
    }

    /// One step of up to `N` independent sequences at once (`x[i]`, `h[i]`, `c[i]`,
    /// `s[i]` are lane `i`'s); every lane gets exactly what [`LstmCell::step`] would
    /// give it. The scratch holds `6H` wide values: `W_ih x + b_ih` for all four gates,
    /// then the recurrent products of two gates at a time, added in. (Kept out of line:
    /// a GRU's step through [`crate::Cell`] then needs no stack for this one's locals.)
    /// The matrix products are marked [`Phase::Recurrent`] on `marks`, the rest
    /// [`Phase::Rest`].
    #[inline(never)]
    pub fn step_batch<const N: usize>(
        &self,
        x: &[&[&[P::Act]]],
        h: &mut [&mut [P::Act]],
        c: &mut [&mut [P::Act]],
        s: &mut [&mut CellScratch<'_, P>],
        marks: &mut impl Marks,
    ) -> Result<(), Error> {
        let n = self.hidden();
        let lanes = x.len();
        if lanes > N || h.len() != lanes || c.len() != lanes || s.len() != lanes {
            return Err(Error::Shape(ShapeError {
                what: "LSTM lanes",
                expected: lanes.min(N),
                found: h.len().min(c.len()).min(s.len()),
            }));
        }
        for ((hi, ci), si) in h.iter().zip(c.iter()).zip(s.iter()) {
            if hi.len() != n || ci.len() != n || si.wide.len() < 6 * n {
                return Err(Error::Shape(ShapeError {
                    what: "LSTM state",
                    expected: n,
                    found: hi.len().min(ci.len()),
                }));
            }
        }
        // z = W_ih x + b_ih for every lane, all four gates.
        marks.mark(Phase::Recurrent);
        self.layers
            .input_products::<N>(x, s, 4 * n, "LSTM scratch")?;
        // z += W_hh h + b_hh, two gates at a time.
        for half in 0..2 {
            let rows = self
                .layers
                .w_hh
                .row_range(2 * n * half..2 * n * (half + 1))?;
            marks.mark(Phase::Recurrent);
            {
                let mut inputs: HVec<[&[P::Act]; 1], N> = HVec::new();
                let mut outs: HVec<&mut [P::Wide], N> = HVec::new();
                for (hi, si) in h.iter().zip(s.iter_mut()) {
                    let _ = inputs.push([&hi[..]]);
                    let _ = outs.push(si.wide.part_mut(4 * n..6 * n, "LSTM scratch")?);
                }
                let mut jobs: HVec<Job<'_, P>, N> = HVec::new();
                for (xi, o) in inputs.iter().zip(outs.iter_mut()) {
                    let _ = jobs.push(Job { x: xi, out: o });
                }
                rows.apply_batch(&mut jobs)?;
            }
            marks.mark(Phase::Rest);
            for si in s.iter_mut() {
                let (z, gh) = si.wide.cut_mut(4 * n, "LSTM scratch")?;
                let z = z.part_mut(2 * n * half..2 * n * (half + 1), "LSTM scratch")?;
                for (zj, &g) in z.iter_mut().zip(gh.part(..2 * n, "LSTM scratch")?) {
                    *zj = P::add(*zj, g);
                }
            }
        }
        let (rec, fc) = (self.rec, self.cell_fmt);
        for ((hi, ci), si) in h.iter_mut().zip(c.iter_mut()).zip(s.iter()) {
            const W: &str = "LSTM scratch";
            let (zi, z) = si.wide.cut(n, W)?;
            let (zf, z) = z.cut(n, W)?;
            let (zg, z) = z.cut(n, W)?;
            let (zo, _) = z.cut(n, W)?;
            // Zipped rather than indexed: an index into six rows of `n` kept its bounds
            // checks on the opt-level "s" boards.
            let gates = zi.iter().zip(zf).zip(zg.iter().zip(zo));
            for ((h, c), ((&zi, &zf), (&zg, &zo))) in hi.iter_mut().zip(ci.iter_mut()).zip(gates) {
                let i = rec.apply::<P>(zi);
                let f = rec.apply::<P>(zf);
                let g = P::tanh(zg);
                let o = rec.apply::<P>(zo);
                *c = P::cell_update(f, *c, i, g, fc);
                *h = P::gate_act(o, P::tanh(P::widen(*c, fc)));
            }
        }
        Ok(())
    }
}
