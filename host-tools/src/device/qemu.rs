//! Running a firmware ELF under QEMU (`qemu-system-arm`), std only.
//!
//! Wiring of one run:
//! - the board's UART (QEMU's first serial port) is a Unix socket chardev
//!   (`-chardev socket,server=on,wait=on`) in a fresh temporary directory; QEMU waits for
//!   the runner to connect before starting the guest, so no output is lost;
//! - semihosting output (the firmware's defmt frames) comes out of QEMU's stdout (QEMU 7.2
//!   sends semihosting writes to `:tt` there, whatever `-semihosting-config chardev=`
//!   says), kept apart from the UART; decode it with `defmt-print -e <elf>`;
//! - QEMU's own messages come out of its stderr;
//! - `-icount shift=7` makes the firmware's tick counts exact instruction counts
//!   (`s2s_device::qemu`);
//! - the model file, if any, goes to the board's model region with
//!   `-device loader,file=MODEL,addr=ADDR,force-raw=on`.
//!
//! [`run`] and [`run_paced`] hold a session over the UART socket ([`super::link`]) and
//! collect the output; [`boot`] puts the UART on the terminal (the firmware's cargo
//! runner).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use s2s_device::exit::Exit;
use s2s_device::protocol::{parse_reply, Reply, ACK};
use s2s_device::Board;

use super::link::{self, Limits, Link, Pace};
use crate::error::{Error, Result};

/// The QEMU binary, unless the `QEMU_SYSTEM_ARM` environment variable names another
/// (see [`program`]).
pub const QEMU: &str = "qemu-system-arm";

/// Where `cargo xtask setup` unpacks Debian's QEMU when installing it would remove one
/// of the machine's packages (a newer `qemu-utils` breaks Debian 12's QEMU 7.2): the
/// packages' files under `qemu/` of the cache directory.
pub fn private_dir() -> PathBuf {
    super::cache::cache_dir().join("qemu")
}

/// The QEMU program: `QEMU_SYSTEM_ARM` if set, else the private copy if
/// `cargo xtask setup` made one ([`private_dir`]), else [`QEMU`] on `PATH`.
pub fn program() -> OsString {
    let private = private_dir().join("usr/bin").join(QEMU);
    std::env::var_os("QEMU_SYSTEM_ARM")
        .or_else(|| private.is_file().then(|| private.into_os_string()))
        .unwrap_or_else(|| QEMU.into())
}
/// How to install QEMU (Debian/Ubuntu).
pub const QEMU_INSTALL: &str = "apt-get install -y --no-install-recommends qemu-system-arm";
/// How to install the defmt decoder.
pub const DEFMT_PRINT_INSTALL: &str = "cargo install defmt-print --locked";

/// What a QEMU run produced.
#[derive(Clone, Debug, Default)]
pub struct QemuRun {
    /// The lines the firmware wrote on the UART, without `\n`/`\r` (a last line without
    /// `\n` included).
    pub uart_lines: Vec<String>,
    /// QEMU's exit status (see `s2s_device::exit::Exit`); `None` if it ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended QEMU, if one did: SIGKILL from the timeout, or SIGABRT when
    /// QEMU aborts on a CPU lockup (a fault in the HardFault handler, an ELF built for
    /// another board).
    pub signal: Option<i32>,
    /// Raw semihosting output: the defmt frames.
    pub semihosting: Vec<u8>,
    /// QEMU's own messages (stderr).
    pub stderr: String,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

impl QemuRun {
    /// How the firmware ended, if QEMU exited with one of its statuses.
    pub fn exit(&self) -> Option<Exit> {
        self.exit_code.and_then(Exit::from_code)
    }

    /// The first UART line that starts with `prefix` (e.g. `"STATS "`).
    pub fn line_starting_with(&self, prefix: &str) -> Option<&str> {
        self.uart_lines
            .iter()
            .map(String::as_str)
            .find(|l| l.starts_with(prefix))
    }

