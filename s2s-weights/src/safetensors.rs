//! Reader for PyTorch / Hugging Face `.safetensors` files.
//!
//! The layout (8-byte little-endian header length, JSON header, one flat data buffer)
//! is validated by the `safetensors` crate, which checks that every tensor's offsets
//! match its dtype and shape and that the tensors tile the buffer exactly.
//!
//! `F32`, `F64`, `F16` and `BF16` tensors are converted to `f32`. Integer, boolean and
//! complex tensors are named with their dtype, not read; the 4/6/8-bit float formats
//! are rejected as unsupported.

use std::sync::Arc;

use ::safetensors::{Dtype, SafeTensors};

use crate::convert::{decode, ByteOrder, FloatKind};
use crate::error::{Error, Place, Problem, Result};
use crate::tensor::{Tensor, Weights};

/// Returns true if `bytes` looks like a safetensors file: a plausible header length
/// followed by the start of a JSON object.
pub(crate) fn is_safetensors(bytes: &[u8]) -> bool {
    let Some(prefix) = bytes.get(..8) else {
        return false;
    };
    let mut length = [0u8; 8];
    length.copy_from_slice(prefix);
    let header_len = u64::from_le_bytes(length);
    header_len >= 2 && header_len <= (bytes.len() - 8) as u64 && bytes.get(8) == Some(&b'{')
}

/// The file's header and tensor views, validated by the crate; errors name `origin`.
pub(crate) fn deserialize<'b>(bytes: &'b [u8], origin: &str) -> Result<SafeTensors<'b>> {
    SafeTensors::deserialize(bytes).map_err(|error| {
        Error::safetensors(
            origin,
            Place::File,
            format!("invalid safetensors file: {error}"),
        )
    })
}

/// Reads every float tensor, in the file's name order, and names the others; errors
/// name `origin`.
pub(crate) fn read_safetensors(bytes: &[u8], origin: &str) -> Result<Weights> {
    let file = deserialize(bytes, origin)?;
    let mut w = Weights::default();
    for (name, view) in file.tensors() {
        let fail =
            |message: Problem| Error::safetensors(origin, Place::Tensor(name.clone()), message.0);
        let Some(kind) = float_kind(view.dtype()).map_err(fail)? else {
            w.skipped.push((name, view.dtype().to_string()));
            continue;
        };
        let data = view.data();
        let expected = view
            .shape()
            .iter()
            .try_fold(kind.size(), |acc, &dim| acc.checked_mul(dim));
        if expected != Some(data.len()) {
            return Err(fail(Problem(format!(
                "{} bytes of data for shape {:?}",
                data.len(),
                view.shape()
            ))));
        }
        w.tensors.push(Tensor {
            shape: view.shape().to_vec(),
            data: Arc::new(decode(data, kind, ByteOrder::Little)),
            name,
        });
    }
    Ok(w)
}

/// The conversion for `dtype`, `None` for non-float dtypes (named, not read).
fn float_kind(dtype: Dtype) -> Result<Option<FloatKind>, Problem> {
    Ok(Some(match dtype {
        Dtype::F16 => FloatKind::F16,
        Dtype::BF16 => FloatKind::Bf16,
        Dtype::F32 => FloatKind::F32,
        Dtype::F64 => FloatKind::F64,
        Dtype::BOOL
        | Dtype::U8
        | Dtype::I8
        | Dtype::I16
        | Dtype::U16
        | Dtype::I32
        | Dtype::U32
        | Dtype::I64
        | Dtype::U64
        | Dtype::C64 => return Ok(None),
        other => return Err(Problem(format!("unsupported float dtype {other}"))),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::safetensors::tensor::TensorView;

    fn bytes_of(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// A file with one tensor of each supported float dtype plus an int64 one.
    fn sample() -> Vec<u8> {
        let f32s = bytes_of(&[0.0, 0.5, -1.0, 1.5, 2.0, -2.5]);
        let f64s: Vec<u8> = [0.25f64, -0.75]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let f16s = [0x00, 0x3c, 0x00, 0xb8]; // 1.0, -0.5
        let bf16s = [0x80, 0x3f, 0x40, 0xc0]; // 1.0, -3.0
        let i64s = 42i64.to_le_bytes();
        let views = [
            (
                "dense.weight",
                TensorView::new(Dtype::F32, vec![2, 3], &f32s),
            ),
            ("bias64", TensorView::new(Dtype::F64, vec![2], &f64s)),
            ("half", TensorView::new(Dtype::F16, vec![2], &f16s)),
            ("brain", TensorView::new(Dtype::BF16, vec![1, 2], &bf16s)),
            ("step", TensorView::new(Dtype::I64, vec![], &i64s)),
        ];
        let views: Vec<(&str, TensorView<'_>)> = views
            .into_iter()
            .map(|(name, view)| (name, view.expect("valid view")))
            .collect();
        ::safetensors::serialize(views, None).expect("serialize")
    }

    #[test]
    fn reads_back_serialized_tensors_exactly() {
        let bytes = sample();
        assert!(is_safetensors(&bytes));
        let w = read_safetensors(&bytes, "t.safetensors").expect("read");
        assert_eq!(w.skipped, [("step".to_string(), "I64".to_string())]);
        let mut tensors = w.tensors;
        tensors.sort_by(|a, b| a.name.cmp(&b.name));
        let summary: Vec<(&str, &[usize], &[f32])> = tensors
            .iter()
            .map(|t| (t.name.as_str(), t.shape.as_slice(), t.data.as_slice()))
            .collect();
        assert_eq!(
            summary,
            [
                ("bias64", &[2usize][..], &[0.25f32, -0.75][..]),
                ("brain", &[1, 2][..], &[1.0, -3.0][..]),
                (
                    "dense.weight",
                    &[2, 3][..],
                    &[0.0, 0.5, -1.0, 1.5, 2.0, -2.5][..]
                ),
                ("half", &[2][..], &[1.0, -0.5][..]),
            ]
        );
    }

    #[test]
    fn rejects_fp8() {
        let raw = [0u8; 2];
        let view = TensorView::new(Dtype::F8_E4M3, vec![2], &raw).expect("view");
        let bytes = ::safetensors::serialize([("q", view)], None).expect("serialize");
        let error = read_safetensors(&bytes, "t.safetensors").expect_err("fp8 unsupported");
        assert_eq!(
            error.to_string(),
            "t.safetensors: tensor q: unsupported float dtype F8_E4M3"
        );
    }

    #[test]
    fn every_truncation_fails_without_panic() {
        let bytes = sample();
        for len in 0..bytes.len() {
            assert!(
                read_safetensors(&bytes[..len], "t.safetensors").is_err(),
                "truncated to {len}"
            );
        }
    }

    #[test]
    fn every_bit_flip_is_handled_without_panic() {
        let bytes = sample();
        for pos in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[pos] ^= 0x41;
            let _ = read_safetensors(&corrupt, "t.safetensors");
        }
    }
}
