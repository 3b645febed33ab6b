//! `s2s quantize`: an f32 model file into `w8f32` (int8 weights, f32 math) or `w8a16`
//! (int8 weights, int16 activations, integers only), calibrated on whole sequences.
//!
//! Weights: symmetric int8 per output row, `s_r = max|w_r| / 127`. Activations in
//! `w8a16` are `Q(15-f).f` per tensor kind; `f` is fixed where the range is known
//! (recurrent states, tanh and sigmoid outputs, attention weights: `Q0.15`) and
//! calibrated where it is not (embeddings from their tables; the projected memory, the
//! keys and the LSTM cell states from runs of the float model over the calibration
//! set). Each layer's requantizer per row and input
//! part folds `s_r` and the part's format into one integer multiplier and shift that
//! lands the result in the wide `Q16.15` domain; biases are stored there as `i32`.
//!
//! `w8a16` weights may be stored in a weight [`Layout`] other than row-major int8 (a
//! re-encoding of the same values that one instruction set reads faster; every board
//! reads every layout with the same results).

pub mod calibrate;
pub mod formats;
pub mod gptq;
pub mod planes;
pub mod row_curve;

use std::fmt::Write;
use std::path::Path;

use s2s_kernels::{Layout, PrecisionKind, Requant};
use seq2seq::builder::ModelBuilder;
use seq2seq::desc::ModelDesc;
use seq2seq::format::{DType, Slot, TensorId};

pub use calibrate::{calibrate, calibrate_ranges, Calibration};
pub use planes::Planes;
pub use row_curve::CurveRequest;

use crate::error::{Error, Place, Result};
use crate::io::{read_lines, source_of, write_atomic};
use crate::model::dequant::builder_like;
use crate::model::LoadedModel;

/// The target number format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// int8 weights, int16 activations, int32 accumulators.
    W8a16,
    /// int8 weights dequantized on the fly, f32 math.
    W8f32,
}

/// Symmetric int8 per row: the codes and the row scales.
pub fn quantize_rows(w: &[f32], cols: usize) -> (Vec<i8>, Vec<f32>) {
    let mut q = Vec::with_capacity(w.len());
    let mut scales = vec![];
    for row in w.chunks(cols.max(1)) {
        let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let s = max / 127.0;
        scales.push(s);
        for &v in row {
            q.push(if s == 0.0 {
                0
            } else {
                (v / s).round().clamp(-127.0, 127.0) as i8
            });
        }
    }
    (q, scales)
}

/// Quantizes an f32 model, its int8 weights stored in `layout` (w8a16 only). `w8a16`
/// needs a calibration; without one, `Planes::Auto` keeps one plane everywhere.
pub fn quantize(
    m: &LoadedModel,
    scheme: Scheme,
    planes: &Planes,
    layout: Layout,
    calib: Option<&Calibration>,
) -> Result<(ModelBuilder, String)> {
    can_quantize(m, scheme, layout)?;
    let layers = planes::round_layers(m, calib)?;
    quantize_rounded(m, scheme, planes, layout, calib, &layers)
}

/// Quantizes an f32 model as quantization-aware training sees it: every weight
/// rounded to nearest (no error compensation), one plane, row-major; `calib` gives the
/// w8a16 formats.
pub fn quantize_nearest(
    m: &LoadedModel,
    scheme: Scheme,
    calib: Option<&Calibration>,
) -> Result<ModelBuilder> {
    can_quantize(m, scheme, Layout::Row)?;
    let layers = planes::round_layers(m, None)?;
    quantize_rounded(m, scheme, &Planes::None, Layout::Row, calib, &layers).map(|(b, _)| b)
}

