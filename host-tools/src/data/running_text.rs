//! Running-text grapheme-to-phoneme: sentences of dictionary words. The source is the
//! words separated by single spaces, the target their pronunciations with
//! [`BOUNDARY`] between words: `hello world` -> `HH AH0 L OW1 | W ER1 L D`. Each
//! sentence's length in characters is drawn uniformly from the lengths asked for
//! (20 to 200 for training, up to 10,000 to test long inputs), and each split draws
//! from its own word list, so test sentences can be made of test words only.

use std::path::{Path, PathBuf};

use super::rng::SplitMix64;
use super::{check_counts, read_pairs_each, Pair, Splits};
use crate::error::{Error, Place, Result};

/// The target token between two words' pronunciations.
pub const BOUNDARY: &str = "|";

/// The sentence lengths in characters when none are given: the training lengths of
/// issue 29.
pub const LENGTHS: (usize, usize) = (20, 200);

/// Longest sentence `s2s generate running-text` makes, in characters.
pub const MAX_LENGTH: usize = 100_000;

/// Most source characters one command may ask for (the count of each split times its
/// longest sentence, summed): with targets about three times as long, about 200 MB of
/// pairs in memory.
pub const MAX_CHARS: usize = 50_000_000;

/// Consecutive words that do not fit in what is left of a sentence before it ends.
pub const MISSES: usize = 8;

/// Sentences in a row shorter than the shortest length asked for before the words are
/// found unable to make the lengths.
pub const TRIES: usize = 1000;

/// A word list: `word<TAB>pronunciation` pairs, the pronunciation's tokens separated
/// by spaces.
#[derive(Clone, Debug)]
pub struct Lexicon {
    /// The file it came from (for errors).
    pub file: String,
    /// Each word, its pronunciation and its length in characters.
    words: Vec<(String, String, usize)>,
    shortest: usize,
}

impl Lexicon {
    /// Reads a word list (`#` lines and blank lines skipped). A line that is not
    /// `word<TAB>pronunciation`, a word with white space, an empty pronunciation or one
    /// holding [`BOUNDARY`] is an error naming `file:line`; so is a list without words.
    pub fn read(path: &Path) -> Result<Lexicon> {
        let (pairs, errors) = read_pairs_each(path)?;
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        Lexicon::of(&path.display().to_string(), pairs)
    }

    /// A word list from pairs read from `file`, checked as [`Lexicon::read`] does.
    pub fn of(file: &str, pairs: Vec<Pair>) -> Result<Lexicon> {
        let mut words = Vec::with_capacity(pairs.len());
        for p in pairs {
            let bad = |m: String| Err(Error::invalid(file, Place::Line(p.line), m));
            if p.source.is_empty() || p.source.chars().any(char::is_whitespace) {
                return bad(format!("word {:?} is empty or holds white space", p.source));
            }
            let pron: Vec<&str> = p.target.split_whitespace().collect();
            if pron.is_empty() {
                return bad(format!("word {:?} has no pronunciation", p.source));
            }
            if pron.contains(&BOUNDARY) {
                return bad(format!(
                    "the pronunciation of {:?} holds {BOUNDARY:?}, the word-boundary token",
                    p.source
                ));
            }
            let chars = p.source.chars().count();
            words.push((p.source, pron.join(" "), chars));
        }
        let Some(shortest) = words.iter().map(|w| w.2).min() else {
            return Err(Error::invalid(file, Place::File, "no words"));
        };
        Ok(Lexicon {
            file: file.to_string(),
            words,
            shortest,
        })
    }

