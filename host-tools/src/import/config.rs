//! Model configuration files (`MODEL.toml`): the architecture, the variant of each
//! part, the vocabularies, and where each of our layers comes from in the weights file.
//! See `docs/MODEL_CONFIG.md` for the full reference; `models/*.toml` are examples.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rnn_core::ResetMode;
use s2s_kernels::Requant;
use seq2seq::desc::{
    Cells, Extras, Init, ModelDesc, Ordering, Part, ScoreKind, Split, MAX_OUT_PARTS, MAX_SIZE,
};
use serde::Deserialize;

use crate::error::{Error, Place, Result};

/// A whole configuration file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Name and notes.
    pub model: ModelSection,
    /// Source side.
    pub source: SourceSection,
    /// Target side.
    pub target: TargetSection,
    /// Encoder sizes.
    pub encoder: EncoderSection,
    /// Attention, absent for a decoder without attention.
    pub attention: Option<AttentionSection>,
    /// Decoder sizes and variant.
    pub decoder: DecoderSection,
    /// How a beam search decodes the model (in-slot with alpha 1 when absent).
    #[serde(default)]
    pub beam: BeamSection,
    /// Our layer name -> tensors of the weights file (`s2s import`; absent for
    /// `s2s train`, which makes its own weights).
    #[serde(default)]
    pub weights: BTreeMap<String, Mapping>,
    /// The file it was read from (names it in errors).
    #[serde(skip)]
    pub path: PathBuf,
}

/// `[beam]`: the beam-search variant the model was published with.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeamSection {
    /// `in-slot`, `finished-set` or `netra`.
    #[serde(default = "in_slot")]
    pub variant: String,
    /// The length-normalisation exponent: 0 to 2 in steps of 0.5.
    #[serde(default = "one_f64")]
    pub alpha: f64,
}

impl Default for BeamSection {
    fn default() -> Self {
        BeamSection {
            variant: in_slot(),
            alpha: one_f64(),
        }
    }
}

fn in_slot() -> String {
    seq2seq::BeamVariant::InSlot.name().to_string()
}

fn one_f64() -> f64 {
    1.0
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

/// `[model]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// Short name.
    pub name: String,
}

/// `[source]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSection {
    /// Token strings; the index is the id. Required by `s2s import`; `s2s train` builds
    /// it from the data when absent.
    #[serde(default)]
    pub tokens: Vec<String>,
    /// `chars` or `whitespace`.
    #[serde(default = "chars")]
    pub split: SplitName,
    /// ASCII-lowercase inputs first.
    #[serde(default)]
    pub lowercase: bool,
    /// Padding token.
    pub pad: String,
    /// Unknown token (absent: unknown symbols are errors).
    pub unk: Option<String>,
    /// Token appended to every source.
    pub eos: Option<String>,
    /// Fixed length the source is padded to (absent: no padding).
    pub pad_to: Option<usize>,
    /// Tokens put before every source (a language or domain tag), at most 4.
    #[serde(default)]
    pub prefix: Vec<String>,
}

/// `[target]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// Token strings; the index is the id. Required by `s2s import`; `s2s train` builds
    /// it from the data when absent.
    #[serde(default)]
    pub tokens: Vec<String>,
    /// First decoder input.
    pub start: String,
    /// Token that ends the output.
    pub end: String,
    /// Written between output tokens.
    #[serde(default)]
    pub separator: String,
    /// Most decoder steps.
    pub max_steps: usize,
}

/// `[encoder]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncoderSection {
    /// Embedding size.
    pub embedding: usize,
    /// Hidden size per direction.
    pub hidden: usize,
    /// Stacked layers.
    #[serde(default = "one")]
    pub layers: usize,
    /// Bidirectional layers.
    #[serde(default)]
    pub bidirectional: bool,
    /// `gru` or `lstm`.
    #[serde(default = "gru")]
    pub cell: CellName,
    /// Candidate-gate form (GRU only, required there).
    pub reset: Option<ResetName>,
    /// Activation of the gates.
    #[serde(default = "sigmoid")]
    pub recurrent_activation: RecurrentName,
    /// Output of masked (padded) positions; absent: padding is not masked.
    pub masked_output: Option<MaskedName>,
}

