//! The decoder settings of OpenNMT-style models, as ONNX exports of PyTorch code have
//! them: bridges from the mean of the encoder outputs and bridges shared by every
//! decoder layer (`decoder.init`, `decoder.bridge`), input feeding and the attentional
//! layer's activation (`attention.input_feeding`, `attention.attentional_activation`),
//! what the logits feed (`decoder.logits`), fixed source prefix tokens
//! (`source.prefix`), prefix slots (`source.prefix_slots`) and the minimum output length
//! (`target.min_steps`). See `docs/MODEL_CONFIG.md`.

use std::num::NonZeroU16;

use seq2seq::desc::{Activation, Logits, ModelDesc, Ordering, PrefixSlot, MAX_PREFIX, MAX_SLOTS};

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
        if !attentional || d.attention.ordering != Ordering::Luong {
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
    for (o, s) in x.slots.iter_mut().zip(slots(cfg)?) {
        let size = u16::try_from(s.tokens.len()).ok().and_then(NonZeroU16::new);
        let size = size.ok_or_else(|| {
            bad(format!(
                "source.prefix_slots {:?}: {} tokens, 1 to 65535 allowed",
                s.name,
                s.tokens.len()
            ))
        })?;
        *o = Some(PrefixSlot {
            size,
            default: s.default,
        });
    }
    let before = prefix.len() + cfg.source.prefix_slots.len();
    if let Some(n) = cfg.source.pad_to.filter(|&n| n <= before) {
        return Err(bad(format!(
            "source.prefix and source.prefix_slots leave no room for the source within pad_to = {n}"
        )));
    }
    if cfg.target.min_steps > cfg.target.max_steps {
        return Err(bad(format!(
            "target.min_steps = {} is above max_steps = {}",
            cfg.target.min_steps, cfg.target.max_steps
        )));
    }
    x.min_steps = cfg.target.min_steps;
    Ok(())
}

/// A prefix slot as the model file stores it: its name, its tokens' ids, its default's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotIds {
    /// The name.
    pub name: String,
    /// The source ids of its tokens.
    pub tokens: Vec<u16>,
    /// The source id of its default token.
    pub default: Option<u16>,
}

/// `source.prefix_slots` as ids of the source vocabulary; each misuse is one line
/// naming the slot and the key.
pub fn slots(cfg: &Config) -> Result<Vec<SlotIds>> {
    let bad = |message: String| cfg.error(Place::File, message);
    let all = &cfg.source.prefix_slots;
    if all.len() > MAX_SLOTS {
        return Err(bad(format!(
            "source.prefix_slots: at most {MAX_SLOTS} slots, not {}",
            all.len()
        )));
    }
    let id = |slot: &str, token: &str| -> Result<u16> {
        let at = cfg.source.tokens.iter().position(|t| t == token);
        let at = at.ok_or_else(|| {
            bad(format!(
                "source.prefix_slots {slot:?}: token {token:?} is not in the vocabulary"
            ))
        })?;
        u16::try_from(at).map_err(|_| {
            bad(format!(
                "source.prefix_slots {slot:?}: token {token:?} has id {at}, above 65535"
            ))
        })
    };
    let mut out: Vec<SlotIds> = Vec::with_capacity(all.len());
    for s in all {
        let name = &s.name;
        if name.is_empty() || name.chars().any(|c| c == ' ' || c == '=' || c.is_control()) {
            return Err(bad(format!(
                "source.prefix_slots: name {name:?} is empty or has a space, `=` or control character"
            )));
        }
        if out.iter().any(|o| &o.name == name) {
            return Err(bad(format!(
                "source.prefix_slots: two slots are called {name:?}"
            )));
        }
        if s.tokens.is_empty() {
            return Err(bad(format!(
                "source.prefix_slots {name:?}: no tokens (a slot offers at least one)"
            )));
        }
        if let Some(t) = s.tokens.iter().find(|t| t.contains(' ')) {
            return Err(bad(format!(
                "source.prefix_slots {name:?}: token {t:?} has a space (a prefix is NAME=TOKEN fields separated by spaces)"
            )));
        }
        let mut tokens = Vec::with_capacity(s.tokens.len());
        for t in &s.tokens {
            let i = id(name, t)?;
            if tokens.contains(&i) {
                return Err(bad(format!(
                    "source.prefix_slots {name:?}: token {t:?} is listed twice"
                )));
            }
            tokens.push(i);
        }
        let default = match &s.default {
            Some(t) if !s.tokens.contains(t) => {
                return Err(bad(format!(
                    "source.prefix_slots {name:?}: default {t:?} is not one of its tokens"
                )))
            }
            Some(t) => Some(id(name, t)?),
            None => None,
        };
        out.push(SlotIds {
            name: name.clone(),
            tokens,
            default,
        });
    }
    Ok(out)
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
        let cases: [(&str, &str, &str, &str); 10] = [
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
                "source.prefix and source.prefix_slots leave no room for the source within pad_to = 1",
            ),
            (
                "gru",
                "unk = \"<unk>\"",
                "unk = \"<unk>\"\npad_to = 2\nprefix = [\"a\"]\nprefix_slots = [{ name = \"t\", tokens = [\"b\"] }]",
                "source.prefix and source.prefix_slots leave no room for the source within pad_to = 2",
            ),
            (
                "gru",
                "unk = \"<unk>\"",
                "unk = \"<unk>\"\nprefix_slots = [{ name = \"a\", tokens = [\"a\"] }, { name = \"b\", tokens = [\"a\"] }, { name = \"c\", tokens = [\"a\"] }, { name = \"d\", tokens = [\"a\"] }, { name = \"e\", tokens = [\"a\"] }]",
                "source.prefix_slots: at most 4 slots, not 5",
            ),
            (
                "gru",
                "unk = \"<unk>\"",
                "unk = \"<unk>\"\nprefix_slots = [{ name = \"t\", tokens = [\"a\", \"b c\"] }]",
                "token \"b c\" has a space",
            ),
        ];
        for (name, from, to, want) in cases {
            let e = edited_example_error(&format!("examples/onnx-{name}"), from, to);
            assert!(e.contains(want), "{from:?} -> {to:?}: {e}");
        }
    }
}
