//! `s2s qemu` and `s2s boot`: a model on a Cortex-M board under QEMU, checked token for
//! token against the host running the same core.
//!
//! The firmware ([`firmware`], built for the board) loads the model from its model
//! region and answers each input line on the UART (the protocol of
//! `s2s_device::protocol`); [`qemu`] runs it, [`link`] holds the session over QEMU's
//! UART socket or (`s2s serial`, [`serial`], feature `serial`) a serial port,
//! [`session`] reads its answers back, [`mod@compare`] checks them against the host (at
//! the device's number of positions, so capacity errors agree too) and [`report`] sums
//! them up. [`mod@bench`] runs the kernel benchmark; [`cache`] is where builds go.

pub mod bench;
pub mod cache;
pub mod compare;
pub mod embed;
pub mod firmware;
pub mod link;
pub mod qemu;
pub mod report;
#[cfg(feature = "serial")]
pub mod serial;
pub mod session;
pub mod stream;

use std::path::{Path, PathBuf};
use std::time::Duration;

use s2s_device::protocol::{check_source, Command, Request};
use s2s_device::Board;

pub use compare::compare;
pub use firmware::Firmware;
pub use report::{PerPhase, QemuReport, Rejected};
pub use session::{parse_lines, parse_session, DeviceSession, Ending, Refused};

use crate::error::{Error, Result};
use crate::model::LoadedModel;
use link::Pace;

/// Default timeout of a QEMU run, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
/// Default line rate of `s2s serial`.
pub const SERIAL_BAUD: u32 = 115_200;
/// Default wait of `s2s serial` for each line (`READY` included), in seconds.
pub const SERIAL_TIMEOUT_SECS: u64 = 60;
/// What `s2s serial` says in a build without its feature.
pub const SERIAL_FEATURE: &str = "s2s serial needs the `serial` feature of host-tools, \
     left out of this build: cargo install --locked --path host-tools --features serial";

/// How to run a model on a board.
#[derive(Clone, Debug)]
pub struct QemuOptions {
    /// The board.
    pub board: &'static Board,
    /// Also compare every attention weight, exactly (greedy decoding only).
    pub attention: bool,
    /// Beam-search every input this wide, in the model's own variant (`None`: greedy).
    pub beam: Option<usize>,
    /// The tokens of the model's prefix slots for every input, `NAME=TOKEN` fields
    /// (none: the slots' defaults).
    pub prefix: Vec<String>,
    /// When QEMU is killed.
    pub timeout: Duration,
    /// A release build of the firmware (debug builds fit only the mps2 boards).
    pub release: bool,
    /// The firmware sources (see [`Firmware::locate`]).
    pub firmware_dir: Option<PathBuf>,
    /// Build the minimal firmware for the model ([`Firmware::build_minimal`] with
    /// [`firmware::minimal_features`]) instead of the default one.
    pub minimal: bool,
    /// Build the one-model firmware: the model linked in (`s2s embed`), only its parts
    /// compiled, no model-file parser ([`Firmware::build_one_model`]).
    pub one_model: bool,
    /// Build the firmware with its `profile` feature: the counts come by phase too
    /// ([`QemuReport::per_phase`]), and each includes the phase marks' counter reads.
    pub profile: bool,
}

impl QemuOptions {
    /// A release build on `board`, without attention, with the default timeout.
    pub fn new(board: &'static Board) -> QemuOptions {
        QemuOptions {
            board,
            attention: false,
            beam: None,
            prefix: Vec::new(),
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            release: true,
            firmware_dir: None,
            minimal: false,
            one_model: false,
            profile: false,
        }
    }
}

/// The board named `name`, or an error listing the boards.
pub fn board(name: &str) -> Result<&'static Board> {
    s2s_device::board::find(name).ok_or_else(|| {
        let names: Vec<&str> = s2s_device::board::names().collect();
        Error::usage(format!(
            "unknown board `{name}` (boards: {})",
            names.join(", ")
        ))
    })
}

/// Runs `inputs` through `model` on the board and on the host, and compares them.
pub fn qemu_check(model: &Path, inputs: &[String], o: &QemuOptions) -> Result<QemuReport> {
    let session = run_on_board(model, inputs, o)?;
    let host = LoadedModel::load(model)?;
    let prefix = host_prefix(&host, &o.prefix)?;
    compare(&host, &session, inputs, o.attention, o.beam, &prefix)
}

/// The prefix `fields` (`--prefix`) choose for `model`: a usage error when one does
/// not fit it.
pub fn host_prefix(model: &LoadedModel, fields: &[String]) -> Result<seq2seq::Prefix> {
    let args = crate::model::PrefixArgs {
        fields: fields.to_vec(),
        column: None,
    };
    args.base(&model.file(), &model.path)
}

