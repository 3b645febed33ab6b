//! The command line: every subcommand and option (clap types live here, in
//! [`groups`] and in `main.rs` only; the library takes plain values).

mod groups;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use host_tools::device;

pub use groups::{
    BeamArgs, BoardArgs, DeviceCheckArgs, LimitArgs, PrefixCli, SchemeArg, TrainArgs,
};

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

/// `s2s generate`'s tasks.
#[derive(Clone, Copy, ValueEnum)]
pub enum TaskArg {
    /// Dates in six spellings to YYYY-MM-DD (distinct dates 1950-2049).
    Dates,
    /// Strings of 5 to 100 letters, each letter substituted (the length task).
    Substitution,
    /// Sentences of words from a word list (`word<TAB>phonemes`, e.g. a CMUdict
    /// split) to their phonemes with `|` between words, of --lengths characters.
    RunningText,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Cmd {
    /// Import trained weights (PyTorch safetensors, NumPy .npz, Keras .keras/.h5, ONNX) into an f32 model file.
    Import {
        /// Model configuration (architecture, vocabularies, tensor mapping).
        #[arg(long)]
        config: PathBuf,
        /// Weights file; give it again for each further file (e.g. an ONNX encoder
        /// and decoder graph), named in the configuration by its file name.
        #[arg(long, required = true)]
        weights: Vec<PathBuf>,
        /// Model file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Print, for each layer, the tensor its matrix came from, the stored shape,
        /// the orientation it got (as stored or transposed) and why: the
        /// configuration's `transpose`, the ONNX graph's use of the tensor, or the
        /// default.
        #[arg(long)]
        explain: bool,
    },
    /// Train a model from `source<TAB>target` pairs: the configuration of import without
    /// `[weights]` (vocabularies may be left out: they are built from the data), or an
    /// f32 model file to fine-tune (--init).
    Train {
        /// Model configuration (architecture, vocabularies).
        #[arg(long, required_unless_present = "init", conflicts_with = "init")]
        config: Option<PathBuf>,
        /// Start from this f32 model file (any imported or trained one): its
        /// architecture, vocabularies and weights, instead of --config.
        #[arg(long, value_name = "MODEL.s2s")]
        init: Option<PathBuf>,
        /// Training pairs, `source<TAB>target` per line.
        #[arg(long)]
        data: PathBuf,
        /// Validation pairs (default: 5 % of --data, chosen by the seed, held out).
        #[arg(long)]
        valid: Option<PathBuf>,
        /// Model file to write (the best epoch's weights: f32, or with --quantize the
        /// integer file that was trained).
        #[arg(short, long)]
        output: PathBuf,
        #[command(flatten)]
        options: TrainArgs,
    },
    /// Write a synthetic data set: `DIR/<split>.tsv` (pairs) and `DIR/<split>.txt` (sources).
    Generate {
        /// The task.
        #[arg(value_enum)]
        task: TaskArg,
        /// Seed (the same seed gives the same pairs on every machine).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Training pairs.
        #[arg(long)]
        train: usize,
        /// Validation pairs.
        #[arg(long, default_value_t = 0)]
        valid: usize,
        /// Test pairs.
        #[arg(long, default_value_t = 0)]
        test: usize,
        /// Directory to write into.
        #[arg(short, long)]
        output: PathBuf,
        /// running-text: the word list every split draws from (`word<TAB>phonemes`
        /// per line).
        #[arg(long, value_name = "FILE")]
        words: Option<PathBuf>,
        /// running-text: the validation sentences' word list instead of --words.
        #[arg(long, value_name = "FILE")]
        valid_words: Option<PathBuf>,
        /// running-text: the test sentences' word list instead of --words (test words
        /// only, to test on words no training sentence has).
        #[arg(long, value_name = "FILE")]
        test_words: Option<PathBuf>,
        /// running-text: sentence lengths in characters, drawn uniformly [default:
        /// 20-200].
        #[arg(long, value_name = "MIN-MAX")]
        lengths: Option<String>,
    },
    /// List every tensor of weights files (name, shape, element type; for ONNX the
    /// node input each feeds), to write a configuration's `[weights]`.
    Tensors {
        /// Weights files (safetensors, .npz, .npy, .keras, .h5, .onnx).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// ONNX models only: also how the graph uses the tensors (each weight's uses
        /// through Identity and Transpose nodes, every Concat's inputs in order, the
        /// subgraphs of If/Loop/Scan nodes) and the initializers shared by two graphs
        /// or two of the files given.
        #[arg(long)]
        graph: bool,
        /// Also list a Keras file's optimizer slots (`optimizer_weights/...`,
        /// `optimizer/...`), left out by default.
        #[arg(long)]
        all: bool,
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
    ///
    /// Every input line gives one output line, as it goes, empty and `#` lines included
    /// (an empty line gives an empty output). A line that cannot be decoded gives an
    /// empty output and `error: FILE:LINE: ...` on standard error (lines counted from
    /// 1, every line counted; standard input is `<stdin>`); the exit status is then 1.
    /// Lines are at most 64 KiB; a UTF-8 BOM is dropped; a line that is not UTF-8 is an
    /// error of that line.
    Run {
        /// Model file.
        model: PathBuf,
        /// Input file, one source per line: a line's source is its first tab-separated
        /// column, so `source<TAB>target` pairs will do (the target is ignored).
        #[arg(long)]
        input: Option<PathBuf>,
        /// Print `source<TAB>output` (`source<TAB><TAB>error` for a line that failed).
        #[arg(long)]
        tsv: bool,
        /// Print each output as its target token ids, space-separated (the end token
        /// left out), instead of text: to compare with a decode of the model's own
        /// framework.
        #[arg(long)]
        ids: bool,
        /// Write every step's attention weights and entropy to this JSON file (greedy
        /// decoding only).
        #[arg(long)]
        attention: Option<PathBuf>,
        #[command(flatten)]
        beam: BeamArgs,
        #[command(flatten)]
        prefix: PrefixCli,
        /// With --beam: print the N best results of each source as
        /// `source<TAB>rank<TAB>output<TAB>score` lines (score: the sum of the natural-log
        /// probabilities of the tokens).
        #[arg(long, value_name = "N")]
        nbest: Option<usize>,
        /// Stream each line through a streaming model (monotonic attention over a
        /// unidirectional encoder, decoder from zeros: `s2s inspect` says whether a
        /// model streams): read a character at a time into a window of --positions
        /// encoder states, whatever the line's length, and write each output token as
        /// it is decided. The outputs are those of the whole line with --max-steps
        /// steps. Lines have no length limit; --tsv, --attention, --beam and
        /// --prefix-column need whole lines and are refused.
        #[arg(long)]
        stream: bool,
        /// With --stream: attend one source position at most K steps running, then
        /// scan on from the next (a monotonic model that gets stuck on a position
        /// repeats itself until --max-steps otherwise). The board takes the same limit
        /// (`s2s qemu --stream N --max-repeats K`).
        #[arg(long, value_name = "K", requires = "stream", value_parser = clap::value_parser!(u16).range(1..))]
        max_repeats: Option<u16>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Token and sequence error rates against references (`source<TAB>reference` lines),
    /// overall and by source length, with the mean attention entropy; several models
    /// are compared on the same data.
    ///
    /// `#` lines are comments and blank lines are skipped (both counted in line
    /// numbers). A line that is not a pair or that a model cannot decode is reported as
    /// `error: FILE:LINE: ...` and left out; the others are measured, and the exit
    /// status is then 1.
    Eval {
        /// Model files.
        #[arg(required = true)]
        models: Vec<PathBuf>,
        /// TSV file of sources and references.
        #[arg(long)]
        data: PathBuf,
        /// Source-length buckets this wide (default: 1-4, 5-8, 9-12, 13+).
        #[arg(long)]
        bucket_width: Option<usize>,
        /// Write every model's counts per bucket as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Draw the token error rate against source length (.png or .svg), one line per
        /// model; a bucket no source falls in is a gap in the lines.
        #[arg(long)]
        plot: Option<PathBuf>,
        #[command(flatten)]
        beam: BeamArgs,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Quantize an f32 model: int8 weights with int16 activations (w8a16) or f32 math (w8f32).
    Quantize {
        /// The f32 model file.
        model: PathBuf,
        /// Calibration sources, one per line (needed for w8a16): a line's source is its
        /// first tab-separated column, so `source<TAB>target` pairs will do (the target
        /// is ignored).
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
        /// quantized weights must reproduce the float model's output (above 0, at most
        /// 100). Calibration lines the model cannot take are skipped and listed.
        #[arg(long, default_value_t = 99.5)]
        target_agreement: f64,
        /// How w8a16 stores its int8 weights: `row` (two's complement, row-major: fast
        /// on every board) or `v6m` (offset binary, fastest on the Cortex-M0/M0+/M23).
        /// The same results on every board whatever the layout.
        #[arg(long, default_value = "row", value_parser = parse_layout)]
        layout: s2s_kernels::Layout,
        /// Also measure what a residual plane for single rows (not stored: a
        /// measurement) would buy: agreement with the float model on these sources (one
        /// per line or `source<TAB>reference`, `#` comments; other words than the
        /// calibration's) for each `--row-budgets` file size.
        #[arg(long)]
        row_curve: Option<PathBuf>,
        /// With `--row-curve`: the file sizes, in percent of the f32 file.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "26,27,28,29,30,32,34,36,40"
        )]
        row_budgets: Vec<f64>,
        /// Model file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Compare a quantized model with its float reference: agreement, differences, SQNR.
    ///
    /// Both must be the same model (architecture, vocabularies; any precisions). Input
    /// lines are read as for `eval`; a line either model cannot decode is reported as
    /// `error: FILE:LINE: ...` and left out (exit status 1).
    Check {
        /// The quantized model file.
        model: PathBuf,
        /// The float model it was made from.
        #[arg(long)]
        reference: PathBuf,
        /// Sources, one per line, or `source<TAB>reference` lines for error rates too.
        #[arg(long)]
        input: PathBuf,
        /// Exit non-zero when sequence agreement is below this percentage (0 to 100).
        #[arg(long)]
        min_agreement: Option<f64>,
        /// Also a per-layer table: the agreement when only that layer's weights are
        /// quantized (the others and the arithmetic f32), overall and by source length.
        /// Needs an f32 reference; one more decode of the inputs per layer.
        #[arg(long)]
        sensitivity: bool,
        #[command(flatten)]
        beam: BeamArgs,
    },
    /// Check a model file against reference decodes from its own framework: agreement
    /// (N of N) and, for each source that differs, its first differing step with both
    /// tokens and the top-two gap there (a near tie below 1e-4).
    ///
    /// The reference file is JSON Lines, one object per source: `{"source": "...",
    /// "ids": [..]}` with the output's target token ids without the start and end
    /// tokens (what `s2s run --ids` prints), optional `"beam": K` (a beam search of
    /// width K in the model's variant, else greedy), and for greedy lines optional
    /// `"probs"` (the top-1 probability at each step, the end token's step included
    /// when the decode ended) and `"gaps"` (the framework's top-two gap at each step,
    /// which then decides the near tie). `scripts/verify/` writes it from PyTorch,
    /// Keras or onnxruntime. Exit status 0 only when every source agrees; a malformed
    /// line is `error: FILE:LINE: FIELD: ...` and the other lines are still judged.
    Verify {
        /// Model file (any precision).
        model: PathBuf,
        /// The reference decodes (JSON Lines).
        #[arg(long)]
        expect: PathBuf,
        /// List every source, agreeing ones too (with its largest probability
        /// difference when the line has probs).
        #[arg(long)]
        all: bool,
    },
    /// Draw the attention map of one source (PNG or SVG with -o, else in the terminal).
    Heatmap {
        /// Model file.
        model: PathBuf,
        /// The source.
        source: String,
        /// Picture to write (.png or .svg, at most 16,384 pixels a side); without it the
        /// map is drawn in the terminal.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Terminal drawing without colours (shade characters); also the default when
        /// standard output is not a terminal.
        #[arg(long)]
        no_color: bool,
        /// Print the map as JSON instead of drawing it: `{"source": [..], "output":
        /// [..], "weights": [[..], ..], "entropy": [..]}` (the output's tokens with the
        /// end token's step, each step's weights and their entropy in nats), what the
        /// explorer's page shows.
        #[arg(long, conflicts_with_all = ["output", "no_color"])]
        json: bool,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Serve the attention explorer (a page that decodes a typed source step by step,
    /// built by `cargo xtask explorer`) with MODEL on 127.0.0.1, printing its address.
    ///
    /// The page runs the same core, compiled to WebAssembly, so it shows what the
    /// device outputs. It can also be opened from disk (target/explorer/index.html)
    /// and a model dropped on it.
    Explore {
        /// Model file, loaded by the page at start.
        model: PathBuf,
        /// Port on 127.0.0.1 (0: any free port).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// The built page (default: S2S_EXPLORER_DIR, else target/explorer of the
        /// checkout s2s was built from).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Write a model file as a Rust module for a build with that one model (the
    /// firmware's `one-model` build, or your own firmware): its description, vocabularies
    /// and tensors as typed, aligned constants, checked here and bound on the device with
    /// no model-file parser. Refused in one line if the model does not fit the board.
    Embed {
        /// Model file.
        model: PathBuf,
        /// The board it is for: a name from the board table (s2s-device).
        #[arg(long, default_value = "mps2-an386")]
        board: String,
        /// The Rust module to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Run a model on a Cortex-M board under QEMU and check it token for token against the host.
    Qemu {
        /// Model file, loaded into the board's model region.
        model: PathBuf,
        #[command(flatten)]
        board: BoardArgs,
        #[command(flatten)]
        check: DeviceCheckArgs,
        /// Use a debug build of the firmware (release by default; debug builds fit only
        /// the mps2 boards' runtime flash).
        #[arg(long)]
        debug: bool,
        /// Build the minimal firmware for the model: only its precision and the model
        /// parts it needs (`features` of `s2s inspect`), no defmt logging.
        #[arg(long)]
        minimal: bool,
        /// Build the one-model firmware: the model linked into the firmware (`s2s
        /// embed`), only the parts it needs, no model-file parser, errors as codes
        /// (`s2s explain`).
        #[arg(long, conflicts_with = "minimal")]
        one_model: bool,
        /// Build the firmware with its `profile` feature and print the instructions by
        /// phase (the counts then include the counter reads at the phase boundaries).
        #[arg(long)]
        profile: bool,
        /// Stream each input through a streaming model (`s2s inspect` says whether it
        /// streams) with at most N decoder steps: the board reads it a byte at a time
        /// into its window of encoder states, whatever its length, and answers with its
        /// tokens as they are decided; each is compared with `s2s run --stream`'s, and
        /// the instructions per output token are printed.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        stream: Option<u16>,
        /// With --stream: attend one source position at most K steps running (as `s2s
        /// run --stream --max-repeats K`).
        #[arg(long, value_name = "K", requires = "stream", value_parser = clap::value_parser!(u16).range(1..))]
        max_repeats: Option<u16>,
        /// The firmware sources (`firmware/` of the s2s repository; default: the
        /// checkout s2s was built from, or S2S_FIRMWARE_DIR). They are built in
        /// ~/.cache/s2s (or $XDG_CACHE_HOME/s2s, or S2S_CACHE_DIR), not in the checkout.
        #[arg(long)]
        firmware_dir: Option<PathBuf>,
    },
    /// Run a model on a board at the other end of a serial port and compare every output
    /// with the host, like `qemu` (tested against QEMU boards over a pseudo-terminal, not
    /// yet against a physical board).
    ///
    /// The model must already be in the board's model region (flashed): the board's
    /// MODEL line (precision, bytes, CRC-32) must name MODEL, or nothing is sent. s2s
    /// waits for the board's READY line before sending anything (reset the board if it
    /// booted before the port was opened), sends each source once the previous answer is
    /// complete, and acknowledges the board's last line.
    Serial {
        /// Model file: the one flashed on the board, run on the host too.
        model: PathBuf,
        /// The serial port (/dev/ttyACM0, /dev/ttyUSB0, a pseudo-terminal /dev/pts/N).
        #[arg(long)]
        port: String,
        /// Line rate (ignored by USB CDC ports and pseudo-terminals).
        #[arg(long, default_value_t = device::SERIAL_BAUD)]
        baud: u32,
        /// The board the READY line must name (default: the board it names).
        #[arg(long)]
        board: Option<String>,
        #[command(flatten)]
        check: DeviceCheckArgs,
        /// Seconds to wait for each line from the board, READY included.
        #[arg(long, default_value_t = device::SERIAL_TIMEOUT_SECS)]
        timeout: u64,
    },
    /// Tell what a device's error code means (`ERR E64`, from a firmware built with
    /// `error-codes`).
    ///
    /// Prints the code, the error's name and its text in one line: `E64 InputTooLong:
    /// input too long`. A code neither table has is an error naming it.
    Explain {
        /// The code: `64`, or as the device writes it, `E64` (the inference core's errors
        /// are 1 to 99, the firmware's own 100 and up).
        code: String,
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

/// A `--layout` value that names no weight layout.
#[derive(Debug, thiserror::Error)]
#[error("unknown layout {name:?}: one of {}", layout_names())]
struct UnknownLayout {
    /// The value given.
    name: String,
}

/// The names of every weight layout, for [`UnknownLayout`].
fn layout_names() -> String {
    let names: Vec<&str> = s2s_kernels::Layout::ALL.iter().map(|l| l.name()).collect();
    names.join(", ")
}

/// A weight layout by its name (`row`, `v6m`).
fn parse_layout(name: &str) -> Result<s2s_kernels::Layout, UnknownLayout> {
    s2s_kernels::Layout::from_name(name).ok_or_else(|| UnknownLayout {
        name: name.to_string(),
    })
}