    /// `count` sentences from `seed`, each of a length drawn uniformly from `(lo, hi)`
    /// characters (inclusive; `1 <= lo <= hi <= MAX_LENGTH`, checked by
    /// [`check_lengths`]). A sentence takes random words while one fits in the length
    /// drawn and ends after [`MISSES`] words in a row do not; a sentence shorter than
    /// `lo` is drawn again, its length too. An error when the words cannot make the lengths (its
    /// shortest word is longer than `hi`, or [`TRIES`] sentences in a row fall short).
    pub fn sentences(
        &self,
        count: usize,
        seed: u64,
        (lo, hi): (usize, usize),
    ) -> Result<Vec<(String, String)>> {
        let cannot = || {
            Error::invalid(
                &self.file,
                Place::File,
                format!(
                    "its words cannot make sentences of {lo} to {hi} characters (the shortest \
                     word has {})",
                    self.shortest
                ),
            )
        };
        if self.shortest > hi {
            return Err(cannot());
        }
        let mut rng = SplitMix64::new(seed);
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let mut tries = 0;
            let pair = loop {
                let length = rng.range(lo.max(self.shortest), hi);
                let (s, t, chars) = self.sentence(&mut rng, length);
                if chars >= lo {
                    break (s, t);
                }
                tries += 1;
                if tries == TRIES {
                    return Err(cannot());
                }
            };
            out.push(pair);
        }
        Ok(out)
    }

    /// One sentence of at most `length` characters, and its length.
    fn sentence(&self, rng: &mut SplitMix64, length: usize) -> (String, String, usize) {
        let (mut source, mut target) = (String::new(), String::new());
        let (mut chars, mut misses) = (0usize, 0usize);
        while misses < MISSES {
            let (word, pron, n) = &self.words[rng.below(self.words.len())];
            let (sep, n) = (usize::from(chars > 0), *n);
            if chars + sep + n > length {
                misses += 1;
                continue;
            }
            misses = 0;
            if sep == 1 {
                source.push(' ');
                target.push(' ');
                target.push_str(BOUNDARY);
                target.push(' ');
            }
            source.push_str(word);
            target.push_str(pron);
            chars += sep + n;
        }
        (source, target, chars)
    }
}

