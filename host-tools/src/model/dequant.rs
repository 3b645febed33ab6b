//! The weights a quantized file stands for, back in f32, and f32 models with some
//! layers' weights replaced: how the quantizer and `s2s check` measure what rounding
//! one layer costs with the host's own f32 precision (no second implementation).
//! Also what every rebuilt model file shares: a builder like a file, and the error of
//! a missing tensor.

use s2s_kernels::{PrecisionKind, Requant};
use seq2seq::builder::ModelBuilder;
use seq2seq::desc::{LayerSpec, ModelDesc};
use seq2seq::format::{DType, Slot, TensorId};

use crate::error::{Error, Place, Result};
use crate::model::LoadedModel;

/// The error for a tensor the model's description needs but its file lacks.
pub(crate) fn missing(m: &LoadedModel, id: TensorId) -> Error {
    Error::invalid(
        m.path.display(),
        crate::error::Place::Tensor(id.to_string()),
        "missing from the model file",
    )
}

/// A builder with the vocabularies, separator and prefix slots of `file` (`desc` is its
/// description, or one that keeps its slots).
pub(crate) fn builder_like(
    file: &seq2seq::ModelFile<'_>,
    precision: PrecisionKind,
    desc: ModelDesc,
) -> ModelBuilder {
    let mut b = ModelBuilder::new(precision, desc);
    b.src_vocab = (0..desc.src_vocab)
        .map(|i| file.src_vocab().get(i as u16).unwrap_or("").to_string())
        .collect();
    b.tgt_vocab = (0..desc.tgt_vocab)
        .map(|i| file.tgt_vocab().get(i as u16).unwrap_or("").to_string())
        .collect();
    b.separator = file.separator().to_string();
    let slots = file.slots();
    b.slots = (0..slots.len())
        .map(|i| {
            let name = slots.name(i).unwrap_or("").to_string();
            (name, slots.tokens(i).collect())
        })
        .collect();
    b
}

/// The weights of layer `s` of the quantized model `q` as its int8 planes give them
/// back, `rows x cols` in f32: each row `sum_p s_p q_p`, with `s_p` the row's scale of
/// plane `p` (stored in `w8f32`, recovered from the first input part's requantizer and
/// format in `w8a16`). Returns the weights and the number of planes.
pub fn dequantize(q: &LoadedModel, s: &LayerSpec) -> Result<(Vec<f32>, usize)> {
    let file = q.file();
    let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
    let bad = |why: &str| {
        Error::invalid(
            q.path.display(),
            Place::Tensor(id(Slot::Weight).to_string()),
            why,
        )
    };
    let (info, codes) = file
        .data::<i8>(id(Slot::Weight))
        .map_err(Error::model(&q.path))?
        .ok_or_else(|| missing(q, id(Slot::Weight)))?;
    let planes = info.cols / s.cols.max(1);
    if planes == 0 || info.cols != planes * s.cols || info.rows != s.rows {
        return Err(bad("its shape is not the layer's"));
    }
    let layout = file.layout();
    // One scale per (row, plane).
    let scales: Vec<f64> = match file.precision() {
        PrecisionKind::W8F32 => file
            .data::<f32>(id(Slot::RowQ))
            .map_err(Error::model(&q.path))?
            .ok_or_else(|| missing(q, id(Slot::RowQ)))?
            .1
            .iter()
            .map(|&v| v as f64)
            .collect(),
        PrecisionKind::W8A16 => {
            let rq = file
                .data::<Requant>(id(Slot::RowQ))
                .map_err(Error::model(&q.path))?
                .ok_or_else(|| missing(q, id(Slot::RowQ)))?
                .1;
            let fmts = file.desc().part_fmts(s);
            let f = fmts.first().map_or(15, |f| f.frac as i32);
            // The requantizer is s 2^f (embedding) or s 2^(15 - f) (into Q16.15).
            let exp = if s.is_embedding() { f } else { 15 - f };
            rq.iter()
                .step_by(fmts.len().max(1))
                .map(|r| r.to_real() / 2f64.powi(exp))
                .collect()
        }
        p => {
            return Err(Error::usage(format!(
                "{}: {} weights are not quantized",
                q.path.display(),
                p.name()
            )))
        }
    };
    if scales.len() != s.rows * planes {
        return Err(bad("its row scales do not match its planes"));
    }
    let mut w = vec![0.0f32; s.rows * s.cols];
    for r in 0..s.rows {
        for p in 0..planes {
            let sc = scales[r * planes + p];
            let row = &codes[(r * planes + p) * s.cols..(r * planes + p + 1) * s.cols];
            for (o, &c) in w[r * s.cols..(r + 1) * s.cols].iter_mut().zip(row) {
                *o += (layout.load(c) as f64 * sc) as f32;
            }
        }
    }
    Ok((w, planes))
}

/// The f32 model `m` with the weights of some layers replaced (each `rows x cols` of
/// its layer spec), everything else as stored.
pub fn with_weights(m: &LoadedModel, replaced: &[(LayerSpec, &[f32])]) -> Result<LoadedModel> {
    let file = m.file();
    let mut b = builder_like(&file, PrecisionKind::F32, *file.desc());
    for t in file.tensors() {
        let (_, d) = file
            .data::<f32>(t.id)
            .map_err(Error::model(&m.path))?
            .ok_or_else(|| missing(m, t.id))?;
        b.tensor(t.id, DType::F32, t.rows, t.cols, d);
    }
    for (s, w) in replaced {
        let id = TensorId::new(s.role, s.layer, s.dir, Slot::Weight);
        b.tensor(id, DType::F32, s.rows, s.cols, w);
    }
    let bytes = b.to_bytes().map_err(Error::model(&m.path))?;
    LoadedModel::from_bytes(&m.path, &bytes)
}