    /// The exit status in words, for messages.
    pub fn status(&self) -> String {
        match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "no exit status".to_string(),
        }
    }

    /// The last few UART lines, for messages.
    pub fn tail(&self) -> &[String] {
        &self.uart_lines[self.uart_lines.len().saturating_sub(5)..]
    }
}

fn io_error(what: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::Tool {
        program: QEMU.into(),
        message: format!("{what}: {e}"),
    }
}

/// The board's QEMU machine, or an error for a board QEMU does not emulate.
fn machine(board: &Board) -> Result<s2s_device::qemu::Qemu> {
    board
        .qemu
        .ok_or_else(|| Error::device(board.name, "QEMU does not emulate this board"))
}

/// A QEMU `-opt key=value` value: commas are doubled.
fn qemu_escape(path: &Path) -> String {
    path.display().to_string().replace(',', ",,")
}

/// A fresh temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("s2s-qemu-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).map_err(Error::io(&path))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A started QEMU whose UART socket is connected; kills and reaps QEMU when dropped
/// before [`Started::wait`].
struct Started {
    child: Option<Child>,
    uart: UnixStream,
    _dir: TempDir,
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Started {
    fn child(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("QEMU is running until waited for")
    }

    /// Waits for QEMU to exit, killing it at `deadline`; true if it was killed.
    fn wait(&mut self, deadline: Instant) -> Result<(ExitStatus, bool)> {
        let child = self.child();
        let result = loop {
            if let Some(status) = child.try_wait().map_err(io_error("waiting"))? {
                break (status, false);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                break (child.wait().map_err(io_error("waiting"))?, true);
            }
            thread::sleep(Duration::from_millis(5));
        };
        self.child = None;
        Ok(result)
    }
}

/// Starts QEMU for `elf` on `board` (with `model` in its model region) and connects to
/// its UART; QEMU's stdout and stderr are piped.
fn start(board: &Board, elf: &Path, model: Option<&Path>, deadline: Instant) -> Result<Started> {
    let m = machine(board)?;
    if let Some(path) = model {
        let size = std::fs::metadata(path).map_err(Error::io(path))?.len();
        let capacity = u64::from(board.memory.model.length);
        if size > capacity {
            return Err(Error::device(
                board.name,
                format!(
                    "model {} is {size} bytes, more than the board's model region ({capacity} bytes)",
                    path.display()
                ),
            ));
        }
    }
    std::fs::metadata(elf).map_err(Error::io(elf))?;
    let dir = TempDir::new()?;
    let socket = dir.0.join("uart.sock");
    let mut cmd = Command::new(program());
    cmd.args(["-machine", m.machine, "-cpu", m.cpu])
        .args(s2s_device::qemu::COMMON_ARGS)
        .arg(elf)
        .arg("-chardev")
        .arg(format!(
            "socket,id=uart,path={},server=on,wait=on",
            qemu_escape(&socket)
        ))
        .args(["-serial", "chardev:uart"]);
    if let Some(path) = model {
        let path = std::fs::canonicalize(path).map_err(Error::io(path))?;
        cmd.arg("-device").arg(format!(
            "loader,file={},addr={:#x},force-raw=on",
            qemu_escape(&path),
            board.memory.model.origin
        ));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Tool {
                program: QEMU.into(),
                message: format!("not found; install it with: {QEMU_INSTALL}"),
            })
        }
        Err(e) => return Err(io_error("cannot start it")(e)),
    };
    // QEMU creates the socket and waits (wait=on) for us before starting the guest.
    loop {
        if let Ok(uart) = UnixStream::connect(&socket) {
            return Ok(Started {
                child: Some(child),
                uart,
                _dir: dir,
            });
        }
        if child.try_wait().map_err(io_error("waiting"))?.is_some() || Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            return Err(Error::Tool {
                program: QEMU.into(),
                message: format!("exited before the run started: {}", stderr.trim()),
            });
        }
        thread::sleep(Duration::from_millis(5));
    }
}

