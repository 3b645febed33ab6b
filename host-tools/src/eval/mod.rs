//! Measuring a model: error rates against references ([`rates`]) and a quantized model
//! against its float reference ([`check`]).

pub mod check;
pub mod rates;

use std::io::Write;
use std::path::Path;

use crate::data::{data_rows, read_pairs};
use crate::error::{Error, Result};
use crate::model::{decode_lines, Keep, LoadedModel};
use rates::{split_tokens, Report};

/// `s2s eval`: token and sequence error rates of `model` against the
/// `source<TAB>reference` lines of `data`, overall and by source length, written to `out`.
pub fn eval_file(model: &Path, data: &Path, out: &mut dyn Write) -> Result {
    let m = LoadedModel::load(model)?;
    let (sources, refs): (Vec<String>, Vec<String>) = read_pairs(data)?
        .into_iter()
        .map(|p| (p.source, p.target))
        .unzip();
    let decoded = decode_lines(&m, &sources, Keep::default())?;
    let sep = m.file().separator().to_string();
    let mut report = Report::default();
    for ((s, r), d) in sources.iter().zip(&refs).zip(&decoded) {
        let len = match m.file().desc().split {
            seq2seq::Split::Chars => s.chars().count(),
            seq2seq::Split::Whitespace => s.split_whitespace().count(),
        };
        report.add(len, &d.tokens, &split_tokens(r, &sep));
    }
    let text = format!(
        "{} on {} ({} sequences)\n{}",
        model.display(),
        data.display(),
        sources.len(),
        report.render()
    );
    out.write_all(text.as_bytes())
        .map_err(Error::io("<stdout>"))
}

/// `s2s check`: `model` against its float `reference` on the lines of `input` (sources,
/// or `source<TAB>reference` lines for error rates too), written to `out`; then an error
/// when the sequence agreement is below `min_agreement` percent.
pub fn check_file(
    model: &Path,
    reference: &Path,
    input: &Path,
    min_agreement: Option<f64>,
    out: &mut dyn Write,
) -> Result {
    let q = LoadedModel::load(model)?;
    let r = LoadedModel::load(reference)?;
    let rows: Vec<String> = data_rows(input)?.into_iter().map(|(_, l)| l).collect();
    let tsv = rows.iter().all(|l| l.contains('\t'));
    let sources: Vec<String> = rows
        .iter()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    let refs: Vec<String> = rows
        .iter()
        .map(|l| {
            l.split_once('\t')
                .map_or(String::new(), |(_, t)| t.to_string())
        })
        .collect();
    let rep = check::check(&q, &r, &sources, tsv.then_some(&refs[..]))?;
    let text = format!(
        "{} against {} on {} inputs\n{}",
        model.display(),
        reference.display(),
        sources.len(),
        rep.render()
    );
    out.write_all(text.as_bytes())
        .map_err(Error::io("<stdout>"))?;
    match min_agreement {
        Some(min) if rep.sequence_agreement() < min => Err(Error::usage(format!(
            "sequence agreement {:.2} % is below --min-agreement {min} %",
            rep.sequence_agreement()
        ))),
        _ => Ok(()),
    }
}
