//! Issue 30, findings 4 to 7: `s2s train` and `s2s generate` refuse what they cannot
//! do with one line before writing anything (options out of range, a configuration
//! beyond the machine's memory, a `max_steps` beyond the training bound, counts that
//! overflow); two outputs of one command that are one file are refused, and
//! `/dev/stdout` is written through in order, through a pipe too; `s2s boot` prints the
//! firmware's UART output and ends.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use s2s_tests::pytorch;
use s2s_tests::{assert_one_error, assert_only, s2s, s2s_bin, scratch_dir};

/// The PyTorch example's weights and model file, built once.
fn example() -> &'static (PathBuf, PathBuf) {
    static EXAMPLE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    EXAMPLE.get_or_init(|| pytorch::build_model(&scratch_dir("hostile-cli-example")))
}

/// A small training configuration with `hidden` and `max_steps`.
fn train_config(hidden: usize, max_steps: usize) -> String {
    format!(
        r#"[model]
name = "t"
[source]
split = "chars"
lowercase = true
pad = "<pad>"
unk = "<unk>"
[target]
start = "<s>"
end = "</s>"
max_steps = {max_steps}
[encoder]
embedding = 6
hidden = {hidden}
reset = "after"
[decoder]
embedding = 5
hidden = {hidden}
reset = "after"
init = "last"
output = ["state"]
"#
    )
}

/// A folder with `c.toml` (hidden, max_steps) and `d.tsv` (a few pairs).
fn train_dir(name: &str, hidden: usize, max_steps: usize) -> PathBuf {
    let dir = scratch_dir(name);
    std::fs::write(dir.join("c.toml"), train_config(hidden, max_steps)).unwrap();
    std::fs::write(dir.join("d.tsv"), "abc\tx\nabd\ty\nbcd\tx\n").unwrap();
    dir
}

/// `s2s train` in `dir` with `extra` options: what it did and how long it took.
fn train(dir: &Path, extra: &[&str]) -> (Output, Duration) {
    let (c, d, o) = (dir.join("c.toml"), dir.join("d.tsv"), dir.join("m.s2s"));
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
        vec![&"train", &"--config", &c, &"--data", &d, &"-o", &o, &"-q"];
    for e in extra {
        args.push(e);
    }
    let start = Instant::now();
    let r = s2s(&args, "");
    (r, start.elapsed())
}

// ----------------------------------------------------------- finding 4: train

#[test]
fn train_refuses_options_out_of_range_and_writes_nothing() {
    let dir = train_dir("hostile-train-options", 10, 12);
    for (option, value) in [
        ("--dropout", "1.5"),
        ("--dropout", "1"),
        ("--dropout", "NaN"),
        ("--dropout", "-0.1"),
        ("--label-smoothing", "1"),
        ("--label-smoothing", "-0.1"),
        ("--lr", "-1"),
        ("--lr", "0"),
        ("--lr", "inf"),
        ("--lr", "NaN"),
        ("--lr-decay", "0"),
        ("--clip", "-1"),
        ("--threads", "100000"),
    ] {
        let flag = format!("{option}={value}");
        let (r, _) = train(&dir, &[&flag]);
        assert_one_error(&r, &[&format!("{option} {value}")]);
        assert_only(&dir, &["c.toml", "d.tsv"]);
    }
}

#[test]
fn train_refuses_a_configuration_beyond_the_memory_at_once() {
    let dir = train_dir("hostile-train-memory", 65535, 12);
    let (r, took) = train(&dir, &[]);
    let e = assert_one_error(&r, &["c.toml", "[encoder] hidden = 65535", "GB"]);
    assert!(took < Duration::from_secs(2), "{took:?}: {e}");
    assert_only(&dir, &["c.toml", "d.tsv"]);
}

#[test]
fn train_refuses_max_steps_beyond_its_bound() {
    let dir = train_dir("hostile-train-steps", 10, 6000);
    let (r, _) = train(&dir, &[]);
    assert_one_error(&r, &["c.toml", "max_steps", "6000", "at most 512"]);
    assert_only(&dir, &["c.toml", "d.tsv"]);
}

