//! The `s2s` command-line tool: parses the arguments and calls the library's function
//! for each subcommand (see the library's docs for what each does).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cli::{Cli, Cmd, SchemeArg, TaskArg};
use host_tools::device::{self, QemuOptions};
use host_tools::io::STDOUT_NAME;
use host_tools::quantize::{Planes, Scheme};
use host_tools::{data, eval, import, model, plot, quantize, Result};

mod cli;

fn main() -> ExitCode {
    match run(Cli::parse().cmd) {
        Ok(code) => code,
        // A reader that stopped reading (`s2s inspect m.s2s | head -1`) ends the
        // command quietly: what it read was all it wanted.
        Err(e) if e.is_closed_stdout() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The exit status of a command whose `failed` input lines were reported one by one
/// (an error line each): non-zero when any failed, as for any other error.
fn lines_status(failed: usize) -> ExitCode {
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The checked `--beam` of `s2s qemu` and `s2s serial`.
fn device_beam(check: &cli::DeviceCheckArgs) -> Result<Option<usize>> {
    if let Some(k) = check.beam {
        beam_width(k)?;
    }
    Ok(check.beam)
}

/// The end of `s2s qemu` and `s2s serial`: prints the report, and each rejected input
/// on standard error (an error, or with `--allow-rejects` a note); an error naming
/// `device` when an output differs from the host's, else the status of the lines not
/// sent and rejected.
fn device_verdict(
    report: &device::QemuReport,
    inputs: &device::Inputs,
    allow_rejects: bool,
    device: &str,
    stdout: &mut impl Write,
) -> Result<ExitCode> {
    stdout
        .write_all(report.render().as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(host_tools::Error::io(STDOUT_NAME))?;
    let level = if allow_rejects { "note" } else { "error" };
    for r in &report.rejected {
        eprintln!(
            "{level}: {}:{}: rejected by {device} (and by the host at its {} positions): {}",
            inputs.name, r.line, report.info.positions, r.reason
        );
    }
    if !report.agrees() {
        return Err(host_tools::Error::device(
            device,
            format!(
                "{} of {} inputs differ from the host",
                report.mismatches.len(),
                report.inputs
            ),
        ));
    }
    let rejected = if allow_rejects {
        0
    } else {
        report.rejected.len()
    };
    Ok(lines_status(inputs.unsent + rejected))
}

/// `s2s qemu --stream`: the report, an error if the board and the host differ, and
/// status 1 if the board refused an input (each said on standard error).
fn stream_verdict(
    model: &std::path::Path,
    input: Option<&std::path::Path>,
    limits: (u16, u16),
    options: &QemuOptions,
    stdout: &mut impl Write,
) -> Result<ExitCode> {
    let inputs = device::read_inputs(input)?;
    let report = device::stream::stream_check(model, &inputs.sources, limits, options)?;
    stdout
        .write_all(report.render().as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(host_tools::Error::io(STDOUT_NAME))?;
    let device = options.board.name;
    if report.mismatches() > 0 {
        return Err(host_tools::Error::device(
            device,
            format!(
                "{} of {} streamed inputs differ from the host",
                report.mismatches(),
                report.lines.len()
            ),
        ));
    }
    let mut refused = 0;
    for (l, &line) in report.lines.iter().zip(&inputs.lines) {
        if let Err(reason) = &l.device {
            refused += 1;
            eprintln!(
                "error: {}:{line}: refused by {device}: {reason}",
                inputs.name
            );
        }
    }
    Ok(lines_status(inputs.unsent + refused))
}

/// The beam search of `--beam`, `--beam-variant` and `--alpha`.
fn beam_options(b: &cli::BeamArgs) -> Result<Option<model::beam::BeamOptions>> {
    let Some(width) = b.beam else {
        if b.beam_variant.is_some() || b.alpha.is_some() {
            return Err(host_tools::Error::usage(
                "--beam-variant and --alpha need --beam",
            ));
        }
        return Ok(None);
    };
    beam_width(width)?;
    let variant = b.beam_variant.as_deref().unwrap_or("in-slot");
    let rule = import::describe::beam_rule(variant, b.alpha.unwrap_or(1.0))?;
    Ok(Some(model::beam::BeamOptions {
        width,
        variant: b.beam_variant.is_some().then_some(rule.variant),
        alpha: b.alpha.is_some().then_some(rule.alpha),
    }))
}

/// Refuses a `--beam` width the search does not take.
fn beam_width(width: usize) -> Result<()> {
    let max = seq2seq::beam::MAX_WIDTH;
    if (1..=max).contains(&width) {
        Ok(())
    } else {
        Err(host_tools::Error::usage(format!(
            "--beam {width}: the width is 1 to {max}"
        )))
    }
}

fn run(cmd: Cmd) -> Result<ExitCode> {
    // `s2s boot` prints the UART from a thread of its own: standard output must not be
    // locked here while it runs, or that thread waits for ever (issue 30, finding 7).
    let cmd = match cmd {
        Cmd::Boot {
            elf,
            board,
            model,
            timeout,
        } => {
            let model = model.or_else(|| std::env::var_os("S2S_MODEL").map(PathBuf::from));
            let timeout = Duration::from_secs(timeout);
            let code = device::boot_command(&elf, board.as_deref(), model.as_deref(), timeout)?;
            return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
        }
        cmd => cmd,
    };
    let stdout = &mut std::io::stdout().lock();
    match cmd {
        Cmd::Import {
            config,
            weights,
            output,
            explain,
        } => {
            if explain {
                host_tools::io::distinct_outputs(&[
                    ("the --explain lines", Some(std::path::Path::new("-"))),
                    ("-o", Some(output.as_path())),
                ])?;
            }
            let (bytes, tensors, explained) = import::import_file(&config, &weights, &output)?;
            if explain {
                let text: String = explained.iter().map(|e| format!("{e}\n")).collect();
                stdout
                    .write_all(text.as_bytes())
                    .map_err(host_tools::Error::io(STDOUT_NAME))?;
            }
            eprintln!(
                "wrote {} ({bytes} bytes, {tensors} tensors)",
                output.display()
            );
        }
        Cmd::Train {
            config,
            init,
            data,
            valid,
            output,
            options,
        } => {
            let start = match (&init, &config) {
                (Some(m), _) => TrainStart::Init(m),
                (None, Some(c)) => TrainStart::Config(c),
                (None, None) => return Err(host_tools::Error::usage("--config or --init")),
            };
            train(start, &data, valid.as_deref(), &output, options)?
        }
        Cmd::Generate {
            task,
            seed,
            train,
            valid,
            test,
            output,
            words,
            valid_words,
            test_words,
            lengths,
        } => {
            let counts = [("train", train), ("valid", valid), ("test", test)];
            let task = match task {
                TaskArg::Dates => Some(data::Task::Dates),
                TaskArg::Substitution => Some(data::Task::Substitution),
                TaskArg::RunningText => None,
            };
            let splits = match task {
                Some(task) => {
                    if words.is_some()
                        || valid_words.is_some()
                        || test_words.is_some()
                        || lengths.is_some()
                    {
                        return Err(host_tools::Error::usage(
                            "--words, --valid-words, --test-words and --lengths are for \
                             running-text",
                        ));
                    }
                    data::task_splits(task, seed, &counts)?
                }
                None => {
                    let lists = [
                        ("train", words.clone()),
                        ("valid", valid_words.or_else(|| words.clone())),
                        ("test", test_words.or(words)),
                    ];
                    let lengths = match lengths {
                        Some(l) => data::running_text::parse_lengths(&l)?,
                        None => data::running_text::LENGTHS,
                    };
                    data::running_text::splits(&lists, lengths, seed, &counts)?
                }
            };
            for f in data::write_splits(&splits, &output)? {
                eprintln!("wrote {}", f.display());
            }
        }
        Cmd::Tensors { files, graph, all } => {
            host_tools::formats::print_tensors(&files, graph, all, stdout)?
        }
        Cmd::Inspect {
            model,
            positions,
            tensors,
        } => host_tools::commands::inspect::inspect_file(&model, positions, tensors, stdout)?,
        Cmd::Run {
            model,
            input,
            tsv,
            ids,
            attention,
            beam,
            prefix,
            nbest,
            stream,
            max_repeats,
            limits,
        } => {
            let beam = beam_options(&beam)?;
            let prefix = prefix.args();
            host_tools::io::distinct_outputs(&[
                ("the decoded lines", Some(std::path::Path::new("-"))),
                ("--attention", attention.as_deref()),
            ])?;
            let options = model::run::RunOptions {
                tsv,
                ids,
                attention: attention.as_deref(),
                beam,
                prefix: Some(&prefix),
                nbest,
                max_repeats: max_repeats.map_or(0, usize::from),
                limits: limits.limits(),
            };
            let run = match stream {
                true => model::stream::stream_file,
                false => model::run::run_file,
            };
            let failed = run(
                &model,
                input.as_deref(),
                &options,
                stdout,
                &mut std::io::stderr(),
            )?;
            stdout.flush().map_err(host_tools::Error::io(STDOUT_NAME))?;
            return Ok(lines_status(failed));
        }
        Cmd::Eval {
            models,
            data,
            bucket_width,
            json,
            plot,
            beam,
            limits,
        } => {
            host_tools::io::distinct_outputs(&[
                ("the report", Some(std::path::Path::new("-"))),
                ("--json", json.as_deref()),
                ("--plot", plot.as_deref()),
            ])?;
            let options = eval::EvalOptions {
                bucket_width,
                json,
                plot,
                beam: beam_options(&beam)?,
                limits: limits.limits(),
            };
            let failed = eval::eval_file(&models, &data, &options, stdout, &mut std::io::stderr())?;
            stdout.flush().map_err(host_tools::Error::io(STDOUT_NAME))?;
            return Ok(lines_status(failed));
        }
        Cmd::Quantize {
            model,
            calib,
            scheme,
            planes,
            target_agreement,
            layout,
            row_curve,
            row_budgets,
            output,
        } => {
            for &b in &row_budgets {
                host_tools::error::percentage("--row-budgets", b, true)?;
            }
            let curve = row_curve.as_deref().map(|eval| quantize::CurveRequest {
                eval,
                budgets: row_budgets,
            });
            let scheme = match scheme {
                SchemeArg::W8a16 => Scheme::W8a16,
                SchemeArg::W8f32 => Scheme::W8f32,
            };
            let target =
                host_tools::error::percentage("--target-agreement", target_agreement, true)?;
            let planes = match planes.as_str() {
                "auto" => Planes::Auto(target),
                "none" => Planes::None,
                list => Planes::Layers(list.split(',').map(String::from).collect()),
            };
            eprint!(
                "{}",
                quantize::quantize_file(
                    &model,
                    calib.as_deref(),
                    scheme,
                    &planes,
                    layout,
                    curve.as_ref(),
                    &output
                )?
            );
        }
        Cmd::Check {
            model,
            reference,
            input,
            min_agreement,
            sensitivity,
            beam,
        } => {
            let beam = beam_options(&beam)?;
            let opt = eval::CheckOptions {
                min_agreement,
                sensitivity,
                beam,
            };
            let failed = eval::check_file(
                &model,
                &reference,
                &input,
                &opt,
                stdout,
                &mut std::io::stderr(),
            )?;
            stdout.flush().map_err(host_tools::Error::io(STDOUT_NAME))?;
            return Ok(lines_status(failed));
        }
        Cmd::Verify { model, expect, all } => {
            let agrees =
                eval::verify::verify_file(&model, &expect, all, stdout, &mut std::io::stderr())?;
            return Ok(lines_status(usize::from(!agrees)));
        }
        Cmd::Heatmap {
            model,
            source,
            output,
            no_color,
            json,
            limits,
        } => {
            let m = host_tools::model::LoadedModel::load(&model)?.with_limits(limits.limits())?;
            if json {
                let map = plot::attention_map(&m, &source)?;
                writeln!(stdout, "{}", map.to_json())
                    .map_err(host_tools::Error::io(STDOUT_NAME))?;
                return Ok(ExitCode::SUCCESS);
            }
            let color = !no_color && std::io::stdout().is_terminal();
            for note in plot::heatmap(&m, &source, output.as_deref(), color, stdout)? {
                eprintln!("note: {note}");
            }
            if let Some(path) = output {
                eprintln!("wrote {}", path.display());
            }
        }
        Cmd::Explain { code } => host_tools::commands::explain::explain(&code, stdout)?,
        Cmd::Explore { model, port, dir } => {
            let dir = dir.unwrap_or_else(host_tools::commands::explore::default_dir);
            host_tools::commands::explore::explore(&model, &dir, port, stdout)?;
        }
        Cmd::Embed {
            model,
            board,
            output,
        } => {
            let model = host_tools::model::LoadedModel::load(&model)?;
            let rs = device::embed::embed(&model, device::board(&board)?)?;
            host_tools::io::write_atomic(&output, rs.as_bytes())?;
            eprintln!("wrote {}", output.display());
        }
        Cmd::Qemu {
            model,
            board,
            check,
            debug,
            minimal,
            one_model,
            profile,
            stream,
            max_repeats,
            firmware_dir,
        } => {
            let options = QemuOptions {
                attention: check.attention,
                beam: device_beam(&check)?,
                prefix: check.prefix.clone(),
                timeout: Duration::from_secs(board.timeout),
                release: !debug,
                firmware_dir,
                minimal,
                one_model,
                profile,
                ..QemuOptions::new(device::board(&board.board)?)
            };
            if let Some(steps) = stream {
                let limits = (steps, max_repeats.unwrap_or(0));
                return stream_verdict(&model, check.input.as_deref(), limits, &options, stdout);
            }
            let (report, inputs) = device::qemu_command(&model, check.input.as_deref(), &options)?;
            return device_verdict(
                &report,
                &inputs,
                check.allow_rejects,
                options.board.name,
                stdout,
            );
        }
        Cmd::Serial {
            model,
            port,
            baud,
            board,
            check,
            timeout,
        } => {
            let options = SerialArgs {
                port,
                baud,
                board,
                attention: check.attention,
                beam: device_beam(&check)?,
                prefix: check.prefix.clone(),
                allow_rejects: check.allow_rejects,
                timeout: Duration::from_secs(timeout),
            };
            return serial(&model, check.input.as_deref(), options, stdout);
        }
        Cmd::Boot { .. } => unreachable!("s2s boot ran above, without the stdout lock"),
    }
    stdout.flush().map_err(host_tools::Error::io(STDOUT_NAME))?;
    Ok(ExitCode::SUCCESS)
}

/// The options of `s2s serial`, as given (unread in a build without the feature).
#[cfg_attr(not(feature = "serial"), allow(dead_code))]
struct SerialArgs {
    port: String,
    baud: u32,
    board: Option<String>,
    attention: bool,
    beam: Option<usize>,
    prefix: Vec<String>,
    allow_rejects: bool,
    timeout: Duration,
}

/// `s2s serial`.
#[cfg(feature = "serial")]
fn serial(
    model: &std::path::Path,
    input: Option<&std::path::Path>,
    a: SerialArgs,
    stdout: &mut impl Write,
) -> Result<ExitCode> {
    let options = device::serial::SerialOptions {
        baud: a.baud,
        board: a.board.as_deref().map(device::board).transpose()?,
        attention: a.attention,
        beam: a.beam,
        prefix: a.prefix,
        timeout: a.timeout,
        ..device::serial::SerialOptions::new(a.port)
    };
    let (report, inputs) = device::serial::serial_command(model, input, &options)?;
    device_verdict(&report, &inputs, a.allow_rejects, &options.port, stdout)
}

/// `s2s serial` in a build without the `serial` feature: says how to get it.
#[cfg(not(feature = "serial"))]
fn serial(
    _: &std::path::Path,
    _: Option<&std::path::Path>,
    _: SerialArgs,
    _: &mut impl Write,
) -> Result<ExitCode> {
    Err(host_tools::Error::usage(device::SERIAL_FEATURE))
}

/// Where `s2s train` starts (read only by the `train` feature's `train`).
#[cfg_attr(not(feature = "train"), allow(dead_code))]
enum TrainStart<'a> {
    Config(&'a std::path::Path),
    Init(&'a std::path::Path),
}

/// `s2s train`.
#[cfg(feature = "train")]
fn train(
    start: TrainStart<'_>,
    data: &std::path::Path,
    valid: Option<&std::path::Path>,
    output: &std::path::Path,
    a: cli::TrainArgs,
) -> Result {
    let options = host_tools::train::TrainOptions {
        epochs: a.epochs,
        batch: a.batch,
        lr: a.lr,
        lr_decay: a.lr_decay,
        clip: a.clip,
        dropout: a.dropout,
        label_smoothing: a.label_smoothing,
        patience: a.patience,
        seed: a.seed,
        threads: a.threads,
        checkpoints: a.checkpoints,
        resume: a.resume,
        log: a.log,
        report: a.report,
        quiet: a.quiet,
        quantize: a.quantize.map(|s| match s {
            SchemeArg::W8a16 => host_tools::quantize::Scheme::W8a16,
            SchemeArg::W8f32 => host_tools::quantize::Scheme::W8f32,
        }),
    };
    let start = match start {
        TrainStart::Config(p) => host_tools::train::Start::Config(p),
        TrainStart::Init(p) => host_tools::train::Start::Init(p),
    };
    let r = host_tools::train::train_file(start, data, valid, output, &options)?;
    if !a.quiet {
        eprintln!("{}", r.agreement.summary());
    }
    eprintln!(
        "wrote {} ({} bytes, {}{} parameters, epoch {} of {}: validation TER {:.2} %, SER {:.2} %)",
        output.display(),
        r.file_bytes,
        match options.quantize {
            Some(_) => format!("{}, ", r.precision),
            None => String::new(),
        },
        r.parameters,
        r.best_epoch,
        r.epochs,
        r.valid_ter,
        r.valid_ser
    );
    Ok(())
}

/// `s2s train` in a build without the `train` feature.
#[cfg(not(feature = "train"))]
fn train(
    _: TrainStart<'_>,
    _: &std::path::Path,
    _: Option<&std::path::Path>,
    _: &std::path::Path,
    _: cli::TrainArgs,
) -> Result {
    Err(host_tools::Error::usage(
        "this s2s was built without the `train` feature (candle): cargo install --locked --path host-tools --features train",
    ))
}
