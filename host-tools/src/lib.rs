//! Host side of the project: the `s2s` command-line tool's library.
//!
//! * [`formats`]: reading trained weights (safetensors, npz, Keras 3, HDF5);
//! * [`import`]: model configurations and the f32 model file they make;
//! * [`model`]: loading model files and running them through the no_std core;
//! * [`quantize`]: int8 weights, calibrated activation formats;
//! * [`eval`] and [`plot`]: reports and pictures;
//! * [`device`]: building the firmware and running it under QEMU.
#![deny(unsafe_code)]

pub mod device;
pub mod eval;
pub mod formats;
pub mod import;
pub mod io;
pub mod model;
pub mod plot;
pub mod quantize;

use model::{decode_lines, Keep, LoadedModel};

/// The attention map of one source through a model.
pub fn attention_map(m: &LoadedModel, source: &str) -> Result<plot::heatmap::AttentionMap, String> {
    let file = m.file();
    if !file.desc().has_attention() {
        return Err(format!(
            "{}: the model has no attention to draw",
            m.path.display()
        ));
    }
    let d = decode_lines(
        m,
        &[source.to_string()],
        Keep {
            weights: true,
            ..Keep::default()
        },
    )?
    .remove(0);
    let mut output = d.tokens.clone();
    if d.weights.len() > output.len() {
        output.push(
            file.tgt_vocab()
                .get(file.desc().tgt_end)
                .unwrap_or("?")
                .into(),
        );
    }
    let name = m
        .path
        .file_stem()
        .map_or("model".into(), |s| s.to_string_lossy().to_string());
    Ok(plot::heatmap::AttentionMap {
        title: format!("{name}: {source} -> {}", d.text),
        source: d.source,
        output,
        weights: d.weights,
    })
}
