//! Sub-slices that are an error, not a panic, when out of range.
//!
//! The model crates cut their workspace into per-layer buffers whose sizes the plan
//! computed: out of range means an inconsistent plan, never a bad input. Indexing with
//! `&buf[a..b]` would make that a panic (a HardFault on a device); [`Part::part`] makes
//! it a [`ShapeError`] at the same cost (one compare and branch), so that no panic is
//! reachable from the decode loop (the firmware's `no-panic` link check proves it).
//!
//! ```
//! use s2s_kernels::part::Part;
//!
//! let buf = [1, 2, 3, 4];
//! assert_eq!(buf.part(1..3, "buffer"), Ok(&[2, 3][..]));
//! assert_eq!(buf.part(..2, "buffer"), Ok(&[1, 2][..]));
//! assert!(buf.part(3.., "buffer").is_ok());
//! let e = buf.part(2..5, "buffer").unwrap_err();
//! assert_eq!((e.what, e.expected, e.found), ("buffer", 5, 4));
//! ```

use core::ops::{Bound, RangeBounds};
use core::slice::SliceIndex;

use crate::ShapeError;

/// Checked sub-slicing of a slice (see the [module](self) documentation).
pub trait Part<T> {
    /// `&self[range]`, or a [`ShapeError`] naming `what`: `expected` is the length the
    /// range needs, `found` the slice's length.
    fn part<R>(&self, range: R, what: &'static str) -> Result<&[T], ShapeError>
    where
        R: RangeBounds<usize> + SliceIndex<[T], Output = [T]>;

    /// `&mut self[range]`, or a [`ShapeError`] as for [`Part::part`].
    fn part_mut<R>(&mut self, range: R, what: &'static str) -> Result<&mut [T], ShapeError>
    where
        R: RangeBounds<usize> + SliceIndex<[T], Output = [T]>;
}

/// The error of an out-of-range `range` in a slice of `len` elements.
fn out_of_range(range: &impl RangeBounds<usize>, len: usize, what: &'static str) -> ShapeError {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    ShapeError {
        what,
        expected: end.max(start),
        found: len,
    }
}

impl<T> Part<T> for [T] {
    #[inline(always)]
    fn part<R>(&self, range: R, what: &'static str) -> Result<&[T], ShapeError>
    where
        R: RangeBounds<usize> + SliceIndex<[T], Output = [T]>,
    {
        let len = self.len();
        // `get` consumes the range: keep what the error needs first.
        let err = (range.start_bound().cloned(), range.end_bound().cloned());
        self.get(range).ok_or_else(|| out_of_range(&err, len, what))
    }

    #[inline(always)]
    fn part_mut<R>(&mut self, range: R, what: &'static str) -> Result<&mut [T], ShapeError>
    where
        R: RangeBounds<usize> + SliceIndex<[T], Output = [T]>,
    {
        let len = self.len();
        let err = (range.start_bound().cloned(), range.end_bound().cloned());
        self.get_mut(range)
            .ok_or_else(|| out_of_range(&err, len, what))
    }
}
