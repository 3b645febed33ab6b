//! Files: freshness of outputs against their inputs, reading and writing with the path in
//! the error, and where a wheel is unpacked.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Result};

/// `target/pkgs/<wheel file stem>/`.
pub(crate) fn unpacked_dir(wheel: &Path) -> PathBuf {
    wheel.with_extension("")
}

/// True when every output exists and none is older than any input.
pub(crate) fn fresh(outputs: &[&Path], inputs: &[&Path]) -> bool {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest_input = inputs
        .iter()
        .map(|p| mtime(p).unwrap_or(SystemTime::now()))
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    outputs
        .iter()
        .all(|o| mtime(o).is_some_and(|t| t >= newest_input))
}

/// The text of a file.
pub(crate) fn read(p: &Path) -> Result<String> {
    std::fs::read_to_string(p).map_err(Error::io(p))
}

/// Writes through a temporary file, so an interrupted run leaves no partial output.
pub(crate) fn write(p: &Path, text: &str) -> Result {
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, p))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::io(p)(e)
        })
}
