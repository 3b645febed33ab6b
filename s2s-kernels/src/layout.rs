//! Weight layouts: how a [`W8A16`](crate::W8A16) layer stores its int8 weights.
//!
//! A layout is a quantize-time hint (`s2s quantize --layout`): a pure re-encoding of the
//! same int8 values that one instruction set reads faster. Every kernel reads every
//! layout exactly (the instruction-set kernel for its own layouts, the portable code for
//! the others), so a model file runs on every board with the same results, fastest on
//! the one it was laid out for.
//!
//! | layout | stored byte of weight `w` | fast on |
//! |---|---|---|
//! | [`Layout::Row`] | `w` (two's complement), row-major | every kernel (the default) |
//! | [`Layout::V6m`] | `w + 128` (offset binary, as `u8`), row-major | Cortex-M0/M0+/M23 |
//!
//! Thumb-1 loads a signed byte only with a register offset (`LDRSB Rt, [Rn, Rm]`) but an
//! unsigned one with an immediate offset (`LDRB Rt, [Rn, #k]`): offset-binary weights are
//! loaded one per instruction at fixed offsets from one pointer, with no sign
//! extraction, and `sum (w_k + 128) x_k` is corrected by `128 * sum x_k` once per input
//! part (shared by all rows). The sum is exact: the correction is applied modulo `2^32`
//! to a result that fits `i32`.

crate::named_enum! {
    /// How a layer's int8 weights are stored (see the [module docs](self)); the id is
    /// the file's.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum Layout {
        /// Row-major int8, two's complement: what every kernel reads natively.
        #[default]
        Row = 0 => "row",
        /// Row-major offset binary: each weight `w` stored as the byte `w + 128`.
        V6m = 1 => "v6m",
    }
}

impl Layout {
    /// The layout this target's instruction-set kernels read fastest ([`Layout::Row`]
    /// where no layout beats it, and on the host).
    pub const NATIVE: Layout = if cfg!(all(s2s_isa = "v6m", feature = "v6m-layout")) {
        Layout::V6m
    } else {
        Layout::Row
    };

    /// Whether this build reads the layout: every layout, except on the Cortex-M0
    /// without the `v6m-layout` feature (a small build), which reads [`Layout::Row`]
    /// only.
    pub const fn compiled(self) -> bool {
        matches!(self, Layout::Row) || !cfg!(s2s_isa = "v6m") || cfg!(feature = "v6m-layout")
    }

    /// The stored byte of weight `w`.
    #[inline]
    pub fn store(self, w: i8) -> i8 {
        w ^ self.flip()
    }

    /// The bits that [`Layout::store`] flips: none, or the sign bit (`w + 128` as a
    /// byte). A loop over the bytes of one layout computes it once.
    #[inline]
    fn flip(self) -> i8 {
        match self {
            Layout::Row => 0,
            Layout::V6m => i8::MIN,
        }
    }

    /// The weight a stored byte holds (the inverse of [`Layout::store`]).
    #[inline]
    pub fn load(self, b: i8) -> i8 {
        // Flipping the sign bit is its own inverse.
        self.store(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ids_and_bytes_round_trip() {
        for (i, l) in Layout::ALL.into_iter().enumerate() {
            assert_eq!(Layout::from_id(i as u8), Some(l));
            assert_eq!(Layout::from_name(l.name()), Some(l));
            for w in i8::MIN..=i8::MAX {
                assert_eq!(l.load(l.store(w)), w);
            }
        }
        assert_eq!(Layout::from_id(2), None);
        assert_eq!(Layout::from_name("dsp"), None);
        // Offset binary: the stored byte, read unsigned, is `w + 128`.
        for w in i8::MIN..=i8::MAX {
            assert_eq!(Layout::V6m.store(w) as u8 as i32, w as i32 + 128);
        }
    }
}
