//! Token and sequence error rates, overall and by source length.

/// Levenshtein distance between two token sequences.
pub fn edit_distance<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, x) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + (x != y) as usize)
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Source length buckets of the report.
pub const BUCKETS: [(usize, usize); 4] = [(1, 4), (5, 8), (9, 12), (13, usize::MAX)];

/// Error counts of a set of sequences.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Sequences.
    pub sequences: usize,
    /// Sequences not exactly equal to their reference.
    pub wrong: usize,
    /// Sum of edit distances.
    pub edits: usize,
    /// Sum of reference lengths.
    pub ref_tokens: usize,
}

impl Counts {
    /// Adds one hypothesis against its reference.
    pub fn add<T: PartialEq>(&mut self, hyp: &[T], reference: &[T]) {
        let d = edit_distance(hyp, reference);
        self.sequences += 1;
        self.wrong += (d > 0) as usize;
        self.edits += d;
        self.ref_tokens += reference.len();
    }
    /// Token error rate: edits over reference tokens.
    pub fn ter(&self) -> f64 {
        self.edits as f64 / self.ref_tokens.max(1) as f64
    }
    /// Sequence error rate: wrong sequences over all.
    pub fn ser(&self) -> f64 {
        self.wrong as f64 / self.sequences.max(1) as f64
    }
}

/// Counts overall and per source-length bucket.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// All sequences.
    pub all: Counts,
    /// One per [`BUCKETS`] entry.
    pub buckets: [Counts; 4],
}

impl Report {
    /// Adds a hypothesis with its reference and its source length.
    pub fn add<T: PartialEq>(&mut self, src_len: usize, hyp: &[T], reference: &[T]) {
        self.all.add(hyp, reference);
        if let Some(i) = BUCKETS
            .iter()
            .position(|&(lo, hi)| (lo..=hi).contains(&src_len))
        {
            self.buckets[i].add(hyp, reference);
        }
    }

    /// The report as text lines.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{:<10} {:>6} {:>8} {:>8}\n",
            "source", "count", "TER %", "SER %"
        );
        let line = |name: String, c: &Counts| {
            format!(
                "{name:<10} {:>6} {:>8.2} {:>8.2}\n",
                c.sequences,
                100.0 * c.ter(),
                100.0 * c.ser()
            )
        };
        s += &line("all".into(), &self.all);
        for ((lo, hi), c) in BUCKETS.iter().zip(&self.buckets) {
            let name = if *hi == usize::MAX {
                format!("{lo}+")
            } else {
                format!("{lo}-{hi}")
            };
            s += &line(name, c);
        }
        s
    }
}

/// Splits a reference or output into tokens: by white space when the model joins its
/// output tokens with a separator, into characters when it joins them with nothing.
pub fn split_tokens(text: &str, separator: &str) -> Vec<String> {
    if separator.is_empty() {
        text.chars().map(String::from).collect()
    } else {
        text.split(separator)
            .flat_map(|s| s.split_whitespace())
            .map(String::from)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_insertions_deletions_substitutions() {
        assert_eq!(edit_distance::<u8>(&[], &[]), 0);
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
        assert_eq!(edit_distance(b"abc", b""), 3);
        assert_eq!(edit_distance(b"", b"ab"), 2);
        assert_eq!(edit_distance(b"abc", b"abc"), 0);
    }

    #[test]
    fn rates_and_buckets() {
        let mut r = Report::default();
        r.add(3, &["a", "b"], &["a", "b"]);
        r.add(6, &["a"], &["a", "c"]);
        r.add(20, &["x", "y", "z"], &["a", "b", "c", "d"]);
        assert_eq!(r.all.sequences, 3);
        assert_eq!(r.all.wrong, 2);
        assert_eq!(r.all.edits, 5);
        assert!((r.all.ter() - 5.0 / 8.0).abs() < 1e-12);
        assert_eq!(r.buckets[0].sequences, 1);
        assert_eq!(r.buckets[1].edits, 1);
        assert_eq!(r.buckets[3].edits, 4);
        assert!(r.render().contains("13+"));
        assert_eq!(split_tokens("HH AH0  L", " "), ["HH", "AH0", "L"]);
        assert_eq!(split_tokens("សុ", ""), ["ស", "ុ"]);
    }
}
