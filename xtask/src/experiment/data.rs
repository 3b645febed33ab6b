//! The data stages: CMUdict split by headword, the two generated tasks, and running
//! text of CMUdict words.

use std::fmt::Write as _;

use super::Exp;
use crate::error::{Error, Result};

/// Seed of the CMUdict split.
pub const CMUDICT_SPLIT_SEED: u64 = 15;
/// Seeds and sizes of the generated tasks: (seed, train, valid, test).
pub const LENGTH_DATA: (u64, usize, usize, usize) = (2, 8_000, 300, 1_000);
/// See [`LENGTH_DATA`].
pub const DATES_DATA: (u64, usize, usize, usize) = (3, 20_000, 1_000, 1_000);
/// See [`LENGTH_DATA`]: running text at the training lengths
/// ([`RUNNING_TEXT_LENGTHS`]).
pub const RUNNING_TEXT_DATA: (u64, usize, usize, usize) = (4, 20_000, 500, 500);
/// The training sentences' lengths in characters (issue 29: up to 200).
pub const RUNNING_TEXT_LENGTHS: (usize, usize) = (20, 200);
/// The longer test buckets: lengths in characters and sentences (fewer as they grow,
/// each bucket about 100,000 to 150,000 characters but the first).
pub const RUNNING_TEXT_BUCKETS: &[((usize, usize), usize)] = &[
    ((200, 500), 200),
    ((500, 1_000), 100),
    ((1_000, 2_000), 50),
    ((2_000, 5_000), 30),
    ((5_000, 10_000), 20),
];