/// Refuses what cannot be quantized: a model that is not f32, a layout other than
/// `row` for w8f32.
fn can_quantize(m: &LoadedModel, scheme: Scheme, layout: Layout) -> Result {
    let file = m.file();
    if file.precision() != PrecisionKind::F32 {
        return Err(Error::usage(format!(
            "{}: quantize needs an f32 model, this one is {}",
            m.path.display(),
            file.precision().name()
        )));
    }
    if layout != Layout::Row && scheme != Scheme::W8a16 {
        return Err(Error::usage(format!(
            "--layout {} is for w8a16 (the integer kernels); w8f32 stores row",
            layout.name()
        )));
    }
    Ok(())
}

/// [`quantize`] with every layer already rounded ([`planes::round_layers`]).
fn quantize_rounded(
    m: &LoadedModel,
    scheme: Scheme,
    planes: &Planes,
    layout: Layout,
    calib: Option<&Calibration>,
    layers: &[planes::QuantLayer],
) -> Result<(ModelBuilder, String)> {
    let file = m.file();
    let mut desc: ModelDesc = *file.desc();
    let mut report = String::new();
    let precision = match scheme {
        Scheme::W8a16 => PrecisionKind::W8A16,
        Scheme::W8f32 => PrecisionKind::W8F32,
    };
    if scheme == Scheme::W8a16 {
        let calib = calib.ok_or_else(|| Error::usage("w8a16 needs a calibration set (--calib)"))?;
        formats::choose_formats(m, &mut desc, calib, &mut report)?;
    }
    desc.check().map_err(Error::model(&m.path))?;

    let two = planes::choose_planes(m, layers, planes, calib, &mut report)?;
    let mut b = builder_like(&file, precision, desc);
    let (mut smin, mut smax) = (f32::MAX, 0.0f32);
    for (l, &two) in layers.iter().zip(&two) {
        let s = &l.spec;
        let id = |slot| TensorId::new(s.role, s.layer, s.dir, slot);
        let planes = 1 + two as usize;
        // Each row stores its planes one after the other, and so do its scales.
        let mut codes = Vec::with_capacity(planes * l.params());
        let mut scales = Vec::with_capacity(planes * s.rows);
        for r in 0..s.rows {
            for p in 0..planes {
                codes.extend_from_slice(&l.codes[p][r * s.cols..(r + 1) * s.cols]);
                scales.push(l.scales[p][r]);
            }
        }
        for &sc in l.scales[0].iter().filter(|&&x| x > 0.0) {
            smin = smin.min(sc);
            smax = smax.max(sc);
        }
        b.tensor(id(Slot::Weight), DType::I8, s.rows, s.cols * planes, &codes);
        let bias = file
            .data::<f32>(id(Slot::Bias))
            .map_err(Error::model(&m.path))?
            .map(|(_, d)| d);
        match scheme {
            Scheme::W8f32 => {
                b.tensor(id(Slot::RowQ), DType::F32, s.rows, planes, &scales);
                if let Some(bias) = bias {
                    b.tensor(id(Slot::Bias), DType::F32, s.rows, 1, bias);
                }
            }
            Scheme::W8a16 => {
                let fmts = desc.part_fmts(s);
                let mut rq = Vec::with_capacity(scales.len() * fmts.len());
                for &sc in &scales {
                    for f in &fmts {
                        // Output of an embedding: an activation in its own format; of
                        // any other layer: the wide Q16.15 domain.
                        let exp = if s.is_embedding() {
                            f.frac as i32
                        } else {
                            15 - f.frac as i32
                        };
                        rq.push(Requant::from_real(sc as f64 * 2f64.powi(exp)));
                    }
                }
                b.requant(id(Slot::RowQ), s.rows, fmts.len() * planes, &rq);
                if let Some(bias) = bias {
                    let qb: Vec<i32> = bias
                        .iter()
                        .map(|&v| {
                            (v as f64 * 32768.0)
                                .round()
                                .clamp(i32::MIN as f64, i32::MAX as f64)
                                as i32
                        })
                        .collect();
                    b.tensor(id(Slot::Bias), DType::I32, s.rows, 1, &qb);
                }
            }
        }
    }
    b.lay_out(layout);
    let n2: Vec<&str> = layers
        .iter()
        .zip(&two)
        .filter(|(_, t)| **t)
        .map(|(l, _)| l.name.as_str())
        .collect();
    let _ = writeln!(
        report,
        "weights: {} layers as int8 ({} layout){}{}, per-row scales from {smin:.3e} to {smax:.3e}",
        layers.len(),
        layout.name(),
        if calib.is_some() {
            ", rounded with error compensation over the calibration inputs"
        } else {
            ""
        },
        if n2.is_empty() {
            String::new()
        } else {
            format!("; a residual plane for {}", n2.join(", "))
        }
    );
    Ok((b, report))
}

