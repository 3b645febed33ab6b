//! The model description: sizes, the variant of each part, special tokens and the
//! activation formats. Stored in the model file as [`RawDesc`], a fixed little-endian
//! record; [`ModelDesc::from_raw`] validates every field.
//!
//! The parts, bottom up: `limits` (the fixed limits and sentinels), `role` (the dense
//! layers a model can have), `beam_rule` (how a model is beam-searched), `attention`
//! (the attention's description and all it implies), `model` (the types), then on them `layers` (what a description implies: sizes, dense layers,
//! formats), `check` (its ranges and consistency), `record` (the stored record and its fields),
//! `raw` (the record of a whole description) and
//! `needs` (the cargo features it calls for). This file only names them.

mod attention;
mod beam_rule;
mod check;
mod layers;
mod limits;
mod model;
mod needs;
mod raw;
mod record;
mod role;

pub use attention::{AttentionDesc, Ordering, ScoreKind};
pub use beam_rule::{BeamRule, BeamVariant};
pub use layers::LayerSpec;
pub use limits::{
    MAX_CELL_FRAC, MAX_CHUNK, MAX_FRAC, MAX_LAYERS, MAX_OUT_PARTS, MAX_PREFIX, MAX_SIZE, MAX_SLOTS,
    MAX_SPECS, MAX_WINDOW, MIN_FRAC, NO_SLOT_TOKEN, NO_TOKEN,
};
pub use model::{
    Activation, CellKind, Cells, Extras, Init, Logits, ModelDesc, Part, PrefixSlot, Split,
};
pub use record::RawDesc;
pub use role::Role;
