//! Sub-slices, splits, elements and copies that are an error, not a panic, when out of
//! range.
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
//! assert_eq!(buf.cut(1, "buffer"), Ok((&[1][..], &[2, 3, 4][..])));
//! assert!(buf.cut(5, "buffer").is_err());
//! let mut out = [0; 2];
//! assert!(out.fill_from(&buf[..2], "out").is_ok() && out == [1, 2]);
//! assert!(out.fill_from(&buf, "out").is_err());
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

    /// `self.split_at(at)`, or a [`ShapeError`] naming `what` (`expected` is `at`).
    fn cut(&self, at: usize, what: &'static str) -> Result<(&[T], &[T]), ShapeError>;

    /// `self.split_at_mut(at)`, or a [`ShapeError`] as for [`Part::cut`].
    fn cut_mut(
        &mut self,
        at: usize,
        what: &'static str,
    ) -> Result<(&mut [T], &mut [T]), ShapeError>;

    /// `&mut self[i]`, or a [`ShapeError`] naming `what` (`expected` is `i + 1`).
    fn item_mut(&mut self, i: usize, what: &'static str) -> Result<&mut T, ShapeError>;

    /// `self.copy_from_slice(src)`, or a [`ShapeError`] naming `what` when the lengths
    /// differ (`expected` is this slice's length, `found` that of `src`).
    fn fill_from(&mut self, src: &[T], what: &'static str) -> Result<(), ShapeError>
    where
        T: Copy;
}

/// The error of a slice of `found` elements where `expected` were needed.
fn short(what: &'static str, expected: usize, found: usize) -> ShapeError {
    ShapeError {
        what,
        expected,
        found,
    }
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

    #[inline(always)]
    fn cut(&self, at: usize, what: &'static str) -> Result<(&[T], &[T]), ShapeError> {
        let len = self.len();
        self.split_at_checked(at).ok_or(short(what, at, len))
    }

    #[inline(always)]
    fn cut_mut(
        &mut self,
        at: usize,
        what: &'static str,
    ) -> Result<(&mut [T], &mut [T]), ShapeError> {
        let len = self.len();
        self.split_at_mut_checked(at).ok_or(short(what, at, len))
    }

    #[inline(always)]
    fn item_mut(&mut self, i: usize, what: &'static str) -> Result<&mut T, ShapeError> {
        let len = self.len();
        self.get_mut(i).ok_or(short(what, i.saturating_add(1), len))
    }

    #[inline(always)]
    fn fill_from(&mut self, src: &[T], what: &'static str) -> Result<(), ShapeError>
    where
        T: Copy,
    {
        if self.len() != src.len() {
            return Err(short(what, self.len(), src.len()));
        }
        self.copy_from_slice(src);
        Ok(())
    }
}