/// `[attention]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionSection {
    /// `bahdanau` or `luong`.
    pub ordering: OrderingName,
    /// The score.
    pub score: ScoreName,
    /// Additive attention size (defaults to the query size).
    pub dim: Option<usize>,
    /// Additive score has a query matrix.
    #[serde(default = "yes")]
    pub query_proj: bool,
    /// Additive score has a key matrix.
    #[serde(default = "yes")]
    pub key_proj: bool,
    /// `length` (mask padding) or `none` (attend to every position).
    #[serde(default = "length")]
    pub mask: MaskName,
    /// Dense projection of the encoder outputs into the memory.
    pub memory_proj: Option<usize>,
    /// Luong's attentional layer size.
    pub attentional: Option<usize>,
    /// Parts of the attentional layer's input, in order (default `[state, context]`).
    pub attentional_input: Option<Vec<PartName>>,
    /// The attentional layer's activation (default `tanh`).
    pub attentional_activation: Option<ActivationName>,
    /// Input feeding: decoder layer 0 also reads the previous attentional vector.
    #[serde(default)]
    pub input_feeding: bool,
}

/// `[decoder]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecoderSection {
    /// Embedding size.
    pub embedding: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Stacked layers.
    #[serde(default = "one")]
    pub layers: usize,
    /// `gru` or `lstm`.
    #[serde(default = "gru")]
    pub cell: CellName,
    /// Candidate-gate form (GRU only, required there).
    pub reset: Option<ResetName>,
    /// Activation of the gates.
    #[serde(default = "sigmoid")]
    pub recurrent_activation: RecurrentName,
    /// Initial state.
    pub init: InitName,
    /// Initial cell state of an LSTM decoder (default: `init` after an LSTM encoder,
    /// `zeros` after a GRU encoder).
    pub init_cell: Option<InitName>,
    /// Parts of the output layer's input, in order.
    pub output: Vec<PartName>,
    /// One bridge per decoder layer (`per-layer`, the default) or one for all
    /// (`shared`); only with `init = "dense"` or `"mean"`.
    pub bridge: Option<BridgeName>,
    /// What the output layer's values feed: `softmax` (default) or `log-softmax`.
    #[serde(default = "softmax")]
    pub logits: LogitsName,
}

/// Where one of our layers comes from.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Mapping {
    /// Just the weight tensor, as stored.
    Name(String),
    /// Weight, optional bias and transforms.
    Full(FullMapping),
}

/// A layer's tensors and transforms.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FullMapping {
    /// Weight tensor; `name[i]` selects index `i` of its first dimension.
    pub weight: String,
    /// Bias tensor, same syntax.
    pub bias: Option<String>,
    /// The stored matrix is `(in, out)` (Keras kernels): transpose it.
    #[serde(default)]
    pub transpose: bool,
    /// Gate order of a recurrent matrix as stored: for a GRU e.g. `zrh` for Keras
    /// (ours is `rzn`; `h` and `n` both name the candidate), for an LSTM e.g. `iofc`
    /// for ONNX (ours is `ifgo`, as PyTorch and Keras store it; `c` names `g`).
    pub gates: Option<String>,
    /// The weights file (its file name, as given to `--weights`) holding the weight
    /// and the bias; needed only when several files hold a tensor of that name.
    pub file: Option<String>,
    /// Index of the first axis of the weight and of the bias: the direction of a
    /// packed ONNX `GRU`/`LSTM` tensor (`W [dirs, G*H, in]`, `B [dirs, 2*G*H]`;
    /// 0 forward, 1 backward).
    pub direction: Option<usize>,
    /// Which half of the bias holds this matrix's bias: an ONNX recurrent node's `B`
    /// is `[Wb; Rb]`, `input` for `w_ih`, `recurrent` for `w_hh`.
    pub bias_half: Option<HalfName>,
}

