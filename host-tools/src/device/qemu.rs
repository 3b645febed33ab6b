//! Building the firmware and running it under QEMU (`qemu-system-arm`), std only.
//!
//! Wiring of one run ([`run`]):
//! - the board's UART (QEMU's first serial port) is a Unix socket chardev
//!   (`-chardev socket,server=on,wait=on`) in a fresh temporary directory; QEMU waits for the
//!   runner to connect before starting the guest, so no output is lost. Input lines are
//!   written to it (plus the `.` end marker), output lines read from it;
//! - semihosting output (the firmware's defmt frames) comes out of QEMU's stdout (QEMU 7.2
//!   sends semihosting writes to `:tt` there, whatever `-semihosting-config chardev=` says),
//!   kept apart from the UART and returned raw ([`QemuRun::semihosting`]); decode it with
//!   [`decode_defmt`];
//! - QEMU's own messages come out of its stderr ([`QemuRun::stderr`]);
//! - `-icount shift=7`: one guest instruction is 128 ns of virtual time, so the firmware's
//!   tick counters count instructions exactly ([`Board::ticks_per_insn`]);
//! - the model file, if any, goes to the board's model region with
//!   `-device loader,file=MODEL,addr=ADDR,force-raw=on`.
//!
//! Exit statuses set by the firmware (through semihosting): 0 after a normal session, 101
//! after a panic, 102 after a HardFault.

use std::fmt;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The QEMU binary, unless the `QEMU_SYSTEM_ARM` environment variable names another.
pub const QEMU: &str = "qemu-system-arm";
/// How to install QEMU (Debian/Ubuntu).
pub const QEMU_INSTALL: &str = "apt-get install -y --no-install-recommends qemu-system-arm";
/// How to install the defmt decoder.
pub const DEFMT_PRINT_INSTALL: &str = "cargo install defmt-print --locked";
/// The line that ends a firmware session; [`run`] sends it after the input lines.
pub const END_MARKER: &str = ".";
/// Exit status of a firmware session that ended normally.
pub const EXIT_SUCCESS: i32 = 0;
/// Exit status after a firmware panic.
pub const EXIT_PANIC: i32 = 101;
/// Exit status after a firmware HardFault.
pub const EXIT_HARDFAULT: i32 = 102;

/// A board that the firmware supports, with its QEMU machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Board {
    /// ARM MPS2 + AN386: Cortex-M4F, 4 MiB code SSRAM, 4 MiB data SSRAM.
    Mps2An386,
    /// TI Stellaris LM3S6965 EVB: Cortex-M3, 256 KiB flash, 64 KiB RAM.
    Lm3s6965evb,
    /// BBC micro:bit v1 (nRF51822): Cortex-M0, 256 KiB flash, 16 KiB RAM.
    Microbit,
    /// ARM MPS2 + AN505: Cortex-M33 (Secure state), 4 MiB code SSRAM, 4 MiB data SSRAM.
    Mps2An505,
}

impl Board {
    /// All boards.
    pub const ALL: [Board; 4] = [
        Board::Mps2An386,
        Board::Lm3s6965evb,
        Board::Microbit,
        Board::Mps2An505,
    ];

