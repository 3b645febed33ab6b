//! The length task: a random string of letters, each letter replaced by another through
//! a fixed substitution (`a` -> `q`, `b` -> `w`, ... the keyboard order). Every output
//! position depends on its own input position, so a decoder that reads the source
//! through one fixed-size vector has to hold the whole string in it.

use super::rng::SplitMix64;

/// Source letters.
pub const ALPHABET: &str = "abcdefghijklmnopqrst";
/// Their substitutes, position by position.
pub const SUBSTITUTE: &str = "qwertyuiopasdfghjklz";
/// The lengths of the experiment's strings.
pub const LENGTHS: (usize, usize) = (5, 100);

/// The substitution of one string (letters outside [`ALPHABET`] are kept).
pub fn substitute(s: &str) -> String {
    s.chars()
        .map(|c| match ALPHABET.find(c) {
            Some(i) => SUBSTITUTE.as_bytes()[i] as char,
            None => c,
        })
        .collect()
}

/// `count` pairs from `seed`, lengths uniform in `lengths` (inclusive).
pub fn generate(count: usize, seed: u64, (lo, hi): (usize, usize)) -> Vec<(String, String)> {
    let mut rng = SplitMix64::new(seed);
    let letters = ALPHABET.as_bytes();
    (0..count)
        .map(|_| {
            let n = rng.range(lo, hi);
            let s: String = (0..n)
                .map(|_| letters[rng.below(letters.len())] as char)
                .collect();
            let t = substitute(&s);
            (s, t)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_is_a_permutation() {
        let mut sub: Vec<char> = SUBSTITUTE.chars().collect();
        sub.sort_unstable();
        sub.dedup();
        assert_eq!(sub.len(), ALPHABET.len());
        assert_eq!(substitute("abc"), "qwe");
        let pairs = generate(200, 1, LENGTHS);
        assert!(pairs
            .iter()
            .all(|(s, t)| (5..=100).contains(&s.len()) && t == &substitute(s)));
        assert_eq!(pairs, generate(200, 1, LENGTHS));
    }
}
