//! Issue 31, item 3, through `s2s import` and `s2s run`: a prefix slot of the
//! configuration (`source.prefix_slots`) whose token `--prefix` or `--prefix-column`
//! chooses decodes as the same token fixed in the model (`source.prefix`), the choices
//! the model refuses are one error line each, and `target.min_steps` keeps the end
//! token away from the first steps.
//!
//! The model is the PyTorch tutorial's of `tests/tests/pytorch.rs` (seeded weights), its
//! source tokens `g` and `h` spelled `<G>` and `<H>` (the ids, and so the weights, are
//! the same).

use std::path::{Path, PathBuf};

use s2s_tests::pytorch::{self, SCALE, SEED};
use s2s_tests::{assert_one_error, s2s, s2s_ok, scratch_dir};

/// Sources of the letters the tags leave (`a` to `f`).
const SOURCES: [&str; 6] = ["a", "abc", "fed", "badcafe", "cab", "deadbeef"];

/// [`pytorch::import_tagged`].
fn import(dir: &Path, name: &str, weights: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    pytorch::import_tagged(dir, name, weights, edit)
}

/// `[source]` with `key = value` added.
fn source_key(key: &str, value: &str) -> impl Fn(String) -> String {
    let line = format!("[source]\n{key} = {value}\n");
    move |t: String| t.replacen("[source]\n", &line, 1)
}

fn lines(sources: &[&str]) -> String {
    sources.iter().map(|s| format!("{s}\n")).collect()
}