/// Checks what a run sends: every input can be sent, `--attention` goes without
/// `--beam`, the beam width fits the protocol. Returns the width.
fn check_run(inputs: &[String], attention: bool, beam: Option<usize>) -> Result<Option<u16>> {
    if let Some((bad, why)) = inputs
        .iter()
        .find_map(|l| check_source(l).err().map(|why| (l, why)))
    {
        return Err(Error::usage(format!("input {bad:?} cannot be sent: {why}")));
    }
    if attention && beam.is_some() {
        return Err(Error::usage(
            "--attention compares greedy decoding: it does not go with --beam",
        ));
    }
    match beam {
        Some(k) => Ok(Some(u16::try_from(k).ok().filter(|&k| k > 0).ok_or_else(
            || Error::usage(format!("--beam {k}: the protocol takes widths 1 to 65535")),
        )?)),
        None => Ok(None),
    }
}

/// The lines a run sends: the attention, beam and prefix commands it needs (the prefix
/// `NAME=TOKEN` fields), then `inputs`.
fn requests(
    inputs: &[String],
    attention: bool,
    beam: Option<u16>,
    prefix: &[String],
) -> Vec<String> {
    let mut sent = Vec::with_capacity(inputs.len() + 3);
    let fields = prefix.join(" ");
    let commands = [
        attention.then_some(Command::Attention(true)),
        beam.map(Command::Beam),
        (!prefix.is_empty()).then_some(Command::Prefix(&fields)),
    ];
    for cmd in commands.into_iter().flatten() {
        let mut line = String::new();
        let _ = s2s_device::protocol::write_request(&mut line, &Request::Command(cmd));
        sent.push(line.trim_end().to_string());
    }
    sent.extend_from_slice(inputs);
    sent
}

/// Builds the firmware for the board (cargo rebuilds only what changed), runs `inputs`
/// through `model` under QEMU (with the `ATT` lines if asked) and reads the session back.
/// Errors carry the firmware's own error line when it has one.
pub fn run_on_board(model: &Path, inputs: &[String], o: &QemuOptions) -> Result<DeviceSession> {
    let beam = check_run(inputs, o.attention, o.beam)?;
    // A file the host refuses still goes to the board: its refusal is the firmware's
    // to show (`ERR model: ...`).
    let host = LoadedModel::load(model);
    if let Ok(m) = &host {
        host_prefix(m, &o.prefix)?;
    }
    let attends = host.as_ref().is_ok_and(|m| m.file().desc().has_attention());
    let elf = build_elf(host, o)?;
    let sent = requests(inputs, o.attention, beam, &o.prefix);
    let pace = Pace::Answers { attends };
    let loaded = (!o.one_model).then_some(model);
    let run = qemu::run_paced(o.board, &elf, loaded, &sent, pace, o.timeout)?;
    parse_session(&run, o.board, inputs.len(), o.attention, beam).map_err(|e| match e {
        Error::Device { board, message } => Error::Device {
            board,
            message: format!("model {}: {message}", model.display()),
        },
        e => e,
    })
}

/// Builds the firmware `o` asks for (cargo rebuilds only what changed): the default
/// build, the minimal or the one-model one of `host`'s model (which then must load).
fn build_elf(host: Result<LoadedModel>, o: &QemuOptions) -> Result<PathBuf> {
    let firmware = Firmware::locate(o.firmware_dir.as_deref())?;
    let profile: &[&str] = if o.profile { &["profile"] } else { &[] };
    if o.one_model {
        let host = host?;
        let mut features = one_model_features(&host.file());
        features.extend_from_slice(profile);
        let module = embed_module(&firmware, &host, o.board)?;
        firmware.build_one_model(o.board, &module, o.release, &features)
    } else if o.minimal {
        let mut features = firmware::minimal_features(&host?.file());
        features.extend_from_slice(profile);
        firmware.build_minimal(o.board, "firmware", o.release, &features)
    } else {
        firmware.build_with(o.board, "firmware", o.release, profile)
    }
}

