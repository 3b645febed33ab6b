//! What the readers return: named float tensors, a file's weights (with the tensors
//! that are not floats named), a listing's entry, and the bounds of a read.

use std::sync::Arc;

use crate::graph::Graph;

/// One named float tensor read from a weights file, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The tensor's name in the file (see the module docs for each format).
    pub name: String,
    /// Dimensions, outermost first; empty for a scalar.
    pub shape: Vec<usize>,
    /// The elements in row-major order; `shape.iter().product()` of them. Shared, not
    /// copied, between a tensor and its aliases (ONNX `Identity` outputs).
    pub data: Arc<Vec<f32>>,
}

/// What a weights file holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Weights {
    /// Its float tensors, sorted by name.
    pub tensors: Vec<Tensor>,
    /// The tensors that are not floats, `(name, element type)`.
    pub skipped: Vec<(String, String)>,
    /// An ONNX model's nodes: how it uses its tensors (`None` for the other formats).
    pub graph: Option<Graph>,
}

/// The largest tensor read from a weights file, in stored bytes: 1 GiB (twice the
/// f32 bytes of the largest model file, for f64 tensors, with room to spare).
pub const MAX_TENSOR_BYTES: u64 = 1 << 30;

/// The largest weights file read, in bytes: 4 GiB (four of the largest tensor). Only
/// regular files are read as weights; their size is checked before they are opened and
/// the read stops one byte past it, should the file grow.
pub const MAX_FILE_BYTES: u64 = 4 * MAX_TENSOR_BYTES;

/// The zip entry Keras 3 stores its weights in, inside a `.keras` archive.
pub const KERAS_WEIGHTS_ENTRY: &str = "model.weights.h5";

/// One tensor of a weights file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The name a configuration uses.
    pub name: String,
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Element type as stored (`float32`, `F16`, `int64`...).
    pub dtype: String,
    /// Where it comes from when that matters (ONNX: external data, `Constant`,
    /// `Identity`), else empty.
    pub note: String,
    /// The node inputs it feeds (ONNX only), e.g. `GRU /encoder/rnn/GRU input 1 (W)
    /// [direction=bidirectional hidden_size=64]`.
    pub consumers: Vec<String>,
    /// A Keras optimizer's slot (a tensor under `optimizer_weights/` in a Keras 2 `.h5`,
    /// `optimizer/` in a Keras 3 `.keras`): no layer's weight; `s2s tensors` leaves it
    /// out unless asked.
    pub optimizer: bool,
}

/// Whether a tensor of an HDF5 `.h5` or `.keras` file is a Keras optimizer's slot
/// (moments, iteration counter...): its path starts with `optimizer_weights/` (Keras 2,
/// tf.keras) or `optimizer/` (Keras 3).
pub fn is_optimizer_slot(name: &str) -> bool {
    name.starts_with("optimizer_weights/") || name.starts_with("optimizer/")
}
