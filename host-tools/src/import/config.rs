//! Model configuration files (`MODEL.toml`): the architecture, the variant of each
//! part, the vocabularies, and where each of our layers comes from in the weights file.
//! See `docs/MODEL_CONFIG.md` for the full reference; `models/*.toml` are examples.
//!
//! The data types alone, as the file spells them: reading and checking them into a
//! model description is `describe.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rnn_core::ResetMode;
use seq2seq::desc::{Init, Ordering, Part, ScoreKind};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use crate::error::{Error, Place};

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

/// `[model]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// Short name.
    pub name: String,
    /// The boards the model is meant for (names of the board table): `s2s train` warns
    /// when training sources are longer than the positions a board plans the model for.
    #[serde(default)]
    pub boards: Vec<String>,
}

/// `[source]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSection {
    /// Token strings; the index is the id. Required by `s2s import`; `s2s train` builds
    /// it from the data when absent.
    #[serde(default)]
    pub tokens: Vec<String>,
    /// Or the tokens from a file (relative to the configuration's folder): a JSON list,
    /// a JSON object of token ids, one with a `source`/`target` member holding either,
    /// or one token a line ([`crate::import::tokens_file`]).
    pub tokens_file: Option<PathBuf>,
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
    /// Prefix slots: one token of each, chosen per call, after `prefix` (at most 4).
    #[serde(default)]
    pub prefix_slots: Vec<PrefixSlotConfig>,
}

/// One of `source.prefix_slots`: a source token chosen per call (`s2s run --prefix
/// NAME=TOKEN`, the device's `prefix` command) among `tokens`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixSlotConfig {
    /// The slot's name (no space, `=` or control character).
    pub name: String,
    /// The source tokens it offers.
    pub tokens: Vec<String>,
    /// The token of a call that does not choose (absent: such a call is refused).
    pub default: Option<String>,
}

/// `[target]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// Token strings; the index is the id. Required by `s2s import`; `s2s train` builds
    /// it from the data when absent.
    #[serde(default)]
    pub tokens: Vec<String>,
    /// Or the tokens from a file (relative to the configuration's folder): a JSON list,
    /// a JSON object of token ids, one with a `source`/`target` member holding either,
    /// or one token a line ([`crate::import::tokens_file`]).
    pub tokens_file: Option<PathBuf>,
    /// First decoder input.
    pub start: String,
    /// Token that ends the output.
    pub end: String,
    /// Written between output tokens.
    #[serde(default)]
    pub separator: String,
    /// Most decoder steps.
    pub max_steps: usize,
    /// Fewest output tokens: the end token cannot be chosen before this step.
    #[serde(default)]
    pub min_steps: usize,
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
    /// `bahdanau` or `luong` ([`Ordering::name`]; `none` is no `[attention]`).
    #[serde(deserialize_with = "ordering")]
    pub ordering: Ordering,
    /// The score, by its [`ScoreKind::name`].
    #[serde(deserialize_with = "score")]
    pub score: ScoreKind,
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
    /// Monotonic attention's chunk width: 1 (the default) hard monotonic, more MoChA.
    pub chunk: Option<usize>,
    /// Local attention's half-width `D` (the `2D + 1` positions centred on the step's
    /// index, or on a predicted position); absent: global attention.
    pub window: Option<usize>,
    /// Where local attention's window is centred: `step` (local-m, the default) or
    /// `predicted` (local-p).
    pub centre: Option<CentreName>,
    /// Local-p's position predictor size (rows of `W_p`; default the decoder's hidden
    /// size).
    pub predictor: Option<usize>,
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
    /// Whether the stored matrix is `(in, out)` (Keras kernels) and is transposed;
    /// absent: as an ONNX graph uses it (see `orient.rs`), else as stored.
    #[serde(default)]
    pub transpose: Option<bool>,
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
                transpose: None,
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
    /// Masking.
    MaskName { /// Mask positions past the source length.
    Length = "length", /// Attend to every position, padding included.
    None = "none" }
);
names!(
    /// Where a local attention's window is centred.
    CentreName { /// On the step's index (local-m).
    Step = "step", /// On the position predicted from the decoder state (local-p).
    Predicted = "predicted" }
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
/// An attention ordering by the runtime's name of it (one definition of the names).
fn ordering<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Ordering, D::Error> {
    let attends = Ordering::ALL.into_iter().filter(|&o| o != Ordering::None);
    by_name(d, "ordering", attends, Ordering::name)
}
/// An attention score by the runtime's name of it.
fn score<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<ScoreKind, D::Error> {
    by_name(d, "score", ScoreKind::ALL.into_iter(), ScoreKind::name)
}
/// One of `all` by its `name`, or an error listing the names.
fn by_name<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    what: &str,
    all: impl Iterator<Item = T> + Clone,
    name: fn(T) -> &'static str,
) -> std::result::Result<T, D::Error> {
    let s = String::deserialize(d)?;
    all.clone().find(|&v| name(v) == s).ok_or_else(|| {
        let names: Vec<String> = all.map(|v| format!("`{}`", name(v))).collect();
        D::Error::custom(format!(
            "unknown {what} `{s}`, expected one of {}",
            names.join(", ")
        ))
    })
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

    /// An error about this configuration.
    pub fn error(&self, place: Place, message: impl Into<String>) -> Error {
        Error::invalid(self.path.display(), place, message)
    }
}
