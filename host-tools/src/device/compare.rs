//! The device's outputs against the host running the same core on the same inputs.

use s2s_device::protocol::code::DeviceCode;
use s2s_device::protocol::PhaseCounts;

use super::report::{Mismatch, QemuReport, Rejected, Spread};
use super::session::{DeviceSession, Refused};
use crate::error::{Error, Result};
use crate::model::{Decoded, HostRunner, Keep, LoadedModel};
use seq2seq::Prefix;

/// The host's side: decodings at the device's number of positions, and the MACs.
struct HostSide {
    outputs: Vec<Result<Decoded, seq2seq::Error>>,
    /// Positions the encoder steps over and its MACs, per input.
    enc_steps_macs: Vec<(usize, usize)>,
    /// Decoder MACs per step of each input (depends on its source positions).
    macs_per_step: Vec<usize>,
}

fn host_side(
    m: &LoadedModel,
    (inputs, prefix): (&[String], &Prefix),
    positions: usize,
    keep: Keep,
) -> Result<HostSide> {
    m.with_net(|any| {
        Ok(crate::dispatch!(any, |net: P| {
            let mut r = HostRunner::<P>::new(&net, positions);
            let outputs: Vec<Result<Decoded, seq2seq::Error>> =
                inputs.iter().map(|l| r.decode(l, prefix, keep)).collect();
            let macs_per_step = outputs
                .iter()
                .map(|o| o.as_ref().map_or(0, |d| net.macs_per_step(d.source.len())))
                .collect();
            // A masked encoder steps over the real positions only.
            let mut ids = vec![0u16; positions];
            let enc_steps_macs = inputs
                .iter()
                .zip(&outputs)
                .map(|(l, o)| {
                    let t = o.as_ref().map_or(0, |d| d.source.len());
                    let (v, slots) = (&net.src_vocab, &net.slots());
                    let valid =
                        seq2seq::vocab::encode_source(&net.desc, v, slots, prefix, l, &mut ids)
                            .map_or(t, |(_, valid)| valid);
                    (net.encoder_steps(t, valid), net.encoder_macs(t, valid))
                })
                .collect();
            HostSide {
                outputs,
                enc_steps_macs,
                macs_per_step,
            }
        }))
    })
}

/// Whether the device refused an input as the host did: the same message, or from a
/// firmware that writes codes (`error-codes`) the same code; a line too long for the
/// board's buffer is the device's own refusal.
fn same_refusal(device: &Refused, host: &seq2seq::Error) -> bool {
    match device.code() {
        Some(code) => code == host.code() || code == DeviceCode::LineTooLong.code(),
        None => {
            device.reason == host.to_string() || device.reason == DeviceCode::LineTooLong.as_str()
        }
    }
}

