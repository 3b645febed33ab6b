//! The `s2s` command-line tool: import trained weights, inspect, run, evaluate and draw
//! attention maps (and, in later subcommands, quantize, check and run on QEMU).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use host_tools::eval::rates::{split_tokens, Report};
use host_tools::import::config::Config;
use host_tools::io::{read_lines, write_atomic};
use host_tools::model::inspect;
use host_tools::model::{decode_lines, Keep, LoadedModel};
use host_tools::{formats, import};

#[derive(Parser)]
#[command(
    name = "s2s",
    version,
    about = "Attention seq2seq models for microcontrollers: import, inspect, run, evaluate, heatmaps"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
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
        scheme: host_tools::quantize::Scheme,
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
    Qemu(host_tools::device::QemuArgs),
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Import {
            config,
            weights,
            output,
        } => cmd_import(&config, &weights, &output),
        Cmd::Inspect {
            model,
            positions,
            tensors,
        } => {
            let m = LoadedModel::load(&model)?;
            print!("{}", inspect::render(&m, positions, tensors)?);
            Ok(())
        }
        Cmd::Run {
            model,
            input,
            tsv,
            attention,
        } => cmd_run(&model, input.as_deref(), tsv, attention.as_deref()),
        Cmd::Eval { model, data } => cmd_eval(&model, &data),
        Cmd::Quantize {
            model,
            calib,
            scheme,
            planes,
            target_agreement,
            output,
        } => {
            let planes = match planes.as_str() {
                "auto" => host_tools::quantize::Planes::Auto(target_agreement),
                "none" => host_tools::quantize::Planes::None,
                list => host_tools::quantize::Planes::Layers(
                    list.split(',').map(String::from).collect(),
                ),
            };
            cmd_quantize(&model, calib.as_deref(), scheme, &planes, &output)
        }
        Cmd::Check {
            model,
            reference,
            input,
            min_agreement,
        } => cmd_check(&model, &reference, &input, min_agreement),
        Cmd::Heatmap {
            model,
            source,
            output,
            no_color,
        } => {
            // Colours only for a terminal that is not asked to do without them.
            use std::io::IsTerminal;
            let color = !no_color && std::io::stdout().is_terminal();
            cmd_heatmap(&model, &source, output.as_deref(), color)
        }
        Cmd::Qemu(a) => host_tools::device::qemu_command(&a),
    }
}

fn cmd_import(config: &Path, weights: &Path, output: &Path) -> Result<(), String> {
    let cfg = Config::load(config)?;
    let tensors = formats::read_weights(weights).map_err(|e| e.to_string())?;
    let builder = import::import(&cfg, &tensors)
        .map_err(|e| format!("{} with {}: {e}", config.display(), weights.display()))?;
    let bytes = builder.to_bytes();
    // Check what we wrote exactly as a reader will.
    LoadedModel::from_bytes(output, &bytes)?;
    write_atomic(output, &bytes)?;
    eprintln!(
        "wrote {} ({} bytes, {} tensors)",
        output.display(),
        bytes.len(),
        builder.tensors.len()
    );
    Ok(())
}

fn cmd_run(
    model: &Path,
    input: Option<&Path>,
    tsv: bool,
    attention: Option<&Path>,
) -> Result<(), String> {
    let m = LoadedModel::load(model)?;
    let lines = read_lines(input)?;
    let keep = Keep {
        weights: attention.is_some(),
        ..Keep::default()
    };
    let out = decode_lines(&m, &lines, keep)?;
    let mut text = String::new();
    for (line, d) in lines.iter().zip(&out) {
        if tsv {
            text += line;
            text.push('\t');
        }
        text += &d.text;
        text.push('\n');
    }
    if let Some(path) = attention {
        let json: Vec<serde_json::Value> = lines
            .iter()
            .zip(&out)
            .map(|(line, d)| {
                let mut outputs = d.tokens.clone();
                if d.weights.len() > d.tokens.len() {
                    outputs.push(m.file().tgt_vocab().get(m.file().desc().tgt_end).unwrap_or("").into());
                }
                serde_json::json!({
                    "input": line,
                    "source": d.source,
                    "output": outputs,
                    "text": d.text,
                    "attention": d.weights,
                    "entropy": d.weights.iter().map(|w| attention_core::entropy::<s2s_kernels::F32>(w)).collect::<Vec<_>>(),
                })
            })
            .collect();
        let s = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        write_atomic(path, s.as_bytes())?;
    }
    use std::io::Write;
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(|e| format!("stdout: {e}"))
}