/// FNV-1a of the seed's little-endian bytes and a text.
pub fn split_key(seed: u64, text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in seed.to_le_bytes().iter().chain(text.as_bytes()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Which split a headword is in: FNV-1a of the seed and the word, modulo 100: below 90
/// train, below 95 validation, else test. Stable across machines and versions, and
/// independent of the dictionary's order.
pub fn split_of(word: &str, seed: u64) -> usize {
    match split_key(seed, word) % 100 {
        0..=89 => 0,
        90..=94 => 1,
        _ => 2,
    }
}

/// `cmudict/train.tsv`, `valid.tsv`, `test.tsv`: every headword of a to z only, with its
/// first pronunciation (stress kept).
pub fn cmudict(e: &Exp) -> Result {
    let dict_path = crate::files::unpacked_dir(&e.ctx.pkgs_dir().join(crate::models::CMUDICT.0))
        .join(crate::models::CMUDICT.1);
    let out = e.path("cmudict");
    let names = ["train", "valid", "test"].map(|n| out.join(format!("{n}.tsv")));
    if crate::files::fresh(&names.each_ref().map(|p| p.as_path()), &[&dict_path]) {
        println!("{}: up to date", e.ctx.show(&out));
        return Ok(());
    }
    let dict = crate::files::read(&dict_path)?;
    let mut texts = [(); 3].map(|_| String::new());
    for (i, t) in texts.iter_mut().enumerate() {
        let _ = write!(
            t,
            "# cmudict 1.1.3 a-z headwords with their first pronunciation (stress kept), split {} of\n\
             # 90/5/5 by FNV-1a of (seed {CMUDICT_SPLIT_SEED}, headword); `cargo xtask experiment --stage cmudict-data`.\n",
            ["train", "valid", "test"][i]
        );
        *t += crate::cmudict::CMUDICT_NOTICE;
    }
    let mut counts = [0usize; 3];
    for (word, pron) in crate::cmudict::cmudict_first(&dict) {
        if word.is_empty() || !word.bytes().all(|b| b.is_ascii_lowercase()) {
            continue;
        }
        let k = split_of(word, CMUDICT_SPLIT_SEED);
        counts[k] += 1;
        let _ = writeln!(texts[k], "{word}\t{pron}");
    }
    std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
    for (p, t) in names.iter().zip(&texts) {
        crate::files::write(p, t)?;
    }
    println!(
        "wrote {}: {} train, {} valid, {} test headwords",
        e.ctx.show(&out),
        counts[0],
        counts[1],
        counts[2]
    );
    Ok(())
}

/// g2p-en decodes at most 20 steps (19 phonemes and the end token): the CMUdict
/// training and validation pairs it can be trained on, `cmudict/train-g2p-en.tsv` and
/// `valid-g2p-en.tsv` (one training and one validation word fewer).
pub fn cmudict_g2p_en(e: &Exp) -> Result {
    for split in ["train", "valid"] {
        let from = e.path(&format!("cmudict/{split}.tsv"));
        let to = e.path(&format!("cmudict/{split}-g2p-en.tsv"));
        if crate::files::fresh(&[&to], &[&from]) {
            println!("{}: up to date", e.ctx.show(&to));
            continue;
        }
        let text = crate::files::read(&from)?;
        let (mut kept, mut dropped) = (String::new(), 0usize);
        for line in text.lines() {
            let long = !line.starts_with('#')
                && line
                    .split('\t')
                    .nth(1)
                    .is_some_and(|t| t.split_whitespace().count() > 19);
            if long {
                dropped += 1;
            } else {
                kept += line;
                kept.push('\n');
            }
        }
        crate::files::write(&to, &kept)?;
        println!(
            "wrote {} ({dropped} pairs over 19 phonemes left out)",
            e.ctx.show(&to)
        );
    }
    Ok(())
}

/// Runs `s2s generate` for a task with these further options, unless its test file is
/// newer than `s2s` and `inputs`.
fn generate(
    e: &Exp,
    task: &str,
    dir: &str,
    (seed, train, valid, test): (u64, usize, usize, usize),
    options: &[&dyn AsRef<std::ffi::OsStr>],
    inputs: &[&std::path::Path],
) -> Result {
    let out = e.path(dir);
    let test_file = out.join("test.tsv");
    let mut newer_than = vec![e.s2s.as_path()];
    newer_than.extend(inputs);
    if crate::files::fresh(&[&test_file], &newer_than) {
        println!("{}: up to date", e.ctx.show(&out));
        return Ok(());
    }
    let (seed, train, valid, test) = (
        seed.to_string(),
        train.to_string(),
        valid.to_string(),
        test.to_string(),
    );
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"generate",
        &task,
        &"--seed",
        &seed,
        &"--train",
        &train,
        &"--valid",
        &valid,
        &"--test",
        &test,
        &"-o",
        &out,
    ];
    args.extend(options);
    e.run_s2s(&args)
}

/// `length/`: the substitution task.
pub fn length(e: &Exp) -> Result {
    generate(e, "substitution", "length", LENGTH_DATA, &[], &[])
}

/// `dates/`: date normalisation.
pub fn dates(e: &Exp) -> Result {
    generate(e, "dates", "dates", DATES_DATA, &[], &[])
}

/// `running-text/`: sentences of CMUdict words to their phonemes (issue 29), each split
/// from the words of its own CMUdict split, at the training lengths
/// ([`RUNNING_TEXT_DATA`]); and `running-text/test-MIN-MAX/`, test sentences of test
/// words in each longer bucket ([`RUNNING_TEXT_BUCKETS`]).
pub fn running_text(e: &Exp) -> Result {
    let words = ["train", "valid", "test"].map(|n| e.path(&format!("cmudict/{n}.tsv")));
    for f in &words {
        if !f.is_file() {
            return Err(format!(
                "{} is missing: run `cargo xtask experiment --stage cmudict-data` first",
                f.display()
            )
            .into());
        }
    }
    let inputs = words.each_ref().map(|p| p.as_path());
    let (lo, hi) = RUNNING_TEXT_LENGTHS;
    let lengths = format!("{lo}-{hi}");
    let [train, valid, test] = &words;
    generate(
        e,
        "running-text",
        "running-text",
        RUNNING_TEXT_DATA,
        &[
            &"--words",
            train,
            &"--valid-words",
            valid,
            &"--test-words",
            test,
            &"--lengths",
            &lengths,
        ],
        &inputs,
    )?;
    for (i, &((lo, hi), count)) in RUNNING_TEXT_BUCKETS.iter().enumerate() {
        let lengths = format!("{lo}-{hi}");
        // Another seed per bucket: no bucket repeats another's draws.
        let seed = RUNNING_TEXT_DATA.0 + 1 + i as u64;
        generate(
            e,
            "running-text",
            &format!("running-text/test-{lengths}"),
            (seed, 0, 0, count),
            &[&"--test-words", test, &"--lengths", &lengths],
            &inputs,
        )?;
    }
    Ok(())
}
