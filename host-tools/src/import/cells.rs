//! Recurrent cells in model configurations and imports: GRU or LSTM per stack, the
//! gates' activation, the GRU-only reset form, Keras masking of padded source steps,
//! the initial cell state of an LSTM decoder, the attentional layer's input, and the
//! gate orders of stored recurrent matrices. See `docs/MODEL_CONFIG.md`.

use rnn_core::{Masked, Recurrent, ResetMode};
use seq2seq::desc::{CellKind, Init, ModelDesc, Part, MAX_OUT_PARTS};
use seq2seq::format::Role;

use crate::error::{Place, Result};
use crate::import::config::{
    CellName, Config, InitName, MaskedName, PartName, RecurrentName, ResetName,
};

impl From<CellName> for CellKind {
    fn from(c: CellName) -> Self {
        match c {
            CellName::Gru => CellKind::Gru,
            CellName::Lstm => CellKind::Lstm,
        }
    }
}

impl From<RecurrentName> for Recurrent {
    fn from(r: RecurrentName) -> Self {
        match r {
            RecurrentName::Sigmoid => Recurrent::Sigmoid,
            RecurrentName::HardSigmoidKeras2 => Recurrent::HardSigmoidKeras2,
            RecurrentName::HardSigmoidKeras3 => Recurrent::HardSigmoidKeras3,
        }
    }
}

impl From<MaskedName> for Masked {
    fn from(m: MaskedName) -> Self {
        match m {
            MaskedName::Previous => Masked::Previous,
            MaskedName::Zeros => Masked::Zeros,
        }
    }
}

/// The cell and reset form of one stack of `cfg`: `reset` is required for a GRU and
/// refused for an LSTM.
fn stack(
    cfg: &Config,
    section: &str,
    cell: CellName,
    reset: Option<ResetName>,
) -> Result<(CellKind, ResetMode)> {
    match (cell, reset) {
        (CellName::Gru, Some(r)) => Ok((CellKind::Gru, r.into())),
        (CellName::Gru, None) => Err(cfg.error(
            Place::File,
            format!("{section}.reset is required for a GRU (\"after\" or \"before\")"),
        )),
        (CellName::Lstm, None) => Ok((CellKind::Lstm, ResetMode::After)),
        (CellName::Lstm, Some(_)) => Err(cfg.error(
            Place::File,
            format!("{section}.reset is a GRU setting: an LSTM has no reset gate (remove it)"),
        )),
    }
}

/// Sets the description's recurrent fields from the configuration: cells, reset forms,
/// gate activations, encoder masking, the initial cell state and the attentional
/// layer's input. Each misuse is one line naming the key.
pub fn configure(cfg: &Config, d: &mut ModelDesc) -> Result {
    let bad = |message: String| cfg.error(Place::File, message);
    let (enc, dec) = (&cfg.encoder, &cfg.decoder);
    (d.cells.enc, d.enc_reset) = stack(cfg, "encoder", enc.cell, enc.reset)?;
    (d.cells.dec, d.dec_reset) = stack(cfg, "decoder", dec.cell, dec.reset)?;
    d.cells.enc_recurrent = enc.recurrent_activation.into();
    d.cells.dec_recurrent = dec.recurrent_activation.into();
    if let Some(m) = enc.masked_output {
        if cfg.source.pad_to.is_none() {
            return Err(bad(format!(
                "encoder.masked_output = {:?}: the source has no padding to mask (set source.pad_to, or remove the key for a model trained without a mask)",
                masked_name(m)
            )));
        }
        d.cells.enc_mask = Some(m.into());
    }
    d.cells.init_cell = match (dec.cell, dec.init_cell) {
        (CellName::Gru, Some(_)) => {
            return Err(bad(
                "decoder.init_cell is for an LSTM decoder: a GRU has no cell state (remove it)"
                    .into(),
            ))
        }
        (CellName::Gru, None) => Init::Zeros,
        (CellName::Lstm, Some(InitName::Mean)) => {
            return Err(bad(
                "decoder.init_cell = \"mean\": the mean bridge is for the state (use \"zeros\", \"last\" or \"dense\")"
                    .into(),
            ))
        }
        (CellName::Lstm, Some(i)) => i.into(),
        (CellName::Lstm, None) if enc.cell == CellName::Lstm && d.init != Init::Mean => d.init,
        (CellName::Lstm, None) => Init::Zeros,
    };
    if d.cells.init_cell == Init::Last && enc.cell == CellName::Gru {
        return Err(bad(
            "decoder.init_cell = \"last\": a GRU encoder has no cell states (use \"zeros\", or \"dense\" for a bridge of its final states)"
                .into(),
        ));
    }
    let att = cfg.attention.as_ref();
    let input = att.and_then(|a| a.attentional_input.as_deref());
    match (att.and_then(|a| a.attentional), input) {
        (None, Some(_)) => {
            return Err(bad(
                "attention.attentional_input needs attention.attentional".into(),
            ));
        }
        (None, None) => {}
        (Some(_), parts) => {
            let parts = parts.unwrap_or(&[PartName::State, PartName::Context]);
            if parts.is_empty() || parts.len() > MAX_OUT_PARTS {
                return Err(bad(format!(
                    "attention.attentional_input: 1 to {MAX_OUT_PARTS} parts"
                )));
            }
            for (o, &p) in d.att_parts.iter_mut().zip(parts) {
                if p == PartName::Attentional {
                    return Err(bad("attention.attentional_input: \"attentional\" is the layer's own output (use \"state\", \"context\", \"embedding\")".into()));
                }
                *o = Some(Part::from(p));
            }
        }
    }
    Ok(())
}

