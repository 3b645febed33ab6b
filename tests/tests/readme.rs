//! The README's command outputs are the commands' real outputs (issue 35, item 6).
//!
//! Every command of the README's `console` blocks is either run here and its output
//! compared with the block, line by line, or listed in [`NOT_RUN`] with the reason (and
//! that list must match the README: a new command is not skipped silently). A `...`
//! line of the README stands for any lines (a command whose output is not shown is
//! followed by one); a time (`6.0 s`) for any time; a firmware's runtime flash
//! (`runtime 98,368 bytes`) for any within [`FLASH_SLACK`] bytes of it; trailing blanks
//! do not count. The
//! Train section trains its model here (with 2 threads, as the README shows). The commands
//! run in a scratch directory holding copies of `target/models` (their outputs may be
//! written there), the demo's word lists (`tests/fixtures/demo/`) and links to
//! `models/` and `tests/`, so the paths are the README's.

use std::path::Path;
use std::process::Command;

use s2s_tests::{model_file, repo_root, s2s_bin, scratch_dir};

/// The README's commands not run here, by their first words, and why.
const NOT_RUN: [(&str, &str); 5] = [
    (
        "s2s import --config models/",
        "`cargo xtask models` runs these very imports (and tests/tests/import.rs checks them)",
    ),
    (
        "s2s serial ",
        "needs a board on a serial port (tests/tests/serial.rs runs it against QEMU on a pty)",
    ),
    (
        "cd firmware && ",
        "a cargo build (`s2s qemu --minimal` right after it builds and checks the same)",
    ),
    ("cargo xtask flash", "needs a board and its probe"),
    (
        "cd examples/",
        "the embedding examples: tests/tests/embed.rs builds and runs them",
    ),
];

/// The one command of the C example not covered by the prefixes above.
const NOT_RUN_MAKE: &str = "make BOARD=";

/// One command of a console block and the output the README shows.
struct Shown {
    /// The README line of the command.
    line: usize,
    command: String,
    output: Vec<String>,
}

/// The commands of `text`'s console blocks: continuation lines (` \`) joined.
fn console_commands(text: &str) -> Vec<Shown> {
    let mut shown: Vec<Shown> = Vec::new();
    let (mut inside, mut continued) = (false, false);
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            inside = line == "```console";
            continued = false;
            continue;
        }
        if !inside {
            continue;
        }
        if continued {
            let last = shown.last_mut().expect("a continued command");
            let part = line.trim_start();
            continued = part.ends_with(" \\");
            last.command.push(' ');
            last.command += part.trim_end_matches(" \\");
        } else if let Some(command) = line.strip_prefix("$ ") {
            continued = command.ends_with(" \\");
            shown.push(Shown {
                line: i + 1,
                command: command.trim_end_matches(" \\").to_string(),
                output: Vec::new(),
            });
        } else if let Some(last) = shown.last_mut() {
            last.output.push(line.to_string());
        }
    }
    shown
}

/// How far a firmware's runtime flash may be from the README's figure. The same source
/// links a few bytes apart from another checkout: cargo hashes the path of a dependency
/// outside the firmware's workspace (`../seq2seq`) into its symbols, and a fat-LTO build
/// lays functions and constants out in an order that follows those hashes, so the
/// alignment padding between them moves (every symbol keeps its size; a clone in another
/// directory linked the LM3S6965 runtime in 98,372 bytes, this one in 98,368).
const FLASH_SLACK: u64 = 64;

/// `line` with its runtime flash figure (`runtime 98,368 bytes`) as `runtime N bytes`,
/// and that figure.
fn without_flash(line: &str) -> (String, Option<u64>) {
    let Some(at) = line.find("runtime ") else {
        return (line.to_string(), None);
    };
    let (head, tail) = line.split_at(at + "runtime ".len());
    let digits = tail
        .find(|c: char| !(c.is_ascii_digit() || c == ','))
        .unwrap_or(tail.len());
    if !tail[digits..].starts_with(" bytes") {
        return (line.to_string(), None);
    }
    let bytes = tail[..digits].replace(',', "").parse().ok();
    (format!("{head}N{}", &tail[digits..]), bytes)
}

/// Whether the README's line `want` shows the printed line `got`: the same text with any
/// times, and a runtime flash figure within [`FLASH_SLACK`].
fn shows(want: &str, got: &str) -> bool {
    let (want, got) = (
        without_times(want.trim_end()),
        without_times(got.trim_end()),
    );
    let ((w, wb), (g, gb)) = (without_flash(&want), without_flash(&got));
    w == g
        && match (wb, gb) {
            (Some(a), Some(b)) => a.abs_diff(b) <= FLASH_SLACK,
            (a, b) => a == b,
        }
}

