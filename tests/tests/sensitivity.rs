//! Issue 17: `s2s check --sensitivity`, the agreement when only one layer's weights are
//! quantized, measured on netra (200 golden words, a few seconds in release).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use s2s_tests::{assert_one_error, golden, model_file, s2s, s2s_ok, scratch_dir};

/// The layer rows of a `--sensitivity` table: name -> (planes, overall agreement).
fn table(report: &str) -> BTreeMap<String, (String, f64)> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("per layer:"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let (name, rest) = l.split_at(24);
            let cols: Vec<&str> = rest.split_whitespace().collect();
            let all: f64 = cols[2].parse().unwrap_or_else(|_| panic!("{l}"));
            (name.trim().to_string(), (cols[1].to_string(), all))
        })
        .collect()
}

/// `s2s check MODEL --reference REFERENCE --input INPUT --sensitivity`, its layer rows.
fn sensitivity(model: &Path, reference: &Path, input: &Path) -> BTreeMap<String, (String, f64)> {
    table(&s2s_ok(
        &[
            &"check",
            &model,
            &"--reference",
            &reference,
            &"--input",
            &input,
            &"--sensitivity",
        ],
        "",
    ))
}

/// `s2s quantize NETRA --scheme SCHEME --calib CALIB OPTIONS... -o OUT`.
fn quantize_with(
    netra: &Path,
    scheme: &str,
    calib: &Path,
    options: &[&dyn AsRef<OsStr>],
    out: &Path,
) -> Output {
    let mut args: Vec<&dyn AsRef<OsStr>> = vec![
        &"quantize",
        &netra,
        &"--scheme",
        &scheme,
        &"--calib",
        &calib,
    ];
    args.extend_from_slice(options);
    args.extend([&"-o" as &dyn AsRef<OsStr>, &out]);
    s2s(&args, "")
}

/// The same with `--planes PLANES`, which must succeed.
fn quantize(netra: &Path, scheme: &str, calib: &Path, planes: &str, out: &Path) {
    let r = quantize_with(netra, scheme, calib, &[&"--planes", &planes], out);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

#[test]
fn sensitivity_rows_are_the_quantizer_s_own_costs() {
    let netra = model_file("netra.s2s");
    let dir = scratch_dir("sensitivity");
    let words = dir.join("words.txt");
    let text: String = std::fs::read_to_string(golden("words-eval.txt"))
        .unwrap()
        .lines()
        .take(200)
        .map(|w| format!("{w}\n"))
        .collect();
    std::fs::write(&words, text).unwrap();
    // The quantizer measures each layer's cost alone (f32 arithmetic, the layer's int8
    // weights) to choose its planes, and says so for each layer it gives one.
    let q = dir.join("netra-w8f32.s2s");
    let report = quantize_with(
        &netra,
        "w8f32",
        &words,
        &[&"--target-agreement", &"100"],
        &q,
    );
    assert!(report.status.success());
    let costs: BTreeMap<String, f64> = String::from_utf8_lossy(&report.stderr)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("planes: + ")?;
            let (name, rest) = rest.split_once(" (")?;
            let cost = rest.split("alone costs ").nth(1)?.split(' ').next()?;
            Some((name.to_string(), cost.parse().ok()?))
        })
        .collect();
    assert!(
        costs.len() >= 3,
        "too few costly layers to compare: {costs:?}"
    );
    // The same int8 weights in a file: one plane each.
    let one = dir.join("netra-w8f32-one.s2s");
    quantize(&netra, "w8f32", &words, "none", &one);
    let checked = s2s_ok(
        &[
            &"check",
            &one,
            &"--reference",
            &netra,
            &"--input",
            &words,
            &"--sensitivity",
        ],
        "",
    );
    let rows = table(&checked);
    assert_eq!(rows.len(), 12, "11 layers and all of them:\n{checked}");
    for (name, cost) in &costs {
        let (planes, all) = &rows[name];
        assert_eq!(planes, "1", "{checked}");
        assert!(
            (all - (100.0 - cost)).abs() < 0.006,
            "{name}: {all} % in the table, the quantizer's cost {cost}:\n{checked}"
        );
    }
    // The layers the quantizer found costless agree everywhere alone.
    for (name, (_, all)) in rows.iter().filter(|(n, _)| !costs.contains_key(*n)) {
        if name != "every layer (f32 math)" {
            assert_eq!(*all, 100.0, "{name}:\n{checked}");
        }
    }
    // The same weights in w8a16 (the scales recovered from the requantizers and the
    // input formats): the same rows, but for a word decided by a near tie (0.5 points).
    let a16 = dir.join("netra-w8a16-one.s2s");
    quantize(&netra, "w8a16", &words, "none", &a16);
    let rows16 = sensitivity(&a16, &netra, &words);
    assert_eq!(rows16.len(), rows.len());
    for (name, (planes, all)) in &rows {
        let (p16, a16) = &rows16[name];
        assert_eq!(p16, planes, "{name}");
        assert!(
            (a16 - all).abs() <= 0.5,
            "{name}: w8a16 {a16} %, w8f32 {all} %"
        );
    }
    // The file with its planes: a layer given a second plane is listed with two.
    let two = sensitivity(&q, &netra, &words);
    for name in costs.keys() {
        assert_eq!(two[name].0, "2", "{name}");
    }
    // Refusals: a quantized reference, a beam search.
    let w8 = model_file("netra-w8a16.s2s");
    let r = s2s(
        &[
            &"check",
            &w8,
            &"--reference",
            &q,
            &"--input",
            &words,
            &"--sensitivity",
        ],
        "",
    );
    assert_one_error(&r, &["--sensitivity needs an f32 reference", "w8f32"]);
    let r = s2s(
        &[
            &"check",
            &w8,
            &"--reference",
            &netra,
            &"--input",
            &words,
            &"--sensitivity",
            &"--beam",
            &"2",
        ],
        "",
    );
    assert_one_error(&r, &["--sensitivity", "--beam"]);
}

