//! Reading a model configuration file ([`Config::load`], [`Config::parse`]) and
//! checking it into a model description ([`Config::desc`]), with the beam rule it names:
//! the step above the configuration's data types (`config.rs`), which the recurrent
//! cells (`cells.rs`) and the decoder settings (`decoding.rs`) check their keys of.

use std::path::Path;

use rnn_core::ResetMode;
use s2s_kernels::Requant;
use seq2seq::desc::{
    AttentionDesc, Cells, Extras, ModelDesc, Ordering, ScoreKind, Split, MAX_CHUNK, MAX_OUT_PARTS,
    MAX_SIZE, MAX_WINDOW,
};

use crate::error::{Error, Place, Result};
use crate::import::config::{CentreName, Config, MaskName, SplitName};
use crate::import::tokens_file::read_tokens;
use crate::io::{read_text_bounded, MAX_CONFIG_BYTES};

impl Config {
    /// Reads and parses a configuration file (at most [`MAX_CONFIG_BYTES`]); errors
    /// name the file and position.
    pub fn load(path: &Path) -> Result<Config> {
        let text = read_text_bounded(path, MAX_CONFIG_BYTES)?;
        Self::parse(&text, path)
    }

    /// Parses the text of a configuration file; errors name `origin` and the line.
    pub fn parse(text: &str, origin: &Path) -> Result<Config> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let place = match e.span() {
                Some(span) => Place::Line(text[..span.start].matches('\n').count() + 1),
                None => Place::File,
            };
            Error::invalid(origin.display(), place, e.message())
        })?;
        config.path = origin.to_path_buf();
        let folder = origin.parent().unwrap_or(Path::new(""));
        for (section, tokens, file) in [
            (
                "source",
                &mut config.source.tokens,
                &config.source.tokens_file,
            ),
            (
                "target",
                &mut config.target.tokens,
                &config.target.tokens_file,
            ),
        ] {
            let Some(file) = file else { continue };
            if !tokens.is_empty() {
                return Err(Error::invalid(
                    origin.display(),
                    Place::File,
                    format!("[{section}] has both `tokens` and `tokens_file`: give one"),
                ));
            }
            *tokens = read_tokens(&folder.join(file), section)?;
        }
        Ok(config)
    }

    /// The model description, checked.
    pub fn desc(&self) -> Result<ModelDesc> {
        for (section, tokens) in [
            ("source", &self.source.tokens),
            ("target", &self.target.tokens),
        ] {
            if tokens.is_empty() {
                return Err(self.error(
                    Place::File,
                    format!("[{section}] has no tokens (only `s2s train` builds vocabularies from its data)"),
                ));
            }
        }
        let tok = |vocab: &[String], name: &str, what: &str| -> Result<u16> {
            let i = vocab.iter().position(|t| t == name).ok_or_else(|| {
                self.error(
                    Place::File,
                    format!("{what} token {name:?} is not in the vocabulary"),
                )
            })?;
            u16::try_from(i).map_err(|_| {
                self.error(
                    Place::File,
                    format!("{what} token {name:?} has id {i}, above 65535"),
                )
            })
        };
        let (s, t) = (&self.source, &self.target);
        let att = self.attention.as_ref();
        let ordering = att.map_or(Ordering::None, |a| a.ordering);
        // Without attention the score's code is the neutral 0 (the file wants it so).
        let score = att.map_or(ScoreKind::Additive, |a| a.score);
        let additive = att.filter(|_| score == ScoreKind::Additive);
        if self.decoder.output.len() > MAX_OUT_PARTS {
            return Err(self.error(
                Place::File,
                format!("decoder.output: at most {MAX_OUT_PARTS} parts"),
            ));
        }
        let chunk = match att {
            Some(a) if a.ordering == Ordering::Monotonic => match a.chunk.unwrap_or(1) {
                w @ 1..=MAX_CHUNK => w as u16,
                _ => {
                    return Err(self.error(
                        Place::File,
                        format!("attention.chunk: 1 (hard monotonic attention) to {MAX_CHUNK}"),
                    ))
                }
            },
            Some(a) if a.chunk.is_some() => {
                return Err(self.error(
                    Place::File,
                    "attention.chunk: only for monotonic attention".to_string(),
                ))
            }
            _ => 0,
        };
        let window = match att.and_then(|a| a.window) {
            None => 0,
            Some(_) if !matches!(ordering, Ordering::Bahdanau | Ordering::Luong) => {
                return Err(self.error(
                    Place::File,
                    "attention.window: local attention needs the bahdanau or luong ordering"
                        .to_string(),
                ))
            }
            Some(d @ 1..=MAX_WINDOW) => d as u16,
            Some(_) => {
                return Err(self.error(
                    Place::File,
                    format!(
                        "attention.window: 1 to {MAX_WINDOW} (the half-width D of local \
                         attention's 2D + 1 positions)"
                    ),
                ))
            }
        };
        let predict = match att.map(|a| (a.centre, a.predictor)) {
            Some((Some(CentreName::Predicted), p)) if window > 0 => {
                match p.unwrap_or(self.decoder.hidden) {
                    p @ 1..=MAX_SIZE => p as u16,
                    _ => {
                        return Err(self
                            .error(Place::File, format!("attention.predictor: 1 to {MAX_SIZE}")))
                    }
                }
            }
            Some((Some(CentreName::Predicted), _)) => {
                return Err(self.error(
                    Place::File,
                    "attention.centre: a predicted centre needs a local attention \
                     (attention.window)"
                        .to_string(),
                ))
            }
            Some((_, Some(_))) => {
                return Err(self.error(
                    Place::File,
                    "attention.predictor: only with attention.centre = \"predicted\"".to_string(),
                ))
            }
            Some((Some(CentreName::Step), _)) if window == 0 => {
                return Err(self.error(
                    Place::File,
                    "attention.centre: only for local attention (attention.window)".to_string(),
                ))
            }
            _ => 0,
        };
        let dim = additive.map_or(0, |a| a.dim.unwrap_or(self.decoder.hidden));
        // (Stored as a `u16`: past it, the messages of the stored form's checks.)
        let dim = u16::try_from(dim).map_err(|_| {
            let e = match u32::try_from(dim) {
                Ok(_) => seq2seq::Error::BadField("attn_dim"),
                Err(_) => seq2seq::Error::FieldOverflow {
                    field: "attn_dim",
                    value: dim,
                },
            };
            let message = config_message(e).unwrap_or_else(|| e.to_string());
            self.error(Place::File, message)
        })?;
        let mut out_parts = [None; MAX_OUT_PARTS];
        for (o, &p) in out_parts.iter_mut().zip(&self.decoder.output) {
            *o = Some(p.into());
        }
        let mut d = ModelDesc {
            src_vocab: s.tokens.len(),
            tgt_vocab: t.tokens.len(),
            enc_emb: self.encoder.embedding,
            dec_emb: self.decoder.embedding,
            enc_layers: self.encoder.layers,
            enc_hidden: self.encoder.hidden,
            enc_bidir: self.encoder.bidirectional,
            enc_reset: ResetMode::After,
            memory_proj: att.and_then(|a| a.memory_proj),
            attention: AttentionDesc {
                ordering,
                score,
                // The additive score's own fields; zero for the others, as the file wants.
                dim,
                query_proj: additive.is_some_and(|a| a.query_proj),
                key_proj: additive.is_some_and(|a| a.key_proj),
                mask_padding: att.is_some_and(|a| a.mask == MaskName::None),
                fmt_keys: Default::default(),
                scale: if score == ScoreKind::ScaledDot {
                    1.0 / (self.decoder.hidden as f32).sqrt()
                } else {
                    1.0
                },
                scale_q: Requant::ONE,
                chunk,
                window,
                predict,
            },
            src_pad_to: s.pad_to.unwrap_or(0),
            init: self.decoder.init.into(),
            dec_layers: self.decoder.layers,
            dec_hidden: self.decoder.hidden,
            dec_reset: ResetMode::After,
            attentional: att.and_then(|a| a.attentional),
            out_parts,
            src_pad: tok(&s.tokens, &s.pad, "source pad")?,
            src_unk: s
                .unk
                .as_deref()
                .map(|u| tok(&s.tokens, u, "source unk"))
                .transpose()?,
            src_eos: s
                .eos
                .as_deref()
                .map(|u| tok(&s.tokens, u, "source eos"))
                .transpose()?,
            tgt_start: tok(&t.tokens, &t.start, "target start")?,
            tgt_end: tok(&t.tokens, &t.end, "target end")?,
            max_steps: t.max_steps,
            split: match s.split {
                SplitName::Chars => Split::Chars,
                SplitName::Whitespace => Split::Whitespace,
            },
            lowercase: s.lowercase,
            fmt_src_emb: Default::default(),
            fmt_dec_emb: Default::default(),
            fmt_memory: Default::default(),
            cells: Cells::GRU,
            att_parts: [None; MAX_OUT_PARTS],
            beam: beam_rule(&self.beam.variant, self.beam.alpha)
                .map_err(|e| self.error(Place::File, format!("[beam]: {e}")))?,
            extras: Extras::NONE,
        };
        // The cells, their gates' activation and reset form, masking, the LSTM
        // decoder's initial cell state and the attentional layer's input.
        crate::import::cells::configure(self, &mut d)?;
        // Bridges, input feeding, the attentional activation, the output, the prefix.
        crate::import::decoding::configure(self, &mut d)?;
        // Round-trip through the stored form so every field gets the file's checks.
        d.to_raw()
            .and_then(|raw| ModelDesc::from_raw(&raw))
            .map_err(|e| match config_message(e) {
                Some(message) => self.error(Place::File, message),
                None => Error::model(&self.path)(e),
            })
    }
}