/// `line` with every time (`12.3 s`) as `T s`.
fn without_times(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(" s") {
        let (head, tail) = rest.split_at(at);
        let number = head
            .rsplit(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()
            .unwrap_or("");
        if number.contains('.') && number.starts_with(|c: char| c.is_ascii_digit()) {
            out += &head[..head.len() - number.len()];
            out += "T";
        } else {
            out += head;
        }
        out += " s";
        rest = &tail[2..];
    }
    out + rest
}

/// Whether `got` is `want` with each `...` line of `want` standing for any lines.
fn matches(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w.trim() == "..." => (0..=got.len()).any(|k| matches(rest, &got[k..])),
        Some((w, rest)) => got
            .split_first()
            .is_some_and(|(g, more)| shows(w, g) && matches(rest, more)),
    }
}

/// A scratch directory laid out like the repository for the README's paths.
fn workspace() -> std::path::PathBuf {
    let dir = scratch_dir("readme");
    let root = repo_root();
    let models = dir.join("target/models");
    std::fs::create_dir_all(&models).unwrap();
    let real = model_file("netra.s2s");
    for entry in std::fs::read_dir(real.parent().unwrap()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), models.join(entry.file_name())).unwrap();
        }
    }
    let demo = dir.join("target/demo");
    std::fs::create_dir_all(&demo).unwrap();
    for words in ["netra-words.txt", "g2p-en-words.txt"] {
        std::fs::copy(
            root.join("tests/fixtures/demo").join(words),
            demo.join(words),
        )
        .unwrap();
    }
    for link in ["models", "tests"] {
        std::os::unix::fs::symlink(root.join(link), dir.join(link)).unwrap();
    }
    dir
}

/// Runs `command` with `s2s` on the path, in `dir`; standard output and error together,
/// as a terminal shows them.
fn run(command: &str, dir: &Path) -> Vec<String> {
    let bin = s2s_bin().parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{command} 2>&1"))
        .current_dir(dir)
        .env("PATH", path)
        // The Train section's run: its losses are those of 2 threads.
        .env("RAYON_NUM_THREADS", "2")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_shows_what_its_commands_print() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let shown = console_commands(&readme);
    let skipped =
        |c: &str| NOT_RUN.iter().any(|(p, _)| c.starts_with(p)) || c.starts_with(NOT_RUN_MAKE);
    // Every entry of NOT_RUN still names a command of the README.
    for (prefix, why) in NOT_RUN {
        assert!(
            shown.iter().any(|s| s.command.starts_with(prefix)),
            "NOT_RUN lists {prefix:?} ({why}), which no README command starts with"
        );
    }
    let dir = workspace();
    let mut stale = Vec::new();
    let mut ran = 0;
    for s in shown.iter().filter(|s| !skipped(&s.command)) {
        let got = run(&s.command, &dir);
        ran += 1;
        if !matches(&s.output, &got) {
            stale.push(format!(
                "README.md:{}: $ {}\n--- the README shows:\n{}\n--- it prints:\n{}",
                s.line,
                s.command,
                s.output.join("\n"),
                got.join("\n")
            ));
        }
    }
    assert!(ran >= 15, "only {ran} README commands ran");
    assert!(stale.is_empty(), "{}", stale.join("\n\n"));
}

#[test]
fn dots_stand_for_any_lines_and_times_for_any_time() {
    let v = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "b", "c", "d"])));
    assert!(matches(&v(&["a", "...", "d"]), &v(&["a", "d"])));
    assert!(matches(&v(&["a", "  ...", "d "]), &v(&["a", "x", "d"])));
    assert!(!matches(&v(&["a"]), &v(&["a", "b"])));
    assert!(!matches(&v(&["a", "...", "d"]), &v(&["a", "b"])));
    assert!(matches(&v(&["QEMU 6.0 s"]), &v(&["QEMU 12.25 s"])));
    assert!(!matches(
        &v(&["flash 80,868 bytes"]),
        &v(&["flash 76,828 bytes"])
    ));
    let flash = |n: &str| v(&[&format!("flash  runtime {n} bytes, model 129,384 bytes")]);
    assert!(matches(&flash("98,368"), &flash("98,372")));
    assert!(matches(&flash("98,368"), &flash("98,304")));
    assert!(!matches(&flash("98,368"), &flash("98,433")));
    assert!(!matches(
        &flash("98,368"),
        &v(&["flash  runtime 98,368 bytes, model 1 bytes"])
    ));
    assert_eq!(without_times("(17.0 s + 0.5 s), best"), "(T s + T s), best");
    assert_eq!(without_times("3 steps"), "3 steps");
}