fn masked_name(m: MaskedName) -> &'static str {
    match m {
        MaskedName::Previous => "previous",
        MaskedName::Zeros => "zeros",
    }
}

/// The recurrent cell a layer belongs to, if it is a recurrent matrix.
pub fn cell_of(d: &ModelDesc, role: Role) -> Option<CellKind> {
    match role {
        Role::EncWih | Role::EncWhh => Some(d.cells.enc),
        Role::DecWih | Role::DecWhh => Some(d.cells.dec),
        _ => None,
    }
}

/// Our gate order of a cell's matrices: GRU `[r, z, n]`, LSTM `[i, f, g, o]`.
pub fn our_gates(kind: CellKind) -> &'static [char] {
    match kind {
        CellKind::Gru => &['r', 'z', 'n'],
        CellKind::Lstm => &['i', 'f', 'g', 'o'],
    }
}

/// What a cell's gates are called in a `gates` value.
fn gate_names(kind: CellKind) -> &'static str {
    match kind {
        CellKind::Gru => "r, z and n (or h)",
        CellKind::Lstm => "i, f, g (or c) and o",
    }
}

/// A `gates` value that is not a permutation of the cell's gates.
#[derive(Debug, thiserror::Error)]
#[error(
    "gates {from:?} is not a permutation of the {} gates {}",
    .kind.name(),
    gate_names(*.kind)
)]
pub(crate) struct BadGates {
    /// The `gates` value.
    from: String,
    /// The cell it is for.
    kind: CellKind,
}

/// The order of our gate blocks in a matrix stored with gate order `from`: block `i`
/// of ours is block `perm[i]` of the stored one. `from` must be a permutation of the
/// cell's gates (GRU: `h` names `n`; LSTM: `c` names `g`).
pub(crate) fn gate_perm(kind: CellKind, from: &str) -> Result<Vec<usize>, BadGates> {
    let alias = |c: char| match (kind, c) {
        (CellKind::Gru, 'h') => 'n',
        (CellKind::Lstm, 'c') => 'g',
        _ => c,
    };
    let stored: Vec<char> = from.chars().map(alias).collect();
    let ours = our_gates(kind);
    let bad = || BadGates {
        from: from.to_string(),
        kind,
    };
    if stored.len() != ours.len() {
        return Err(bad());
    }
    ours.iter()
        .map(|g| stored.iter().position(|c| c == g).ok_or_else(bad))
        .collect()
}