/// A tensor reference of `[weights]`, `name` or `name[i]`: the name, and the index
/// text when there is one.
pub fn tensor_reference(spec: &str) -> (&str, Option<&str>) {
    match spec.strip_suffix(']').and_then(|s| s.rsplit_once('[')) {
        Some((name, index)) => (name, Some(index)),
        None => (spec, None),
    }
}

impl Mapping {
    /// The names of the tensors it reads (without `[i]` indexes).
    pub fn tensor_names(&self) -> impl Iterator<Item = String> {
        let f = self.full();
        [Some(f.weight), f.bias]
            .into_iter()
            .flatten()
            .map(|spec| tensor_reference(&spec).0.to_string())
    }

    /// As a full mapping.
    pub fn full(&self) -> FullMapping {
        match self {
            Mapping::Name(w) => FullMapping {
                weight: w.clone(),
                bias: None,
                transpose: false,
                gates: None,
                file: None,
                direction: None,
                bias_half: None,
            },
            Mapping::Full(f) => FullMapping {
                weight: f.weight.clone(),
                bias: f.bias.clone(),
                transpose: f.transpose,
                gates: f.gates.clone(),
                file: f.file.clone(),
                direction: f.direction,
                bias_half: f.bias_half,
            },
        }
    }
}

macro_rules! names {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $v),*
        }
    };
}

names!(
    /// Source split.
    SplitName { /// Characters.
    Chars = "chars", /// White-space separated words.
    Whitespace = "whitespace" }
);
names!(
    /// Candidate-gate form.
    ResetName { /// Reset after the recurrent matmul.
    After = "after", /// Reset before it.
    Before = "before" }
);
names!(
    /// Decoder ordering.
    OrderingName { /// Score with the previous state.
    Bahdanau = "bahdanau", /// Score with the new state.
    Luong = "luong" }
);
names!(
    /// Attention score.
    ScoreName { /// `v^T tanh(W q + U k)`.
    Additive = "additive", /// `q . k`.
    Dot = "dot", /// `q . k / sqrt(d)`.
    ScaledDot = "scaled-dot", /// `q^T W k`.
    General = "general" }
);
names!(
    /// Masking.
    MaskName { /// Mask positions past the source length.
    Length = "length", /// Attend to every position, padding included.
    None = "none" }
);
names!(
    /// Recurrent cell.
    CellName { /// GRU.
    Gru = "gru", /// LSTM.
    Lstm = "lstm" }
);
names!(
    /// Activation of a cell's gates.
    RecurrentName { /// The logistic sigmoid.
    Sigmoid = "sigmoid", /// `clip(0.2 x + 0.5, 0, 1)`: Keras 2 and tf.keras `hard_sigmoid`.
    HardSigmoidKeras2 = "hard-sigmoid-keras2", /// `clip(x / 6 + 0.5, 0, 1)`: Keras 3 `hard_sigmoid`.
    HardSigmoidKeras3 = "hard-sigmoid-keras3" }
);
names!(
    /// Output of a masked encoder step.
    MaskedName { /// The previous step's output (Keras 2; Keras 3 unidirectional layers).
    Previous = "previous", /// Zeros (Keras 3 and tf.keras `Bidirectional`).
    Zeros = "zeros" }
);
names!(
    /// Initial decoder state.
    InitName { /// Zeros.
    Zeros = "zeros", /// The encoder's last state.
    Last = "last", /// `tanh(W x + b)` of the encoder's last state.
    Dense = "dense", /// `tanh(W m + b)` of the mean of the encoder outputs.
    Mean = "mean" }
);
names!(
    /// One bridge per decoder layer or one for all.
    BridgeName { /// `bridge.l<l>` for every layer.
    PerLayer = "per-layer", /// `bridge.l0` for every layer.
    Shared = "shared" }
);
names!(
    /// The attentional layer's activation.
    ActivationName { /// `tanh`.
    Tanh = "tanh", /// `max(0, x)`.
    Relu = "relu", /// None.
    None = "none" }
);
names!(
    /// What the output layer's values feed.
    LogitsName { /// A softmax.
    Softmax = "softmax", /// A log-softmax.
    LogSoftmax = "log-softmax" }
);
names!(
    /// A half of a packed bias `[input; recurrent]`.
    HalfName { /// The first half (ONNX `Wb`).
    Input = "input", /// The second half (ONNX `Rb`).
    Recurrent = "recurrent" }
);
names!(
    /// Output layer input part.
    PartName { /// Decoder state.
    State = "state", /// Context.
    Context = "context", /// Input embedding.
    Embedding = "embedding", /// Attentional vector.
    Attentional = "attentional" }
);

