//! The long-input report (issue 29): a running-text model by length bucket, from the
//! training lengths to 10,000 characters, with `s2s eval --positions --max-steps`, the
//! attention map of a 1,000-character sentence, and its w8a16 file's instructions per
//! output token on the AN386 at the source lengths its positions hold.

use super::data::{RUNNING_TEXT_BUCKETS, RUNNING_TEXT_LENGTHS};
use super::report::{number_after, sources};
use super::{read, Exp};
use crate::error::Result;

/// The test files of running text, shortest first: the training lengths' test split,
/// then each longer bucket (`running-text/<name>/test.tsv`), with their names.
pub fn running_text_tests() -> Vec<(String, String)> {
    let (lo, hi) = RUNNING_TEXT_LENGTHS;
    let mut v = vec![(format!("{lo}-{hi}"), "running-text/test.tsv".to_string())];
    for &((lo, hi), _) in RUNNING_TEXT_BUCKETS {
        v.push((
            format!("{lo}-{hi}"),
            format!("running-text/test-{lo}-{hi}/test.tsv"),
        ));
    }
    v
}

/// The models the report measures (each a training stage of its own).
pub const RUNNING_TEXT_MODELS: &[&str] = &["running-text-global", "running-text-monotonic"];

/// The streaming model, measured by a stage of its own
/// ([`running_text_stream_eval`]), and every model the report shows.
pub const RUNNING_TEXT_STREAM: &str = "running-text-stream";
/// The streaming model with MoChA ([`running_text_mocha_eval`]).
pub const RUNNING_TEXT_MOCHA: &str = "running-text-mocha";
/// The streaming model with local attention ([`running_text_local_eval`]).
pub const RUNNING_TEXT_LOCAL: &str = "running-text-local";
/// The local-p model ([`running_text_local_p_eval`]), which does not stream.
pub const RUNNING_TEXT_LOCAL_P: &str = "running-text-local-p";
/// The boards a model of this size streams on: the micro:bit and the AN386.
const BOTH_BOARDS: &[&str] = &["mps2-an386", "microbit"];
/// The models that stream, each streamed on its boards by its own stage. The local
/// model's 65 positions per step are more than the micro:bit's window of 20 holds.
pub const RUNNING_TEXT_STREAMING: &[(&str, &[&str])] = &[
    (RUNNING_TEXT_STREAM, BOTH_BOARDS),
    (RUNNING_TEXT_MOCHA, BOTH_BOARDS),
    (RUNNING_TEXT_LOCAL, &["mps2-an386"]),
];
pub const RUNNING_TEXT_REPORTED: &[&str] = &[
    "running-text-global",
    "running-text-monotonic",
    RUNNING_TEXT_STREAM,
    RUNNING_TEXT_MOCHA,
    RUNNING_TEXT_LOCAL,
    RUNNING_TEXT_LOCAL_P,
];

/// Source positions (the end token included) at which the instructions per output
/// token are counted on the AN386, whose arena holds 256 positions.
pub const DEVICE_POSITIONS: [usize; 2] = [100, 256];

/// The longest source in characters and the longest target in tokens of a
/// `source<TAB>target` file (`#` lines skipped).
fn longest(text: &str) -> (usize, usize) {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .fold((0, 0), |(s, t), (src, tgt)| {
            (
                s.max(src.chars().count()),
                t.max(tgt.split_whitespace().count()),
            )
        })
}

/// What `s2s eval` and `s2s heatmap` are given for sources and targets this long: the
/// positions (the end token included) and a step limit a quarter above the target
/// (a model that runs on past it is measured, not cut at the reference's length).
fn limits(chars: usize, tokens: usize) -> [String; 4] {
    [
        "--positions".into(),
        (chars + 1).to_string(),
        "--max-steps".into(),
        (tokens + tokens / 4 + 16).min(65_535).to_string(),
    ]
}

/// `results/running-text-<model>-<bucket>.json` for every model and bucket, and the
/// attention map of each model on the shortest sentence of 1,000 characters or more. A
/// result newer than its model and data is kept (the 5,000-10,000 bucket alone takes
/// about 20 minutes on two cores).
pub fn running_text_eval(e: &Exp) -> Result {
    let models = e.need(RUNNING_TEXT_MODELS)?;
    e.dirs()?;
    for (name, model) in RUNNING_TEXT_MODELS.iter().zip(&models) {
        eval_model(e, name, model)?;
    }
    Ok(())
}

/// The streaming model (`running-text-stream`): [`running_text_eval`]'s results for it,
/// then `results/running-text-stream-streamed.json`, its w8a16 file streamed on the
/// AN386 and the micro:bit at 100 and 10,000 characters ([`stream_counts`]).
pub fn running_text_stream_eval(e: &Exp) -> Result {
    streaming_eval(e, RUNNING_TEXT_STREAM)
}