/// The points of a `--row-curve` table: (budget, rows, overall agreement).
fn curve(report: &str) -> Vec<(f64, usize, f64)> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("row curve:"))
        .skip(2)
        .take_while(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|b| b.parse::<f64>().is_ok())
        })
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            let num = |i: usize| c[i].parse::<f64>().unwrap_or_else(|_| panic!("{l}"));
            (num(0), num(4) as usize, num(5))
        })
        .collect()
}

#[test]
fn row_curve_runs_from_one_plane_to_every_residual() {
    let netra = model_file("netra.s2s");
    let dir = scratch_dir("row-curve");
    let lines: Vec<String> = std::fs::read_to_string(golden("words-eval.txt"))
        .unwrap()
        .lines()
        .map(|w| format!("{w}\n"))
        .collect();
    let (calib, eval) = (dir.join("calib.txt"), dir.join("eval.txt"));
    std::fs::write(&calib, lines[..200].concat()).unwrap();
    std::fs::write(&eval, lines[200..400].concat()).unwrap();
    // The curve from no residual row (a 1 % budget) to every one (100 %), next to the
    // file with one plane everywhere.
    let one = dir.join("one.s2s");
    let out = quantize_with(
        &netra,
        "w8f32",
        &calib,
        &[
            &"--planes",
            &"none",
            &"--row-curve",
            &eval,
            &"--row-budgets",
            &"1,31,100",
        ],
        &one,
    );
    let report = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{report}");
    let points = curve(&report);
    assert_eq!(points.len(), 3, "{report}");
    let layers = sensitivity(&one, &netra, &eval);
    // No row: the same weights as the one-plane file, in f32 arithmetic.
    let every = "every layer (f32 math)";
    assert_eq!(points[0].1, 0, "{report}");
    assert_eq!(points[0].2, layers[every].1, "{report}");
    // Some rows within 31 %, and every row at 100 %: the file with every layer's
    // residual plane.
    assert!(points[1].1 > 0 && points[1].1 < points[2].1, "{report}");
    let names: Vec<&str> = layers
        .keys()
        .map(String::as_str)
        .filter(|n| *n != every)
        .collect();
    let two = dir.join("two.s2s");
    quantize(&netra, "w8f32", &calib, &names.join(","), &two);
    let all = sensitivity(&two, &netra, &eval);
    assert_eq!(points[2].2, all[every].1, "{report}");
    assert!(points[2].2 > points[0].2, "{report}");
    // Refusals: no calibration, a budget that is not a percentage.
    let r = s2s(
        &[
            &"quantize",
            &netra,
            &"--scheme",
            &"w8f32",
            &"--row-curve",
            &eval,
            &"-o",
            &dir.join("x.s2s"),
        ],
        "",
    );
    assert_one_error(&r, &["--row-curve needs --calib"]);
    let r = quantize_with(
        &netra,
        "w8f32",
        &calib,
        &[&"--row-curve", &eval, &"--row-budgets", &"0"],
        &dir.join("x.s2s"),
    );
    assert_one_error(&r, &["--row-budgets 0"]);
    assert!(!dir.join("x.s2s").exists());
}

/// A residual plane refines the same products: a w8a16 file whose memory projection and
/// output layer have two planes counts the MACs of its f32 original (`s2s inspect`'s row,
/// from the same `Net` counts as `s2s qemu`'s instructions per MAC), not twice theirs.
#[test]
fn residual_planes_are_not_counted_as_macs() {
    let netra = model_file("netra.s2s");
    let dir = scratch_dir("plane-macs");
    let q = dir.join("netra-planes.s2s");
    let planes = "memory_proj,output";
    let r = quantize_with(
        &netra,
        "w8a16",
        &golden("words-calib.txt"),
        &[&"--planes", &planes],
        &q,
    );
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(
        stderr.contains("a residual plane for memory_proj, output"),
        "{stderr}"
    );
    let macs = |model: &Path| {
        let inspect = s2s_ok(&[&"inspect", &model], "");
        let row = inspect
            .lines()
            .find(|l| l.starts_with("MACs"))
            .map(str::to_string);
        row.unwrap_or_else(|| panic!("no MACs row in:\n{inspect}"))
    };
    assert_eq!(macs(&q), macs(&netra));
}