fn read_all<R: Read + Send + 'static>(mut r: R) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

/// QEMU's UART socket as a [`Link`]; errors name the board.
struct Uart {
    stream: UnixStream,
    board: &'static str,
}

impl Link for Uart {
    fn name(&self) -> &str {
        self.board
    }

    fn read(&mut self, buf: &mut [u8], timeout: Duration) -> std::io::Result<usize> {
        self.stream
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        match self.stream.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                Err(std::io::ErrorKind::TimedOut.into())
            }
            // QEMU exited with lines sent but unread (a firmware that ended early): the
            // socket is reset rather than closed. Either way the board has gone.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(0),
            r => r,
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }
}

/// Boots `elf` on `board` in QEMU, loads `model` (if any) into the board's model region,
/// runs a session ([`link::converse`]) that sends the `input` lines paced by `pace`,
/// and collects the UART lines, semihosting bytes and exit status. QEMU is killed after
/// `timeout` (an error with the last UART lines).
pub fn run_paced(
    board: &Board,
    elf: &Path,
    model: Option<&Path>,
    input: &[String],
    pace: Pace,
    timeout: Duration,
) -> Result<QemuRun> {
    let started_at = Instant::now();
    let deadline = started_at + timeout;
    let mut qemu = start(board, elf, model, deadline)?;
    let stdout = qemu.child().stdout.take().map(read_all);
    let stderr = qemu.child().stderr.take().map(read_all);
    let stream = qemu
        .uart
        .try_clone()
        .map_err(io_error("cloning the UART socket"))?;
    let mut uart = Uart {
        stream,
        board: board.name,
    };
    let limits = Limits {
        line: timeout,
        deadline: Some(deadline),
    };
    // On an error QEMU is killed (dropped) and its output left unread.
    let talk = link::converse(&mut uart, input, pace, limits, &mut |_| Ok(()))?;
    let (status, timed_out) = qemu.wait(deadline)?;
    drop(qemu);
    let join = |h: Option<JoinHandle<Vec<u8>>>| h.and_then(|h| h.join().ok()).unwrap_or_default();
    let result = QemuRun {
        uart_lines: talk.lines,
        exit_code: status.code(),
        signal: status.signal(),
        semihosting: join(stdout),
        stderr: String::from_utf8_lossy(&join(stderr)).into_owned(),
        elapsed: started_at.elapsed(),
    };
    if timed_out {
        return Err(Error::device(
            board.name,
            format!(
                "QEMU timed out after {} s and was killed; last UART lines: {:?}",
                timeout.as_secs(),
                result.tail()
            ),
        ));
    }
    Ok(result)
}

/// [`run_paced`] with [`Pace::Bulk`]: every `input` line at once after `READY` (any
/// firmware of the protocol), then the UART lines until QEMU exits.
pub fn run(
    board: &Board,
    elf: &Path,
    model: Option<&Path>,
    input: &[String],
    timeout: Duration,
) -> Result<QemuRun> {
    run_paced(board, elf, model, input, Pace::Bulk, timeout)
}

