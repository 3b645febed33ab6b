//! Measuring a model: error rates against references ([`rates`]) and a quantized model
//! against its float reference ([`check`]), or a model file against its framework's own
//! decodes ([`verify`]).

pub mod check;
pub mod rates;
pub mod sensitivity;
pub mod verify;

use std::io::Write;
use std::path::Path;

use std::collections::BTreeSet;

use crate::data::{data_rows, read_pairs_each};
use crate::error::{Error, Place, Result};
use crate::io::write_atomic;
use crate::model::{decode_each, positions_for, positions_hint, Keep, LoadedModel};
use crate::plot::chart::{Chart, Series};
use crate::plot::write_chart;
use rates::{split_tokens, Report};

/// How `s2s eval` reports.
#[derive(Clone, Debug, Default)]
pub struct EvalOptions {
    /// Source-length buckets this wide (default: 1-4, 5-8, 9-12, 13+).
    pub bucket_width: Option<usize>,
    /// A JSON file to write the counts of every model and bucket to.
    pub json: Option<std::path::PathBuf>,
    /// A picture (.png or .svg) of the token error rate against source length, one line
    /// per model.
    pub plot: Option<std::path::PathBuf>,
    /// A beam search instead of greedy decoding (no attention entropy then).
    pub beam: Option<crate::model::beam::BeamOptions>,
    /// Positions and steps instead of each model's (long inputs).
    pub limits: crate::model::Limits,
}

/// The length of a source as the model splits it (end token excluded).
fn source_len(split: seq2seq::Split, s: &str) -> usize {
    match split {
        seq2seq::Split::Chars => s.chars().count(),
        seq2seq::Split::Whitespace => s.split_whitespace().count(),
    }
}

/// `s2s eval`: token and sequence error rates of each of `models` against the
/// `source<TAB>reference` lines of `data`, overall and by source length, with the mean
/// attention entropy of the decoder steps for models that attend; written to `out`,
/// and as JSON and a chart when asked.
///
/// In `data`, `#` lines are comments and blank lines are skipped (both count in the
/// line numbers). A line that is not a pair, or that a model cannot decode, is reported
/// on `errors` as `file:line: ...` and left out of the rates (of that model); the other
/// lines are measured. Returns the number of such lines.
pub fn eval_file(
    models: &[std::path::PathBuf],
    data: &Path,
    opt: &EvalOptions,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<usize> {
    let (pairs, bad) = read_pairs_each(data)?;
    let mut failed: BTreeSet<usize> = BTreeSet::new();
    for e in &bad {
        report_line(errors, e)?;
        if let Error::Invalid {
            place: Place::Line(n),
            ..
        } = e
        {
            failed.insert(*n);
        }
    }
    if pairs.is_empty() {
        return Err(no_lines(data, "source<TAB>reference"));
    }
    let sources: Vec<String> = pairs.iter().map(|p| p.source.clone()).collect();
    let mut text = String::new();
    let mut reports = Vec::new();
    for model in models {
        let m = LoadedModel::load(model)?.with_limits(opt.limits)?;
        let desc = *m.file().desc();
        let keep = Keep {
            entropy: desc.has_attention() && opt.beam.is_none(),
            beam: opt.beam,
            ..Keep::default()
        };
        let decoded = decode_each(&m, &sources, &[], keep)?;
        let sep = m.file().separator().to_string();
        let lens: Vec<usize> = sources.iter().map(|s| source_len(desc.split, s)).collect();
        let mut measured = 0;
        let mut report = match opt.bucket_width {
            Some(w) => Report::with_buckets(&Report::width_buckets(
                w,
                lens.iter().copied().max().unwrap_or(1),
            )),
            None => Report::default(),
        };
        for ((len, pair), d) in lens.iter().zip(&pairs).zip(&decoded) {
            let d = match d {
                Ok(d) => d,
                Err(e) => {
                    let e = Error::invalid(
                        data.display(),
                        Place::Line(pair.line),
                        format!(
                            "{}: {e}{}",
                            model.display(),
                            positions_hint(positions_for(&desc, e))
                        ),
                    );
                    report_line(errors, &e)?;
                    failed.insert(pair.line);
                    continue;
                }
            };
            measured += 1;
            report.add(*len, &d.tokens, &split_tokens(&pair.target, &sep));
            report.add_entropy(*len, &d.entropy);
        }
        text += &format!(
            "{} on {} ({measured} sequences{})\n{}",
            model.display(),
            data.display(),
            match sources.len() - measured {
                0 => String::new(),
                n => format!(", {n} not decoded"),
            },
            report.render()
        );
        reports.push((model, report));
    }
    if let Some(path) = &opt.json {
        let all: Vec<serde_json::Value> = reports
            .iter()
            .map(|(m, r)| {
                let mut v = r.json();
                v["model"] = m.display().to_string().into();
                v
            })
            .collect();
        let json = serde_json::json!({ "data": data.display().to_string(), "models": all });
        write_atomic(path, json.to_string().as_bytes())?;
    }
    if let Some(path) = &opt.plot {
        // The file's name, not its path: the picture is the same wherever it is made.
        let name = data.file_name().map_or(data.display().to_string(), |n| {
            n.to_string_lossy().into_owned()
        });
        write_chart(&ter_chart(&name, &reports), path)?;
    }
    out.write_all(text.as_bytes())
        .map_err(Error::io(crate::io::STDOUT_NAME))?;
    Ok(failed.len())
}

/// The chart of `s2s eval --plot`: each model's token error rate (%) by source-length
/// bucket on the data file named `data`. A bucket no measured source falls in has no
/// value, so its line has a gap there (no point, not 0 %).
fn ter_chart(data: &str, reports: &[(&std::path::PathBuf, Report)]) -> Chart {
    Chart {
        title: format!("token error rate by source length on {data}"),
        x_caption: "source length".into(),
        x_labels: reports.first().map_or(Vec::new(), |(_, r)| {
            r.buckets
                .iter()
                .map(|(b, _)| Report::bucket_name(*b))
                .collect()
        }),
        y_caption: "token error rate (%)".into(),
        series: reports
            .iter()
            .map(|(m, r)| Series {
                name: m
                    .file_stem()
                    .map_or("model".into(), |s| s.to_string_lossy().into()),
                values: r
                    .buckets
                    .iter()
                    .map(|(_, c)| c.percentages().map(|p| p.0))
                    .collect(),
                dashed: false,
            })
            .collect(),
    }
}

/// Writes one line's error to `errors` (`error: file:line: ...`).
fn report_line(errors: &mut dyn Write, e: &Error) -> Result {
    writeln!(errors, "error: {e}").map_err(Error::io("<stderr>"))
}

/// The error for a data file with nothing to measure.
fn no_lines(path: &Path, what: &str) -> Error {
    Error::invalid(
        path.display(),
        Place::File,
        format!("no {what} lines (blank and # lines do not count)"),
    )
}

/// How `s2s check` compares.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// Fail when the sequence agreement is below this percentage (0 to 100).
    pub min_agreement: Option<f64>,
    /// Add the per-layer table of [`sensitivity`] (greedy decoding, f32 reference).
    pub sensitivity: bool,
    /// A beam search instead of greedy decoding.
    pub beam: Option<crate::model::beam::BeamOptions>,
}

