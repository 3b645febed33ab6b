//! File helpers: atomic writes and bounded line input.
//!
//! Input lines are read with a bound: a line longer than [`MAX_LINE_BYTES`] stops the
//! reading with an error naming `file:line`, so a file without newlines (`/dev/zero`,
//! a binary given by mistake) costs at most that much memory. A UTF-8 byte-order mark
//! at the start is dropped, a trailing `\r` is removed, and a line that is not UTF-8 is
//! an error of that line alone.
//!
//! Wherever a command reads sources, a line's source is its first tab-separated
//! column ([`source_of`]).
//!
//! Whole files that a user names (a configuration; the weights files, in
//! `s2s-weights`) are read by one bounded reader, [`s2s_weights::read_bounded`]: at most
//! a stated number of bytes ([`MAX_CONFIG_BYTES`] here), checked on a regular file's
//! size before it is opened and by a read that stops one byte past the bound, so that
//! `/dev/zero` or an endless FIFO is one error line, not all memory.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Place, Result};

/// The longest input line, in bytes (newline excluded): 64 KiB.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The largest configuration file read, in bytes: 1 MiB (those of `models/` are a few
/// KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The text of the file at `path`, at most `max` bytes of UTF-8 (a FIFO or a device
/// too, read up to the bound). Errors name the path.
pub fn read_text_bounded(path: &Path, max: u64) -> Result<String> {
    let bytes = s2s_weights::read_bounded(path, max)?;
    String::from_utf8(bytes).map_err(|e| {
        Error::io(path)(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ))
    })
}

/// The name standard input has in messages.
pub const STDIN_NAME: &str = "<stdin>";

pub use crate::error::STDOUT_NAME;

/// Writes `bytes` to `path`.
///
/// A regular file (or a path that does not exist yet) is written through a temporary
/// file in the same directory and a rename, so a failure never leaves a half-written
/// file behind. A symbolic link is followed: its final target is replaced that way and
/// the link stays a link. Anything else that exists (a FIFO, `/dev/stdout`, a terminal)
/// is opened and written through, never replaced. Errors name the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result {
    // A descriptor of this process (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`):
    // written through in order with what else goes there, never replaced by a rename
    // (which would drop what the stream got before) nor resolved to a pipe's name.
    match own_descriptor(path) {
        Some(1) => {
            let mut out = std::io::stdout().lock();
            return out
                .write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(Error::io(path));
        }
        Some(2) => {
            return std::io::stderr()
                .lock()
                .write_all(bytes)
                .map_err(Error::io(path))
        }
        Some(_) => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
                .map_err(Error::io(path))
        }
        None => {}
    }
    let target = follow_links(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => Err(Error::io(path)(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ))),
        Ok(m) if !m.is_file() => std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
            .map_err(Error::io(path)),
        _ => replace_file(&target, bytes).map_err(Error::io(path)),
    }
}

/// The descriptor of this process that `path` names, through its links:
/// `/dev/stdout` (1), `/dev/stderr` (2), `/dev/stdin` (0), `/dev/fd/N`,
/// `/proc/self/fd/N` and `/proc/<this process>/fd/N`.
pub fn own_descriptor(path: &Path) -> Option<u32> {
    let pid = std::process::id().to_string();
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let named = match p.to_str()? {
            "/dev/stdin" => Some(0),
            "/dev/stdout" => Some(1),
            "/dev/stderr" => Some(2),
            _ => None,
        };
        if named.is_some() {
            return named;
        }
        let parent = p.parent()?.to_str()?;
        let own = parent == "/dev/fd"
            || parent == "/proc/self/fd"
            || parent == format!("/proc/{pid}/fd")
            || parent == "/proc/thread-self/fd";
        if own {
            return p.file_name()?.to_str()?.parse().ok();
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p).ok()?;
                p = if link.is_relative() {
                    p.parent()?.join(link)
                } else {
                    link
                };
            }
            _ => return None,
        }
    }
    None
}

/// What a file is, to tell whether two outputs are one: its device and inode when it
/// exists, else its canonical folder and name.
#[derive(Debug, PartialEq, Eq)]
enum FileId {
    Node(u64, u64),
    Path(PathBuf),
}

/// The [`FileId`] of an output (`-` is standard output); `None` for a character device
/// (`/dev/null`, a terminal), which two outputs may share without losing anything.
fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let path = if path == Path::new("-") {
        Path::new("/dev/stdout")
    } else {
        path
    };
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_char_device() => None,
        Ok(m) => Some(FileId::Node(m.dev(), m.ino())),
        Err(_) => {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            Some(FileId::Path(dir.join(path.file_name()?)))
        }
    }
}

