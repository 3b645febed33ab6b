//! String pairs: reading `source<TAB>target` files, and seeded generators of synthetic
//! tasks ([`dates`], [`substitution`]) and of running text from word lists
//! ([`running_text`]) for training and experiments.

pub mod dates;
pub mod rng;
pub mod running_text;
pub mod substitution;

use std::path::Path;

use crate::error::{Error, Place, Result};
use crate::io::{write_atomic, LineReader};

/// One `source<TAB>target` row of a data file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// Its line in the file, from 1.
    pub line: usize,
    /// The source.
    pub source: String,
    /// The target (reference).
    pub target: String,
}

/// The rows of a data file, `(line number, text)`, and the errors of its other lines.
pub type Rows = (Vec<(usize, String)>, Vec<Error>);

/// The rows of a data file, as `(line number, text)`, and the errors of its lines that
/// are not text (each names `file:line`; the other lines are kept). `#` lines are
/// comments and blank lines are skipped; both count in the line numbers.
pub fn data_rows(path: &Path) -> Result<Rows> {
    rows_of(LineReader::open(Some(path))?)
}

/// [`data_rows`] of lines already opened.
pub fn rows_of(mut input: LineReader) -> Result<Rows> {
    let (mut rows, mut errors) = (Vec::new(), Vec::new());
    while let Some(line) = input.next_line()? {
        match line.text {
            Ok(t) if t.trim().is_empty() || t.starts_with('#') => {}
            Ok(t) => rows.push((line.number, t)),
            Err(e) => errors.push(e),
        }
    }
    Ok((rows, errors))
}

/// The `source<TAB>target` pairs of a data file, and the errors of its lines that are
/// not such a pair (each names `file:line`; the other lines are kept).
pub fn read_pairs_each(path: &Path) -> Result<(Vec<Pair>, Vec<Error>)> {
    pairs_of(LineReader::open(Some(path))?)
}

/// [`read_pairs_each`] of lines already opened (a file, standard input, bytes in
/// memory); errors name the reader's name.
pub fn pairs_of(input: LineReader) -> Result<(Vec<Pair>, Vec<Error>)> {
    let name = input.name().to_string();
    let (rows, mut errors) = rows_of(input)?;
    let mut pairs = Vec::new();
    for (line, row) in rows {
        match row.split_once('\t') {
            Some((s, t)) => pairs.push(Pair {
                line,
                source: s.to_string(),
                target: t.to_string(),
            }),
            None => errors.push(Error::invalid(
                &name,
                Place::Line(line),
                "expected source<TAB>reference",
            )),
        }
    }
    errors.sort_by_key(|e| match e {
        Error::Invalid {
            place: Place::Line(n),
            ..
        } => *n,
        _ => 0,
    });
    Ok((pairs, errors))
}

/// Reads `source<TAB>target` pairs (blank and `#` lines skipped); the first line that
/// is not such a pair is an error naming it.
pub fn read_pairs(path: &Path) -> Result<Vec<Pair>> {
    let (pairs, errors) = read_pairs_each(path)?;
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(pairs),
    }
}

/// Writes pairs as `source<TAB>target` lines (atomically).
pub fn write_pairs(path: &Path, pairs: &[(String, String)]) -> Result {
    let mut text = String::new();
    for (s, t) in pairs {
        text += s;
        text.push('\t');
        text += t;
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// The synthetic tasks `s2s generate` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Dates in many spellings to `YYYY-MM-DD` ([`dates`]).
    Dates,
    /// Random strings of 5 to 100 letters, each letter substituted ([`substitution`]).
    Substitution,
}

/// `count` distinct pairs of `task` from `seed`.
pub fn generate(task: Task, count: usize, seed: u64) -> Vec<(String, String)> {
    match task {
        Task::Dates => dates::generate(count, seed),
        Task::Substitution => substitution::generate(count, seed, substitution::LENGTHS),
    }
}

/// Most pairs `s2s generate` makes in one command (all files together): about 150 MB
/// of pairs in memory for the longest task, and as much written.
pub const MAX_PAIRS: usize = 1_000_000;

/// The total of `counts` (`(option, count)`), checked before anything is generated or
/// written: each count and their sum at most [`MAX_PAIRS`], and at least one pair.
pub fn check_counts(counts: &[(&str, usize)]) -> Result<usize> {
    let mut total = 0usize;
    for &(name, n) in counts {
        if n > MAX_PAIRS {
            return Err(Error::usage(format!(
                "--{name} {n}: at most {MAX_PAIRS} pairs"
            )));
        }
        total += n;
    }
    if total > MAX_PAIRS {
        let given: Vec<String> = counts.iter().map(|(k, n)| format!("--{k} {n}")).collect();
        return Err(Error::usage(format!(
            "{}: {total} pairs in all, at most {MAX_PAIRS}",
            given.join(" ")
        )));
    }
    if total == 0 {
        return Err(Error::usage(
            "--train, --valid and --test are all 0: nothing to generate",
        ));
    }
    Ok(total)
}

/// The pairs of each split, by name (`train`, `valid`, `test`), in order.
pub type Splits = Vec<(&'static str, Vec<(String, String)>)>;

/// `counts` pairs of `task` from `seed`, all distinct for dates, split in order, for
/// every `(name, count)` with a count above 0.
pub fn task_splits(task: Task, seed: u64, counts: &[(&'static str, usize)]) -> Result<Splits> {
    let total = check_counts(counts)?;
    let mut rest = generate(task, total, seed);
    if rest.len() < total {
        return Err(Error::usage(format!(
            "the task has only {} distinct pairs, {total} were asked for",
            rest.len()
        )));
    }
    let mut splits = Vec::new();
    for &(name, n) in counts.iter().filter(|(_, n)| *n > 0) {
        let tail = rest.split_off(n);
        splits.push((name, std::mem::replace(&mut rest, tail)));
    }
    Ok(splits)
}

/// `s2s generate`: writes each split's pairs, all made before, into `DIR/<name>.tsv`
/// (`source<TAB>target`) and `DIR/<name>.txt` (the sources alone, for `s2s run`,
/// `quantize --calib` and `qemu`). Returns the files written.
pub fn write_splits(splits: &Splits, dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let mut written = Vec::new();
    for (name, part) in splits {
        let tsv = dir.join(format!("{name}.tsv"));
        write_pairs(&tsv, part)?;
        let txt = dir.join(format!("{name}.txt"));
        let sources: String = part.iter().map(|(s, _)| format!("{s}\n")).collect();
        write_atomic(&txt, sources.as_bytes())?;
        written.extend([tsv, txt]);
    }
    Ok(written)
}
