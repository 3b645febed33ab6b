//! `s2s serial`: a model on a board at the other end of a serial port, checked token for
//! token against the host like `s2s qemu` (feature `serial`).
//!
//! The model must already be in the board's model region (flashed): the session's
//! `MODEL` line (precision, bytes and the file's CRC-32) must name the file given, or
//! the run stops before sending a source. The port is opened with the `serialport`
//! crate without its libudev part (8 data bits, no parity, one stop bit, no flow
//! control); the session is [`super::link::converse`], paced by the answers, so a
//! polled UART that holds a byte or a few while the board decodes loses nothing.
//! Tested against QEMU boards whose UART is a pseudo-terminal (`tests/tests/serial.rs`),
//! not yet against a physical board.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use s2s_device::protocol::{parse_reply, Reply};
use s2s_device::Board;

use super::link::{self, Limits, Link, Pace};
use super::{
    check_run, compare, parse_lines, read_inputs, requests, Ending, Inputs, QemuReport,
    SERIAL_BAUD, SERIAL_TIMEOUT_SECS,
};
use crate::error::{Error, Result};
use crate::model::LoadedModel;

/// How to run a model on a board over a serial port.
#[derive(Clone, Debug)]
pub struct SerialOptions {
    /// The port (`/dev/ttyACM0`, `/dev/ttyUSB0`, a pseudo-terminal...).
    pub port: String,
    /// Its line rate (ignored by USB CDC ports and pseudo-terminals).
    pub baud: u32,
    /// The board the `READY` line must name (`None`: the one it names, from the board
    /// table).
    pub board: Option<&'static Board>,
    /// Also compare every attention weight, exactly (greedy decoding only).
    pub attention: bool,
    /// Beam-search every input this wide, in the model's own variant (`None`: greedy).
    pub beam: Option<usize>,
    /// The tokens of the model's prefix slots for every input, `NAME=TOKEN` fields
    /// (none: the slots' defaults).
    pub prefix: Vec<String>,
    /// How long to wait for each line, `READY` included.
    pub timeout: Duration,
}

impl SerialOptions {
    /// `port` at the default rate and timeout, greedy, without attention.
    pub fn new(port: impl Into<String>) -> SerialOptions {
        SerialOptions {
            port: port.into(),
            baud: SERIAL_BAUD,
            board: None,
            attention: false,
            beam: None,
            prefix: Vec::new(),
            timeout: Duration::from_secs(SERIAL_TIMEOUT_SECS),
        }
    }
}

/// An open serial port as a [`Link`].
struct Port {
    port: Box<dyn serialport::SerialPort>,
    name: String,
    write_timeout: Duration,
}

impl Link for Port {
    fn name(&self) -> &str {
        &self.name
    }

    fn read(&mut self, buf: &mut [u8], timeout: Duration) -> std::io::Result<usize> {
        self.port.set_timeout(timeout)?;
        match self.port.read(buf) {
            // The other side hung up (QEMU's pseudo-terminal closed): the end.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
            r => r,
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.port.set_timeout(self.write_timeout)?;
        self.port.write_all(bytes)?;
        self.port.flush()
    }

    fn ready_hint(&self) -> &str {
        " (the firmware says it once, when it starts: reset the board with the port open)"
    }
}

/// The model of the `MODEL` line against `file`: an error naming both unless the
/// precision, the length and the CRC agree.
fn same_model(
    port: &str,
    path: &Path,
    host: &LoadedModel,
    m: &s2s_device::protocol::ModelInfo<'_>,
) -> Result<()> {
    let file = host.file();
    let (precision, bytes, crc) = (file.precision().name(), file.bytes().len(), file.crc());
    if m.precision == precision && m.bytes == bytes as u64 && m.crc == crc {
        return Ok(());
    }
    Err(Error::device(
        port,
        format!(
            "the board serves a {} model of {} bytes (CRC {:#010x}), not {} ({precision}, {bytes} bytes, CRC {crc:#010x}): flash that file to the board's model region first",
            m.precision,
            m.bytes,
            m.crc,
            path.display()
        ),
    ))
}

/// Runs `inputs` through the model flashed on the board at `o.port` and through `model`
/// on the host, and compares them; refuses a board that serves another model.
pub fn serial_check(model: &Path, inputs: &[String], o: &SerialOptions) -> Result<QemuReport> {
    let beam = check_run(inputs, o.attention, o.beam)?;
    let host = LoadedModel::load(model)?;
    let port = serialport::new(&o.port, o.baud)
        .data_bits(serialport::DataBits::Eight)
        .parity(serialport::Parity::None)
        .stop_bits(serialport::StopBits::One)
        .flow_control(serialport::FlowControl::None)
        .timeout(o.timeout)
        .open()
        .map_err(|e| Error::device(&o.port, format!("cannot open the port: {e}")))?;
    let mut link = Port {
        port,
        name: o.port.clone(),
        write_timeout: o.timeout,
    };
    let sent = requests(inputs, o.attention, beam, &o.prefix);
    let pace = Pace::Answers {
        attends: host.file().desc().has_attention(),
    };
    let limits = Limits {
        line: o.timeout,
        deadline: None,
    };
    let started = Instant::now();
    let talk = link::converse(&mut link, &sent, pace, limits, &mut |m| {
        same_model(&o.port, model, &host, m)
    })?;
    let board = board_of(&o.port, talk.lines.first(), o.board)?;
    let ending = Ending {
        ok: talk.acknowledged,
        status: if talk.acknowledged {
            "session ended".into()
        } else {
            "session not ended".into()
        },
        elapsed: started.elapsed(),
        via: format!("serial {}", o.port),
    };
    let session = parse_lines(
        &talk.lines,
        &ending,
        board,
        &o.port,
        inputs.len(),
        o.attention,
        beam,
    )?;
    let prefix = super::host_prefix(&host, &o.prefix)?;
    compare(&host, &session, inputs, o.attention, o.beam, &prefix)
}

/// The board the `READY` line names (which must be `want`, if given).
fn board_of(
    port: &str,
    ready: Option<&String>,
    want: Option<&'static Board>,
) -> Result<&'static Board> {
    let Some(Ok(Reply::Ready(name))) = ready.map(|l| parse_reply(l)) else {
        return Err(Error::device(port, "the port closed before the READY line"));
    };
    match (want, s2s_device::board::find(name)) {
        (Some(b), _) if b.name != name => Err(Error::device(
            port,
            format!("the board says `READY {name}`, not `READY {}`", b.name),
        )),
        (_, Some(b)) => Ok(b),
        (_, None) => Err(Error::device(
            port,
            format!("the board says `READY {name}`, a board the board table does not have"),
        )),
    }
}

/// `s2s serial`: runs the sources of `input` (standard input for `None`, read by
/// [`read_inputs`]) on the board at `o.port` and on the host, and returns the comparison,
/// numbered by the input's lines, and the inputs read.
pub fn serial_command(
    model: &Path,
    input: Option<&Path>,
    o: &SerialOptions,
) -> Result<(QemuReport, Inputs)> {
    let inputs = read_inputs(input)?;
    let mut report = serial_check(model, &inputs.sources, o)?;
    report.renumber(&inputs.lines);
    Ok((report, inputs))
}