fn cmd_eval(model: &Path, data: &Path) -> Result<(), String> {
    let m = LoadedModel::load(model)?;
    let rows = read_lines(Some(data))?;
    let mut sources = vec![];
    let mut refs = vec![];
    for (i, r) in rows.iter().enumerate() {
        if r.trim().is_empty() || r.starts_with('#') {
            continue;
        }
        let (s, t) = r.split_once('\t').ok_or_else(|| {
            format!(
                "{}:{}: expected source<TAB>reference",
                data.display(),
                i + 1
            )
        })?;
        sources.push(s.to_string());
        refs.push(t.to_string());
    }
    let out = decode_lines(&m, &sources, Keep::default())?;
    let sep = m.file().separator().to_string();
    let mut report = Report::default();
    for ((s, r), d) in sources.iter().zip(&refs).zip(&out) {
        let len = match m.file().desc().split {
            seq2seq::Split::Chars => s.chars().count(),
            seq2seq::Split::Whitespace => s.split_whitespace().count(),
        };
        report.add(len, &d.tokens, &split_tokens(r, &sep));
    }
    println!(
        "{} on {} ({} sequences)",
        model.display(),
        data.display(),
        sources.len()
    );
    print!("{}", report.render());
    Ok(())
}

fn cmd_quantize(
    model: &Path,
    calib: Option<&Path>,
    scheme: host_tools::quantize::Scheme,
    planes: &host_tools::quantize::Planes,
    output: &Path,
) -> Result<(), String> {
    use host_tools::quantize::{calibrate, quantize, Scheme};
    let m = LoadedModel::load(model)?;
    let calibration = match (scheme, calib) {
        (Scheme::W8a16, None) => {
            return Err("w8a16 needs --calib FILE (sources, one per line)".into())
        }
        (_, Some(path)) => {
            let lines = read_lines(Some(path))?;
            let bar = indicatif::ProgressBar::new(lines.len() as u64).with_style(
                indicatif::ProgressStyle::with_template(
                    "calibrating {bar:40} {pos}/{len} sequences",
                )
                .map_err(|e| e.to_string())?,
            );
            let c = calibrate(&m, &lines, |n| bar.set_position(n as u64))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            bar.finish_and_clear();
            Some(c)
        }
        (Scheme::W8f32, None) => None,
    };
    let (builder, report) = quantize(&m, scheme, planes, calibration.as_ref())?;
    let bytes = builder.to_bytes();
    LoadedModel::from_bytes(output, &bytes)?;
    write_atomic(output, &bytes)?;
    eprint!("{report}");
    eprintln!(
        "wrote {} ({} bytes, {:.1} % of the f32 file)",
        output.display(),
        bytes.len(),
        100.0 * bytes.len() as f64 / m.bytes().len() as f64
    );
    Ok(())
}

fn cmd_check(model: &Path, reference: &Path, input: &Path, min: Option<f64>) -> Result<(), String> {
    let q = LoadedModel::load(model)?;
    let r = LoadedModel::load(reference)?;
    let rows = read_lines(Some(input))?;
    let rows: Vec<&String> = rows
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    let tsv = rows.iter().all(|l| l.contains('\t'));
    let sources: Vec<String> = rows
        .iter()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    let refs: Vec<String> = rows
        .iter()
        .map(|l| {
            l.split_once('\t')
                .map_or(String::new(), |(_, t)| t.to_string())
        })
        .collect();
    let rep = host_tools::eval::check::check(&q, &r, &sources, tsv.then_some(&refs[..]))?;
    println!(
        "{} against {} on {} inputs",
        model.display(),
        reference.display(),
        sources.len()
    );
    print!("{}", rep.render());
    if let Some(min) = min {
        if rep.sequence_agreement() < min {
            return Err(format!(
                "sequence agreement {:.2} % is below --min-agreement {min} %",
                rep.sequence_agreement()
            ));
        }
    }
    Ok(())
}

fn cmd_heatmap(
    model: &Path,
    source: &str,
    output: Option<&Path>,
    color: bool,
) -> Result<(), String> {
    let m = LoadedModel::load(model)?;
    let map = host_tools::attention_map(&m, source)?;
    match output {
        Some(path) => {
            let report =
                host_tools::plot::heatmap::write_image(&map, path).map_err(|e| e.to_string())?;
            for w in report.warnings {
                eprintln!("note: {w}");
            }
            eprintln!("wrote {}", path.display());
        }
        None => print!(
            "{}",
            host_tools::plot::heatmap::render_terminal(&map, color)
        ),
    }
    Ok(())
}
