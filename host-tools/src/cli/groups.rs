//! The option groups that several subcommands share or that `main.rs` takes whole:
//! training, beam search, prefix slots, the device check and the board, and `--scheme`.

use std::path::PathBuf;

use clap::ValueEnum;
use host_tools::device;

/// `--scheme`.
#[derive(Clone, Copy, ValueEnum)]
pub enum SchemeArg {
    /// int8 weights, int16 activations, int32 accumulators.
    W8a16,
    /// int8 weights dequantized on the fly, f32 math.
    W8f32,
}

/// How `s2s train` trains.
#[derive(clap::Args)]
pub struct TrainArgs {
    /// Most epochs.
    #[arg(long, default_value_t = 30)]
    pub epochs: usize,
    /// Sequences per mini-batch.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    /// Factor on the learning rate after an epoch without a better validation token
    /// error (1 keeps it constant).
    #[arg(long, default_value_t = 0.5)]
    pub lr_decay: f64,
    /// Clip the gradients to this global norm (0: no clipping).
    #[arg(long, default_value_t = 1.0)]
    pub clip: f64,
    /// Dropout on embeddings, between stacked layers and before the output layer.
    #[arg(long, default_value_t = 0.1)]
    pub dropout: f32,
    /// Label smoothing of the training loss: each target token's negative
    /// log-probability weighted 1 - EPS, the mean over the vocabulary EPS (0: none).
    #[arg(long, default_value_t = 0.0, value_name = "EPS")]
    pub label_smoothing: f32,
    /// Stop after this many epochs without a better validation token error.
    #[arg(long, default_value_t = 5)]
    pub patience: usize,
    /// Seed of the initial weights, the batch order, dropout and the held-out pairs
    /// (the same seed and thread count give the same weights).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Checkpoint directory (default: the output with the extension .ckpt).
    #[arg(long)]
    pub checkpoints: Option<PathBuf>,
    /// Continue the run saved in the checkpoint directory.
    #[arg(long)]
    pub resume: bool,
    /// CSV log of every epoch (default: the output with the extension .csv).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Write a JSON summary of the run (losses, error rates, agreement, times).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Quantization-aware training: every batch's loss is that of the integer model in
    /// this format (as `s2s quantize` stores it, rounded to nearest, one plane), and the
    /// file written is that model. No dropout.
    #[arg(long, value_enum, value_name = "SCHEME")]
    pub quantize: Option<SchemeArg>,
}

/// Sources and outputs longer than the host's defaults (long inputs).
#[derive(clap::Args)]
pub struct LimitArgs {
    /// Plan for sources of up to N positions (the end token included) instead of 512.
    /// Refused for a model padded to a fixed length, and when one decoding thread's
    /// workspace would pass 1 GiB (the error gives its bytes).
    #[arg(long, value_name = "N")]
    pub positions: Option<usize>,
    /// Decode at most N steps instead of the model's max_steps (1 to 65,535, no fewer
    /// than its minimum output length).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
}

impl LimitArgs {
    /// The limits the model runs with.
    pub fn limits(&self) -> host_tools::model::Limits {
        host_tools::model::Limits {
            positions: self.positions,
            max_steps: self.max_steps,
        }
    }
}

/// Beam search instead of greedy decoding.
#[derive(clap::Args)]
pub struct BeamArgs {
    /// Beam-search K wide (1 is greedy decoding) in the model's variant.
    #[arg(long, value_name = "K")]
    pub beam: Option<usize>,
    /// With --beam: the variant instead of the model's (in-slot, finished-set, netra).
    #[arg(long, value_name = "VARIANT")]
    pub beam_variant: Option<String>,
    /// With --beam: the length-normalisation exponent instead of the model's (0 to 2 in
    /// steps of 0.5).
    #[arg(long)]
    pub alpha: Option<f64>,
}

/// The tokens of a model's prefix slots (`source.prefix_slots` of its configuration).
#[derive(clap::Args)]
pub struct PrefixCli {
    /// Choose TOKEN for the model's prefix slot NAME (repeat for several slots; a slot
    /// not chosen takes its default).
    #[arg(long = "prefix", value_name = "NAME=TOKEN")]
    pub fields: Vec<String>,
    /// Each line's column N (2 or more; column 1 is the source) holds its own
    /// NAME=TOKEN fields, separated by spaces, which replace --prefix's for their
    /// slots (a line without it keeps --prefix's).
    #[arg(long, value_name = "N")]
    pub prefix_column: Option<usize>,
}

impl PrefixCli {
    /// The library's form.
    pub fn args(self) -> host_tools::model::PrefixArgs {
        host_tools::model::PrefixArgs {
            fields: self.fields,
            column: self.prefix_column,
        }
    }
}

/// What `s2s qemu` and `s2s serial` run on the device and compare with the host.
#[derive(clap::Args)]
pub struct DeviceCheckArgs {
    /// Input file, one source per line (standard input by default): a line's source is
    /// its first tab-separated column, so `source<TAB>target` pairs will do (the target
    /// is ignored).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Also compare the attention weights of every step, exactly (greedy only).
    #[arg(long)]
    pub attention: bool,
    /// Beam-search every input K wide on the device and the host, in the model's own
    /// variant (the board's `max_beam` is the widest).
    #[arg(long, value_name = "K")]
    pub beam: Option<usize>,
    /// Choose TOKEN for the model's prefix slot NAME for every input, on the device and
    /// the host (repeat for several slots; a slot not chosen takes its default).
    #[arg(long, value_name = "NAME=TOKEN")]
    pub prefix: Vec<String>,
    /// Exit 0 even if the device rejected inputs (each is still reported with its
    /// reason, e.g. longer than the board's positions).
    #[arg(long)]
    pub allow_rejects: bool,
}

/// The board and timeout of a QEMU run.
#[derive(clap::Args)]
pub struct BoardArgs {
    /// Board: a name from the board table (s2s-device); the help lists its QEMU boards
    /// ([`board_help`]).
    #[arg(long, default_value = "mps2-an386", help = board_help())]
    pub board: String,
    /// Seconds before QEMU is killed.
    #[arg(long, default_value_t = device::DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

/// `--board`'s help, from the board table: its QEMU boards with a register driver
/// (`s2s_device::board::register_boards`), the ones every firmware binary runs on.
fn board_help() -> String {
    let names: Vec<&str> = s2s_device::board::register_boards()
        .map(|b| b.name)
        .collect();
    format!(
        "Board: a name from the board table (s2s-device), e.g. {}",
        names.join(", ")
    )
}
