//! The description's fixed limits and sentinels: most layers, parts, dense layers,
//! prefix tokens and prefix slots, the ranges of sizes and formats, "no token". A leaf: the tensor ids,
//! the file layout and the error texts read them as well as the description.

/// Most recurrent layers in the encoder or the decoder.
pub const MAX_LAYERS: usize = 4;
/// Most parts of the output layer's input.
pub const MAX_OUT_PARTS: usize = 4;
/// Most dense layers a model has (see [`ModelDesc::layer_specs`](super::ModelDesc::layer_specs)).
pub const MAX_SPECS: usize = 48;

/// Range of the activation formats' fractional bits.
pub const MIN_FRAC: i8 = -8;
/// See [`MIN_FRAC`].
pub const MAX_FRAC: i8 = 30;
/// Most fractional bits of an LSTM cell-state format (`Q(15-f).f`, `0 <= f <= 15`).
pub const MAX_CELL_FRAC: i8 = 15;

/// Largest size of any dimension, vocabulary, step count or padded length.
pub const MAX_SIZE: usize = u16::MAX as usize;

/// "No such token" in the description.
pub const NO_TOKEN: u32 = u32::MAX;

/// Most fixed tokens a source can start with.
pub const MAX_PREFIX: usize = 4;

/// Most prefix slots (source tokens chosen per call, after the fixed prefix).
pub const MAX_SLOTS: usize = 4;

/// "No default token" of a prefix slot in the stored description.
pub const NO_SLOT_TOKEN: u16 = u16::MAX;

/// Widest MoChA chunk (positions), far past any published one (2 to 8): a chunk's
/// softmax reads that many scores.
pub const MAX_CHUNK: usize = 256;

/// Widest local attention half-width `D` (a window of `2D + 1` positions; Luong et al.
/// used `D = 10`).
pub const MAX_WINDOW: usize = 256;