/// [`running_text_stream_eval`] of the MoChA model (`running-text-mocha`).
pub fn running_text_mocha_eval(e: &Exp) -> Result {
    streaming_eval(e, RUNNING_TEXT_MOCHA)
}

/// [`running_text_stream_eval`] of the local-m model (`running-text-local`), streamed
/// on the AN386 only.
pub fn running_text_local_eval(e: &Exp) -> Result {
    streaming_eval(e, RUNNING_TEXT_LOCAL)
}

/// The local-p model (`running-text-local-p`): its results by bucket, its heatmap and
/// its whole lines' counts on the AN386 (its centre is scaled by the source's length, so
/// it does not stream).
pub fn running_text_local_p_eval(e: &Exp) -> Result {
    let model = e.need(&[RUNNING_TEXT_LOCAL_P])?.remove(0);
    e.dirs()?;
    eval_model(e, RUNNING_TEXT_LOCAL_P, &model)
}

/// A streaming model's results by bucket, then streamed on its boards
/// ([`RUNNING_TEXT_STREAMING`]).
fn streaming_eval(e: &Exp, name: &str) -> Result {
    let model = e.need(&[name])?.remove(0);
    e.dirs()?;
    eval_model(e, name, &model)?;
    let boards = RUNNING_TEXT_STREAMING
        .iter()
        .find(|(m, _)| *m == name)
        .map_or(BOTH_BOARDS, |(_, b)| b);
    stream_counts(e, name, boards)
}

/// One model's results by bucket, its heatmap and its device counts.
fn eval_model(e: &Exp, name: &str, model: &std::path::Path) -> Result {
    let tests = running_text_tests();
    {
        for (bucket, file) in &tests {
            let data = e.path(file);
            let json = e.result(&format!("{name}-{bucket}.json"));
            if crate::files::fresh(&[&json], &[model, &data, &e.s2s]) {
                println!("{}: up to date", e.ctx.show(&json));
                continue;
            }
            let (chars, tokens) = longest(&read(&data)?);
            let l = limits(chars, tokens);
            let out = e.capture_s2s(&[
                &"eval", &model, &"--data", &data, &"--json", &json, &l[0], &l[1], &l[2], &l[3],
            ])?;
            print!("{out}");
        }
        let (source, tokens) = map_source(e)?;
        let l = limits(source.chars().count(), tokens);
        let png = e.picture(&format!("{name}-1000.png"));
        let map_data = e.path(MAP_DATA);
        if crate::files::fresh(&[&png], &[model, &map_data, &e.s2s]) {
            println!("{}: up to date", e.ctx.show(&png));
        } else {
            e.run_s2s(&[
                &"heatmap", &model, &source, &"-o", &png, &l[0], &l[1], &l[2], &l[3],
            ])?;
        }
        device_counts(e, name, model)?;
    }
    Ok(())
}

/// Characters of the streamed sources: the training lengths' and the longest bucket's.
pub const STREAM_CHARS: [usize; 2] = [100, 10_000];

/// The streams' repeat limit (`--max-repeats`): without one the model gets stuck on a
/// position of the 10,000-character source and repeats itself to the step cap
/// (docs/EXPERIMENTS.md section 6 measures 2, 3 and 4 by bucket).
pub const STREAM_MAX_REPEATS: &str = "4";

/// `results/<name>-streamed.json`: the model in w8a16 with one int8 plane per layer
/// (`--planes none`, calibrated as [`device_counts`]' file) streamed (`s2s qemu
/// --stream`) on the AN386 and the micro:bit, one source of each of
/// [`STREAM_CHARS`] characters (test sentences joined by spaces, cut there): output
/// tokens, instructions per output token, mismatches with the host, and the window and
/// workspace the board plans, whatever the length.
fn stream_counts(e: &Exp, name: &str, boards: &[&str]) -> Result {
    // One int8 plane per layer: the micro:bit's 160 KiB model region holds it.
    let q = e.path(&format!("{name}-w8a16-one-plane.s2s"));
    let calib = e.path("running-text/calib.txt");
    let model = e.path(&format!("{name}.s2s"));
    print!("{}", e.quantize_w8a16_one_plane(&model, &calib, &q)?);
    let words = sources(&read(&e.path("running-text/test-5000-10000/test.tsv"))?, 20);
    let text = words.lines().collect::<Vec<_>>().join(" ");
    let input = e.path("running-text/device-stream.txt");
    let lines: String = STREAM_CHARS
        .iter()
        .map(|&n| format!("{}\n", text.chars().take(n).collect::<String>().trim_end()))
        .collect();
    crate::files::write(&input, &lines)?;
    let mut rows = Vec::new();
    for board in boards {
        let out = e.capture_s2s(&[
            &"qemu",
            &q,
            &"--board",
            &board,
            &"--stream",
            &"65535",
            &"--max-repeats",
            &STREAM_MAX_REPEATS,
            &"--input",
            &input,
            &"--timeout",
            &"3600",
        ])?;
        print!("{out}");
        let window = out
            .lines()
            .next()
            .and_then(|l| before(l, " source positions"));
        for (i, &chars) in STREAM_CHARS.iter().enumerate() {
            let label = format!("input {}:", i + 1);
            let line = out.lines().find(|l| l.starts_with(&label)).unwrap_or("");
            rows.push(serde_json::json!({
                "board": board,
                "chars": chars,
                "window": window,
                "positions": before(line, " positions"),
                "tokens": before(line, " tokens"),
                "insns": before(line, " instructions"),
                "insns_per_token": before(line, " per token"),
                "matches": line.contains("matches the host"),
            }));
        }
    }
    let text = serde_json::to_string_pretty(&rows).map_err(|err| err.to_string())?;
    crate::files::write(&e.result(&format!("{name}-streamed.json")), &text)
}