/// At the bound: a 500-token target is trained (its backward pass) and the untrained
/// model's greedy decodes run all 512 steps, without overflowing the stack.
#[test]
fn train_runs_at_the_max_steps_bound() {
    let dir = train_dir("hostile-train-steps-512", 10, 512);
    let long: String = "xy".repeat(250);
    std::fs::write(
        dir.join("d.tsv"),
        format!("abc\t{long}\nabd\ty\nbcd\tx\nbbb\tyx\n"),
    )
    .unwrap();
    let (r, _) = train(&dir, &["--epochs", "1", "--batch", "4"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(dir.join("m.s2s").is_file());
}

// ------------------------------------------ issue 29: monotonic attention

/// A monotonic model trains and decodes greedily; a beam search of it is refused in
/// one line naming the model, before any line is decoded; and a monotonic attention
/// over a score without the offset is refused at training, naming the configuration.
#[test]
fn monotonic_models_train_decode_greedily_and_refuse_a_beam() {
    let dir = train_dir("hostile-monotonic", 6, 12);
    let attention = |score: &str| {
        train_config(6, 12).replace(
            "[decoder]",
            &format!("[attention]\nordering = \"monotonic\"\nscore = \"{score}\"\n[decoder]"),
        )
    };
    std::fs::write(dir.join("c.toml"), attention("dot")).unwrap();
    let (r, _) = train(&dir, &["--epochs", "1"]);
    assert_one_error(&r, &["c.toml", "monotonic: needs the additive score"]);
    assert_only(&dir, &["c.toml", "d.tsv"]);
    let chunked = attention("additive").replace(
        "ordering = \"monotonic\"",
        "ordering = \"bahdanau\"\nchunk = 2",
    );
    std::fs::write(dir.join("c.toml"), chunked).unwrap();
    let (r, _) = train(&dir, &["--epochs", "1"]);
    assert_one_error(
        &r,
        &["c.toml", "attention.chunk: only for monotonic attention"],
    );
    assert_only(&dir, &["c.toml", "d.tsv"]);
    std::fs::write(dir.join("c.toml"), attention("additive")).unwrap();
    let (r, _) = train(&dir, &["--epochs", "2"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let m = dir.join("m.s2s");
    let greedy = s2s(&[&"run", &m], "abc\nbcd\n");
    assert!(
        greedy.status.success(),
        "{}",
        String::from_utf8_lossy(&greedy.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&greedy.stdout).lines().count(), 2);
    let beam = s2s(&[&"run", &m, &"--beam", &"2"], "abc\nbcd\n");
    assert_one_error(&beam, &["m.s2s", "decodes greedily only: no beam search"]);
    assert!(beam.stdout.is_empty());
}

/// `s2s run M --ids --input INPUT --max-steps STEPS` with `extra` options.
fn run_ids(m: &Path, input: &Path, steps: &str, extra: &[&str]) -> Output {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"run",
        &m,
        &"--ids",
        &"--input",
        &input,
        &"--max-steps",
        &steps,
    ];
    args.extend(extra.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
    s2s(&args, "")
}

/// Trains `dir`'s local attention model with `args`, and checks that it decodes two
/// lines with a beam of 2; returns its path.
fn train_local(dir: &Path, args: &[&str]) -> PathBuf {
    let (r, _) = train(dir, args);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let m = dir.join("m.s2s");
    let beam = s2s(&[&"run", &m, &"--beam", &"2"], "abc\nbcd\n");
    assert!(
        beam.status.success(),
        "{}",
        String::from_utf8_lossy(&beam.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&beam.stdout).lines().count(), 2);
    m
}

/// `s2s inspect`'s rows of model `m` at 5 positions.
fn inspect_local(m: &Path) -> String {
    let inspect = s2s(&[&"inspect", &m, &"--positions", &"5"], "");
    String::from_utf8_lossy(&inspect.stdout).into_owned()
}

/// Local attention (issue 29, local-m): `attention.window` off the Bahdanau and Luong
/// orderings, or out of range, is refused naming the configuration, before anything is
/// written; a trained local model decodes greedily and with a beam, `s2s inspect` names
/// its window, and its lines streamed through a window of 5 encoder states are its whole
/// lines' outputs (a 200-character one included), through 4 refused in one line.
#[test]
fn local_models_train_stream_and_refuse_what_they_cannot_do() {
    let dir = train_dir("hostile-local", 6, 12);
    let config = |ordering: &str, window: &str| {
        train_config(6, 12)
            .replace("init = \"last\"", "init = \"zeros\"")
            .replace(
                "[decoder]",
                &format!(
                    "[attention]\nordering = \"{ordering}\"\nscore = \"additive\"\nwindow = {window}\n[decoder]"
                ),
            )
    };
    for (ordering, window, says) in [
        (
            "monotonic",
            "2",
            "attention.window: local attention needs the bahdanau or luong ordering",
        ),
        (
            "luong",
            "257",
            "attention.window: 1 to 256 (the half-width D of local attention's 2D + 1 positions)",
        ),
        ("luong", "0", "attention.window: 1 to 256"),
    ] {
        std::fs::write(dir.join("c.toml"), config(ordering, window)).unwrap();
        let (r, _) = train(&dir, &["--epochs", "1"]);
        assert_one_error(&r, &["c.toml", says]);
        assert_only(&dir, &["c.toml", "d.tsv"]);
    }
    std::fs::write(dir.join("c.toml"), config("luong", "2")).unwrap();
    let m = train_local(&dir, &["--epochs", "2"]);
    let rows = inspect_local(&m);
    assert!(
        rows.contains("Luong (local-m, window of 5 positions, D = 2)"),
        "{rows}"
    );
    assert!(
        rows.contains("yes: `s2s run --stream` holds a window of 5"),
        "{rows}"
    );
    let input = dir.join("in.txt");
    std::fs::write(&input, format!("abc\n\nbcd\r\n{}\n", "abcd".repeat(50))).unwrap();
    let run = |extra: &[&str]| run_ids(&m, &input, "300", extra);
    let whole = run(&["--positions", "300"]);
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let streamed = run(&["--stream", "--positions", "5"]);
    assert!(
        streamed.status.success(),
        "{}",
        String::from_utf8_lossy(&streamed.stderr)
    );
    assert_eq!(streamed.stdout, whole.stdout);
    let out = String::from_utf8_lossy(&streamed.stdout);
    assert!(out.lines().nth(3).unwrap().split(' ').count() > 20, "{out}");
    let narrow = run(&["--stream", "--positions", "4"]);
    assert_one_error(
        &narrow,
        &["local attention reads 5 positions at a step: it needs a window of at least 5, this one has 4"],
    );
    assert!(narrow.stdout.is_empty());
}

/// Local-p attention (issue 29): `attention.centre = "predicted"` without a window, a
/// `predictor` size without a predicted centre, or `centre` on global attention are
/// refused naming the configuration, before anything is written; a trained local-p
/// model (trained straight to W8A16 too) decodes greedily and with a beam, `s2s
/// inspect` names its window and predictor and says it does not stream, and `s2s run
/// --stream` refuses it in one line, before any output.
#[test]
fn local_p_models_train_decode_and_refuse_to_stream() {
    let dir = train_dir("hostile-local-p", 6, 12);
    let config = |attention: &str| {
        train_config(6, 12).replace(
            "[decoder]",
            &format!(
                "[attention]\nordering = \"luong\"\nscore = \"general\"\n{attention}\n[decoder]"
            ),
        )
    };
    for (attention, says) in [
        (
            "centre = \"predicted\"",
            "attention.centre: a predicted centre needs a local attention (attention.window)",
        ),
        (
            "window = 2\npredictor = 4",
            "attention.predictor: only with attention.centre = \"predicted\"",
        ),
        (
            "centre = \"step\"",
            "attention.centre: only for local attention (attention.window)",
        ),
        (
            "window = 2\ncentre = \"predicted\"\npredictor = 0",
            "attention.predictor: 1 to 65535",
        ),
        (
            "window = 2\ncentre = \"middle\"",
            "unknown variant `middle`",
        ),
    ] {
        std::fs::write(dir.join("c.toml"), config(attention)).unwrap();
        let (r, _) = train(&dir, &["--epochs", "1"]);
        assert_one_error(&r, &["c.toml", says]);
        assert_only(&dir, &["c.toml", "d.tsv"]);
    }
    let local_p = config("window = 2\ncentre = \"predicted\"\npredictor = 5");
    std::fs::write(dir.join("c.toml"), local_p).unwrap();
    for extra in [&[][..], &["--quantize", "w8a16"]] {
        let mut args = vec!["--epochs", "2"];
        args.extend(extra);
        // (The first run's checkpoint would be resumed.)
        let _ = std::fs::remove_dir_all(dir.join("m.ckpt"));
        let m = train_local(&dir, &args);
        let rows = inspect_local(&m);
        assert!(
            rows.contains("Luong (local-p, window of 5 positions, D = 2, position predictor of 5)"),
            "{rows}"
        );
        assert!(rows.contains("from the source's length"), "{rows}");
        let input = dir.join("in.txt");
        std::fs::write(&input, format!("abc\n{}\n", "abcd".repeat(20))).unwrap();
        let whole = run_ids(&m, &input, "100", &["--positions", "100"]);
        assert!(
            whole.status.success(),
            "{}",
            String::from_utf8_lossy(&whole.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&whole.stdout).lines().count(), 2);
        let streamed = run_ids(&m, &input, "100", &["--stream", "--positions", "5"]);
        assert_one_error(
            &streamed,
            &["its local-p attention predicts each window's centre from the source's length"],
        );
        assert!(streamed.stdout.is_empty());
    }
}

/// `s2s run --stream` (issue 29): a streaming model's lines, streamed through a window
/// of 4 encoder states, give exactly the outputs of the whole lines (a 600-character
/// one included, planned for its length); a line that is not UTF-8 keeps the tokens
/// decided before its bad byte, and its error names the file, the line and the byte,
/// the other lines going on; a model that cannot stream and an option that needs a
/// whole line are refused in one line, before any output.
#[test]
fn streamed_lines_give_the_whole_lines_outputs_and_bad_input_says_where() {
    let dir = train_dir("hostile-stream", 6, 12);
    let config = train_config(6, 12)
        .replace("init = \"last\"", "init = \"zeros\"")
        .replace(
            "[decoder]",
            "[attention]\nordering = \"monotonic\"\nscore = \"additive\"\n[decoder]",
        );
    std::fs::write(dir.join("c.toml"), &config).unwrap();
    let (r, _) = train(&dir, &["--epochs", "2"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let m = dir.join("m.s2s");
    let long = "abcd".repeat(150);
    let input = dir.join("in.txt");
    std::fs::write(&input, format!("abc\n\nbcd\r\n{long}\n")).unwrap();
    let limits = ["--max-steps", "700"];
    let whole = s2s(
        &[
            &"run",
            &m,
            &"--ids",
            &"--input",
            &input,
            &limits[0],
            &limits[1],
            &"--positions",
            &"700",
        ],
        "",
    );
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let streamed = s2s(
        &[
            &"run",
            &m,
            &"--ids",
            &"--stream",
            &"--input",
            &input,
            &limits[0],
            &limits[1],
            &"--positions",
            &"4",
        ],
        "",
    );
    assert!(
        streamed.status.success(),
        "{}",
        String::from_utf8_lossy(&streamed.stderr)
    );
    let out = String::from_utf8_lossy(&streamed.stdout);
    assert_eq!(out, String::from_utf8_lossy(&whole.stdout));
    assert_eq!(out.lines().count(), 4);
    assert!(out.lines().nth(3).unwrap().split(' ').count() > 20, "{out}");
    // A bad byte in the middle of line 2: the tokens before it stay, the rest go on.
    let mut bytes = format!("abc\n{long}").into_bytes();
    bytes.extend_from_slice(b"\xffabc\nbcd\n");
    std::fs::write(&input, bytes).unwrap();
    let bad = s2s(
        &[
            &"run",
            &m,
            &"--stream",
            &"--input",
            &input,
            &"--positions",
            &"4",
        ],
        "",
    );
    assert_one_error(
        &bad,
        &["in.txt:2", "not UTF-8 (byte 601 of the line is 0xff)"],
    );
    let lines: Vec<String> = String::from_utf8_lossy(&bad.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let each = s2s(&[&"run", &m], "abc\nbcd\n");
    let each: Vec<&str> = std::str::from_utf8(&each.stdout).unwrap().lines().collect();
    assert_eq!((lines[0].as_str(), lines[2].as_str()), (each[0], each[1]));
    // MoChA, a chunk of 3: streamed through 4 positions (the chunk's last 2 rows kept
    // at each refill), the whole lines' outputs; through 3, refused in one line.
    let mocha = config.replace("score = \"additive\"", "score = \"additive\"\nchunk = 3");
    std::fs::write(dir.join("c.toml"), mocha).unwrap();
    std::fs::write(&input, format!("abc\n\nbcd\r\n{long}\n")).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("m.ckpt"));
    let (r, _) = train(&dir, &["--epochs", "2"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let run = |extra: &[&str]| run_ids(&m, &input, "700", extra);
    let whole = run(&["--positions", "700"]);
    let streamed = run(&["--stream", "--positions", "4"]);
    assert!(
        streamed.status.success(),
        "{}",
        String::from_utf8_lossy(&streamed.stderr)
    );
    assert_eq!(streamed.stdout, whole.stdout);
    let narrow = run(&["--stream", "--positions", "3"]);
    assert_one_error(
        &narrow,
        &["a chunk of 3 positions needs a window of more than 3, this one has 3"],
    );
    // `s2s inspect` names the chunk, and says the stream needs a wider window than 3.
    let inspect = |positions: &str, name: &str| -> String {
        let o = s2s(&[&"inspect", &m, &"--positions", &positions], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let row = out
            .lines()
            .find(|l| l.starts_with(name))
            .map(str::to_string);
        row.unwrap_or_else(|| panic!("no {name} row: {out}"))
    };
    assert!(inspect("4", "attention").contains("Monotonic (MoChA, chunk 3)"));
    assert!(inspect("4", "stream").contains("yes: `s2s run --stream` holds a window of 4"));
    assert!(inspect("3", "stream")
        .ends_with("no: a chunk of 3 positions needs a window of more than 3, this one has 3"));
    // A model that cannot stream (its decoder starts from the encoder's last state).
    std::fs::write(dir.join("c.toml"), train_config(6, 12)).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("m.ckpt"));
    let (r, _) = train(&dir, &["--epochs", "1"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let refused = s2s(&[&"run", &m, &"--stream"], "abc\n");
    assert_one_error(
        &refused,
        &["m.s2s", "model cannot stream: it has no attention"],
    );
    assert!(refused.stdout.is_empty());
    let tsv = s2s(&[&"run", &m, &"--stream", &"--tsv"], "abc\n");
    assert_one_error(
        &tsv,
        &["--tsv needs a whole line: it does not go with --stream"],
    );
}

// ------------------------------------------ issue 33: --init and --quantize

/// `s2s train --init` refuses, in one line before anything is written: a quantized
/// model file, data with a source symbol or a target token outside the model's
/// vocabularies (naming the file and line), and `--config` beside it; a run from the
/// f32 file with `--quantize` writes the integer file.
#[test]
fn train_init_refuses_what_it_cannot_fine_tune() {
    let dir = train_dir("hostile-train-init", 10, 12);
    let (r, _) = train(&dir, &["--epochs", "1", "--batch", "2"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let base = dir.join("base.s2s");
    std::fs::rename(dir.join("m.s2s"), &base).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("m.ckpt"));
    let _ = std::fs::remove_file(dir.join("m.csv"));
    let q = dir.join("q.s2s");
    let r = s2s(&[&"quantize", &base, &"--scheme", &"w8f32", &"-o", &q], "");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let init = |model: &Path, data: &str, extra: &[&str]| -> Output {
        let d = dir.join("fine.tsv");
        std::fs::write(&d, data).unwrap();
        let o = dir.join("out.s2s");
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            vec![&"train", &"--init", &model, &"--data", &d, &"-o", &o, &"-q"];
        for e in extra {
            args.push(e);
        }
        s2s(&args, "")
    };
    let pairs = "abc\tx\nabd\ty\nbcd\tx\n";
    let files = ["base.s2s", "c.toml", "d.tsv", "fine.tsv", "q.s2s"];
    assert_one_error(
        &init(&q, pairs, &[]),
        &["q.s2s", "--init needs an f32 model file, this one is w8f32"],
    );
    assert_only(&dir, &files);
    assert_one_error(
        &init(&base, "abc\tx\nabz\ty\nbcd\tx\n", &[]),
        &["fine.tsv:2", "source symbol \"z\"", "base.s2s"],
    );
    assert_only(&dir, &files);
    assert_one_error(
        &init(&base, "abc\tx\nabd\ty\nbcd\tw\n", &[]),
        &["fine.tsv:3", "target token \"w\""],
    );
    assert_only(&dir, &files);
    let c = dir.join("c.toml");
    let r = init(&base, pairs, &["--config", c.to_str().unwrap()]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("--config"));
    assert_only(&dir, &files);
    // The f32 file fine-tuned for w8a16: the written file is w8a16.
    let r = init(
        &base,
        pairs,
        &["--quantize", "w8a16", "--epochs", "1", "--batch", "2"],
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let r = s2s(&[&"inspect", &dir.join("out.s2s")], "");
    assert!(String::from_utf8_lossy(&r.stdout).contains("w8a16"));
}

// -------------------------------------------------------- finding 5: generate

#[test]
fn generate_refuses_counts_it_cannot_make_and_writes_nothing() {
    let dir = scratch_dir("hostile-generate");
    let out = dir.join("out");
    for (args, needle) in [
        (
            &["--train", "18446744073709551615"][..],
            "--train 18446744073709551615",
        ),
        (
            &["--train", "18446744073709551615", "--valid", "1"][..],
            "--train 18446744073709551615",
        ),
        (
            &["--train", "600000", "--valid", "600000"][..],
            "1200000 pairs",
        ),
        (&["--train", "0"][..], "nothing to generate"),
    ] {
        generate_refused("dates", args, &[needle], &out);
    }
    // What fits is made.
    let r = s2s(
        &[
            &"generate",
            &"dates",
            &"--train",
            &"5",
            &"--valid",
            &"1",
            &"-o",
            &out,
        ],
        "",
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_only(&out, &["train.tsv", "train.txt", "valid.tsv", "valid.txt"]);
}

/// `s2s generate TASK -o out ARGS` fails with one error line holding `needles` and
/// writes nothing.
fn generate_refused(task: &str, args: &[&str], needles: &[&str], out: &std::path::Path) {
    let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"generate", &task, &"-o", &out];
    for x in args {
        a.push(x);
    }
    assert_one_error(&s2s(&a, ""), needles);
    assert!(!out.exists(), "{args:?} made {}", out.display());
}

/// `s2s generate running-text` (issue 29): a bad word list, bad lengths, a split
/// without a word list and sizes beyond the limit are refused in one line each,
/// before anything is written.
#[test]
fn running_text_refuses_bad_words_and_lengths_and_writes_nothing() {
    let dir = scratch_dir("hostile-running-text");
    let out = dir.join("out");
    let words = dir.join("words.tsv");
    std::fs::write(
        &words,
        "# a word list\nhello\tHH AH0 L OW1\nworld\tW ER1 L D\n",
    )
    .unwrap();
    let bad = dir.join("bad.tsv");
    std::fs::write(&bad, "hello\tHH AH0 L OW1\n\nnew york\tN UW1 Y AO1 R K\n").unwrap();
    let piped = dir.join("piped.tsv");
    std::fs::write(&piped, "hello\tHH AH0 | L OW1\n").unwrap();
    let long = dir.join("long.tsv");
    std::fs::write(
        &long,
        "extraordinarily\tIH0 K S T R AO1 R D AH0 N EH2 R AH0 L IY0\n",
    )
    .unwrap();
    let w = |p: &std::path::Path| p.display().to_string();
    for (args, needles) in [
        (vec!["--train", "5"], vec!["--train 5", "--words"]),
        (
            vec!["--train", "5", "--words", &w(&bad)],
            vec!["bad.tsv:3", "white space"],
        ),
        (
            vec!["--train", "5", "--words", &w(&piped)],
            vec!["piped.tsv:1", "boundary"],
        ),
        (
            vec!["--train", "5", "--words", &w(&long), "--lengths", "5-10"],
            vec!["long.tsv", "5 to 10"],
        ),
        (
            vec!["--train", "5", "--words", &w(&words), "--lengths", "200-20"],
            vec!["--lengths 200-20"],
        ),
        (
            vec!["--train", "5", "--words", &w(&words), "--lengths", "0-20"],
            vec!["--lengths 0-20"],
        ),
        (
            vec!["--train", "5", "--words", &w(&words), "--lengths", "20"],
            vec!["MIN-MAX"],
        ),
        (
            vec![
                "--train",
                "0",
                "--test",
                "10000",
                "--words",
                &w(&words),
                "--lengths",
                "9000-10000",
            ],
            vec!["--test 10000", "characters"],
        ),
        // A valid training list, a bad test list: nothing of the training split either.
        (
            vec![
                "--train",
                "5",
                "--test",
                "2",
                "--words",
                &w(&words),
                "--test-words",
                &w(&bad),
            ],
            vec!["bad.tsv:3"],
        ),
    ] {
        generate_refused("running-text", &args, &needles, &out);
    }
    // The word-list options belong to running-text.
    let list = w(&words);
    let args = ["--train", "5", "--words", &list];
    generate_refused("dates", &args, &["running-text"], &out);
    let args = ["--train", "5", "--lengths", "5-10"];
    generate_refused("substitution", &args, &["running-text"], &out);
    // What fits is made: the sentences are the list's words.
    let r = s2s(
        &[
            &"generate",
            &"running-text",
            &"--train",
            &"4",
            &"--test",
            &"2",
            &"--words",
            &words,
            &"--lengths",
            &"11-40",
            &"-o",
            &out,
        ],
        "",
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_only(&out, &["train.tsv", "train.txt", "test.tsv", "test.txt"]);
    let text = std::fs::read_to_string(out.join("train.tsv")).unwrap();
    assert_eq!(text.lines().count(), 4);
    for line in text.lines() {
        let (s, t) = line.split_once('\t').unwrap();
        assert!((11..=40).contains(&s.len()), "{line}");
        assert_eq!(s.split(' ').count(), t.split(" | ").count(), "{line}");
    }
    // Without --lengths, the training lengths: 20 to 200 characters.
    let out = dir.join("default");
    let r = s2s(
        &[
            &"generate",
            &"running-text",
            &"--train",
            &"20",
            &"--words",
            &words,
            &"-o",
            &out,
        ],
        "",
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = std::fs::read_to_string(out.join("train.tsv")).unwrap();
    for line in text.lines() {
        let (s, _) = line.split_once('\t').unwrap();
        assert!((20..=200).contains(&s.len()), "{line}");
    }
}

// ------------------------------------------------------ finding 6: the outputs

/// `s2s args` with standard output going to `stdout`.
fn s2s_to(args: &[&dyn AsRef<std::ffi::OsStr>], stdout: Stdio) -> Output {
    Command::new(s2s_bin())
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("running s2s")
}

#[test]
fn attention_to_the_decoded_lines_stream_is_refused() {
    let (_, model) = example();
    let dir = scratch_dir("hostile-attention-stdout");
    let input = dir.join("in.txt");
    std::fs::write(&input, "abc\nhag\n").unwrap();
    let out = dir.join("out.txt");
    let args: [&dyn AsRef<std::ffi::OsStr>; 6] = [
        &"run",
        model,
        &"--input",
        &input,
        &"--attention",
        &"/dev/stdout",
    ];
    // Standard output a file (`> out.txt`): before, the JSON replaced the lines.
    let r = s2s_to(&args, Stdio::from(std::fs::File::create(&out).unwrap()));
    assert_one_error(
        &r,
        &[
            "the decoded lines (<stdout>)",
            "--attention (/dev/stdout)",
            "same file",
        ],
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
    // Through a pipe, and with `-`: the same error.
    assert_one_error(&s2s_to(&args, Stdio::piped()), &["same file"]);
    let mut dash = args;
    dash[5] = &"-";
    assert_one_error(&s2s_to(&dash, Stdio::piped()), &["same file"]);
    // The file standard output goes to, by its own name.
    let mut named = args;
    named[5] = &out;
    let r = s2s_to(&named, Stdio::from(std::fs::File::create(&out).unwrap()));
    assert_one_error(&r, &["same file"]);
    // Two files are two files.
    let json = dir.join("a.json");
    named[5] = &json;
    let r = s2s_to(&named, Stdio::from(std::fs::File::create(&out).unwrap()));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 2);
}

#[test]
fn dev_stdout_is_written_through_a_pipe_and_a_file() {
    let (config, weights) = (pytorch::config(), &example().0);
    let dir = scratch_dir("hostile-dev-stdout");
    let file = dir.join("m.s2s");
    let import = |out: &dyn AsRef<std::ffi::OsStr>, stdout: Stdio| {
        s2s_to(
            &[
                &"import",
                &"--config",
                &config,
                &"--weights",
                weights,
                &"-o",
                out,
            ],
            stdout,
        )
    };
    let r = import(&file, Stdio::piped());
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let bytes = std::fs::read(&file).unwrap();
    // Through a pipe: before, "No such file or directory".
    let r = import(&"/dev/stdout", Stdio::piped());
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(r.stdout, bytes);
    // To a file standard output was opened on.
    let out = dir.join("out.s2s");
    let r = import(
        &"/dev/stdout",
        Stdio::from(std::fs::File::create(&out).unwrap()),
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
}

#[test]
fn eval_and_train_refuse_two_outputs_in_one_file() {
    let (_, model) = example();
    let dir = scratch_dir("hostile-eval-outputs");
    let data = dir.join("d.tsv");
    std::fs::write(&data, "abc\tabc\n").unwrap();
    let same = dir.join("same.json");
    let r = s2s(
        &[
            &"eval", model, &"--data", &data, &"--json", &same, &"--plot", &same,
        ],
        "",
    );
    assert_one_error(&r, &["--json", "--plot", "same file"]);
    let dir = train_dir("hostile-train-outputs", 10, 12);
    let log = dir.join("m.s2s");
    let flag = format!("--log={}", log.display());
    let (r, _) = train(&dir, &[&flag]);
    assert_one_error(&r, &["--output", "--log", "same file"]);
    assert_only(&dir, &["c.toml", "d.tsv"]);
}

// ----------------------------------------------------------- finding 7: boot

/// `s2s boot` of the firmware without a model on mps2-an386: the UART's `READY` and
/// `ERR model:` lines on standard output and the firmware's status, well before the
/// timeout (before, the UART thread waited for the stdout lock and the run timed out
/// with nothing printed).
#[test]
fn boot_prints_the_uart_and_ends() {
    let board = s2s_device::board::find("mps2-an386").expect("in the board table");
    let elf = host_tools::device::Firmware::locate(None)
        .and_then(|f| f.build(board, "firmware", true))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(s2s_bin())
        .args(["boot", "--board", "mps2-an386", "--timeout", "30"])
        .arg(&elf)
        .env_remove("S2S_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting s2s boot");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("waiting").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("s2s boot did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = child.wait_with_output().expect("s2s boot's output");
    let out = String::from_utf8_lossy(&r.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"READY mps2-an386"), "{out}");
    assert!(
        lines.get(1).is_some_and(|l| l.starts_with("ERR model:")),
        "{out}"
    );
    assert_eq!(
        r.status.code(),
        Some(s2s_device::exit::Exit::ModelError.code()),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}
