//! The defmt global logger: frames out over semihosting to the host's standard output,
//! where `s2s boot` and `s2s qemu` decode them (`defmt-print -e <elf>`).
//!
//! Like `defmt-semihosting`'s, but without a panic anywhere: a frame begun while another
//! is being written (a HardFault in the middle of a log call) is dropped instead of
//! panicking, and the file descriptor is kept raw, so that the serve loop, which logs,
//! passes the link-time no-panic check (`fault.rs`).

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, Ordering};

use semihosting::sys::arm_compat::syscall::{syscall_readonly, OperationNumber, ParamRegR};

/// Opens of `:tt` in this mode give the host's standard output (semihosting `SYS_OPEN`).
const OPEN_WRITE_TRUNCATE: usize = 4;

#[defmt::global_logger]
struct Logger;

/// Frames begun and not ended: 0 idle, 1 writing, more while a nested frame is dropped.
static DEPTH: AtomicU8 = AtomicU8::new(0);
/// The encoder, the critical section and the descriptor of the frame being written.
static STATE: State = State(UnsafeCell::new(Frame {
    encoder: defmt::Encoder::new(),
    restore: critical_section::RestoreState::invalid(),
    fd: None,
}));

struct Frame {
    encoder: defmt::Encoder,
    restore: critical_section::RestoreState,
    /// Standard output, opened on the first frame (`None` until then, or if it failed).
    fd: Option<isize>,
}

struct State(UnsafeCell<Frame>);

// SAFETY: the frame is touched only by the outermost logger call, inside the critical
// section that `acquire` takes (single core): never by two contexts at once.
unsafe impl Sync for State {}

/// Writes `bytes` to the descriptor `fd` with semihosting `SYS_WRITE`, as far as the
/// host takes them.
fn write_all(fd: isize, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let block = [
            ParamRegR::isize(fd),
            ParamRegR::buf(bytes),
            ParamRegR::usize(bytes.len()),
        ];
        // SAFETY: SYS_WRITE reads the three-word block and `bytes`, both alive for the
        // call; it returns the count of bytes not written.
        let left =
            unsafe { syscall_readonly(OperationNumber::SYS_WRITE, ParamRegR::block(&block)) }
                .usize();
        let written = bytes.len().saturating_sub(left);
        if written == 0 {
            return; // the host takes nothing: drop the rest
        }
        bytes = bytes.get(written..).unwrap_or(&[]);
    }
}

/// Opens the host's standard output (semihosting `SYS_OPEN` of `:tt`).
fn open_stdout() -> Option<isize> {
    const PATH: &core::ffi::CStr = c":tt";
    let block = [
        ParamRegR::c_str(PATH),
        ParamRegR::usize(OPEN_WRITE_TRUNCATE),
        ParamRegR::usize(PATH.count_bytes()),
    ];
    // SAFETY: SYS_OPEN reads the block and the NUL-terminated path, both alive for the
    // call; it returns a descriptor or -1.
    let fd = unsafe { syscall_readonly(OperationNumber::SYS_OPEN, ParamRegR::block(&block)) }
        .usize() as isize;
    (fd != -1).then_some(fd)
}

/// The frame of the outermost logger call: `None` inside a nested one.
///
/// # Safety
/// Only between `acquire` and `release`, from the context that holds depth 1.
unsafe fn frame() -> Option<&'static mut Frame> {
    if DEPTH.load(Ordering::Relaxed) != 1 {
        return None;
    }
    // SAFETY: depth 1 inside the critical section: only this context touches the frame
    // (see `State`).
    Some(unsafe { &mut *STATE.0.get() })
}

// SAFETY: `acquire` and `release` are paired by defmt; the frame is used only by the
// outermost call, inside its critical section.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        if DEPTH.load(Ordering::Relaxed) != 0 {
            // Nested (a fault during a log call): this frame is dropped.
            // (Load and store: the M0 has no atomic read-modify-write; a nested call
            // runs to its end before the outer one goes on.)
            DEPTH.store(
                DEPTH.load(Ordering::Relaxed).saturating_add(1),
                Ordering::Relaxed,
            );
            return;
        }
        // SAFETY: paired with the `critical_section::release` in `release`.
        let restore = unsafe { critical_section::acquire() };
        DEPTH.store(1, Ordering::Relaxed);
        // SAFETY: between acquire and release, depth 1.
        if let Some(frame) = unsafe { frame() } {
            frame.restore = restore;
            if frame.fd.is_none() {
                frame.fd = open_stdout();
            }
            let fd = frame.fd;
            frame.encoder.start_frame(|b| {
                if let Some(fd) = fd {
                    write_all(fd, b);
                }
            });
        }
    }

    unsafe fn flush() {}

    unsafe fn release() {
        // SAFETY: defmt calls this after `acquire`.
        if let Some(frame) = unsafe { frame() } {
            let fd = frame.fd;
            frame.encoder.end_frame(|b| {
                if let Some(fd) = fd {
                    write_all(fd, b);
                }
            });
            let restore = frame.restore;
            DEPTH.store(0, Ordering::Relaxed);
            // SAFETY: the state `acquire` saved, released once.
            unsafe { critical_section::release(restore) };
        } else {
            DEPTH.store(
                DEPTH.load(Ordering::Relaxed).saturating_sub(1),
                Ordering::Relaxed,
            );
        }
    }

    unsafe fn write(bytes: &[u8]) {
        // SAFETY: defmt calls this between `acquire` and `release`.
        if let Some(frame) = unsafe { frame() } {
            let fd = frame.fd;
            frame.encoder.write(bytes, |b| {
                if let Some(fd) = fd {
                    write_all(fd, b);
                }
            });
        }
    }
}
