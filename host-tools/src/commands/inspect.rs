//! `s2s inspect`: what a model file holds and what it costs to run (the report is
//! `s2s_inspect`'s, which the explorer's page shows too).

use crate::error::{Error, Result};
use crate::model::LoadedModel;

pub use s2s_inspect::DEFAULT_POSITIONS;

/// `s2s inspect`: the report on the model file at `path`, written to `out`.
pub fn inspect_file(
    path: &std::path::Path,
    positions: Option<usize>,
    tensors: bool,
    out: &mut dyn std::io::Write,
) -> Result {
    let text = render(&LoadedModel::load(path)?, positions, tensors)?;
    out.write_all(text.as_bytes())
        .map_err(crate::error::Error::io(crate::io::STDOUT_NAME))
}

/// The report of `s2s inspect` on a loaded model.
pub fn render(m: &LoadedModel, positions: Option<usize>, tensors: bool) -> Result<String> {
    let name = m.path.display().to_string();
    s2s_inspect::render(&name, &m.file(), positions, tensors).map_err(Error::model(&m.path))
}
