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
        if self.attention.local() {
            set = set.with(Feature::Local);
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

impl ModelDesc {
    /// Whether a source can be streamed through this model (`Runner::stream`): read a
    /// token at a time, with only the encoder states its attention can still reach
    /// held. Nothing may wait for the source's end: the attention is monotonic or local-m
    /// (global attention reads every position at every step, local-p scales its centre
    /// by the source's length), every encoder layer runs
    /// forwards only, the decoder starts from zeros (not from the encoder's final or
    /// mean state), and the source is not padded to a fixed length. The error says
    /// which of these the model breaks.
    pub fn streams(&self) -> Result<(), crate::Error> {
        let why = if !self.has_attention() {
            "it has no attention (its decoder reads the whole source's encoding)"
        } else if self.attention.ordering != Ordering::Monotonic && !self.attention.local() {
            "only monotonic and local attention stream (global attention reads every position at every step)"
        } else if self.attention.predicted() {
            "its local-p attention predicts each window's centre from the source's length, which a stream does not know"
        } else if self.enc_bidir {
            "its encoder is bidirectional (a backward layer starts at the source's end)"
        } else if self.init != super::model::Init::Zeros
            || (self.cells.dec.is_lstm() && self.cells.init_cell != super::model::Init::Zeros)
        {
            "its decoder's initial state is computed from the whole source (init is not zeros)"
        } else if self.src_pad_to > 0 {
            "its source is padded to a fixed length"
        } else {
            return Ok(());
        };
        Err(crate::Error::NotStreamable(why))
    }

    /// Whether a source can be streamed through this model in a window of `window`
    /// positions: [`ModelDesc::streams`], a window wider than a MoChA chunk (it keeps
    /// the chunk's last `chunk - 1` rows when it is filled again, and needs a new one)
    /// and at least as wide as a local attention's `2D + 1` positions (a step reads
    /// them all).
    pub fn streams_in(&self, window: usize) -> Result<(), crate::Error> {
        self.streams()?;
        let local = 2 * usize::from(self.attention.window) + 1;
        match usize::from(self.attention.chunk) {
            _ if window == 0 => Err(crate::Error::InputTooLong { len: 1, max: 0 }),
            chunk if chunk >= window => Err(crate::Error::ChunkOverWindow { chunk, window }),
            _ if self.attention.local() && local > window => Err(crate::Error::LocalOverWindow {
                positions: local,
                window,
            }),
            _ => Ok(()),
        }
    }
}
