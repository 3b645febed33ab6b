//! The weights readers, from the `s2s-weights` crate, under their old path
//! (`host_tools::formats::...`), and the table `s2s tensors` prints of a weights file.

use std::path::Path;

pub use s2s_weights::{
    read_bounded, read_bytes_as, read_onnx_bytes, read_weights, read_weights_bytes,
    read_weights_file, Listing, Reader, Tensor, Weights, KERAS_WEIGHTS_ENTRY, MAX_FILE_BYTES,
    MAX_TENSOR_BYTES,
};

use crate::error::{Error, Result};
use crate::io::STDOUT_NAME;

/// [`s2s_weights::list_tensors`] with this crate's [`Error`]: every tensor of the
/// weights file at `path`, sorted by name, with a one-line description of the file.
pub fn list_tensors(path: &Path) -> Result<(String, Vec<Listing>)> {
    Ok(s2s_weights::list_tensors(path)?)
}

/// Writes a listing as a table: name, shape, type, then the note and each consumer.
pub fn write_listing(
    path: &Path,
    summary: &str,
    listed: &[Listing],
    out: &mut dyn std::io::Write,
) -> Result {
    let shape = |s: &[usize]| match s {
        [] => "scalar".to_string(),
        _ => s
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" x "),
    };
    let width = listed
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let swidth = listed
        .iter()
        .map(|l| shape(&l.shape).len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut text = format!("{}: {summary}\n", path.display());
    text += &format!("{:width$}  {:swidth$}  dtype\n", "name", "shape");
    for l in listed {
        let mut line = format!(
            "{:width$}  {:swidth$}  {}",
            l.name,
            shape(&l.shape),
            l.dtype
        );
        if !l.note.is_empty() {
            line += &format!("  ({})", l.note);
        }
        text += line.trim_end();
        text.push('\n');
        for c in &l.consumers {
            text += &format!("{:width$}  -> {c}\n", "");
        }
    }
    out.write_all(text.as_bytes())
        .map_err(Error::io(STDOUT_NAME))
}