/// `s2s quantize`: quantizes the f32 model file `model` with `scheme` (calibrated on the
/// sources of `calib`, each line's first tab-separated column ([`source_of`]), with a
/// progress bar on standard error), weights in `layout`, and
/// writes `output` atomically; with `curve`, the report also has the row curve
/// ([`row_curve`]). Returns the report, ending with what was written.
pub fn quantize_file(
    model: &Path,
    calib: Option<&Path>,
    scheme: Scheme,
    planes: &Planes,
    layout: Layout,
    curve: Option<&CurveRequest>,
    output: &Path,
) -> Result<String> {
    let m = LoadedModel::load(model)?;
    let calibration = match (scheme, calib) {
        (Scheme::W8a16, None) => {
            return Err(Error::usage(
                "w8a16 needs --calib FILE (sources, one per line)",
            ))
        }
        (_, Some(path)) => {
            let lines: Vec<String> = read_lines(Some(path))?
                .iter()
                .map(|l| source_of(l).to_string())
                .collect();
            let bar = indicatif::ProgressBar::new(lines.len() as u64).with_style(
                indicatif::ProgressStyle::with_template(
                    "calibrating {bar:40} {pos}/{len} sequences",
                )
                .expect("a valid progress template"),
            );
            let c = calibrate(&m, &lines, |n| bar.set_position(n as u64)).map_err(|e| match e {
                Error::Usage(message) => Error::invalid(path.display(), Place::File, message),
                e => e,
            })?;
            bar.finish_and_clear();
            Some(c)
        }
        (Scheme::W8f32, None) => None,
    };
    // Rounding (GPTQ) is the costly part: once, for the file and the row curve.
    can_quantize(&m, scheme, layout)?;
    let layers = planes::round_layers(&m, calibration.as_ref())?;
    let curve = match (curve, &calibration) {
        (None, _) => None,
        (Some(_), None) => return Err(Error::usage("--row-curve needs --calib")),
        (Some(req), Some(c)) => {
            // As `s2s check --input` reads it: `#` comments and blank lines skipped,
            // each line's source.
            let (rows, errors) = crate::data::data_rows(req.eval)?;
            if let Some(e) = errors.into_iter().next() {
                return Err(e);
            }
            let eval: Vec<String> = rows.iter().map(|(_, t)| source_of(t).to_string()).collect();
            let (one, _) = quantize_rounded(&m, scheme, &Planes::None, layout, Some(c), &layers)?;
            let one = one.to_bytes().map_err(Error::model(output))?.len();
            Some(row_curve::row_curve(&m, c, &layers, &eval, one, &req.budgets)?.render())
        }
    };
    let (builder, mut report) =
        quantize_rounded(&m, scheme, planes, layout, calibration.as_ref(), &layers)?;
    report += curve.as_deref().unwrap_or("");
    let bytes = builder.to_bytes().map_err(Error::model(output))?;
    LoadedModel::from_bytes(output, &bytes)?;
    write_atomic(output, &bytes)?;
    let _ = writeln!(
        report,
        "wrote {} ({} bytes, {:.1} % of the f32 file)",
        output.display(),
        bytes.len(),
        100.0 * bytes.len() as f64 / m.bytes().len() as f64
    );
    Ok(report)
}