/// The rule of a variant name and an `alpha`; what is wrong with them is a usage error.
pub fn beam_rule(variant: &str, alpha: f64) -> Result<seq2seq::BeamRule> {
    let v = seq2seq::BeamVariant::from_name(variant).ok_or_else(|| {
        let names: Vec<_> = seq2seq::BeamVariant::ALL.iter().map(|v| v.name()).collect();
        Error::usage(format!(
            "beam variant {variant:?} is not one of {}",
            names.join(", ")
        ))
    })?;
    let halves = alpha * 2.0;
    let alpha = (halves.fract() == 0.0 && (0.0..=4.0).contains(&halves))
        .then(|| s2s_kernels::logprob::Alpha::from_halves(halves as u8))
        .flatten()
        .ok_or_else(|| {
            Error::usage(format!(
                "beam alpha {alpha} is not one of 0, 0.5, 1, 1.5, 2"
            ))
        })?;
    Ok(seq2seq::BeamRule { variant: v, alpha })
}

/// The configuration key a description field comes from.
fn config_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "src_vocab" => "source.tokens (count)",
        "tgt_vocab" => "target.tokens (count)",
        "src_pad_to" => "source.pad_to",
        "max_steps" => "target.max_steps",
        "enc_emb" => "encoder.embedding",
        "enc_hidden" => "encoder.hidden",
        "enc_layers" => "encoder.layers",
        "memory_proj" => "attention.memory_proj",
        "attn_dim" => "attention.dim",
        "attentional" => "attention.attentional",
        "dec_emb" => "decoder.embedding",
        "dec_hidden" => "decoder.hidden",
        "dec_layers" => "decoder.layers",
        _ => return None,
    })
}