fn chars() -> SplitName {
    SplitName::Chars
}
fn gru() -> CellName {
    CellName::Gru
}
fn sigmoid() -> RecurrentName {
    RecurrentName::Sigmoid
}
fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn length() -> MaskName {
    MaskName::Length
}
fn softmax() -> LogitsName {
    LogitsName::Softmax
}

impl From<PartName> for Part {
    fn from(p: PartName) -> Self {
        match p {
            PartName::State => Part::State,
            PartName::Context => Part::Context,
            PartName::Embedding => Part::Embedding,
            PartName::Attentional => Part::Attentional,
        }
    }
}

impl From<InitName> for Init {
    fn from(i: InitName) -> Self {
        match i {
            InitName::Zeros => Init::Zeros,
            InitName::Last => Init::Last,
            InitName::Dense => Init::Dense,
            InitName::Mean => Init::Mean,
        }
    }
}

impl From<ResetName> for ResetMode {
    fn from(r: ResetName) -> Self {
        match r {
            ResetName::After => ResetMode::After,
            ResetName::Before => ResetMode::Before,
        }
    }
}

impl Config {
    /// The names of the tensors `[weights]` reads.
    pub fn tensor_names(&self) -> std::collections::BTreeSet<String> {
        self.weights
            .values()
            .flat_map(Mapping::tensor_names)
            .collect()
    }

    /// Reads and parses a configuration file; errors name the file and position.
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(Error::io(path))?;
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
        Ok(config)
    }

    /// An error about this configuration.
    pub fn error(&self, place: Place, message: impl Into<String>) -> Error {
        Error::invalid(self.path.display(), place, message)
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
        let ordering = match att.map(|a| a.ordering) {
            None => Ordering::None,
            Some(OrderingName::Bahdanau) => Ordering::Bahdanau,
            Some(OrderingName::Luong) => Ordering::Luong,
        };
        let score = match att.map(|a| a.score) {
            None | Some(ScoreName::Additive) => ScoreKind::Additive,
            Some(ScoreName::Dot) => ScoreKind::Dot,
            Some(ScoreName::ScaledDot) => ScoreKind::ScaledDot,
            Some(ScoreName::General) => ScoreKind::General,
        };
        let additive = att.filter(|_| score == ScoreKind::Additive);
        if self.decoder.output.len() > MAX_OUT_PARTS {
            return Err(self.error(
                Place::File,
                format!("decoder.output: at most {MAX_OUT_PARTS} parts"),
            ));
        }
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
            ordering,
            score,
            // The additive score's own fields; zero for the others, as the file wants.
            attn_dim: additive.map_or(0, |a| a.dim.unwrap_or(self.decoder.hidden)),
            attn_query_proj: additive.is_some_and(|a| a.query_proj),
            attn_key_proj: additive.is_some_and(|a| a.key_proj),
            mask_padding: att.is_some_and(|a| a.mask == MaskName::None),
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
            fmt_keys: Default::default(),
            score_scale: if score == ScoreKind::ScaledDot {
                1.0 / (self.decoder.hidden as f32).sqrt()
            } else {
                1.0
            },
            score_scale_q: Requant::ONE,
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
