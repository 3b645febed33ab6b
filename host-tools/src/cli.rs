//! The command line: every subcommand and option (clap types live here and in `main.rs`
//! only; the library takes plain values).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use host_tools::device;

#[derive(Parser)]
#[command(
    name = "s2s",
    version,
    about = "Attention seq2seq models for microcontrollers: import, inspect, run, evaluate, quantize, heatmaps, QEMU"
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// `--scheme`.
#[derive(Clone, Copy, ValueEnum)]
pub enum SchemeArg {
    /// int8 weights, int16 activations, int32 accumulators.
    W8a16,
    /// int8 weights dequantized on the fly, f32 math.
    W8f32,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Cmd {
    /// Import trained weights (PyTorch safetensors, NumPy .npz, Keras 3 .keras/.h5) into an f32 model file.
    Import {
        /// Model configuration (architecture, vocabularies, tensor mapping).
        #[arg(long)]
        config: PathBuf,
        /// Weights file.
        #[arg(long)]
        weights: PathBuf,
        /// Model file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Show a model's architecture, size, RAM and MACs.
    Inspect {
        /// Model file.
        model: PathBuf,
        /// Source positions to size the workspace for (default: the model's fixed length, or 32).
        #[arg(long)]
        positions: Option<usize>,
        /// Also list every tensor.
        #[arg(long)]
        tensors: bool,
    },
    /// Run a model on one source per line (standard input by default).
    Run {
        /// Model file.
        model: PathBuf,
        /// Input file, one source per line.
        #[arg(long)]
        input: Option<PathBuf>,
        /// Print `input<TAB>output`.
        #[arg(long)]
        tsv: bool,
        /// Write every step's attention weights and entropy to this JSON file.
        #[arg(long)]
        attention: Option<PathBuf>,
    },
    /// Token and sequence error rates against references (`source<TAB>reference` lines).
    Eval {
        /// Model file.
        model: PathBuf,
        /// TSV file of sources and references.
        #[arg(long)]
        data: PathBuf,
    },
    /// Quantize an f32 model: int8 weights with int16 activations (w8a16) or f32 math (w8f32).
    Quantize {
        /// The f32 model file.
        model: PathBuf,
        /// Calibration sources, one per line (needed for w8a16).
        #[arg(long)]
        calib: Option<PathBuf>,
        /// Number format.
        #[arg(long, value_enum)]
        scheme: SchemeArg,
        /// Layers that get a second int8 plane holding the first one's rounding residual
        /// (`auto`: chosen on the calibration set to reach --target-agreement; `none`;
        /// or a comma-separated list of layer names).
        #[arg(long, default_value = "auto")]
        planes: String,
        /// With `--planes auto`: the percentage of calibration sequences on which the
        /// quantized weights must reproduce the float model's output.
        #[arg(long, default_value_t = 99.5)]
        target_agreement: f64,
        /// Model file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Compare a quantized model with its float reference: agreement, differences, SQNR.
    Check {
        /// The quantized model file.
        model: PathBuf,
        /// The float model it was made from.
        #[arg(long)]
        reference: PathBuf,
        /// Sources, one per line, or `source<TAB>reference` lines for error rates too.
        #[arg(long)]
        input: PathBuf,
        /// Exit non-zero when sequence agreement is below this percentage.
        #[arg(long)]
        min_agreement: Option<f64>,
    },
    /// Draw the attention map of one source (PNG or SVG with -o, else in the terminal).
    Heatmap {
        /// Model file.
        model: PathBuf,
        /// The source.
        source: String,
        /// Picture to write (.png or .svg); without it the map is drawn in the terminal.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Terminal drawing without colours (shade characters); also the default when
        /// standard output is not a terminal.
        #[arg(long)]
        no_color: bool,
    },
    /// Run a model on a Cortex-M board under QEMU and check it token for token against the host.
    Qemu {
        /// Model file, loaded into the board's model region.
        model: PathBuf,
        #[command(flatten)]
        board: BoardArgs,
        /// Input file, one source per line (standard input by default).
        #[arg(long)]
        input: Option<PathBuf>,
        /// Also compare the attention weights of every step, exactly.
        #[arg(long)]
        attention: bool,
        /// Use a debug build of the firmware (release by default; debug builds fit only
        /// the mps2 boards' runtime flash).
        #[arg(long)]
        debug: bool,
        /// The firmware sources (`firmware/` of the s2s repository; default: the
        /// checkout s2s was built from, or S2S_FIRMWARE_DIR).
        #[arg(long)]
        firmware_dir: Option<PathBuf>,
    },
    /// Boot a firmware ELF under QEMU with its UART on the terminal (the firmware's cargo
    /// runner); exits with QEMU's status.
    Boot {
        /// The ELF.
        elf: PathBuf,
        /// Board (default: S2S_BOARD, or the default board of the ELF's target).
        #[arg(long)]
        board: Option<String>,
        /// Model file for the board's model region (default: S2S_MODEL).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Seconds before QEMU is killed (exit status 124).
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
}

/// The board and timeout of a QEMU run.
#[derive(clap::Args)]
pub struct BoardArgs {
    /// Board: a name from the board table (s2s-device), e.g. mps2-an386, lm3s6965evb,
    /// microbit, mps2-an505, mps2-an385.
    #[arg(long, default_value = "mps2-an386")]
    pub board: String,
    /// Seconds before QEMU is killed.
    #[arg(long, default_value_t = device::DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}
