//! `s2s generate`'s options from untrusted bytes: the task, the seed and the three
//! counts (any `usize`). The counts are checked before anything is generated; what
//! passes (kept small here) gives exactly the pairs asked for, distinct dates, every
//! substitution target its source substituted. Anything may be refused; nothing may
//! panic or allocate what the counts say before they are checked.

#![no_main]

use host_tools::data::{self, substitution, Task};
use libfuzzer_sys::fuzz_target;

/// Pairs generated per run at most (the check allows far more; the fuzzer's time is
/// better spent on more options).
const FUZZ_PAIRS: usize = 2_000;

fuzz_target!(|data: &[u8]| {
    let mut bytes = [0u8; 33];
    let n = data.len().min(bytes.len());
    bytes[..n].copy_from_slice(&data[..n]);
    let word = |i: usize| u64::from_le_bytes(bytes[1 + 8 * i..9 + 8 * i].try_into().unwrap());
    let task = if bytes[0] & 1 == 0 {
        Task::Dates
    } else {
        Task::Substitution
    };
    let seed = word(0);
    // Small counts most of the time, any usize sometimes.
    let count = |w: u64| {
        if bytes[0] & 2 == 0 {
            (w % 1_000) as usize
        } else {
            w as usize
        }
    };
    let counts = [
        ("train", count(word(1))),
        ("valid", count(word(2))),
        ("test", count(word(3))),
    ];
    let Ok(total) = data::check_counts(&counts) else {
        return;
    };
    assert!((1..=data::MAX_PAIRS).contains(&total));
    if total > FUZZ_PAIRS {
        return;
    }
    let pairs = data::generate(task, total, seed);
    match task {
        Task::Dates => {
            assert!(pairs.len() <= total);
            let mut sources: Vec<&str> = pairs.iter().map(|(s, _)| s.as_str()).collect();
            sources.sort_unstable();
            sources.dedup();
            assert_eq!(sources.len(), pairs.len(), "dates are distinct");
        }
        Task::Substitution => {
            assert_eq!(pairs.len(), total);
            for (s, t) in &pairs {
                assert_eq!(t, &substitution::substitute(s));
            }
        }
    }
});
