//! The scratch buffers one cell step works in, carved from the caller's memory.

use s2s_kernels::{Precision, ShapeError};

use crate::error::Error;

/// Scratch buffers of one cell step: `6H` wide values and `H` activations for cells of
/// hidden size up to `H` (a GRU uses all of them, an LSTM the wide values only).
pub struct CellScratch<'s, P: Precision> {
    pub(crate) wide: &'s mut [P::Wide],
    pub(crate) act: &'s mut [P::Act],
}

impl<'s, P: Precision> CellScratch<'s, P> {
    /// Wide values cells of hidden size up to `h` need.
    pub const fn wide_len(h: usize) -> usize {
        6 * h
    }
    /// Activations cells of hidden size up to `h` need.
    pub const fn act_len(h: usize) -> usize {
        h
    }

    /// Scratch for cells of hidden size up to `h`, carved from the two buffers (which
    /// may be longer than needed).
    pub fn with_hidden(
        h: usize,
        wide: &'s mut [P::Wide],
        act: &'s mut [P::Act],
    ) -> Result<Self, Error> {
        if wide.len() < 6 * h || act.len() < h {
            return Err(Error::Shape(ShapeError {
                what: "cell scratch",
                expected: 6 * h,
                found: wide.len(),
            }));
        }
        Ok(CellScratch {
            wide: &mut wide[..6 * h],
            act: &mut act[..h],
        })
    }

    /// The same buffers, borrowed for a shorter time.
    pub fn reborrow(&mut self) -> CellScratch<'_, P> {
        CellScratch {
            wide: self.wide,
            act: self.act,
        }
    }
}
