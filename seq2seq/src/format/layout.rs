//! The `.s2s` byte layout as records and constants: the magic, the version, the
//! header ([`RawHeader`]) and a tensor-table entry ([`RawTensor`]) as stored, the
//! alignment of sections and tensors and the header's bias mask. Plain data that the
//! parser, the writer and the error texts all read (see [`crate::format`] for the
//! layout itself).

use bytemuck::{Pod, Zeroable};

use crate::desc::MAX_SPECS;

/// The first four bytes of every model file.
pub const MAGIC: [u8; 4] = *b"S2SM";
/// The format version this crate reads and writes (2: the bias mask in the header, the
/// vocabularies' sorted orders; 3: the description's recurrent cells, GRU or LSTM, with
/// their gate activations, cell-state formats, encoder masking, an LSTM decoder's
/// initial cell state and the attentional layer's input parts; 4: the beam-search
/// variant and its length-normalisation exponent; 5: the mean bridge and shared
/// bridges, input feeding, the attentional layer's activation, the output's
/// normalisation and source prefix tokens, at the end of the description; 6: the
/// weight layout in the header; 7: prefix slots, source tokens chosen per call, with
/// their ids and names in the vocabulary section, and the minimum output length; 8:
/// monotonic attention's chunk width, MoChA; 9: local attention's half-width; 10:
/// local-p attention's position predictor).
pub const VERSION: u16 = 10;
/// Most entries a tensor table can need: weights, quantization data and bias of every
/// layer.
pub const MAX_TENSORS: usize = 3 * MAX_SPECS;
/// Alignment of every section and tensor, in bytes.
pub const ALIGN: usize = 8;
/// Size of the fixed header.
pub const HEADER_LEN: usize = core::mem::size_of::<RawHeader>();

/// The fixed header as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
#[allow(missing_docs)]
pub struct RawHeader {
    pub magic: [u8; 4],
    pub version: u16,
    pub precision: u8,
    pub layout: u8,
    pub file_len: u32,
    pub desc: [u32; 2],
    pub vocab: [u32; 2],
    pub table: [u32; 2],
    pub data: [u32; 2],
    pub biases: [u32; 2],
    pub reserved: [u32; 3],
}

/// One entry of the tensor table as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct RawTensor {
    /// A [`TensorId`](crate::format::TensorId) in its `u32` form.
    pub id: u32,
    /// A [`DType`](crate::format::DType) code.
    pub dtype: u32,
    /// Rows.
    pub rows: u32,
    /// Columns (1 for vectors).
    pub cols: u32,
    /// Offset from the start of the file.
    pub offset: u32,
    /// Length in bytes.
    pub len: u32,
}

/// `n` rounded up to [`ALIGN`], `None` on overflow.
pub(crate) fn align_up(n: usize) -> Option<usize> {
    Some(n.checked_add(ALIGN - 1)? / ALIGN * ALIGN)
}

/// The bias mask of a header: bit `i` set when layer `i` has a bias.
pub(crate) fn bias_mask(h: &RawHeader) -> u64 {
    h.biases[0] as u64 | (h.biases[1] as u64) << 32
}

/// The header's two words for a bias mask.
#[cfg(feature = "alloc")]
pub(crate) fn bias_words(mask: u64) -> [u32; 2] {
    [mask as u32, (mask >> 32) as u32]
}

const _: () = assert!(MAX_SPECS <= 64, "the bias mask has 64 bits");
