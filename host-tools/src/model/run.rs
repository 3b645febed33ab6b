//! `s2s run`: a model on one source per line, with the outputs (and the attention
//! weights as JSON) written out.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::io::{write_atomic, LineReader, STDOUT_NAME};
use crate::model::beam::BeamOptions;
use crate::model::{decode_stream, Decoded, Keep, Limits, LoadedModel, PrefixArgs};

/// How `s2s run` decodes and writes.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions<'a> {
    /// `source<TAB>output` lines.
    pub tsv: bool,
    /// Outputs as their target token ids (space-separated, the end token left out)
    /// instead of text: what a reference decode from the model's framework gives.
    pub ids: bool,
    /// A JSON file for every step's attention weights (greedy decoding).
    pub attention: Option<&'a Path>,
    /// A beam search instead of greedy decoding.
    pub beam: Option<BeamOptions>,
    /// The prefix slots' tokens (none: the model's defaults).
    pub prefix: Option<&'a PrefixArgs>,
    /// With `beam`: this many best results per line.
    pub nbest: Option<usize>,
    /// Streamed (`stream::stream_file`): consecutive steps one source position may be
    /// attended (0: no limit, `seq2seq::StreamLimits`).
    pub max_repeats: usize,
    /// Positions and steps instead of the model's (long inputs).
    pub limits: Limits,
}

/// Decodes every line of `input` (standard input for `None`) with `model`, its source
/// being its first tab-separated column ([`crate::io::source_of`]: a `source<TAB>target`
/// file gives what its sources alone give), and writes one output per line to `out` as
/// it goes, in input order (`source<TAB>output` with `tsv`, options in [`RunOptions`]);
/// with `attention`, every step's weights and entropy go to that JSON file. With `beam`
/// every line is beam-searched, and with `nbest` its `nbest` best results are written as
/// `source<TAB>rank<TAB>output<TAB>score` lines. `prefix` chooses the tokens of the
/// model's prefix slots, for every line or by a column of each ([`PrefixArgs`]).
///
/// Every input line gives output, empty and `#` lines included (an empty line gives an
/// empty output, whatever the model). A line that cannot be decoded gives an empty
/// output (with `tsv`, `source<TAB><TAB>error`; with `nbest`, one line
/// `source<TAB><TAB><TAB><TAB>error`) and its error, `file:line: ...`, on `errors`; the
/// other lines go on. Returns the number of such lines. A reading failure (or a line
/// longer than [`crate::io::MAX_LINE_BYTES`]) stops the run with an error after the
/// lines before it.
pub fn run_file(
    model: &Path,
    input: Option<&Path>,
    options: &RunOptions<'_>,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<usize> {
    let RunOptions {
        tsv,
        ids,
        attention,
        beam,
        prefix,
        nbest,
        limits,
        ..
    } = *options;
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
    let m = LoadedModel::load(model)?.with_limits(limits)?;
    let mut lines = LineReader::open(input)?;
    let keep = Keep {
        weights: attention.is_some(),
        beam,
        ..Keep::default()
    };
    let end = m
        .file()
        .tgt_vocab()
        .get(m.file().desc().tgt_end)
        .unwrap_or("")
        .to_string();
    let mut json = Vec::new();
    let mut failed = 0;
    let stdout = |e| Error::io(STDOUT_NAME)(e);
    // An output as text, or with `ids` as its token ids.
    let shown = |out_ids: &[u16], out_text: &str| -> String {
        if ids {
            let v: Vec<String> = out_ids.iter().map(u16::to_string).collect();
            v.join(" ")
        } else {
            out_text.to_string()
        }
    };
    let no_prefix = PrefixArgs::default();
    let prefix = prefix.unwrap_or(&no_prefix);
    let result = decode_stream(&m, &mut lines, prefix, keep, |_, line, d| {
        let mut text = String::new();
        match &d {
            Ok(d) => match nbest {
                Some(_) if d.nbest.is_empty() => text += &format!("{line}\t\t\t\n"),
                Some(n) => {
                    for (rank, r) in d.nbest.iter().take(n).enumerate() {
                        let o = shown(&r.ids, &r.text);
                        text += &format!("{line}\t{}\t{o}\t{:.6}\n", rank + 1, r.score);
                    }
                }
                None if tsv => text += &format!("{line}\t{}\n", shown(&d.ids, &d.text)),
                None => text += &format!("{}\n", shown(&d.ids, &d.text)),
            },
            Err(e) => {
                failed += 1;
                writeln!(errors, "error: {e}").map_err(Error::io("<stderr>"))?;
                let why = line_error(e);
                text += &match (nbest, tsv) {
                    (Some(_), _) => format!("{line}\t\t\t\t{why}\n"),
                    (None, true) => format!("{line}\t\t{why}\n"),
                    (None, false) => "\n".into(),
                };
            }
        }
        out.write_all(text.as_bytes()).map_err(stdout)?;
        if attention.is_some() {
            json.push(attention_json(&end, line, d.as_ref()));
        }
        Ok(())
    });
    // What was decoded before a reading error is kept: the JSON too.
    if let Some(path) = attention {
        let s = serde_json::to_string_pretty(&serde_json::Value::Array(json)).map_err(|e| {
            Error::Io {
                path: path.to_path_buf(),
                source: e.into(),
            }
        })?;
        if result.is_ok() {
            write_atomic(path, s.as_bytes())?;
        }
    }
    result.map(|()| failed)
}

/// The text of a line's error without the file and line (for the TSV column).
fn line_error(e: &Error) -> String {
    match e {
        Error::Model { source, .. } => source.to_string(),
        Error::Invalid { message, .. } => message.clone(),
        e => e.to_string(),
    }
}

/// One line's JSON object: input, source tokens, output tokens (the end token's step
/// included, `end` being its text), text, attention rows and their entropies; or the
/// input and its error.
fn attention_json(
    end: &str,
    line: &str,
    d: std::result::Result<&Decoded, &Error>,
) -> serde_json::Value {
    let d = match d {
        Ok(d) => d,
        Err(e) => return serde_json::json!({ "input": line, "error": line_error(e) }),
    };
    let mut outputs = d.tokens.clone();
    if d.weights.len() > d.tokens.len() {
        outputs.push(end.to_string());
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
}