/// Boots `elf` on `board` with the UART on this process's standard input and output
/// (lines typed go to the firmware as they are; the `STATS` line at the end of a session
/// is acknowledged with `s2s_device::protocol::ACK`) and the firmware's defmt log decoded to
/// standard error by `defmt-print` (saved to `<elf>.defmt` without it). Returns QEMU's
/// exit status (124 after `timeout`).
pub fn boot(board: &Board, elf: &Path, model: Option<&Path>, timeout: Duration) -> Result<i32> {
    let deadline = Instant::now() + timeout;
    let mut qemu = start(board, elf, model, deadline)?;
    let semihosting = qemu.child().stdout.take();
    let qemu_stderr = qemu.child().stderr.take().map(read_all);
    let decoder = semihosting.map(|frames| {
        Command::new("defmt-print")
            .arg("-e")
            .arg(elf)
            .stdin(Stdio::from(frames))
            .stdout(Stdio::from(std::io::stderr()))
            .spawn()
    });
    let mut out = qemu
        .uart
        .try_clone()
        .map_err(io_error("cloning the UART socket"))?;
    let mut input = qemu
        .uart
        .try_clone()
        .map_err(io_error("cloning the UART socket"))?;
    let mut ack = qemu
        .uart
        .try_clone()
        .map_err(io_error("cloning the UART socket"))?;
    // The UART to the terminal; the session's STATS line is acknowledged as the
    // protocol asks, so that the firmware ends.
    let printer = thread::spawn(move || {
        let mut line = Vec::new();
        let mut chunk = [0u8; 1024];
        while let Ok(n @ 1..) = out.read(&mut chunk) {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&chunk[..n]).and_then(|()| stdout.flush());
            for &b in &chunk[..n] {
                if b != b'\n' {
                    line.push(b);
                    continue;
                }
                if let Ok(Reply::Stats(_)) = parse_reply(String::from_utf8_lossy(&line).trim_end())
                {
                    let _ = ack.write_all(format!("{ACK}\n").as_bytes());
                }
                line.clear();
            }
        }
    });
    // Blocks on standard input; the process ends without waiting for it.
    thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut input);
    });
    let (status, timed_out) = qemu.wait(deadline)?;
    let _ = printer.join();
    let stderr = qemu_stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    std::io::stderr()
        .write_all(&stderr)
        .map_err(Error::io("<stderr>"))?;
    match decoder {
        Some(Ok(mut child)) => {
            let _ = child.wait();
        }
        Some(Err(_)) => eprintln!(
            "s2s boot: defmt-print not found ({DEFMT_PRINT_INSTALL}); the defmt log was not decoded"
        ),
        None => {}
    }
    Ok(if timed_out {
        124
    } else {
        status.code().unwrap_or(128 + status.signal().unwrap_or(0))
    })
}

/// Decodes defmt frames (e.g. [`QemuRun::semihosting`]) with `defmt-print -e <elf>` and
/// returns its text (one log line per frame).
pub fn decode_defmt(elf: &Path, frames: &[u8]) -> Result<String> {
    let tool = |message: String| Error::Tool {
        program: "defmt-print".into(),
        message,
    };
    let mut child = Command::new("defmt-print")
        .arg("-e")
        .arg(elf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                tool(format!("not found; install it with: {DEFMT_PRINT_INSTALL}"))
            }
            _ => tool(format!("cannot start it: {e}")),
        })?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let frames = frames.to_vec();
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(&frames);
    });
    let out = child.wait_with_output().map_err(|e| tool(e.to_string()))?;
    let _ = writer.join();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(tool(format!(
            "failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uart_lines_are_found_by_prefix() {
        let run = QemuRun {
            uart_lines: ["READY microbit", "STATS ram_static=20 stack_peak=300"]
                .map(String::from)
                .to_vec(),
            ..QemuRun::default()
        };
        assert_eq!(
            run.line_starting_with("STATS "),
            Some(run.uart_lines[1].as_str())
        );
    }

    #[test]
    fn commas_in_paths_are_escaped_for_qemu() {
        assert_eq!(qemu_escape(Path::new("/tmp/a,b")), "/tmp/a,,b");
    }

    #[test]
    fn missing_qemu_error_names_the_install_command() {
        std::env::set_var("QEMU_SYSTEM_ARM", "/nonexistent/qemu-system-arm");
        let board = s2s_device::board::find("microbit").unwrap();
        let e = run(
            board,
            Path::new("Cargo.toml"),
            None,
            &[],
            Duration::from_secs(5),
        );
        std::env::remove_var("QEMU_SYSTEM_ARM");
        let msg = e.unwrap_err().to_string();
        assert!(msg.contains(QEMU_INSTALL), "{msg}");
    }
}