/// Refuses two outputs of one command that are the same file (the same device and
/// inode, or the same canonical path for files not made yet; `-` and `/dev/stdout` are
/// standard output): `outputs` are `(option, path)`, e.g. `("--attention", p)` or
/// `("the decoded lines", "-")`; the error names both. Character devices
/// (`/dev/null`, a terminal) may be shared.
pub fn distinct_outputs(outputs: &[(&str, Option<&Path>)]) -> Result {
    let ids: Vec<(&str, &Path, Option<FileId>)> = outputs
        .iter()
        .filter_map(|&(name, p)| p.map(|p| (name, p, file_id(p))))
        .collect();
    for (i, (name, path, id)) in ids.iter().enumerate() {
        let Some(id) = id else { continue };
        if let Some((first, first_path, _)) =
            ids[..i].iter().find(|(_, _, o)| o.as_ref() == Some(id))
        {
            return Err(Error::usage(format!(
                "{first} ({}) and {name} ({}) are the same file: one would overwrite the other",
                display_output(first_path),
                display_output(path)
            )));
        }
    }
    Ok(())
}

/// An output path in messages (`-` is standard output).
fn display_output(p: &Path) -> String {
    if p == Path::new("-") {
        STDOUT_NAME.into()
    } else {
        p.display().to_string()
    }
}

/// The final target of `path` when it is a symbolic link (relative links resolved
/// against the link's folder), else `path` itself.
fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    // The limit Linux puts on nested links.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p).map_err(Error::io(path))?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::io(path)(std::io::Error::other(
        "too many levels of symbolic links",
    )))
}

/// Temporary and rename: `path` is a regular file or does not exist.
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// One line of input: its number (from 1, counting every line) and its text, or why it
/// is not text (an error of that line alone).
#[derive(Debug)]
pub struct InputLine {
    /// The line number, from 1.
    pub number: usize,
    /// The text without the newline, `\r` and byte-order mark; or the line's error.
    pub text: Result<String>,
}

/// Lines of a file or of standard input, read with the bounds of the module docs.
pub struct LineReader {
    name: String,
    reader: BufReader<Box<dyn Read>>,
    number: usize,
    ended: bool,
    /// A reading error met while filling a batch, returned by the next call.
    pending: Option<Error>,
}

impl LineReader {
    /// Opens `path`, or standard input for `None` or `-`.
    pub fn open(path: Option<&Path>) -> Result<LineReader> {
        let (name, reader): (String, Box<dyn Read>) = match path {
            Some(p) if p != Path::new("-") => (
                p.display().to_string(),
                Box::new(std::fs::File::open(p).map_err(Error::io(p))?),
            ),
            _ => (STDIN_NAME.into(), Box::new(std::io::stdin())),
        };
        Ok(Self::new(name, reader))
    }

    /// Lines of `reader`, named `name` in errors.
    pub fn new(name: String, reader: Box<dyn Read>) -> LineReader {
        LineReader {
            name,
            reader: BufReader::with_capacity(64 * 1024, reader),
            number: 0,
            ended: false,
            pending: None,
        }
    }

    /// The input's name in messages (the path as given, or [`STDIN_NAME`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next line, `None` at the end. A reading failure or a line longer than
    /// [`MAX_LINE_BYTES`] is an error that ends the input.
    pub fn next_line(&mut self) -> Result<Option<InputLine>> {
        if let Some(e) = self.pending.take() {
            self.ended = true;
            return Err(e);
        }
        if self.ended {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        let mut newline = false;
        loop {
            let buf = self
                .reader
                .fill_buf()
                .map_err(Error::io(Path::new(&self.name)))?;
            if buf.is_empty() {
                break;
            }
            let (take, found) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if bytes.len() + take > MAX_LINE_BYTES {
                self.ended = true;
                return Err(Error::invalid(
                    &self.name,
                    Place::Line(self.number + 1),
                    format!(
                        "line longer than {MAX_LINE_BYTES} bytes (the input is not read further)"
                    ),
                ));
            }
            bytes.extend_from_slice(&buf[..take]);
            self.reader.consume(take + found as usize);
            if found {
                newline = true;
                break;
            }
        }
        if !newline {
            self.ended = true;
            if bytes.is_empty() {
                return Ok(None);
            }
        }
        self.number += 1;
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        if self.number == 1 && bytes.starts_with("\u{feff}".as_bytes()) {
            bytes.drain(..3);
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            Error::invalid(
                &self.name,
                Place::Line(self.number),
                format!(
                    "not UTF-8 (byte {} of the line is 0x{:02x})",
                    at + 1,
                    e.as_bytes()[at]
                ),
            )
        });
        Ok(Some(InputLine {
            number: self.number,
            text,
        }))
    }

    /// Whether a whole line (or the end of the input) can be read without waiting:
    /// it is in the buffer already. False for an interactive input the user has not
    /// typed further yet, and for a file whose buffer needs refilling.
    pub fn has_line_at_hand(&self) -> bool {
        self.ended || self.pending.is_some() || self.reader.buffer().contains(&b'\n')
    }