/// `s2s generate running-text`: the sentences of each split asked for (`counts`,
/// `(name, count)`), split `i` from seed `seed + i` and from the word list `words`
/// gives it (`(name, file)`; a file read once however many splits take it). The
/// counts, lengths and total size are checked before any file is read.
pub fn splits(
    words: &[(&'static str, Option<PathBuf>)],
    lengths: (usize, usize),
    seed: u64,
    counts: &[(&'static str, usize)],
) -> Result<Splits> {
    check_counts(counts)?;
    check_lengths(lengths)?;
    check_size(counts, lengths.1)?;
    let mut read: Vec<(PathBuf, Lexicon)> = Vec::new();
    let mut splits = Vec::new();
    for (i, &(name, n)) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let file = words
            .iter()
            .find(|(k, _)| *k == name)
            .and_then(|(_, f)| f.as_ref())
            .ok_or_else(|| {
                Error::usage(format!("--{name} {n}: no word list for it (--words FILE)"))
            })?;
        let k = match read.iter().position(|(f, _)| f == file) {
            Some(k) => k,
            None => {
                read.push((file.clone(), Lexicon::read(file)?));
                read.len() - 1
            }
        };
        let seed = seed.wrapping_add(i as u64);
        splits.push((name, read[k].1.sentences(n, seed, lengths)?));
    }
    Ok(splits)
}

/// `MIN-MAX` (`--lengths 20-200`), checked by [`check_lengths`].
pub fn parse_lengths(s: &str) -> Result<(usize, usize)> {
    let bad = || Error::usage(format!("--lengths {s}: expected MIN-MAX, e.g. 20-200"));
    let (lo, hi) = s.split_once('-').ok_or_else(bad)?;
    let n = |x: &str| x.trim().parse::<usize>().map_err(|_| bad());
    let lengths = (n(lo)?, n(hi)?);
    check_lengths(lengths)?;
    Ok(lengths)
}

/// Checks sentence lengths `(lo, hi)`: `1 <= lo <= hi <= MAX_LENGTH`.
pub fn check_lengths((lo, hi): (usize, usize)) -> Result {
    if lo == 0 || lo > hi || hi > MAX_LENGTH {
        return Err(Error::usage(format!(
            "--lengths {lo}-{hi}: need 1 <= MIN <= MAX <= {MAX_LENGTH}"
        )));
    }
    Ok(())
}

/// Checks that `counts` (`(option, count)`) sentences of at most `hi` characters stay
/// within [`MAX_CHARS`].
pub fn check_size(counts: &[(&str, usize)], hi: usize) -> Result {
    let total = counts
        .iter()
        .try_fold(0usize, |a, (_, n)| a.checked_add(n.checked_mul(hi)?));
    match total {
        Some(t) if t <= MAX_CHARS => Ok(()),
        _ => {
            let given: Vec<String> = counts
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| format!("--{k} {n}"))
                .collect();
            Err(Error::usage(format!(
                "{} sentences of up to {hi} characters: more than {MAX_CHARS} characters in \
                 all",
                given.join(" ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs of these lines, the first on line `first`.
    fn pairs(lines: &[(&str, &str)], first: usize) -> Vec<Pair> {
        let pair = |(i, (s, t)): (usize, &(&str, &str))| Pair {
            line: first + i,
            source: s.to_string(),
            target: t.to_string(),
        };
        lines.iter().enumerate().map(pair).collect()
    }

    fn lexicon(lines: &[(&str, &str)]) -> Lexicon {
        Lexicon::of("words.tsv", pairs(lines, 1)).unwrap()
    }

    #[test]
    fn sentences_are_words_and_their_pronunciations_within_the_lengths() {
        let lex = lexicon(&[
            ("hello", "HH AH0 L OW1"),
            ("world", "W ER1 L D"),
            ("a", "AH0"),
            (
                "extraordinarily",
                "IH0 K S T R AO1 R D AH0 N EH2 R AH0 L IY0",
            ),
        ]);
        for (lo, hi) in [(20, 200), (1000, 2000), (1, 1), (15, 15)] {
            let pairs = lex.sentences(50, 7, (lo, hi)).unwrap();
            assert_eq!(pairs.len(), 50);
            for (s, t) in &pairs {
                assert!(
                    (lo..=hi).contains(&s.len()),
                    "{} not in {lo}..={hi}",
                    s.len()
                );
                // Word by word, the target is the pronunciations between boundaries.
                let words: Vec<&str> = s.split(' ').collect();
                let prons: Vec<&str> = t.split(" | ").collect();
                assert_eq!(words.len(), prons.len());
                for (w, p) in words.iter().zip(&prons) {
                    let (_, want, _) = lex.words.iter().find(|(x, _, _)| x == w).unwrap();
                    assert_eq!(p, want);
                }
            }
            // The same seed, the same sentences; another seed, others.
            assert_eq!(pairs, lex.sentences(50, 7, (lo, hi)).unwrap());
            if lo > 1 {
                assert_ne!(pairs, lex.sentences(50, 8, (lo, hi)).unwrap());
            }
        }
    }

    #[test]
    fn words_that_cannot_make_the_lengths_are_refused() {
        let lex = lexicon(&[("abcdef", "A B"), ("ghijkl", "C D")]);
        let e = lex.sentences(3, 1, (1, 5)).unwrap_err().to_string();
        assert!(e.contains("words.tsv") && e.contains("1 to 5"), "{e}");
        // 8 and 9 characters: no sum of 6-letter words and spaces.
        let e = lex.sentences(3, 1, (8, 9)).unwrap_err().to_string();
        assert!(e.contains("8 to 9"), "{e}");
        assert_eq!(lex.sentences(3, 1, (6, 13)).unwrap().len(), 3);
    }

    #[test]
    fn bad_word_lists_are_refused_naming_the_line() {
        let of = |lines: &[(&str, &str)]| {
            Lexicon::of("w.tsv", pairs(lines, 3))
                .unwrap_err()
                .to_string()
        };
        assert!(of(&[("ok", "O K"), ("two words", "T")]).contains("w.tsv:4"));
        assert!(of(&[("ok", " ")]).contains("w.tsv:3"));
        assert!(of(&[("ok", "O | K")]).contains("word-boundary"));
        assert!(of(&[]).contains("no words"));
    }

    #[test]
    fn lengths_and_sizes_are_checked() {
        assert!(check_lengths((20, 200)).is_ok());
        assert_eq!(parse_lengths("1000-10000").unwrap(), (1000, 10000));
        for bad in ["20", "a-b", "-5", "5-", "200-20"] {
            assert!(parse_lengths(bad).is_err(), "{bad}");
        }
        for l in [(0, 5), (6, 5), (1, MAX_LENGTH + 1)] {
            assert!(check_lengths(l).is_err(), "{l:?}");
        }
        assert!(check_size(&[("train", 20_000), ("test", 100)], 200).is_ok());
        let e = check_size(&[("train", 0), ("test", 10_000)], 10_000).unwrap_err();
        assert!(e.to_string().contains("--test 10000"), "{e}");
        assert!(check_size(&[("test", usize::MAX)], 2).is_err());
    }
}
