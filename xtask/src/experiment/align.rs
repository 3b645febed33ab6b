//! The measure of experiment 3: how much of each output step's attention lies within
//! one source position of the best monotonic alignment (the non-decreasing path through
//! the map with the largest total weight). A diagonal scores near 1 everywhere; where
//! the output reorders the source (crossings), the monotonic path cannot follow and
//! the share drops in the segments it has to skip; a vertical band (several outputs on
//! one source position) is monotonic and scores high.

use serde_json::{json, Value};

use crate::error::Result;

/// The best monotonic alignment of a map (`rows` of weights over the same columns):
/// one column per row, never decreasing, with the largest sum of weights.
pub fn monotonic_path(rows: &[Vec<f64>]) -> Vec<usize> {
    let cols = rows.iter().map(Vec::len).min().unwrap_or(0);
    if rows.is_empty() || cols == 0 {
        return Vec::new();
    }
    // best[i][j]: the best sum of rows 0..=i ending at column j; from[i][j]: the column
    // of row i-1 on that path.
    let mut best = vec![vec![0.0; cols]; rows.len()];
    let mut from = vec![vec![0usize; cols]; rows.len()];
    best[0][..cols].copy_from_slice(&rows[0][..cols]);
    for i in 1..rows.len() {
        let (mut run, mut arg) = (f64::NEG_INFINITY, 0);
        for j in 0..cols {
            if best[i - 1][j] > run {
                (run, arg) = (best[i - 1][j], j);
            }
            best[i][j] = run + rows[i][j];
            from[i][j] = arg;
        }
    }
    let last = rows.len() - 1;
    let mut j = (0..cols)
        .max_by(|&a, &b| best[last][a].total_cmp(&best[last][b]))
        .unwrap_or(0);
    let mut path = vec![0; rows.len()];
    for i in (0..rows.len()).rev() {
        path[i] = j;
        j = from[i][j];
    }
    path
}

/// The share of each row's weight within one column of the path.
pub fn near_path(rows: &[Vec<f64>], path: &[usize]) -> Vec<f64> {
    rows.iter()
        .zip(path)
        .map(|(r, &j)| {
            let lo = j.saturating_sub(1);
            let hi = (j + 1).min(r.len().saturating_sub(1));
            r[lo..=hi].iter().sum::<f64>() / r.iter().sum::<f64>().max(1e-12)
        })
        .collect()
}

/// The spelling of a date source (see host-tools' `data::dates`).
pub fn spelling(source: &str) -> &'static str {
    let b = source.as_bytes();
    let digits = |idx: &[usize]| {
        idx.iter()
            .all(|&i| b.get(i).is_some_and(u8::is_ascii_digit))
    };
    if b.len() == 10 && b[4] == b'-' && digits(&[0, 1, 2, 3]) {
        "iso"
    } else if b.len() == 10 && b[2] == b'.' {
        "dotted"
    } else if b.len() == 8 && b[2] == b'/' {
        "slashes"
    } else if source.contains(',') {
        "month day, year"
    } else if source.split(' ').nth(1).is_some_and(|m| m.len() == 3) {
        "day short month year"
    } else {
        "day month year"
    }
}

/// Output rows of each segment of `YYYY-MM-DD`.
pub const SEGMENTS: [(&str, std::ops::Range<usize>); 3] =
    [("year", 0..4), ("month", 5..7), ("day", 8..10)];

/// Per spelling: sequences and the mean share near the monotonic path of each segment,
/// over the correctly shaped outputs of an `s2s run --attention` file.
pub fn segment_shares(runs: &Value) -> Result<Value> {
    let runs = runs
        .as_array()
        .ok_or("the attention file is not a JSON list")?;
    let mut acc: std::collections::BTreeMap<&str, (usize, [f64; 3])> = Default::default();
    for r in runs {
        let text = r["text"].as_str().unwrap_or("");
        let input = r["input"].as_str().unwrap_or("");
        let rows: Vec<Vec<f64>> = r["attention"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|row| {
                        row.as_array()
                            .map(|v| v.iter().filter_map(Value::as_f64).collect())
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        if text.len() != 10 || rows.len() < 10 {
            continue;
        }
        let path = monotonic_path(&rows);
        let near = near_path(&rows, &path);
        let e = acc.entry(spelling(input)).or_default();
        e.0 += 1;
        for (k, (_, range)) in SEGMENTS.iter().enumerate() {
            e.1[k] += range.clone().map(|i| near[i]).sum::<f64>() / range.len() as f64;
        }
    }
    Ok(Value::Object(
        acc.into_iter()
            .map(|(s, (n, sums))| {
                let mean = |k: usize| sums[k] / n.max(1) as f64;
                (
                    s.to_string(),
                    json!({ "n": n, "year": mean(0), "month": mean(1), "day": mean(2) }),
                )
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_path_follows_a_diagonal_and_not_a_crossing() {
        let eye: Vec<Vec<f64>> = (0..4)
            .map(|i| (0..4).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect();
        assert_eq!(monotonic_path(&eye), [0, 1, 2, 3]);
        assert!(near_path(&eye, &monotonic_path(&eye))
            .iter()
            .all(|&s| s == 1.0));
        // Reversed: the path can hold only one row on the anti-diagonal exactly.
        let anti: Vec<Vec<f64>> = (0..5)
            .map(|i| (0..5).map(|j| if i + j == 4 { 1.0 } else { 0.0 }).collect())
            .collect();
        let near = near_path(&anti, &monotonic_path(&anti));
        assert!(near.iter().sum::<f64>() < 4.0, "{near:?}");
        assert_eq!(spelling("2024-03-12"), "iso");
        assert_eq!(spelling("12.03.2024"), "dotted");
        assert_eq!(spelling("12/03/24"), "slashes");
        assert_eq!(spelling("march 12, 2024"), "month day, year");
        assert_eq!(spelling("12 mar 2024"), "day short month year");
        assert_eq!(spelling("12 march 2024"), "day month year");
    }
}
