//! `s2s run`: a model on one source per line, with the outputs (and the attention
//! weights as JSON) written out.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::io::{read_lines, write_atomic};
use crate::model::beam::BeamOptions;
use crate::model::{decode_lines, Decoded, Keep, LoadedModel};

/// Decodes every line of `input` (standard input for `None`) with `model` and writes one
/// output per line to `out` (`source<TAB>output` with `tsv`); with `attention`, every
/// step's weights and entropy go to that JSON file. With `beam` every line is
/// beam-searched, and with `nbest` its `nbest` best results are written as
/// `source<TAB>rank<TAB>output<TAB>score` lines.
pub fn run_file(
    model: &Path,
    input: Option<&Path>,
    tsv: bool,
    attention: Option<&Path>,
    beam: Option<BeamOptions>,
    nbest: Option<usize>,
    out: &mut dyn Write,
) -> Result {
    if let Some(b) = &beam {
        if attention.is_some() {
            return Err(Error::usage(
                "--attention records greedy decoding: it does not go with --beam",
            ));
        }
        if nbest.is_some_and(|n| n == 0 || n > b.width) {
            return Err(Error::usage(format!(
                "--nbest takes 1 to the beam width ({})",
                b.width
            )));
        }
    } else if nbest.is_some() {
        return Err(Error::usage("--nbest needs --beam"));
    }
    let m = LoadedModel::load(model)?;
    let lines = read_lines(input)?;
    let keep = Keep {
        weights: attention.is_some(),
        beam,
        ..Keep::default()
    };
    let decoded = decode_lines(&m, &lines, keep)?;
    let mut text = String::new();
    for (line, d) in lines.iter().zip(&decoded) {
        if let Some(n) = nbest {
            for (rank, r) in d.nbest.iter().take(n).enumerate() {
                text += &format!("{line}\t{}\t{}\t{:.6}\n", rank + 1, r.text, r.score);
            }
            continue;
        }
        if tsv {
            text += line;
            text.push('\t');
        }
        text += &d.text;
        text.push('\n');
    }
    if let Some(path) = attention {
        let json = attention_json(&m, &lines, &decoded);
        let s = serde_json::to_string_pretty(&json).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e.into(),
        })?;
        write_atomic(path, s.as_bytes())?;
    }
    out.write_all(text.as_bytes())
        .map_err(Error::io("<stdout>"))
}

/// One JSON object per line: input, source tokens, output tokens (the end token's step
/// included), text, attention rows and their entropies.
fn attention_json(m: &LoadedModel, lines: &[String], decoded: &[Decoded]) -> serde_json::Value {
    let end = m
        .file()
        .tgt_vocab()
        .get(m.file().desc().tgt_end)
        .unwrap_or("")
        .to_string();
    lines
        .iter()
        .zip(decoded)
        .map(|(line, d)| {
            let mut outputs = d.tokens.clone();
            if d.weights.len() > d.tokens.len() {
                outputs.push(end.clone());
            }
            let entropy: Vec<f32> = d
                .weights
                .iter()
                .map(|w| attention_core::entropy::<s2s_kernels::F32>(w))
                .collect();
            serde_json::json!({
                "input": line,
                "source": d.source,
                "output": outputs,
                "text": d.text,
                "attention": d.weights,
                "entropy": entropy,
            })
        })
        .collect()
}