    /// Up to `max` lines: the next one (waiting for it), then those already in the
    /// buffer, so that an interactive input is answered line by line and a file is
    /// read in batches. Empty at the end of the input.
    pub fn next_batch(&mut self, max: usize) -> Result<Vec<InputLine>> {
        let mut lines = Vec::new();
        while lines.len() < max.max(1) {
            if !lines.is_empty() && !self.reader.buffer().contains(&b'\n') {
                break;
            }
            match self.next_line() {
                Ok(Some(l)) => lines.push(l),
                Ok(None) => break,
                Err(e) if lines.is_empty() => return Err(e),
                Err(e) => {
                    self.pending = Some(e);
                    self.ended = false;
                    break;
                }
            }
        }
        Ok(lines)
    }
}

/// Reads the lines of a file, or of standard input when `path` is `None` or `-`, with
/// the bounds of the module docs; the first line that is not UTF-8 is an error naming
/// it.
pub fn read_lines(path: Option<&Path>) -> Result<Vec<String>> {
    let mut input = LineReader::open(path)?;
    let mut lines = Vec::new();
    while let Some(line) = input.next_line()? {
        lines.push(line.text?);
    }
    Ok(lines)
}

/// The source of an input line: its first tab-separated column, the whole line when it
/// has no tab. The one rule of every command that reads sources (`run`, `quantize
/// --calib` and `--row-curve`, `qemu` and `serial --input`, `check --input`, and the
/// pairs of `eval` and `train`): the other columns (a target, a reference) are ignored.
pub fn source_of(line: &str) -> &str {
    line.split_once('\t').map_or(line, |(source, _)| source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_the_first_column() {
        assert_eq!(source_of("12 march 2024\t2024-03-12"), "12 march 2024");
        assert_eq!(source_of("a\tb\tc"), "a");
        assert_eq!(source_of("no tab"), "no tab");
        assert_eq!(source_of("\tb"), "");
        assert_eq!(source_of(""), "");
    }

    fn lines_of(bytes: &[u8]) -> Vec<std::result::Result<String, String>> {
        let mut r = LineReader::new(
            "t.txt".into(),
            Box::new(std::io::Cursor::new(bytes.to_vec())),
        );
        let mut out = Vec::new();
        loop {
            match r.next_line() {
                Ok(Some(l)) => out.push(l.text.map_err(|e| e.to_string())),
                Ok(None) => break,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn every_line_counts_and_bad_bytes_stay_on_their_line() {
        let got = lines_of(b"\xef\xbb\xbfab\r\n\n# c\n\xffx\nlast");
        assert_eq!(got[0], Ok("ab".into()));
        assert_eq!(got[1], Ok(String::new()));
        assert_eq!(got[2], Ok("# c".into()));
        assert_eq!(
            got[3],
            Err("t.txt:4: not UTF-8 (byte 1 of the line is 0xff)".into())
        );
        assert_eq!(got[4], Ok("last".into()));
        assert_eq!(got.len(), 5);
        // A BOM later than the first line is text.
        assert_eq!(lines_of(b"a\n\xef\xbb\xbfb\n")[1], Ok("\u{feff}b".into()));
    }

    #[test]
    fn a_line_beyond_the_bound_ends_the_input() {
        let mut bytes = b"ok\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'a', MAX_LINE_BYTES + 1));
        bytes.extend_from_slice(b"\nnever\n");
        let got = lines_of(&bytes);
        assert_eq!(got.len(), 2);
        assert!(got[1]
            .as_ref()
            .unwrap_err()
            .starts_with("t.txt:2: line longer than 65536 bytes"));
        // Exactly the bound is a line.
        let mut bytes = vec![b'b'; MAX_LINE_BYTES];
        bytes.push(b'\n');
        assert_eq!(lines_of(&bytes).len(), 1);
        assert!(lines_of(&bytes)[0].is_ok());
    }

    #[test]
    fn batches_keep_the_order_and_hand_over_a_late_error() {
        let mut bytes = b"a\nb\nc\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'z', MAX_LINE_BYTES + 1));
        let mut r = LineReader::new("t".into(), Box::new(std::io::Cursor::new(bytes)));
        let b = r.next_batch(2).unwrap();
        assert_eq!(b.iter().map(|l| l.number).collect::<Vec<_>>(), [1, 2]);
        let b = r.next_batch(10).unwrap();
        assert_eq!(b.len(), 1);
        assert!(r.next_batch(10).is_err());
        assert!(r.next_batch(10).unwrap().is_empty());
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("s2s-io-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn atomic_write_leaves_nothing_on_error() {
        let dir = scratch("atomic");
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

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let dir = scratch("link");
        let target = dir.join("target.bin");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.join("link.bin");
        std::os::unix::fs::symlink("target.bin", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