/// `s2s check`: `model` against its float `reference` on the lines of `input` (sources,
/// or `source<TAB>reference` lines for error rates too), written to `out`; then an error
/// when the sequence agreement is below `opt.min_agreement` percent.
///
/// Both models must be the same model (architecture, vocabularies and separator; any
/// pair of precisions). In `input`, `#` lines are comments and blank lines are skipped
/// (both count in the line numbers); an input with no other line is an error. A line
/// either model cannot decode is reported on `errors` as `file:line: ...` and left out
/// of the comparison. Returns the number of such lines.
pub fn check_file(
    model: &Path,
    reference: &Path,
    input: &Path,
    opt: &CheckOptions,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<usize> {
    let CheckOptions {
        min_agreement,
        sensitivity,
        beam,
    } = opt.clone();
    if let Some(min) = min_agreement {
        crate::error::percentage("--min-agreement", min, false)?;
    }
    let q = LoadedModel::load(model)?;
    let r = LoadedModel::load(reference)?;
    check::same_model(&q, &r)?;
    if sensitivity {
        if beam.is_some() {
            return Err(Error::usage(
                "--sensitivity compares greedy decodes: leave out --beam",
            ));
        }
        if r.file().precision() != s2s_kernels::PrecisionKind::F32 {
            return Err(Error::usage(format!(
                "--sensitivity needs an f32 reference; {} is {}",
                reference.display(),
                r.file().precision().name()
            )));
        }
    }
    let (rows, bad) = data_rows(input)?;
    for e in &bad {
        report_line(errors, e)?;
    }
    if rows.is_empty() {
        return Err(no_lines(input, "input"));
    }
    let tsv = rows.iter().all(|(_, l)| l.contains('\t'));
    let sources: Vec<String> = rows
        .iter()
        .map(|(_, l)| crate::io::source_of(l).to_string())
        .collect();
    let refs: Vec<String> = rows
        .iter()
        .map(|(_, l)| {
            l.split_once('\t')
                .map_or(String::new(), |(_, t)| t.to_string())
        })
        .collect();
    let rep = check::check(&q, &r, &sources, tsv.then_some(&refs[..]), beam)?;
    for (i, why) in &rep.failed {
        let e = Error::invalid(input.display(), Place::Line(rows[*i].0), why.clone());
        report_line(errors, &e)?;
    }
    let mut text = format!(
        "{} against {} on {} inputs{}\n{}",
        model.display(),
        reference.display(),
        rep.sequences,
        match rep.failed.len() {
            0 => String::new(),
            n => format!(" ({n} not decoded)"),
        },
        rep.render()
    );
    if sensitivity {
        text += &sensitivity::sensitivity(&q, &r, &sources)?.render();
    }
    out.write_all(text.as_bytes())
        .map_err(Error::io(crate::io::STDOUT_NAME))?;
    match min_agreement {
        Some(min) if rep.sequence_agreement() < min => Err(Error::usage(format!(
            "sequence agreement {:.2} % is below --min-agreement {min} %",
            rep.sequence_agreement()
        ))),
        _ => Ok(bad.len() + rep.failed.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_leaves_a_gap_for_a_bucket_without_sources() {
        let mut r = Report::with_buckets(&Report::width_buckets(2, 8));
        r.add(1, &["a", "b"], &["a", "c"]);
        r.add(6, &["a"], &["a"]);
        r.add(7, &["a", "b", "c", "d"], &["x", "b", "c", "d"]);
        let model = std::path::PathBuf::from("models/m-w8a16.s2s");
        let chart = ter_chart("d.tsv", &[(&model, r)]);
        assert_eq!(chart.x_labels, ["1-2", "3-4", "5-6", "7-8"]);
        assert_eq!(chart.series[0].name, "m-w8a16");
        // 3-4 has no source: no value, not 0 %; 5-6 has one without error: 0 %.
        assert_eq!(
            chart.series[0].values,
            [Some(50.0), None, Some(0.0), Some(25.0)]
        );
        let svg = chart.svg();
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(!svg.contains("<title>m-w8a16 3-4:"));
    }
}