    /// The board's name: the firmware's cargo feature and the word after `READY`.
    pub fn name(self) -> &'static str {
        match self {
            Board::Mps2An386 => "mps2-an386",
            Board::Lm3s6965evb => "lm3s6965evb",
            Board::Microbit => "microbit",
            Board::Mps2An505 => "mps2-an505",
        }
    }

    /// QEMU's `-machine`.
    pub fn machine(self) -> &'static str {
        // The QEMU machine names are the board names.
        self.name()
    }

    /// QEMU's `-cpu` (the machine's only CPU).
    pub fn cpu(self) -> &'static str {
        match self {
            Board::Mps2An386 => "cortex-m4",
            Board::Lm3s6965evb => "cortex-m3",
            Board::Microbit => "cortex-m0",
            Board::Mps2An505 => "cortex-m33",
        }
    }

    /// The Rust target the firmware is built for on this board.
    pub fn target_triple(self) -> &'static str {
        match self {
            Board::Mps2An386 => "thumbv7em-none-eabihf",
            Board::Lm3s6965evb => "thumbv7m-none-eabi",
            Board::Microbit => "thumbv6m-none-eabi",
            Board::Mps2An505 => "thumbv8m.main-none-eabihf",
        }
    }

    /// Start of the model region (`__model_start` in `firmware/boards/<board>/memory.x`), as
    /// the CPU sees it; the model file is loaded there.
    pub fn model_addr(self) -> u64 {
        match self {
            Board::Mps2An386 => 0x0004_0000,
            Board::Lm3s6965evb | Board::Microbit => 0x0001_0000,
            Board::Mps2An505 => 0x1004_0000,
        }
    }

    /// Size of the model region in bytes: the largest model file the board takes.
    pub fn model_capacity(self) -> u64 {
        match self {
            Board::Mps2An386 | Board::Mps2An505 => 3840 * 1024,
            Board::Lm3s6965evb | Board::Microbit => 192 * 1024,
        }
    }

    /// Ticks of the firmware's counter per guest instruction under `-icount shift=7`, as
    /// (numerator, denominator): the counter clock times 128 ns.
    pub fn ticks_per_insn(self) -> (u32, u32) {
        match self {
            Board::Mps2An386 => (16, 5),   // CMSDK TIMER0 at 25 MHz: 3.2
            Board::Lm3s6965evb => (32, 5), // SysTick at 50 MHz: 6.4
            Board::Microbit => (256, 125), // TIMER0 at 16 MHz: 2.048
            Board::Mps2An505 => (64, 25),  // CMSDK TIMER0 at 20 MHz: 2.56
        }
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Board {
    type Err = QemuError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Board::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| QemuError::UnknownBoard(s.to_string()))
    }
}

/// What a QEMU run produced.
#[derive(Clone, Debug, Default)]
pub struct QemuRun {
    /// The lines the firmware wrote on the UART, without `\n`/`\r` (a last line without
    /// `\n` included).
    pub uart_lines: Vec<String>,
    /// QEMU's exit status (see [`EXIT_SUCCESS`], [`EXIT_PANIC`], [`EXIT_HARDFAULT`]);
    /// `None` if it ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended QEMU, if one did: SIGKILL from the timeout, or SIGABRT when
    /// QEMU aborts on a CPU lockup (a fault while in the HardFault handler, an ELF built for
    /// another board).
    pub signal: Option<i32>,
    /// Raw semihosting output: the defmt frames (see [`decode_defmt`]).
    pub semihosting: Vec<u8>,
    /// QEMU's own messages (stderr).
    pub stderr: String,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// The QEMU command line, for messages.
    pub command: String,
}

impl QemuRun {
    /// Whether QEMU exited with status 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(EXIT_SUCCESS)
    }

    /// The first UART line that starts with `prefix` (e.g. `"STATS "`).
    pub fn line_starting_with(&self, prefix: &str) -> Option<&str> {
        self.uart_lines
            .iter()
            .map(String::as_str)
            .find(|l| l.starts_with(prefix))
    }

    /// The value of `key=` in the first UART line starting with `prefix`, e.g.
    /// `field("STATS ", "stack_peak")`.
    pub fn field(&self, prefix: &str, key: &str) -> Option<&str> {
        let line = self.line_starting_with(prefix)?;
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    }
}

