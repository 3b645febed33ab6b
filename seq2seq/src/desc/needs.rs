//! The parts of the runtime a description needs ([`ModelDesc::features`]): the cargo
//! feature of each cell and score, and the set a model calls for.

use super::attention::Ordering;
use super::model::{CellKind, ModelDesc};
use crate::features::{Feature, Features};

impl CellKind {
    /// True for an LSTM in a build that compiles LSTMs (a build without them binds
    /// none, and so leaves out their cell states).
    pub fn is_lstm(self) -> bool {
        cfg!(feature = "lstm") && self == CellKind::Lstm
    }

    /// The feature that compiles this cell.
    pub fn feature(self) -> Feature {
        match self {
            CellKind::Gru => Feature::Gru,
            CellKind::Lstm => Feature::Lstm,
        }
    }
}

impl ModelDesc {
    /// The parts this model needs (beam search never: greedy decoding runs every
    /// model); a build with just these runs it.
    pub fn features(&self) -> Features {
        let mut set = Features::NONE;
        for kind in [self.cells.enc, self.cells.dec] {
            set = set.with(kind.feature());
        }
        if self.has_attention() {
            set = set.with(self.attention.score.feature());
        }
        if self.attention.ordering == Ordering::Monotonic {
            set = set.with(Feature::Monotonic);
        }
        if self.init.is_bridge() || self.cells.init_cell.is_bridge() {
            set = set.with(Feature::Bridge);
        }
        if self.extras.slots().next().is_some() {
            set = set.with(Feature::PrefixSlots);
        }
        set
    }
}
