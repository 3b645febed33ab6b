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
    /// The token and sequence error rates in percent; `None` without any sequence (a
    /// bucket no source falls in has no rate, rather than 0 %).
    pub fn percentages(&self) -> Option<(f64, f64)> {
        (self.sequences > 0).then(|| (100.0 * self.ter(), 100.0 * self.ser()))
    }
}

/// Counts overall and per source-length bucket, with the mean attention entropy of the
/// decoder steps when the model attends.
#[derive(Clone, Debug)]
pub struct Report {
    /// All sequences.
    pub all: Counts,
    /// The buckets (inclusive source length ranges) and their counts.
    pub buckets: Vec<((usize, usize), Counts)>,
    /// Sum of attention entropies (nats) and number of steps, overall.
    pub entropy: (f64, usize),
    /// The same per bucket.
    pub bucket_entropy: Vec<(f64, usize)>,
}

impl Default for Report {
    /// The report over [`BUCKETS`].
    fn default() -> Self {
        Report::with_buckets(&BUCKETS)
    }
}

impl Report {
    /// A report over these buckets (inclusive ranges; the last may end at `usize::MAX`).
    pub fn with_buckets(buckets: &[(usize, usize)]) -> Self {
        Report {
            all: Counts::default(),
            buckets: buckets.iter().map(|&b| (b, Counts::default())).collect(),
            entropy: (0.0, 0),
            bucket_entropy: vec![(0.0, 0); buckets.len()],
        }
    }

    /// Buckets `width` lengths wide from 1 up to `max` (the last one ending there).
    pub fn width_buckets(width: usize, max: usize) -> Vec<(usize, usize)> {
        let width = width.max(1);
        (0..max.div_ceil(width))
            .map(|i| (i * width + 1, ((i + 1) * width).min(max)))
            .collect()
    }

    fn bucket(&self, src_len: usize) -> Option<usize> {
        self.buckets
            .iter()
            .position(|&((lo, hi), _)| (lo..=hi).contains(&src_len))
    }

    /// Adds a hypothesis with its reference and its source length.
    pub fn add<T: PartialEq>(&mut self, src_len: usize, hyp: &[T], reference: &[T]) {
        self.all.add(hyp, reference);
        if let Some(i) = self.bucket(src_len) {
            self.buckets[i].1.add(hyp, reference);
        }
    }

    /// Adds the attention entropies (nats) of one sequence's decoder steps.
    pub fn add_entropy(&mut self, src_len: usize, entropies: &[f32]) {
        let sum: f64 = entropies.iter().map(|&h| f64::from(h)).sum();
        self.entropy.0 += sum;
        self.entropy.1 += entropies.len();
        if let Some(i) = self.bucket(src_len) {
            self.bucket_entropy[i].0 += sum;
            self.bucket_entropy[i].1 += entropies.len();
        }
    }

    /// The name of a bucket: `5-8`, or `13+` for one without an upper end.
    pub fn bucket_name((lo, hi): (usize, usize)) -> String {
        if hi == usize::MAX {
            format!("{lo}+")
        } else if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}-{hi}")
        }
    }

    /// The report as text lines (with the mean attention entropy when there is one).
    pub fn render(&self) -> String {
        let h = self.entropy.1 > 0;
        let mut s = format!(
            "{:<10} {:>6} {:>8} {:>8}{}\n",
            "source",
            "count",
            "TER %",
            "SER %",
            if h { "   H nats" } else { "" }
        );
        // A bucket without sequences (or without decoder steps) has `-`, not 0.
        let line = |name: String, c: &Counts, e: (f64, usize)| {
            let ent = match (h, e.1) {
                (false, _) => String::new(),
                (true, 0) => format!(" {:>9}", "-"),
                (true, n) => format!(" {:>9.3}", e.0 / n as f64),
            };
            let (ter, ser) = match c.percentages() {
                Some((t, s)) => (format!("{t:.2}"), format!("{s:.2}")),
                None => ("-".into(), "-".into()),
            };
            format!("{name:<10} {:>6} {ter:>8} {ser:>8}{ent}\n", c.sequences)
        };
        s += &line("all".into(), &self.all, self.entropy);
        for ((range, c), e) in self.buckets.iter().zip(&self.bucket_entropy) {
            s += &line(Self::bucket_name(*range), c, *e);
        }
        s
    }

    /// The report as JSON: counts and rates overall and per bucket (`null` rates and
    /// entropy for a bucket without sequences).
    pub fn json(&self) -> serde_json::Value {
        let one = |c: &Counts, e: (f64, usize)| {
            serde_json::json!({
                "count": c.sequences,
                "wrong": c.wrong,
                "edits": c.edits,
                "ref_tokens": c.ref_tokens,
                "ter": c.percentages().map(|p| p.0),
                "ser": c.percentages().map(|p| p.1),
                "entropy": (e.1 > 0).then(|| e.0 / e.1 as f64),
            })
        };
        let buckets: Vec<serde_json::Value> = self
            .buckets
            .iter()
            .zip(&self.bucket_entropy)
            .map(|(((lo, hi), c), e)| {
                let mut v = one(c, *e);
                v["bucket"] = Self::bucket_name((*lo, *hi)).into();
                v["lo"] = (*lo).into();
                v["hi"] = if *hi == usize::MAX {
                    serde_json::Value::Null
                } else {
                    (*hi).into()
                };
                v
            })
            .collect();
        serde_json::json!({ "all": one(&self.all, self.entropy), "buckets": buckets })
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
        assert_eq!(r.buckets[0].1.sequences, 1);
        assert_eq!(r.buckets[1].1.edits, 1);
        assert_eq!(r.buckets[3].1.edits, 4);
        assert!(r.render().contains("13+"));
        assert!(!r.render().contains("H nats"));
        r.add_entropy(6, &[0.5, 1.5]);
        assert!(r.render().contains("H nats"));
        assert_eq!(r.json()["buckets"][1]["entropy"], 1.0);
        assert_eq!(Report::width_buckets(10, 25), [(1, 10), (11, 20), (21, 25)]);
        assert_eq!(split_tokens("HH AH0  L", " "), ["HH", "AH0", "L"]);
        assert_eq!(split_tokens("សុ", ""), ["ស", "ុ"]);
    }

    #[test]
    fn a_bucket_without_sequences_has_no_rate() {
        let mut r = Report::default();
        r.add(3, &["a"], &["b"]);
        r.add_entropy(3, &[0.5]);
        // 5-8, 9-12 and 13+ are empty: no rate and no entropy, not 0.
        let text = r.render();
        let row = |name: &str| -> Vec<String> {
            let line = text.lines().find(|l| l.starts_with(name)).unwrap();
            line.split_whitespace().map(String::from).collect()
        };
        assert_eq!(row("1-4"), ["1-4", "1", "100.00", "100.00", "0.500"]);
        assert_eq!(row("5-8"), ["5-8", "0", "-", "-", "-"]);
        let json = r.json();
        assert_eq!(json["buckets"][0]["ter"], 100.0);
        for key in ["ter", "ser", "entropy"] {
            assert!(json["buckets"][1][key].is_null(), "{key}: {json}");
        }
        assert_eq!(json["buckets"][1]["count"], 0);
    }
}