/// Why building or running the firmware failed.
#[derive(Debug)]
pub enum QemuError {
    /// `qemu-system-arm` is not installed (or not on `PATH`).
    QemuNotFound,
    /// `defmt-print` is not installed.
    DefmtPrintNotFound,
    /// Not one of [`Board::ALL`]'s names.
    UnknownBoard(String),
    /// The model file does not fit in the board's model region.
    ModelTooLarge {
        /// The model file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// [`Board::model_capacity`].
        capacity: u64,
    },
    /// QEMU exited before its UART socket could be connected (bad arguments, missing files).
    StartFailed {
        /// QEMU's exit status.
        exit_code: Option<i32>,
        /// QEMU's messages.
        stderr: String,
    },
    /// The run did not end within the timeout; QEMU was killed. `partial` holds what it
    /// produced until then.
    Timeout {
        /// The timeout.
        after: Duration,
        /// Output until the kill.
        partial: Box<QemuRun>,
    },
    /// `cargo build` of the firmware failed.
    BuildFailed {
        /// The cargo command line.
        command: String,
        /// Cargo's messages.
        stderr: String,
    },
    /// An I/O error, with what was being done.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

impl fmt::Display for QemuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QemuError::QemuNotFound => {
                write!(f, "{QEMU} not found; install it with: {QEMU_INSTALL}")
            }
            QemuError::DefmtPrintNotFound => {
                write!(
                    f,
                    "defmt-print not found; install it with: {DEFMT_PRINT_INSTALL}"
                )
            }
            QemuError::UnknownBoard(name) => {
                let names: Vec<&str> = Board::ALL.iter().map(|b| b.name()).collect();
                write!(f, "unknown board `{name}` (boards: {})", names.join(", "))
            }
            QemuError::ModelTooLarge {
                path,
                size,
                capacity,
            } => write!(
                f,
                "model {} is {size} bytes, more than the board's model region ({capacity} bytes)",
                path.display()
            ),
            QemuError::StartFailed { exit_code, stderr } => {
                write!(
                    f,
                    "QEMU exited before the run started (status {exit_code:?}): {}",
                    stderr.trim()
                )
            }
            QemuError::Timeout { after, partial } => write!(
                f,
                "QEMU run timed out after {after:?} and was killed; UART so far: {:?}",
                partial.uart_lines
            ),
            QemuError::BuildFailed { command, stderr } => {
                write!(f, "firmware build failed: {command}\n{}", stderr.trim_end())
            }
            QemuError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for QemuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            QemuError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> QemuError {
    let context = context.into();
    move |source| QemuError::Io { context, source }
}

/// The repository root: the parent of this crate's directory.
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Builds the firmware's main binary for `board` and returns the ELF's path. See
/// [`build_firmware_bin`].
pub fn build_firmware(board: Board, release: bool) -> Result<PathBuf, QemuError> {
    build_firmware_bin(board, "firmware", release)
}

/// Builds one binary of the firmware (`firmware`, `probe`, `panic-test`,
/// `hardfault-test`) for `board` with `cargo build` in `firmware/` (so that its
/// `.cargo/config.toml` applies) and returns the ELF's path
/// (`firmware/target/<triple>/<profile>/<bin>`).
pub fn build_firmware_bin(board: Board, bin: &str, release: bool) -> Result<PathBuf, QemuError> {
    let dir = repo_root().join("firmware");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&dir)
        .args(["build", "--bin", bin, "--target", board.target_triple()])
        .args(["--no-default-features", "--features", board.name()])
        .args(["--target-dir".as_ref(), dir.join("target").as_os_str()]);
    if release {
        cmd.arg("--release");
    }
    // Flags meant for the calling (host) build would replace the firmware's link flags.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
    ] {
        cmd.env_remove(var);
    }
    let command = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(format!("running {command}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        return Err(QemuError::BuildFailed { command, stderr });
    }
    let profile = if release { "release" } else { "debug" };
    Ok(dir
        .join("target")
        .join(board.target_triple())
        .join(profile)
        .join(bin))
}

/// A QEMU `-opt key=value` value: commas are doubled.
fn qemu_escape(path: &Path) -> String {
    path.display().to_string().replace(',', ",,")
}

/// A fresh temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self, QemuError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("s2s-qemu-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).map_err(io_err(format!("creating {}", path.display())))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills and reaps QEMU if the run is left early.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn read_all<R: Read + Send + 'static>(mut r: R) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

/// Reads the UART until QEMU closes it; signals `ready` once a `READY` line has arrived.
fn read_uart(mut stream: UnixStream, ready: mpsc::Sender<()>) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut ready = Some(ready);
        while let Ok(n @ 1..) = stream.read(&mut chunk) {
            buf.extend_from_slice(&chunk[..n]);
            if ready.is_some()
                && buf
                    .split(|&b| b == b'\n')
                    .rev()
                    .skip(1)
                    .any(|l| l.starts_with(b"READY"))
            {
                let _ = ready.take().map(|r| r.send(()));
            }
        }
        buf
    })
}

