//! The decoder settings of OpenNMT-style models, as ONNX exports of PyTorch code have
//! them: bridges from the mean of the encoder outputs and bridges shared by every
//! decoder layer (`decoder.init`, `decoder.bridge`), input feeding and the attentional
//! layer's activation (`attention.input_feeding`, `attention.attentional_activation`),
//! what the logits feed (`decoder.logits`) and fixed source prefix tokens
//! (`source.prefix`). See `docs/MODEL_CONFIG.md`.

use seq2seq::desc::{Activation, Logits, ModelDesc, Ordering, MAX_PREFIX};

use crate::error::{Place, Result};
use crate::import::config::{ActivationName, BridgeName, Config, LogitsName};

/// Sets the description's [`seq2seq::desc::Extras`] from the configuration; each misuse
/// is one line naming the key.
pub fn configure(cfg: &Config, d: &mut ModelDesc) -> Result {
    let bad = |message: String| cfg.error(Place::File, message);
    let att = cfg.attention.as_ref();
    let x = &mut d.extras;
    x.bridge_shared = match cfg.decoder.bridge {
        None | Some(BridgeName::PerLayer) => false,
        Some(BridgeName::Shared) => true,
    };
    if cfg.decoder.bridge.is_some() && !d.init.is_bridge() {
        return Err(bad(
            "decoder.bridge is for the bridges of init = \"dense\" or \"mean\" (remove it)".into(),
        ));
    }
    let attentional = att.and_then(|a| a.attentional).is_some();
    if att.is_some_and(|a| a.input_feeding) {
        if !attentional || d.ordering != Ordering::Luong {
            return Err(bad("attention.input_feeding needs ordering = \"luong\" and attention.attentional (the vector it feeds back)".into()));
        }
        x.input_feed = true;
    }
    if let Some(act) = att.and_then(|a| a.attentional_activation) {
        if !attentional {
            return Err(bad(
                "attention.attentional_activation needs attention.attentional".into(),
            ));
        }
        x.att_act = match act {
            ActivationName::Tanh => Activation::Tanh,
            ActivationName::Relu => Activation::Relu,
            ActivationName::None => Activation::Identity,
        };
    }
    x.logits = match cfg.decoder.logits {
        LogitsName::Softmax => Logits::Softmax,
        LogitsName::LogSoftmax => Logits::LogSoftmax,
    };
    let prefix = &cfg.source.prefix;
    if prefix.len() > MAX_PREFIX {
        return Err(bad(format!(
            "source.prefix: at most {MAX_PREFIX} tokens, not {}",
            prefix.len()
        )));
    }
    for (slot, token) in x.src_prefix.iter_mut().zip(prefix) {
        let id = cfg
            .source
            .tokens
            .iter()
            .position(|t| t == token)
            .ok_or_else(|| {
                bad(format!(
                    "source.prefix token {token:?} is not in the vocabulary"
                ))
            })?;
        *slot = Some(u16::try_from(id).map_err(|_| {
            bad(format!(
                "source.prefix token {token:?} has id {id}, above 65535"
            ))
        })?);
    }
    if let Some(n) = cfg.source.pad_to.filter(|&n| n <= prefix.len()) {
        return Err(bad(format!(
            "source.prefix leaves no room for the source within pad_to = {n}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::describe::edited_example_error;
    use seq2seq::desc::Init;
    use std::path::Path;

    /// An ONNX example configuration with `edit` applied to its text, as a description.
    fn onnx_with(name: &str, edit: impl Fn(String) -> String) -> Result<ModelDesc> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../models/examples/onnx-{name}.toml"));
        let text = std::fs::read_to_string(&path).expect("the example configuration");
        Config::parse(&edit(text), &path)?.desc()
    }

    #[test]
    fn the_onnx_examples_have_their_decoders() {
        let d = onnx_with("gru", |t| t).unwrap();
        assert_eq!(d.init, Init::Mean);
        let x = d.extras;
        assert!(x.input_feed && !x.bridge_shared);
        assert_eq!(
            (x.att_act, x.logits),
            (Activation::Tanh, Logits::LogSoftmax)
        );
        assert_eq!(d.dec_input(0), (32 + 48, 2));
        assert_eq!(d.bridges(), 2);
        let d = onnx_with("lstm", |t| t).unwrap();
        assert!(d.extras.bridge_shared && !d.extras.input_feed);
        assert_eq!((d.bridges(), d.dec_input(0)), (1, (32, 1)));
        assert_eq!(d.cells.init_cell, Init::Zeros);
        // A prefix token.
        let d = onnx_with("gru", |t| {
            t.replace(
                "unk = \"<unk>\"",
                "unk = \"<unk>\"\nprefix = [\"<pad>\", \"z\"]",
            )
        })
        .unwrap();
        assert_eq!(d.extras.src_prefix, [Some(0), Some(27), None, None]);
        let d = onnx_with("gru", |t| {
            t.replace("\"tanh\"", "\"relu\"")
                .replace("\"log-softmax\"", "\"softmax\"")
        })
        .unwrap();
        assert_eq!(
            (d.extras.att_act, d.extras.logits),
            (Activation::Relu, Logits::Softmax)
        );
    }

    #[test]
    fn misused_keys_give_one_line_naming_them() {
        let cases: [(&str, &str, &str, &str); 7] = [
            (
                "gru",
                "init = \"mean\"",
                "init = \"zeros\"\nbridge = \"shared\"",
                "decoder.bridge is for the bridges of init = \"dense\" or \"mean\"",
            ),
            (
                "gru",
                "ordering = \"luong\"",
                "ordering = \"bahdanau\"",
                "attention.input_feeding needs ordering = \"luong\"",
            ),
            (
                "lstm",
                "attentional = 48\nattentional_input = [\"state\", \"context\"]\n",
                "attentional_activation = \"relu\"\n",
                "attention.attentional_activation needs attention.attentional",
            ),
            (
                "gru",
                "unk = \"<unk>\"",
                "unk = \"<unk>\"\nprefix = [\"<en>\"]",
                "source.prefix token \"<en>\" is not in the vocabulary",
            ),
            (
                "gru",
                "unk = \"<unk>\"",
                "unk = \"<unk>\"\nprefix = [\"a\", \"b\", \"c\", \"d\", \"e\"]",
                "source.prefix: at most 4 tokens, not 5",
            ),
            (
                "lstm",
                "init_cell = \"zeros\"",
                "init_cell = \"mean\"",
                "decoder.init_cell = \"mean\": the mean bridge is for the state",
            ),
            (
                "gru",
                "unk = \"<unk>\"",
                "unk = \"<unk>\"\npad_to = 1\nprefix = [\"a\"]",
                "source.prefix leaves no room for the source within pad_to = 1",
            ),
        ];
        for (name, from, to, want) in cases {
            let e = edited_example_error(&format!("examples/onnx-{name}"), from, to);
            assert!(e.contains(want), "{from:?} -> {to:?}: {e}");
        }
    }
}
