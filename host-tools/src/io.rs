//! File helpers: atomic writes and line input.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename,
/// so a failure never leaves a half-written file behind. Errors name the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        Error::io(path)(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file path",
        ))
    })?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path)(e)
    })
}

/// Reads the lines of a file, or of standard input when `path` is `None` or `-`
/// (trailing `\r` removed).
pub fn read_lines(path: Option<&Path>) -> Result<Vec<String>> {
    let (name, lines): (PathBuf, std::io::Result<Vec<String>>) = match path {
        Some(p) if p != Path::new("-") => {
            let f = std::fs::File::open(p).map_err(Error::io(p))?;
            (
                p.to_path_buf(),
                std::io::BufReader::new(f).lines().collect(),
            )
        }
        _ => ("<stdin>".into(), std::io::stdin().lock().lines().collect()),
    };
    let lines = lines.map_err(Error::io(name))?;
    Ok(lines
        .into_iter()
        .map(|l| l.strip_suffix('\r').map(String::from).unwrap_or(l))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_leaves_nothing_on_error() {
        let dir = std::env::temp_dir().join(format!("s2s-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.bin");
        write_atomic(&p, b"hello").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        let bad = dir.join("missing-dir").join("b.bin");
        assert!(write_atomic(&bad, b"x")
            .unwrap_err()
            .to_string()
            .contains("missing-dir"));
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
