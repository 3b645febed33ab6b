//! The activation formats of `w8a16`: from the embedding tables and the calibration.

use std::fmt::Write;

use s2s_kernels::{Fmt, Requant};
use seq2seq::desc::{Activation, CellKind, Init, ModelDesc};
use seq2seq::format::{Role, Slot, TensorId};
use seq2seq::Probe;

use super::calibrate::Calibration;
use crate::error::{Error, Result};
use crate::model::LoadedModel;

/// Headroom kept above the calibrated maximum when choosing a format.
pub const MARGIN: f32 = 1.25;

/// The most fractional bits `f` (between -8 and 15) such that `max * MARGIN` fits in
/// `Q(15-f).f`.
pub fn choose_frac(max: f32) -> i8 {
    let mut f = 15i8;
    while f > -8 && max * MARGIN * 2f32.powi(f as i32) > 32767.0 {
        f -= 1;
    }
    f
}

/// The format of LSTM cell states whose largest magnitude is `max`: [`choose_frac`]
/// within `0..=15`, the formats the cell update supports (`|c|` beyond 32767 is
/// impossible in practice, below 1 the format is `Q0.15`).
pub fn choose_cell_frac(max: f32) -> i8 {
    choose_frac(max).clamp(0, seq2seq::desc::MAX_CELL_FRAC)
}

fn fmt_name(f: Fmt) -> String {
    format!(
        "Q{}.{} (range ±{})",
        15 - f.frac as i32,
        f.frac,
        2f64.powi(15 - f.frac as i32)
    )
}

/// Chooses the activation formats of `w8a16` from the tables and the calibration.
pub(crate) fn choose_formats(
    m: &LoadedModel,
    desc: &mut ModelDesc,
    calib: &Calibration,
    report: &mut String,
) -> Result<()> {
    let file = m.file();
    let table_max = |role| -> Result<f32> {
        let id = TensorId::new(role, 0, 0, Slot::Weight);
        Ok(file
            .data::<f32>(id)
            .map_err(Error::model(&m.path))?
            .map_or(0.0, |(_, d)| d.iter().fold(0.0f32, |a, v| a.max(v.abs()))))
    };
    let (se, de) = (table_max(Role::EncEmb)?, table_max(Role::DecEmb)?);
    desc.fmt_src_emb = Fmt {
        frac: choose_frac(se),
    };
    desc.fmt_dec_emb = Fmt {
        frac: choose_frac(de),
    };
    let get = |p| calib.max.get(&p).copied().unwrap_or(0.0);
    if desc.memory_proj.is_some() {
        desc.fmt_memory = Fmt {
            frac: choose_frac(get(Probe::Memory)),
        };
    }
    if desc.keys_stored() {
        desc.attention.fmt_keys = Fmt {
            frac: choose_frac(get(Probe::Keys)),
        };
    }
    // A relu or linear attentional vector is not a unit value.
    let att_calibrated = desc.attentional.is_some() && desc.extras.att_act != Activation::Tanh;
    if att_calibrated {
        desc.extras.fmt_attentional = Fmt {
            frac: choose_frac(get(Probe::Attentional)),
        };
    }
    // LSTM cell states: a power-of-two format from the largest |c| seen at any step
    // (the decoder's also holds its initial cell states, the encoder's final ones
    // when it starts from them).
    let [enc_c, mut dec_c] = calib.cell_max;
    if desc.cells.init_cell == Init::Last {
        dec_c = dec_c.max(enc_c);
    }
    if desc.cells.enc == CellKind::Lstm {
        desc.cells.fmt_enc = Fmt {
            frac: choose_cell_frac(enc_c),
        };
    }
    if desc.cells.dec == CellKind::Lstm {
        desc.cells.fmt_dec = Fmt {
            frac: choose_cell_frac(dec_c),
        };
    }
    if desc.attention.score.scaled() {
        desc.attention.scale_q = Requant::from_real(desc.attention.scale as f64);
    }
    let _ = writeln!(
        report,
        "calibration: {} sequences{}",
        calib.sequences,
        if calib.skipped.is_empty() {
            String::new()
        } else {
            format!(
                " ({} lines skipped: {})",
                calib.skipped.len(),
                calib
                    .skipped
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }
    );
    let _ = writeln!(report, "{:<18} {:>10}  format", "tensor", "max |x|");
    let mut row = |name: &str, max: f32, fmt: String| {
        let _ = writeln!(report, "{name:<18} {max:>10.4}  {fmt}");
    };
    row(
        "source embedding",
        se,
        fmt_name(desc.fmt_src_emb) + ", from the table",
    );
    row(
        "target embedding",
        de,
        fmt_name(desc.fmt_dec_emb) + ", from the table",
    );
    row(
        "encoder outputs",
        get(Probe::EncoderOutputs),
        "Q0.15 (recurrent states)".into(),
    );
    if desc.cells.enc == CellKind::Lstm {
        row(
            "encoder cells",
            enc_c,
            fmt_name(desc.cells.fmt_enc) + ", every step",
        );
    }
    if desc.memory_proj.is_some() {
        row("memory", get(Probe::Memory), fmt_name(desc.fmt_memory));
    }
    if desc.keys_stored() {
        row("keys", get(Probe::Keys), fmt_name(desc.attention.fmt_keys));
    }
    row(
        "decoder states",
        get(Probe::DecoderState),
        "Q0.15 (recurrent states)".into(),
    );
    if desc.cells.dec == CellKind::Lstm {
        row(
            "decoder cells",
            dec_c,
            fmt_name(desc.cells.fmt_dec) + ", every step",
        );
    }
    if att_calibrated {
        row(
            "attentional",
            get(Probe::Attentional),
            fmt_name(desc.extras.fmt_attentional),
        );
    }
    if desc.has_attention() {
        row(
            "context",
            get(Probe::Context),
            "memory's format (convex combination)".into(),
        );
        row(
            "scores",
            get(Probe::Scores),
            "Q16.15 wide (range ±65536)".into(),
        );
    }
    row(
        "logits",
        calib.logits_max,
        "Q16.15 wide (range ±65536)".into(),
    );
    let wide_max = get(Probe::Scores).max(calib.logits_max);
    if wide_max * MARGIN > 65536.0 {
        let _ = writeln!(
            report,
            "warning: wide values reach {wide_max}: they will saturate at ±65536"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantize::quantize_rows;

    #[test]
    fn formats_leave_the_margin() {
        assert_eq!(choose_frac(0.0), 15);
        assert_eq!(choose_frac(0.5), 15);
        assert_eq!(choose_frac(0.9), 14);
        assert_eq!(choose_frac(3.0), 13);
        assert_eq!(choose_frac(1e9), -8);
        assert_eq!(choose_cell_frac(0.3), 15);
        assert_eq!(choose_cell_frac(5.0), 12);
        assert_eq!(choose_cell_frac(1e9), 0);
    }

    #[test]
    fn rows_quantize_symmetrically() {
        let (q, s) = quantize_rows(&[1.0, -0.5, 0.25, 0.0, 0.0, 0.0], 3);
        assert_eq!(q, [127, -64, 32, 0, 0, 0]);
        assert_eq!(s, [1.0 / 127.0, 0.0]);
    }
}