/// Reorders the gate blocks of a `G H x cols` row-major matrix (or a `G H` vector, with
/// `cols = 1`) by `perm` (from `gate_perm`).
pub fn reorder_gates(data: &[f32], rows: usize, cols: usize, perm: &[usize]) -> Vec<f32> {
    let block = rows / perm.len().max(1) * cols;
    perm.iter()
        .flat_map(|&p| data[p * block..(p + 1) * block].iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::describe::edited_example_error;
    use std::path::Path;

    /// The Keras 2 LSTM example with `edit` applied to its text, as a description.
    fn keras2_with(edit: impl Fn(String) -> String) -> Result<ModelDesc> {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/examples/keras2-lstm-g2p.toml");
        let text = std::fs::read_to_string(&path).expect("the example configuration");
        Config::parse(&edit(text), &path)?.desc()
    }

    #[test]
    fn the_keras2_example_is_an_lstm_with_keras_2_semantics() {
        let d = keras2_with(|t| t).unwrap();
        assert_eq!((d.cells.enc, d.cells.dec), (CellKind::Lstm, CellKind::Lstm));
        assert_eq!(d.cells.enc_recurrent, Recurrent::HardSigmoidKeras2);
        assert_eq!(d.cells.enc_mask, Some(Masked::Previous));
        assert_eq!(d.cells.init_cell, Init::Last);
        assert_eq!(
            d.att_parts,
            [Some(Part::Context), Some(Part::State), None, None]
        );
        assert_eq!(d.tgt_end, d.src_pad, "the model stops at <pad>");
        // init_cell defaults to init after an LSTM encoder.
        let d = keras2_with(|t| t.replace("init_cell = \"last\"\n", "")).unwrap();
        assert_eq!(d.cells.init_cell, Init::Last);
    }

    #[test]
    fn misused_keys_give_one_line_naming_them() {
        let cases: [(&str, &str, &str); 7] = [
            (
                "cell = \"lstm\"\nrecurrent_activation = \"hard-sigmoid-keras2\"\nmasked_output",
                "cell = \"lstm\"\nreset = \"after\"\nrecurrent_activation = \"hard-sigmoid-keras2\"\nmasked_output",
                "encoder.reset is a GRU setting",
            ),
            (
                "pad_to = 16\n",
                "",
                "encoder.masked_output = \"previous\": the source has no padding to mask",
            ),
            (
                "bidirectional = true\ncell = \"lstm\"",
                "bidirectional = true\ncell = \"gru\"",
                "encoder.reset is required for a GRU",
            ),
            (
                "bidirectional = true\ncell = \"lstm\"",
                "bidirectional = true\ncell = \"gru\"\nreset = \"after\"",
                "decoder.init_cell = \"last\": a GRU encoder has no cell states",
            ),
            (
                "hidden = 128\ncell = \"lstm\"",
                "hidden = 128\ncell = \"gru\"\nreset = \"after\"",
                "decoder.init_cell is for an LSTM decoder",
            ),
            (
                "attentional = 128\n",
                "",
                "attention.attentional_input needs attention.attentional",
            ),
            (
                "attentional_input = [\"context\", \"state\"]",
                "attentional_input = [\"attentional\"]",
                "\"attentional\" is the layer's own output",
            ),
        ];
        for (from, to, want) in cases {
            let e = edited_example_error("examples/keras2-lstm-g2p", from, to);
            assert!(e.contains(want), "{from:?} -> {to:?}: {e}");
        }
    }

    #[test]
    fn gate_permutations() {
        assert_eq!(gate_perm(CellKind::Gru, "rzn").unwrap(), [0, 1, 2]);
        assert_eq!(gate_perm(CellKind::Gru, "zrh").unwrap(), [1, 0, 2]);
        assert_eq!(gate_perm(CellKind::Lstm, "ifgo").unwrap(), [0, 1, 2, 3]);
        assert_eq!(gate_perm(CellKind::Lstm, "ifco").unwrap(), [0, 1, 2, 3]);
        // ONNX stores [i, o, f, c].
        assert_eq!(gate_perm(CellKind::Lstm, "iofc").unwrap(), [0, 2, 3, 1]);
        for (kind, bad) in [
            (CellKind::Gru, "rz"),
            (CellKind::Gru, "rzq"),
            (CellKind::Gru, "rzz"),
            (CellKind::Gru, "ifgo"),
            (CellKind::Lstm, "iffo"),
            (CellKind::Lstm, "ifg"),
            (CellKind::Lstm, "ifgoo"),
            (CellKind::Lstm, "rzn"),
            (CellKind::Lstm, "igco"),
        ] {
            let e = gate_perm(kind, bad).unwrap_err().to_string();
            assert!(e.contains("is not a permutation"), "{bad}: {e}");
        }
        // Keras [z, r, h] blocks of one row each -> ours [r, z, n].
        assert_eq!(
            reorder_gates(&[1.0, 2.0, 3.0], 3, 1, &[1, 0, 2]),
            [2.0, 1.0, 3.0]
        );
        // ONNX [i, o, f, c] blocks of two columns -> ours [i, f, g, o].
        let onnx = [1.0, 1.0, 4.0, 4.0, 2.0, 2.0, 3.0, 3.0];
        let perm = gate_perm(CellKind::Lstm, "iofc").unwrap();
        assert_eq!(
            reorder_gates(&onnx, 4, 2, &perm),
            [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]
        );
    }
}