/// Writes `text` to the UART once the firmware is ready (it has printed `READY`, so its
/// UART is set up and nothing sent is dropped). Returns the socket, still open: QEMU takes
/// a half-closed socket for a disconnect.
fn write_uart(
    mut tx: UnixStream,
    ready: mpsc::Receiver<()>,
    text: String,
) -> JoinHandle<UnixStream> {
    thread::spawn(move || {
        if ready.recv().is_ok() {
            // The firmware may exit before reading everything: write errors are expected.
            let _ = tx.write_all(text.as_bytes());
        }
        tx
    })
}

fn join(handle: Option<JoinHandle<Vec<u8>>>) -> Vec<u8> {
    handle.and_then(|h| h.join().ok()).unwrap_or_default()
}

fn split_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.split_terminator('\n')
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect()
}

/// The QEMU command line for `board` (without the UART chardev and the model loader).
pub fn qemu_command(board: Board, elf: &Path) -> Command {
    let qemu = std::env::var_os("QEMU_SYSTEM_ARM").unwrap_or_else(|| QEMU.into());
    let mut cmd = Command::new(qemu);
    cmd.args(["-machine", board.machine(), "-cpu", board.cpu()])
        .args(["-nographic", "-monitor", "none"])
        .args(["-icount", "shift=7"])
        .args(["-semihosting-config", "enable=on,target=native"])
        .arg("-kernel")
        .arg(elf);
    cmd
}

