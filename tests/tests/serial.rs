//! `s2s serial` against a QEMU board whose UART is a pseudo-terminal: the release
//! firmware on the LM3S6965 (its PL011 UART on `-chardev pty`) serving netra w8a16
//! from its model region, and `s2s serial --port /dev/pts/N` on the other side, as it
//! would talk to a board on a USB serial port.
//!
//! QEMU drops what the guest writes while no one has the pseudo-terminal open, so QEMU
//! starts paused (`-S`): the test opens the terminal (and keeps it open, without
//! reading, as a cable plugged in before the board powers up), then lets the guest run
//! (`cont` on the monitor), then starts `s2s serial`, which finds `READY` waiting. The
//! rest is the protocol's handshake: nothing is sent before `READY`, each source after
//! the previous answer, and the firmware exits only after `s2s serial` has
//! acknowledged `STATS`, so QEMU's exit status 0 is part of what is checked.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use host_tools::device::{qemu, Firmware};
use s2s_device::board::{find, Board};
use s2s_tests::{golden, model_file, s2s_bin, scratch_dir};

/// How long QEMU and `s2s serial` may take, each: far beyond what a run needs (a few
/// seconds), for a loaded machine.
const TIMEOUT: Duration = Duration::from_secs(120);
/// The evaluation words sent (netra's fixed length is 25 characters).
const WORDS: usize = 60;

fn lm3s6965evb() -> &'static Board {
    find("lm3s6965evb").expect("lm3s6965evb is in the board table")
}

/// A child process killed (and reaped) on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A QEMU board running, its UART on a pseudo-terminal that this test holds open.
struct PtyBoard {
    child: Killed,
    /// The terminal's path (`/dev/pts/N`).
    pty: PathBuf,
    /// Holds the terminal open from before the guest starts until the end.
    _holder: File,
    /// The monitor connection, kept open until the end (closing it right after `cont`
    /// could race with QEMU reading the command).
    _monitor: UnixStream,
}