#[test]
fn a_slot_chosen_per_call_decodes_as_the_same_token_fixed_in_the_model() {
    let dir = scratch_dir("prefix-slots");
    let weights = dir.join("weights.safetensors");
    pytorch::write_safetensors(&weights, &pytorch::state_dict(SEED, SCALE));
    let slotted = import(
        &dir,
        "slotted",
        &weights,
        source_key(
            "prefix_slots",
            r#"[{ name = "tag", tokens = ["<G>", "<H>"] }]"#,
        ),
    );
    let fixed_g = import(
        &dir,
        "fixed-g",
        &weights,
        source_key("prefix", r#"["<G>"]"#),
    );
    let fixed_h = import(
        &dir,
        "fixed-h",
        &weights,
        source_key("prefix", r#"["<H>"]"#),
    );
    let input = lines(&SOURCES);
    let run = |model: &Path, args: &[&str]| {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", &model, &"--ids"];
        all.extend(args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        s2s_ok(&all, &input)
    };
    let (g, h) = (run(&fixed_g, &[]), run(&fixed_h, &[]));
    assert_ne!(g, h, "the tag changes some output");
    assert_eq!(run(&slotted, &["--prefix", "tag=<G>"]), g);
    assert_eq!(run(&slotted, &["--prefix", "tag=<H>"]), h);
    // A beam search too.
    let beam = |model: &Path, args: &[&str]| {
        let mut a = vec!["--beam", "3"];
        a.extend_from_slice(args);
        run(model, &a)
    };
    assert_eq!(
        beam(&slotted, &["--prefix", "tag=<H>"]),
        beam(&fixed_h, &[])
    );

    // Line by line: column 2 holds the line's fields, a line without it keeps
    // --prefix's choice.
    let (g_lines, h_lines): (Vec<&str>, Vec<&str>) = (g.lines().collect(), h.lines().collect());
    let mixed: String = SOURCES
        .iter()
        .enumerate()
        .map(|(i, s)| match i % 3 {
            0 => format!("{s}\ttag=<H>\n"),
            1 => format!("{s}\ttag=<G>\n"),
            _ => format!("{s}\n"),
        })
        .collect();
    let want: String = (0..SOURCES.len())
        .map(|i| match i % 3 {
            0 => format!("{}\n", h_lines[i]),
            _ => format!("{}\n", g_lines[i]),
        })
        .collect();
    let got = s2s_ok(
        &[
            &"run",
            &slotted,
            &"--ids",
            &"--prefix",
            &"tag=<G>",
            &"--prefix-column",
            &"2",
        ],
        &mixed,
    );
    assert_eq!(got, want);

    // The slot has no default: a line without a choice is an error of that line.
    let out = s2s(&[&"run", &slotted], "abc\n");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("<stdin>:1") && err.contains("prefix slot 1 has no default"),
        "{err}"
    );
    // A choice the model refuses: one line naming it and what the model offers.
    assert_one_error(
        &s2s(&[&"run", &slotted, &"--prefix", &"tag=<X>"], "abc\n"),
        &[
            "--prefix tag=<X>",
            "not one of the slot's tokens",
            "<G>, <H>",
        ],
    );
    assert_one_error(
        &s2s(&[&"run", &slotted, &"--prefix", &"country=<G>"], "abc\n"),
        &[
            "--prefix country=<G>",
            "no prefix slot \"country\"",
            "its slots: tag",
        ],
    );
    assert_one_error(
        &s2s(&[&"run", &fixed_g, &"--prefix", &"tag=<G>"], "abc\n"),
        &["fixed-g.s2s", "no prefix slot"],
    );
    // The tag typed in the source (before: the characters <, G, > silently).
    let out = s2s(&[&"run", &slotted, &"--prefix", &"tag=<G>"], "ab<H>c\n");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("<stdin>:1")
            && err.contains("a prefix slot's token is typed in the source at position 3"),
        "{err}"
    );
}

#[test]
fn a_slot_with_a_default_and_misused_keys() {
    let dir = scratch_dir("prefix-default");
    let weights = dir.join("weights.safetensors");
    pytorch::write_safetensors(&weights, &pytorch::state_dict(SEED, SCALE));
    let defaulted = import(
        &dir,
        "defaulted",
        &weights,
        source_key(
            "prefix_slots",
            r#"[{ name = "tag", tokens = ["<G>", "<H>"], default = "<H>" }]"#,
        ),
    );
    let fixed_h = import(
        &dir,
        "fixed-h",
        &weights,
        source_key("prefix", r#"["<H>"]"#),
    );
    let input = lines(&SOURCES);
    assert_eq!(
        s2s_ok(&[&"run", &defaulted], &input),
        s2s_ok(&[&"run", &fixed_h], &input)
    );
    // `s2s inspect` shows the slot, its tokens and its default.
    let shown = s2s_ok(&[&"inspect", &defaulted], "");
    assert!(
        shown.contains(r#"prefix slot tag {"<G>", "<H>"; default "<H>"}"#),
        "{shown}"
    );
    // Configurations the importer refuses, each in one line naming the key.
    let config = dir.join("bad.toml");
    let text = std::fs::read_to_string(pytorch::config())
        .unwrap()
        .replace(r#""g", "h"]"#, r#""<G>", "<H>"]"#);
    for (edit, needle) in [
        (
            r#"[{ name = "tag", tokens = ["<G>", "<X>"] }]"#,
            r#"token "<X>" is not in the vocabulary"#,
        ),
        (
            r#"[{ name = "tag", tokens = ["<G>"], default = "<H>" }]"#,
            r#"default "<H>" is not one of its tokens"#,
        ),
        (
            r#"[{ name = "a tag", tokens = ["<G>"] }]"#,
            "has a space, `=` or control character",
        ),
        (
            r#"[{ name = "t", tokens = ["<G>"] }, { name = "t", tokens = ["<H>"] }]"#,
            r#"two slots are called "t""#,
        ),
        (r#"[{ name = "t", tokens = [] }]"#, "no tokens"),
    ] {
        std::fs::write(&config, source_key("prefix_slots", edit)(text.clone())).unwrap();
        let out = s2s(
            &[
                &"import",
                &"--config",
                &config,
                &"--weights",
                &weights,
                &"-o",
                &dir.join("bad.s2s"),
            ],
            "",
        );
        assert_one_error(&out, &["bad.toml", "source.prefix_slots", needle]);
    }
    let over = text.replace("max_steps = 10", "max_steps = 10\nmin_steps = 11");
    std::fs::write(&config, over).unwrap();
    let out = s2s(
        &[
            &"import",
            &"--config",
            &config,
            &"--weights",
            &weights,
            &"-o",
            &dir.join("bad.s2s"),
        ],
        "",
    );
    assert_one_error(
        &out,
        &["bad.toml", "target.min_steps = 11 is above max_steps = 10"],
    );
}

#[test]
fn min_steps_keeps_the_end_token_away_from_the_first_steps() {
    let dir = scratch_dir("min-steps");
    let weights = dir.join("weights.safetensors");
    pytorch::write_safetensors(&weights, &pytorch::state_dict(SEED, SCALE));
    let input = lines(&SOURCES);
    let plain = import(&dir, "plain", &weights, |t| t);
    let counts = |model: &Path, args: &[&str]| -> Vec<usize> {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", &model, &"--ids"];
        all.extend(args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        s2s_ok(&all, &input)
            .lines()
            .map(|l| l.split_whitespace().count())
            .collect()
    };
    let before = counts(&plain, &[]);
    let min = 4;
    assert!(
        before.iter().any(|&n| n < min),
        "some output is shorter than {min}: {before:?}"
    );
    let long = import(&dir, "long", &weights, |t| {
        t.replace(
            "max_steps = 10",
            &format!("max_steps = 10\nmin_steps = {min}"),
        )
    });
    let shown = s2s_ok(&[&"inspect", &long], "");
    assert!(
        shown.contains("at least 4 tokens, at most 10 steps"),
        "{shown}"
    );
    for args in [&[][..], &["--beam", "1"], &["--beam", "3"]] {
        let after = counts(&long, args);
        assert!(after.iter().all(|&n| n >= min), "{args:?}: {after:?}");
    }
    // An output that was long enough is unchanged (greedy: the end token was not
    // chosen in the first steps anyway).
    let after = counts(&long, &[]);
    for (b, a) in before.iter().zip(&after) {
        if *b >= min {
            assert_eq!(a, b);
        }
    }
}