/// The number just before `unit` in `line` (`12,000 tokens` gives 12000).
fn before(line: &str, unit: &str) -> Option<f64> {
    let head = &line[..line.find(unit)?];
    let word = head.rsplit([' ', '(']).next()?;
    word.replace(',', "").parse().ok()
}

/// `results/<name>-an386.json`: the model in w8a16 (calibrated on 200 training
/// sentences) under QEMU on the AN386, on three test sentences of the 200-500 bucket cut
/// to each of [`DEVICE_POSITIONS`] (the end token the last position): instructions per
/// output token and mismatches with the host. The counts depend on the shapes, the
/// residual planes the quantizer kept and the source length, not on the words.
fn device_counts(e: &Exp, name: &str, model: &std::path::Path) -> Result {
    let calib = e.path("running-text/calib.txt");
    crate::files::write(
        &calib,
        &sources(&read(&e.path("running-text/train.tsv"))?, 200),
    )?;
    let q = e.path(&format!("{name}-w8a16.s2s"));
    print!("{}", e.quantize_w8a16(model, &calib, &q)?);
    let test = sources(&read(&e.path("running-text/test-200-500/test.tsv"))?, 3);
    let mut rows = Vec::new();
    for n in DEVICE_POSITIONS {
        let cut: String = test
            .lines()
            .map(|l| format!("{}\n", l.chars().take(n - 1).collect::<String>()))
            .collect();
        let input = e.path(&format!("running-text/device-{n}.txt"));
        crate::files::write(&input, &cut)?;
        let out = e.capture_s2s(&[&"qemu", &q, &"--board", &"mps2-an386", &"--input", &input])?;
        print!("{out}");
        rows.push(serde_json::json!({
            "positions": n,
            "insns_per_token": number_after(&out, "decoded token", "instructions"),
            "mismatches": number_after(&out, "mismatches", ","),
        }));
    }
    let text = serde_json::to_string_pretty(&rows).map_err(|err| err.to_string())?;
    crate::files::write(&e.result(&format!("{name}-an386.json")), &text)
}

/// The bucket the heatmap's sentence comes from.
const MAP_DATA: &str = "running-text/test-1000-2000/test.tsv";

/// The shortest test sentence of at least 1,000 characters and its target's tokens.
fn map_source(e: &Exp) -> Result<(String, usize)> {
    let data = e.path(MAP_DATA);
    let text = read(&data)?;
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .filter(|(s, _)| s.chars().count() >= 1_000)
        .min_by_key(|(s, _)| s.chars().count())
        .map(|(s, t)| (s.to_string(), t.split_whitespace().count()))
        .ok_or_else(|| format!("{}: no sentence of 1,000 characters", data.display()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_lengths_and_limits() {
        let tests = running_text_tests();
        assert_eq!(tests.len(), 1 + RUNNING_TEXT_BUCKETS.len());
        assert_eq!(tests[0], ("20-200".into(), "running-text/test.tsv".into()));
        assert_eq!(
            tests[5],
            (
                "5000-10000".into(),
                "running-text/test-5000-10000/test.tsv".into()
            )
        );
        let text = "# a comment\tx y z w\nab cd\tA B | C D\nabcdef g\tA\n";
        assert_eq!(longest(text), (8, 5));
        // The end token's position; a quarter more steps than the target, and 16.
        assert_eq!(
            limits(9_841, 8_625),
            ["--positions", "9842", "--max-steps", "10797"]
        );
        assert_eq!(limits(200_000, 60_000)[3], "65535");
    }
}