/// A size out of range, in the configuration's terms: the message names its key.
fn config_message(e: seq2seq::Error) -> Option<String> {
    match e {
        seq2seq::Error::FieldOverflow { field, value } => config_key(field)
            .map(|key| format!("{key} = {value} is too large (at most {MAX_SIZE})")),
        seq2seq::Error::BadField(field) => {
            config_key(field).map(|key| format!("{key} is out of range (1 to {MAX_SIZE})"))
        }
        _ => None,
    }
}

/// The one-line error of `models/<example>.toml` with `from` replaced by `to` (which
/// must change it): what the configuration tests of each module check.
#[cfg(test)]
pub(crate) fn edited_example_error(example: &str, from: &str, to: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../models/{example}.toml"));
    let text = std::fs::read_to_string(&path).expect("the example configuration");
    assert!(text.contains(from), "{example}: no {from:?}");
    let e = Config::parse(&text.replacen(from, to, 1), &path)
        .and_then(|c| c.desc())
        .expect_err("the edited configuration is refused")
        .to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The netra configuration with `key = value` replaced in its section.
    fn netra_with(section: &str, key: &str, value: &str) -> Config {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/netra.toml");
        let text = std::fs::read_to_string(&path).expect("models/netra.toml");
        let head = format!("[{section}]");
        let start = text.find(&head).expect("section") + head.len();
        let at = start + text[start..].find(&format!("\n{key} = ")).expect("key") + 1;
        let end = at + text[at..].find('\n').expect("line end");
        let text = format!("{}{key} = {value}{}", &text[..at], &text[end..]);
        Config::parse(&text, &path).expect("parses")
    }

    #[test]
    fn sizes_beyond_32_bits_name_their_key() {
        let message = |section, key, value| {
            let e = netra_with(section, key, value).desc().unwrap_err();
            let line = e.to_string();
            assert!(line.contains("netra.toml: "), "{line}");
            line.split("netra.toml: ").nth(1).unwrap_or("").to_string()
        };
        // 2^32 + 31 was stored as 31.
        assert_eq!(
            message("target", "max_steps", "4294967327"),
            "target.max_steps = 4294967327 is too large (at most 65535)"
        );
        for (section, key, name) in [
            ("encoder", "hidden", "encoder.hidden"),
            ("decoder", "embedding", "decoder.embedding"),
            ("attention", "memory_proj", "attention.memory_proj"),
            ("attention", "dim", "attention.dim"),
            ("source", "pad_to", "source.pad_to"),
        ] {
            assert_eq!(
                message(section, key, "4294967296"),
                format!("{name} = 4294967296 is too large (at most 65535)")
            );
            assert_eq!(
                message(section, key, "65536"),
                format!("{name} is out of range (1 to 65535)")
            );
        }
    }

    #[test]
    fn attention_names_are_the_runtimes_and_others_are_refused_naming_the_line() {
        for s in ScoreKind::ALL {
            let score = format!("score = \"{}\"", s.name());
            let text = std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/netra.toml"),
            )
            .unwrap()
            .replacen("score = \"additive\"", &score, 1);
            let c = Config::parse(&text, Path::new("netra.toml")).unwrap();
            assert_eq!(c.attention.map(|a| a.score), Some(s));
        }
        let e = edited_example_error("netra", "score = \"additive\"", "score = \"Dot\"");
        assert!(
            e.contains("netra.toml:") && e.contains("unknown score `Dot`, expected one of `additive`, `dot`, `scaled-dot`, `general`"),
            "{e}"
        );
        let e = edited_example_error("netra", "ordering = \"luong\"", "ordering = \"none\"");
        assert!(
            e.contains("unknown ordering `none`, expected one of `bahdanau`, `luong`"),
            "{e}"
        );
    }

    #[test]
    fn the_example_configurations_give_valid_descriptions() {
        for name in [
            "netra",
            "g2p-en",
            "examples/pytorch-bahdanau",
            "examples/keras2-lstm-g2p",
            "examples/keras3-lstm-g2p",
            "examples/pytorch-lstm-g2p",
            "examples/onnx-gru",
            "examples/onnx-lstm",
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../models/{name}.toml"));
            let d = Config::load(&path).unwrap().desc().unwrap();
            assert_eq!(ModelDesc::from_raw(&d.to_raw().unwrap()), Ok(d));
        }
    }
}
