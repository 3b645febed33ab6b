//! The model file (`.s2s`): one format for host and device.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "S2SM"
//!      4     2  format version (7)
//!      6     1  precision (0 f32, 1 w8f32, 2 w8a16)
//!      7     1  weight layout of every int8 weight tensor (0 row, 1 v6m: see
//!               s2s_kernels::Layout; w8a16 only, 0 otherwise)
//!      8     4  file length in bytes, CRC included
//!     12    32  (offset, length) of: description, vocabularies; (offset, count) of the
//!               tensor table; (offset, length) of the tensor data
//!     44     8  bias mask: bit i (of the little-endian 64-bit value) set when layer i of
//!               ModelDesc::layer_specs has a bias
//!     52    12  reserved (0)
//!     64     .  sections in that order, each at the first 8-byte boundary after the
//!               previous one (the description right after the header), padding zero
//!   len-4    4  CRC-32 (IEEE) of every byte before it, right after the tensor data
//! ```
//!
//! All integers are little-endian. The description is a
//! [`RawDesc`](crate::desc::RawDesc); the vocabularies
//! are a string table (count, then `(offset, length)` pairs, then each vocabulary's ids
//! sorted by their strings as `u16`, then the token ids of each prefix slot as `u16`,
//! then the UTF-8 strings one after another; see [`Vocab`](crate::Vocab)) holding the
//! source tokens, the target tokens, the output separator and the prefix slots' names;
//! the tensor table is an array of [`RawTensor`], the tensors stored in
//! table order, each at the first 8-byte boundary after the previous one, so they can
//! be read in place from flash.
//!
//! [`ModelFile::parse`] trusts nothing and copies nothing: with checked arithmetic
//! (correct on 32-bit targets) it checks the header, the layout above byte for byte,
//! the description, the vocabularies (non-empty, distinct tokens) and that the table
//! holds exactly the tensors the description calls for at the file's precision, each
//! once, with its element type and shape, and valid quantization data. Only the float
//! values themselves are left to [`ModelFile::check_finite`], which the host tools and
//! the writer run and the firmware skips (a scan of every weight at boot).
//!
//! Files of other versions are refused with
//! [`Error::UnsupportedVersion`](crate::Error::UnsupportedVersion) (version 1: no
//! bias mask, no sorted orders; version 2: no recurrent-cell fields in the description;
//! version 3: no beam-search rule in the description; version 4: none of the
//! OpenNMT-style decoder fields; version 5: no weight layout; version 6: no prefix
//! slots, no minimum output length);
//! the host tools re-create them from their sources with `s2s import` and `s2s quantize`.
//!
//! The parts, bottom up: `layout` (the records and constants), `crc` (the checksum) and
//! `tensor` (tensor ids and element types), which the error texts read too; then, above
//! the description, `file` (the parser and the views of a parsed file) and `check` (the
//! tensor table checked against the description). This file only names them.

mod check;
mod crc;
mod file;
mod layout;
mod tensor;

pub use crate::desc::Role;
pub use crc::{crc32, crc32_update};
pub use file::{ModelFile, TensorInfo};
#[cfg(feature = "alloc")]
pub(crate) use layout::bias_words;
pub use layout::{RawHeader, RawTensor, ALIGN, HEADER_LEN, MAGIC, MAX_TENSORS, VERSION};
pub use tensor::{DType, LayerName, ModelPrecision, Slot, Stored, TensorId};