/// The features of a one-model firmware for `file`: its parts (those of the minimal
/// build, [`firmware::minimal_features`]) and `error-codes`.
pub fn one_model_features(file: &seq2seq::ModelFile<'_>) -> Vec<&'static str> {
    let mut features = firmware::minimal_features(file);
    features.push("error-codes");
    features
}

/// Writes `s2s embed`'s module of `model` for `board` beside the one-model build (only
/// when it changed, so that cargo does not rebuild it) and returns its path.
fn embed_module(firmware: &Firmware, model: &LoadedModel, board: &Board) -> Result<PathBuf> {
    let rs = embed::embed(model, board)?;
    let dir = firmware.target_dir(board).join("one-model");
    // Per board: the boards share the firmware crate's target directory.
    let path = dir.join(format!(
        "model-{}-{:08x}.rs",
        board.name,
        model.file().crc()
    ));
    if std::fs::read(&path).ok().as_deref() != Some(rs.as_bytes()) {
        std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
        crate::io::write_atomic(&path, rs.as_bytes())?;
    }
    Ok(path)
}

/// Reads the sources of a run from `input` (standard input for `None`): each line's
/// first tab-separated column ([`crate::io::source_of`]), so a file of
/// `source<TAB>target` pairs will do. Empty and `.` sources are skipped (they would end
/// the firmware's session), with a note on standard error; a line that is not UTF-8 or
/// cannot be sent (it starts with the command byte 0x01) gets an error line naming
/// `file:line` on standard error and the other lines go on. Returns the sources, their
/// line numbers and the count of lines that could not be sent.
pub fn read_inputs(input: Option<&Path>) -> Result<Inputs> {
    let mut lines = crate::io::LineReader::open(input)?;
    let (mut inputs, mut numbers, mut skipped, mut unsent) = (Vec::new(), Vec::new(), 0, 0);
    while let Some(line) = lines.next_line()? {
        match line.text.as_deref().map(crate::io::source_of) {
            Ok(t) if t.is_empty() || t == s2s_device::protocol::END => skipped += 1,
            Ok(t) => match check_source(t) {
                Ok(()) => {
                    inputs.push(t.to_string());
                    numbers.push(line.number);
                }
                Err(why) => {
                    eprintln!(
                        "error: {}:{}: cannot be sent: {why}",
                        lines.name(),
                        line.number
                    );
                    unsent += 1;
                }
            },
            Err(e) => {
                eprintln!("error: {e}");
                unsent += 1;
            }
        }
    }
    if skipped > 0 {
        eprintln!(
            "skipped {skipped} lines whose source is empty or `.` (they end a firmware session)"
        );
    }
    Ok(Inputs {
        sources: inputs,
        lines: numbers,
        name: lines.name().to_string(),
        unsent,
    })
}

/// The input lines of `s2s qemu` and `s2s serial` ([`read_inputs`]).
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// The sources sent, in order.
    pub sources: Vec<String>,
    /// Each source's line number in the input, from 1.
    pub lines: Vec<usize>,
    /// The input's name for messages (its path, or standard input's name).
    pub name: String,
    /// Lines that could not be sent (each reported on standard error).
    pub unsent: usize,
}

/// `s2s qemu`: builds the firmware for the board, runs the sources of `input` (standard
/// input for `None`, read by [`read_inputs`]) on it under QEMU and on the host, and
/// returns the comparison (whether the two agree is [`QemuReport::agrees`]), numbered
/// by the input's lines, and the inputs read.
pub fn qemu_command(
    model: &Path,
    input: Option<&Path>,
    o: &QemuOptions,
) -> Result<(QemuReport, Inputs)> {
    let inputs = read_inputs(input)?;
    let mut report = qemu_check(model, &inputs.sources, o)?;
    report.renumber(&inputs.lines);
    Ok((report, inputs))
}

/// `s2s boot`: boots a firmware ELF under QEMU with the UART on the terminal (the
/// firmware's cargo runner). The board is `board`, else `S2S_BOARD`, else the default
/// board of the target in the ELF's path (`target/<triple>/<profile>/<bin>`). Returns
/// QEMU's exit status.
pub fn boot_command(
    elf: &Path,
    board: Option<&str>,
    model: Option<&Path>,
    timeout: Duration,
) -> Result<i32> {
    let from_env = std::env::var("S2S_BOARD").ok();
    let b = match board.or(from_env.as_deref()) {
        Some(name) => self::board(name)?,
        None => elf
            .ancestors()
            .filter_map(|d| d.file_name()?.to_str())
            .find_map(s2s_device::board::default_for_target)
            .ok_or_else(|| {
                Error::usage(format!(
                    "{}: cannot tell the board from the path; pass --board or set S2S_BOARD",
                    elf.display()
                ))
            })?,
    };
    qemu::boot(b, elf, model, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_the_first_column_of_each_line() {
        let path = std::env::temp_dir().join(format!("s2s-inputs-{}.tsv", std::process::id()));
        // Pairs, a source alone, a line with three columns; an empty source and a `.`
        // source are skipped as an empty or `.` line is (they would end the session).
        std::fs::write(
            &path,
            "phnom\tផ្នម\npenh\nangkor\tអង្ករ\tmore\n\tx\n.\tdot\nsokha\n",
        )
        .unwrap();
        let got = read_inputs(Some(&path));
        std::fs::remove_file(&path).unwrap();
        let inputs = got.unwrap();
        assert_eq!(inputs.sources, ["phnom", "penh", "angkor", "sokha"]);
        assert_eq!(inputs.lines, [1, 2, 3, 6]);
        assert_eq!(inputs.unsent, 0);
    }
}
