//! Either cell behind one type, so that passes and stacks are written once.

use s2s_kernels::{Marks, Precision};

use crate::error::Error;
#[cfg(feature = "gru")]
use crate::gru::GruCell;
#[cfg(feature = "lstm")]
use crate::lstm::LstmCell;
use crate::scratch::CellScratch;

/// A GRU or an LSTM cell. Each variant exists with its crate feature (`gru`, `lstm`,
/// both by default): a build without one leaves that cell's code out of every pass.
pub enum Cell<'a, P: Precision> {
    /// A GRU: its state is `h`.
    #[cfg(feature = "gru")]
    Gru(GruCell<'a, P>),
    /// An LSTM: its state is `h` and the cell state `c`.
    #[cfg(feature = "lstm")]
    Lstm(LstmCell<'a, P>),
    /// A build without any cell: never made.
    #[cfg(not(any(feature = "gru", feature = "lstm")))]
    #[doc(hidden)]
    None(core::convert::Infallible, core::marker::PhantomData<&'a P>),
}

impl<P: Precision> Clone for Cell<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for Cell<'_, P> {}

impl<P: Precision> core::fmt::Debug for Cell<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.fmt(f),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.fmt(f),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
}

impl<'a, P: Precision> Cell<'a, P> {
    /// Hidden size `H`.
    pub fn hidden(&self) -> usize {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.hidden(),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.hidden(),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
    /// Input size (all parts).
    pub fn input(&self) -> usize {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.input(),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.input(),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
    /// Multiply-accumulates of one step.
    pub fn macs(&self) -> usize {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(c) => c.macs(),
            #[cfg(feature = "lstm")]
            Cell::Lstm(c) => c.macs(),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
    /// True for an LSTM, whose state includes a cell state.
    pub fn has_cell_state(&self) -> bool {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(_) => false,
            #[cfg(feature = "lstm")]
            Cell::Lstm(_) => true,
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }

    /// One step of up to `N` lanes (see [`GruCell::step_batch`],
    /// [`LstmCell::step_batch`]); `c` holds the lanes' cell states for an LSTM and is
    /// not read for a GRU. The phases go to `marks`.
    #[cfg_attr(not(all(feature = "gru", feature = "lstm")), allow(unused_variables))]
    pub fn step_batch<const N: usize>(
        &self,
        x: &[&[&[P::Act]]],
        h: &mut [&mut [P::Act]],
        c: &mut [&mut [P::Act]],
        s: &mut [&mut CellScratch<'_, P>],
        marks: &mut impl Marks,
    ) -> Result<(), Error> {
        match self {
            #[cfg(feature = "gru")]
            Cell::Gru(cell) => cell.step_batch::<N>(x, h, s, marks),
            #[cfg(feature = "lstm")]
            Cell::Lstm(cell) => cell.step_batch::<N>(x, h, c, s, marks),
            #[cfg(not(any(feature = "gru", feature = "lstm")))]
            Cell::None(never, _) => match *never {},
        }
    }
}