impl PtyBoard {
    /// Boots `elf` on `board` with `model` in its model region, the UART on a fresh
    /// pseudo-terminal opened before the guest runs.
    fn start(board: &Board, elf: &Path, model: &Path) -> PtyBoard {
        let m = board.qemu.expect("a QEMU board");
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let monitor = std::env::temp_dir().join(format!(
            "s2s-serial-test-{}-{}.sock",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&monitor);
        let child = Command::new(qemu::program())
            .args(["-machine", m.machine, "-cpu", m.cpu])
            .args(s2s_device::qemu::COMMON_ARGS)
            .arg(elf)
            .args(["-chardev", "pty,id=uart", "-serial", "chardev:uart", "-S"])
            .arg("-monitor")
            .arg(format!("unix:{},server=on,wait=off", monitor.display()))
            .arg("-device")
            .arg(format!(
                "loader,file={},addr={:#x},force-raw=on",
                model.display(),
                board.memory.model.origin
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e} (install: {})", qemu::QEMU, qemu::QEMU_INSTALL));
        // Killed on drop, also when this function panics.
        let mut child = Killed(child);
        // "char device redirected to /dev/pts/N (label uart)" comes on stdout, before
        // the guest's semihosting bytes (defmt frames), which are drained so that QEMU
        // never blocks on them.
        let stdout = child.0.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut out = BufReader::new(stdout);
            let mut line = Vec::new();
            while out.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                line.clear();
            }
        });
        let deadline = Instant::now() + TIMEOUT;
        let pty = loop {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|e| panic!("QEMU named no pseudo-terminal: {e}"));
            if let Some(rest) = line.strip_prefix("char device redirected to ") {
                let path = rest.split(' ').next().unwrap_or_default();
                break PathBuf::from(path);
            }
        };
        // O_NOCTTY: the terminal must not become this process's controlling terminal
        // (its hang-up when QEMU exits would signal the test).
        let holder = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(&pty)
            .unwrap_or_else(|e| panic!("{}: {e}", pty.display()));
        let mut mon = loop {
            match UnixStream::connect(&monitor) {
                Ok(s) => break s,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("QEMU monitor {}: {e}", monitor.display()),
            }
        };
        mon.write_all(b"cont\n")
            .expect("writing `cont` to the QEMU monitor");
        let _ = std::fs::remove_file(&monitor);
        PtyBoard {
            child,
            pty,
            _holder: holder,
            _monitor: mon,
        }
    }

    /// QEMU's exit status, after at most [`TIMEOUT`] (then it is killed: `None`).
    fn wait(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.0.try_wait().expect("waiting for QEMU") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The release model-runner firmware for `board`.
fn firmware(board: &Board) -> PathBuf {
    Firmware::locate(None)
        .and_then(|f| f.build(board, "firmware", true))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `s2s serial --port PTY MODEL --input INPUT` plus `args`.
fn s2s_serial(pty: &Path, model: &Path, input: &Path, args: &[&str]) -> Output {
    Command::new(s2s_bin())
        .arg("serial")
        .arg("--port")
        .arg(pty)
        .arg(model)
        .arg("--input")
        .arg(input)
        .args(["--timeout", &TIMEOUT.as_secs().to_string()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running s2s serial")
}

/// The first [`WORDS`] evaluation words, written to a file in `dir`.
fn words_file(dir: &Path) -> PathBuf {
    let words = std::fs::read_to_string(golden("words-eval.txt")).expect("words-eval.txt");
    let words: Vec<&str> = words
        .lines()
        .filter(|w| !w.is_empty() && w.chars().count() <= 25)
        .take(WORDS)
        .collect();
    assert_eq!(words.len(), WORDS);
    let path = dir.join("words.txt");
    std::fs::write(&path, words.join("\n") + "\n").expect("writing the words");
    path
}

#[test]
fn s2s_serial_matches_the_host_token_for_token_over_a_pseudo_terminal() {
    let board = lm3s6965evb();
    let model = model_file("netra-w8a16.s2s");
    let input = words_file(&scratch_dir("serial-matches"));
    let elf = firmware(board);
    let mut qemu = PtyBoard::start(board, &elf, &model);
    let out = s2s_serial(&qemu.pty, &model, &input, &["--attention"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    // (What the README's transcript shows, with `--nocapture`.)
    print!("{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "{} on lm3s6965evb (w8a16, 78,705 parameters)",
            model.display()
        )),
        "{stdout}"
    );
    let via = format!("({})\n", qemu.pty.display());
    for want in [
        &format!("\ninputs          {WORDS} (0 rejected)\n"),
        "\nmismatches      0, ",
        " attention rows compared\n",
        "\nserial          ",
        &via,
    ] {
        assert!(stdout.contains(want), "no {want:?} in:\n{stdout}");
    }
    // The firmware ended its session after the acknowledgement, with status 0.
    assert_eq!(qemu.wait().and_then(|s| s.code()), Some(0), "{stdout}");
}

#[test]
fn s2s_serial_refuses_a_board_that_serves_another_model() {
    let board = lm3s6965evb();
    let flashed = model_file("netra-w8a16.s2s");
    let input = words_file(&scratch_dir("serial-refuses"));
    let elf = firmware(board);
    // Another precision, and the same precision and length with other bytes (the v6m
    // layout of the same weights): only the CRC tells that one apart.
    for other in ["netra.s2s", "netra-w8a16-v6m.s2s"] {
        let other = model_file(other);
        let mut qemu = PtyBoard::start(board, &elf, &flashed);
        let out = s2s_serial(&qemu.pty, &other, &input, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        print!("{stderr}");
        assert!(!out.status.success(), "{stderr}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(stderr.lines().count(), 1, "one error line: {stderr}");
        let want = format!(
            "error: {}: the board serves a w8a16 model of ",
            qemu.pty.display()
        );
        assert!(stderr.starts_with(&want), "{stderr}");
        assert!(
            stderr.contains(&format!("not {} (", other.display())) && stderr.contains("CRC 0x"),
            "{stderr}"
        );
        // The session was ended as the protocol asks, STATS acknowledged.
        assert_eq!(qemu.wait().and_then(|s| s.code()), Some(0), "{stderr}");
    }
}