/// Compares a device session with the host running the same `inputs` (ids, text, the
/// rejection reasons, and with `attention` every attention weight, exactly).
pub fn compare(
    host: &LoadedModel,
    session: &DeviceSession,
    inputs: &[String],
    attention: bool,
    beam: Option<usize>,
    prefix: &Prefix,
) -> Result<QemuReport> {
    let file = host.file();
    let precision = file.precision().name();
    let differ = |message: String| Error::device(session.board.name, message);
    if session.model.precision != precision || session.model.bytes != file.bytes().len() {
        return Err(differ(format!(
            "the device serves a {} model of {} bytes, {} is {precision} of {} bytes",
            session.model.precision,
            session.model.bytes,
            host.path.display(),
            file.bytes().len()
        )));
    }
    if session.outputs.len() != inputs.len() {
        return Err(differ(format!(
            "{} answers for {} inputs",
            session.outputs.len(),
            inputs.len()
        )));
    }
    let attends = attention && file.desc().has_attention();
    let keep = Keep {
        weights: attends,
        beam: beam.map(|width| crate::model::beam::BeamOptions {
            width,
            variant: None,
            alpha: None,
        }),
        ..Keep::default()
    };
    let h = host_side(host, (inputs, prefix), session.model.positions, keep)?;
    let mut mismatches = Vec::new();
    let mut rejected = Vec::new();
    let (mut attention_rows, mut positions) = (0, 0);
    let (mut enc_macs, mut dec_macs) = (0u128, 0u128);
    let mut enc = Vec::new();
    let mut steps = Vec::new();
    let mut phases: Option<PhaseCounts> = None;
    for (i, ((input, dev), hst)) in inputs
        .iter()
        .zip(&session.outputs)
        .zip(&h.outputs)
        .enumerate()
    {
        let mut mismatch = |what: String| {
            mismatches.push(Mismatch {
                line: i + 1,
                input: input.clone(),
                what,
            })
        };
        match (dev, hst) {
            (Ok(d), Ok(hd)) => {
                enc.push(d.enc_insns);
                let (enc_steps, macs) = h.enc_steps_macs[i];
                positions += enc_steps;
                enc_macs += macs as u128;
                steps.extend_from_slice(&d.step_insns);
                if let Some(p) = &d.phases {
                    add_phases(phases.get_or_insert_with(PhaseCounts::default), p);
                }
                if beam.is_none() {
                    dec_macs += h.macs_per_step[i] as u128 * d.step_insns.len() as u128;
                }
                if d.ids != hd.ids {
                    mismatch(format!(
                        "ids {:?} on the device, {:?} on the host",
                        d.ids, hd.ids
                    ));
                    continue;
                }
                if d.text != hd.text {
                    mismatch(format!(
                        "text {:?} on the device, {:?} on the host",
                        d.text, hd.text
                    ));
                    continue;
                }
                let want_steps = hd.ids.len() + 1;
                // A search step counts per step of the search, not per output token.
                if beam.is_none() && d.step_insns.len() != want_steps.min(file.desc().max_steps) {
                    mismatch(format!(
                        "{} step counts for {} output ids",
                        d.step_insns.len(),
                        hd.ids.len()
                    ));
                    continue;
                }
                if attends {
                    if let Some(what) = compare_rows(&d.attention, &hd.raw_weights) {
                        mismatch(what);
                        continue;
                    }
                    attention_rows += d.attention.len();
                }
            }
            (Err(de), Err(he)) if same_refusal(de, he) => rejected.push(Rejected {
                line: i + 1,
                input: input.clone(),
                reason: de.to_string(),
            }),
            (Err(de), Err(he)) => mismatch(format!("device: ERR {de}; host: {he}")),
            (Err(de), Ok(hd)) => mismatch(format!("device: ERR {de}; host: ids {:?}", hd.ids)),
            (Ok(d), Err(he)) => mismatch(format!("device: ids {:?}; host: {he}", d.ids)),
        }
    }
    Ok(QemuReport {
        board: session.board,
        model: host.path.clone(),
        info: session.model.clone(),
        stats: session.stats,
        inputs: inputs.len(),
        rejected,
        mismatches,
        attention_rows,
        beam,
        enc: Spread::of(enc),
        positions,
        step: Spread::of(steps),
        enc_macs,
        dec_macs,
        phases,
        elapsed: session.elapsed,
        via: session.via.clone(),
    })
}

/// Adds one line's phase counts to `sum`.
fn add_phases(sum: &mut PhaseCounts, p: &PhaseCounts) {
    let pairs = sum
        .enc
        .iter_mut()
        .zip(&p.enc)
        .chain(sum.tok.iter_mut().zip(&p.tok));
    for (s, v) in pairs.chain(sum.marks.iter_mut().zip(&p.marks)) {
        *s += v;
    }
    sum.mark_insns = sum.mark_insns.max(p.mark_insns);
}

/// The first difference between the device's and the host's attention rows.
fn compare_rows(dev: &[Vec<i64>], host: &[Vec<i64>]) -> Option<String> {
    if dev.len() != host.len() {
        return Some(format!(
            "{} attention rows on the device, {} on the host",
            dev.len(),
            host.len()
        ));
    }
    for (step, (d, h)) in dev.iter().zip(host).enumerate() {
        if d.len() != h.len() {
            return Some(format!(
                "attention step {step}: {} weights on the device, {} on the host",
                d.len(),
                h.len()
            ));
        }
        if let Some(p) = d.iter().zip(h).position(|(a, b)| a != b) {
            return Some(format!(
                "attention step {step} position {p}: {:#x} on the device, {:#x} on the host",
                d[p], h[p]
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_agree_by_message_or_by_code() {
        let host = seq2seq::Error::InputTooLong { len: 30, max: 25 };
        let refused = |reason: &str| Refused {
            reason: reason.into(),
        };
        assert!(same_refusal(&refused(&host.to_string()), &host));
        assert!(same_refusal(&refused("E64"), &host));
        assert!(!same_refusal(&refused("E65"), &host));
        assert!(!same_refusal(&refused("empty input"), &host));
        // A line too long for the board's buffer, in words or as its code.
        assert!(same_refusal(&refused("line too long"), &host));
        assert!(same_refusal(&refused("E100"), &host));
    }
}
