//! Readers of trained weights files (safetensors, npz/npy, HDF5 `.h5` and `.keras`,
//! ONNX) into named `f32` tensors, bounded by the bytes given: what `s2s import` reads a
//! model's weights with and `s2s tensors` lists (in host-tools, as `host_tools::formats`),
//! and what the weights readers' fuzz targets run.
//!
//! [`read_weights`] picks the reader from the file's first bytes, not its extension:
//!
//! | content                                   | reader                      | tensor names              |
//! |-------------------------------------------|-----------------------------|---------------------------|
//! | `\x89HDF\r\n\x1a\n` (Keras `.h5`)         | `hdf5` (our own)            | dataset path without `/`  |
//! | zip holding `*.npy` (NumPy `.npz`)        | `zip` crate + `npyz` crate  | entry name without `.npy` |
//! | zip holding `model.weights.h5` (`.keras`) | `zip` crate + `hdf5`        | dataset path without `/`  |
//! | 8-byte length + JSON (`.safetensors`)     | `safetensors` crate         | key as stored             |
//! | `\x93NUMPY` (a single `.npy`)             | `npyz` crate                | file stem                 |
//! | protobuf `ModelProto` (`.onnx`)           | `prost` (our `onnx` module) | initializer, `Constant` or `Identity` output |
//!
//! [`list_tensors`] lists a file's tensors with their stored element types (and, for
//! ONNX, the node inputs each feeds); [`read_weights_bytes`] and [`read_bytes_as`] read
//! bytes already in memory. An ONNX model's [`Weights::graph`] holds its nodes
//! ([`graph::Graph`]): which node input reads each tensor, through which `Identity` or
//! `Transpose`, and what a value is computed from.
//!
//! Only real floating-point tensors are returned: 16-, 32- and 64-bit IEEE floats (and
//! bfloat16) are converted to `f32`. Integer, boolean, string and complex data (e.g.
//! Keras' optimizer iteration counter) is not read: every reader lists such tensors
//! with their element type in [`Weights::skipped`], so that `s2s import` says "tensor X
//! has dtype Y, expected float" when a configuration names one. Floats the readers
//! cannot convert (8-bit floats, long doubles) are errors. Results are sorted by name.
//!
//! Reads are bounded: a weights file is a regular file of at most [`MAX_FILE_BYTES`],
//! read by [`read_bounded`] (a FIFO or a device is refused before it is opened); an
//! ONNX model's external data is a regular file too, its size checked before it is
//! read, and no tensor is larger than [`MAX_TENSOR_BYTES`]; an ONNX `Identity` alias
//! shares its tensor's data. Of an `.npz`, only the entries asked for are inflated (every
//! entry when no names are given), each after its `.npy` header was read and checked
//! against the entry's stated size, and at most [`MAX_TENSOR_BYTES`]; `.npy` headers
//! are at most 64 KiB (checked before `npyz` sees them).
//!
//! Each reader is written for untrusted input: truncated or corrupt files give an
//! [`Error`] whose variant says which reader refused what, and whose message is one
//! line naming the file, the entry, tensor or dataset, and the problem; they never
//! panic. Parsers of untrusted formats are maintained crates where
//! one fits (`zip`, `npyz`, `safetensors`, `half`); HDF5 is read by our own reader
//! (see the `hdf5` module for why).

#![forbid(unsafe_code)]

mod archive;
mod convert;
mod error;
pub mod graph;
mod hdf5;
mod listing;
mod npy;
mod onnx;
mod read;
mod safetensors;
mod tensor;

pub use error::{Error, Place, Result};
pub use graph::Graph;
pub use listing::{list_tensors, read_graph};
pub use read::{
    read_bounded, read_bytes_as, read_onnx_bytes, read_weights, read_weights_bytes,
    read_weights_file, Reader,
};
pub use tensor::{
    is_optimizer_slot, Listing, Tensor, Weights, KERAS_WEIGHTS_ENTRY, MAX_FILE_BYTES,
    MAX_TENSOR_BYTES,
};

#[cfg(test)]
mod tests;