/// Boots `elf` on `board` in QEMU, loads `model` (if any) into the board's model region,
/// writes the `input` lines to the UART followed by the end marker [`END_MARKER`], and
/// collects the UART lines, semihosting bytes and exit status. QEMU is killed after
/// `timeout` ([`QemuError::Timeout`], with the output so far).
pub fn run(
    board: Board,
    elf: &Path,
    model: Option<&Path>,
    input: &[String],
    timeout: Duration,
) -> Result<QemuRun, QemuError> {
    let started = Instant::now();
    let deadline = started + timeout;
    if let Some(path) = model {
        let size = std::fs::metadata(path)
            .map_err(io_err(format!("reading {}", path.display())))?
            .len();
        if size > board.model_capacity() {
            return Err(QemuError::ModelTooLarge {
                path: path.to_path_buf(),
                size,
                capacity: board.model_capacity(),
            });
        }
    }
    std::fs::metadata(elf).map_err(io_err(format!("reading {}", elf.display())))?;

    let tmp = TempDir::new()?;
    let socket = tmp.0.join("uart.sock");
    let mut cmd = qemu_command(board, elf);
    cmd.arg("-chardev")
        .arg(format!(
            "socket,id=uart,path={},server=on,wait=on",
            qemu_escape(&socket)
        ))
        .args(["-serial", "chardev:uart"]);
    if let Some(path) = model {
        let path =
            std::fs::canonicalize(path).map_err(io_err(format!("reading {}", path.display())))?;
        cmd.arg("-device").arg(format!(
            "loader,file={},addr={:#x},force-raw=on",
            qemu_escape(&path),
            board.model_addr()
        ));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let command = format!("{cmd:?}");
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(QemuError::QemuNotFound),
        Err(e) => return Err(io_err(format!("starting {command}"))(e)),
    };
    let mut guard = Guard(Some(child));
    let child = guard.0.as_mut().expect("child");
    let stdout = child.stdout.take().map(read_all);
    let stderr = child.stderr.take().map(read_all);

    // QEMU creates the socket and waits (wait=on) for us before starting the guest.
    let stream = loop {
        if let Ok(stream) = UnixStream::connect(&socket) {
            break Some(stream);
        }
        if child
            .try_wait()
            .map_err(io_err("waiting for QEMU"))?
            .is_some()
            || Instant::now() >= deadline
        {
            break None;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let connected = stream.is_some();
    let (uart, writer) = match stream {
        Some(stream) => {
            let tx = stream
                .try_clone()
                .map_err(io_err("cloning the UART socket"))?;
            let (ready_tx, ready_rx) = mpsc::channel();
            let mut text = String::new();
            for line in input.iter().map(String::as_str).chain([END_MARKER]) {
                text.push_str(line);
                text.push('\n');
            }
            (
                Some(read_uart(stream, ready_tx)),
                Some(write_uart(tx, ready_rx, text)),
            )
        }
        None => (None, None),
    };

    let mut timed_out = false;
    let status: ExitStatus = loop {
        if let Some(status) = child.try_wait().map_err(io_err("waiting for QEMU"))? {
            break status;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().map_err(io_err("waiting for QEMU"))?;
        }
        thread::sleep(Duration::from_millis(5));
    };
    guard.0 = None;
    let writer_socket = writer.and_then(|w| w.join().ok());
    let uart_bytes = join(uart);
    drop(writer_socket);
    let result = QemuRun {
        uart_lines: split_lines(&uart_bytes),
        exit_code: status.code(),
        signal: status.signal(),
        semihosting: join(stdout),
        stderr: String::from_utf8_lossy(&join(stderr)).into_owned(),
        elapsed: started.elapsed(),
        command,
    };
    if timed_out {
        Err(QemuError::Timeout {
            after: timeout,
            partial: Box::new(result),
        })
    } else if !connected {
        // QEMU exited without opening the UART socket: it refused its arguments.
        Err(QemuError::StartFailed {
            exit_code: result.exit_code,
            stderr: result.stderr,
        })
    } else {
        Ok(result)
    }
}

/// Decodes defmt frames (e.g. [`QemuRun::semihosting`]) with `defmt-print -e <elf>` and
/// returns its text (one log line per frame).
pub fn decode_defmt(elf: &Path, frames: &[u8]) -> Result<String, QemuError> {
    let mut cmd = Command::new("defmt-print");
    cmd.arg("-e")
        .arg(elf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(QemuError::DefmtPrintNotFound)
        }
        Err(e) => return Err(io_err("starting defmt-print")(e)),
    };
    let mut stdin = child.stdin.take().expect("piped stdin");
    let frames = frames.to_vec();
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(&frames);
    });
    let out = child
        .wait_with_output()
        .map_err(io_err("running defmt-print"))?;
    let _ = writer.join();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        return Err(QemuError::Io {
            context: format!("defmt-print failed ({}): {}", out.status, text.trim()),
            source: std::io::Error::other("defmt-print failed"),
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_round_trip_through_their_names() {
        for board in Board::ALL {
            assert_eq!(board.name().parse::<Board>().unwrap(), board);
        }
        let err = "mps2-an385".parse::<Board>().unwrap_err().to_string();
        assert!(err.contains("mps2-an386"), "{err}");
    }

    #[test]
    fn model_regions_fit_the_planned_models() {
        assert!(Board::Mps2An386.model_capacity() >= 3_400_000);
        assert!(Board::Mps2An505.model_capacity() >= 3_500 * 1024);
        assert!(Board::Lm3s6965evb.model_capacity() >= 150_000);
        assert!(Board::Microbit.model_capacity() >= 150_000);
    }

    #[test]
    fn missing_qemu_error_names_the_install_command() {
        let msg = QemuError::QemuNotFound.to_string();
        assert!(
            msg.contains("apt-get install -y --no-install-recommends qemu-system-arm"),
            "{msg}"
        );
    }

    #[test]
    fn uart_lines_and_fields_are_parsed() {
        let run = QemuRun {
            uart_lines: split_lines(
                b"READY microbit\r\nSTATS ram_static=20 stack_peak=300\npartial",
            ),
            ..QemuRun::default()
        };
        assert_eq!(
            run.uart_lines,
            [
                "READY microbit",
                "STATS ram_static=20 stack_peak=300",
                "partial"
            ]
        );
        assert_eq!(run.field("STATS ", "stack_peak"), Some("300"));
        assert_eq!(run.field("STATS ", "stack"), None);
    }

    #[test]
    fn commas_in_paths_are_escaped_for_qemu() {
        assert_eq!(qemu_escape(Path::new("/tmp/a,b")), "/tmp/a,,b");
    }
}
