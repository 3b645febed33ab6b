//! What a GRU and an LSTM cell share: the input and recurrent layers of `G` stacked
//! gates, their shape check, their sizes and the input product of every lane.

use heapless::Vec as HVec;
use s2s_kernels::part::Part;
use s2s_kernels::{Job, Linear, Precision, ShapeError};

use crate::error::Error;
use crate::scratch::CellScratch;

/// `W_ih` (`G H x I`, with `b_ih`) and `W_hh` (`G H x H`, with `b_hh`) of a cell with `G`
/// gates stacked by rows.
pub(crate) struct GateLayers<'a, P: Precision> {
    pub(crate) w_ih: Linear<'a, P>,
    pub(crate) w_hh: Linear<'a, P>,
}

impl<P: Precision> Clone for GateLayers<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for GateLayers<'_, P> {}

impl<'a, P: Precision> GateLayers<'a, P> {
    /// Checks the two layers of a cell with `gates` gates: both have `gates * H` rows
    /// for `H = w_hh.cols()`, and the recurrent layer reads one part. (A check rather
    /// than a constructor: returning the layers through a `Result` made the minimal
    /// micro:bit build 544 bytes larger.)
    #[inline(always)]
    pub(crate) fn check(
        gates: usize,
        w_ih: &Linear<'a, P>,
        w_hh: &Linear<'a, P>,
    ) -> Result<(), Error> {
        let h = w_hh.cols();
        if h == 0 || w_hh.rows() != gates * h || w_ih.rows() != gates * h || w_hh.parts() != 1 {
            return Err(Error::GateRows {
                gates,
                input_rows: w_ih.rows(),
                recurrent_rows: w_hh.rows(),
                hidden: h,
            });
        }
        Ok(())
    }

    /// Hidden size `H`.
    #[inline]
    pub(crate) fn hidden(&self) -> usize {
        self.w_hh.cols()
    }
    /// Input size `I` (all parts).
    #[inline]
    pub(crate) fn input(&self) -> usize {
        self.w_ih.cols()
    }
    /// Multiply-accumulates of one step.
    pub(crate) fn macs(&self) -> usize {
        self.w_ih.macs() + self.w_hh.macs()
    }

    /// `W_ih x + b_ih` of every lane into the first `len` wide values of its scratch
    /// (`what` names the scratch in an error).
    #[inline(always)]
    pub(crate) fn input_products<const N: usize>(
        &self,
        x: &[&[&[P::Act]]],
        s: &mut [&mut CellScratch<'_, P>],
        len: usize,
        what: &'static str,
    ) -> Result<(), ShapeError> {
        let mut jobs: HVec<Job<'_, P>, N> = HVec::new();
        for (xi, si) in x.iter().zip(s.iter_mut()) {
            let _ = jobs.push(Job {
                x: xi,
                out: si.wide.part_mut(..len, what)?,
            });
        }
        self.w_ih.apply_batch(&mut jobs)
    }
}
