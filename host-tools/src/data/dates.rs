//! Date normalisation: a date spelled one of several ways, to `YYYY-MM-DD`.
//!
//! | spelling | example | what attention has to do |
//! |---|---|---|
//! | ISO | `2024-03-12` | copy: a diagonal |
//! | dotted | `12.03.2024` | reorder day and year: crossings |
//! | day month year | `12 march 2024` | reorder, month name to digits: crossings and a band |
//! | day short month year | `12 mar 2024` | the same with three letters |
//! | month day, year | `march 12, 2024` | month first, then day, year: crossings, bands |
//! | slashes, two-digit year | `12/03/24` | reorder, and two year digits from nothing: vertical bands |
//!
//! Years run from 1950 to 2049; a two-digit year `yy` is 19yy from 50 up and 20yy
//! below. Days have no leading zero in spelled-out forms. Everything is lower case.

use super::rng::SplitMix64;

/// Month names.
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The spellings, in the order of the table above.
pub const SPELLINGS: [&str; 6] = [
    "iso",
    "dotted",
    "day month year",
    "day short month year",
    "month day, year",
    "slashes",
];

/// Days of `month` (1-based) in `year`.
pub fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The date `(year, month, day)` spelled the way `spelling` (an index of [`SPELLINGS`])
/// says.
pub fn spell(spelling: usize, (y, m, d): (u32, u32, u32)) -> String {
    let name = MONTHS[(m - 1) as usize];
    match spelling {
        0 => format!("{y:04}-{m:02}-{d:02}"),
        1 => format!("{d:02}.{m:02}.{y:04}"),
        2 => format!("{d} {name} {y}"),
        3 => format!("{d} {} {y}", &name[..3]),
        4 => format!("{name} {d}, {y}"),
        _ => format!("{d:02}/{m:02}/{:02}", y % 100),
    }
}

/// A random date from 1950-01-01 to 2049-12-31.
pub fn random_date(rng: &mut SplitMix64) -> (u32, u32, u32) {
    let y = 1950 + rng.below(100) as u32;
    let m = 1 + rng.below(12) as u32;
    let d = 1 + rng.below(days_in_month(y, m) as usize) as u32;
    (y, m, d)
}

/// `count` distinct `(source, YYYY-MM-DD)` pairs from `seed`, spellings chosen evenly
/// at random (fewer when the space runs out: 36,524 dates in 6 spellings).
pub fn generate(count: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = SplitMix64::new(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(count);
    let mut tries = 0usize;
    while out.len() < count && tries < count.saturating_mul(20) + 1000 {
        tries += 1;
        let date = random_date(&mut rng);
        let s = spell(rng.below(SPELLINGS.len()), date);
        if seen.insert(s.clone()) {
            out.push((s, spell(0, date)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_and_two_digit_years() {
        let date = (2024, 3, 12);
        let all: Vec<String> = (0..SPELLINGS.len()).map(|s| spell(s, date)).collect();
        assert_eq!(
            all,
            [
                "2024-03-12",
                "12.03.2024",
                "12 march 2024",
                "12 mar 2024",
                "march 12, 2024",
                "12/03/24"
            ]
        );
        assert_eq!(spell(5, (1950, 1, 1)), "01/01/50");
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(1900, 2), 28);
    }

    #[test]
    fn generation_is_seeded_distinct_and_valid() {
        let a = generate(500, 3);
        assert_eq!(a, generate(500, 3));
        assert_ne!(a, generate(500, 4));
        let distinct: std::collections::HashSet<_> = a.iter().map(|p| &p.0).collect();
        assert_eq!(distinct.len(), 500);
        for (_, t) in &a {
            let y: u32 = t[..4].parse().unwrap();
            let m: u32 = t[5..7].parse().unwrap();
            let d: u32 = t[8..].parse().unwrap();
            assert!((1950..2050).contains(&y) && d >= 1 && d <= days_in_month(y, m));
        }
    }
}
