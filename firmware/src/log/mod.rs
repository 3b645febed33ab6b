//! The defmt global logger of every board: frames out over semihosting to the host's
//! standard output under QEMU (`stdout.rs`), where `s2s boot` and `s2s qemu` decode them
//! (`defmt-print -e <elf>`), or over SEGGER RTT on a real board (`rtt.rs`), where the
//! probe reads them (`probe-rs run`, the runner of `cargo xtask flash`).
//!
//! Like `defmt-semihosting`'s and `defmt-rtt`'s, but without a panic anywhere: a frame
//! begun while another is being written (a HardFault in the middle of a log call) is
//! dropped instead of panicking, so that the serve loop, which logs, passes the link-time
//! no-panic check (`no_panic.rs`) on every board.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, Ordering};

#[cfg(not(s2s_semihosting))]
mod rtt;
#[cfg(s2s_semihosting)]
mod stdout;

#[cfg(not(s2s_semihosting))]
use rtt::Sink;
#[cfg(s2s_semihosting)]
use stdout::Sink;

#[defmt::global_logger]
struct Logger;

/// Frames begun and not ended: 0 idle, 1 writing, more while a nested frame is dropped.
static DEPTH: AtomicU8 = AtomicU8::new(0);
/// The encoder, the critical section and the sink of the frame being written.
static STATE: State = State(UnsafeCell::new(Frame {
    encoder: defmt::Encoder::new(),
    restore: critical_section::RestoreState::invalid(),
    sink: Sink::new(),
}));

struct Frame {
    encoder: defmt::Encoder,
    restore: critical_section::RestoreState,
    /// Where the frames' bytes go.
    sink: Sink,
}

struct State(UnsafeCell<Frame>);

// SAFETY: the frame is touched only by the outermost logger call, inside the critical
// section that `acquire` takes (single core): never by two contexts at once.
unsafe impl Sync for State {}

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
            frame.sink.open();
            let sink = &frame.sink;
            frame.encoder.start_frame(|b| sink.write(b));
        }
    }

    unsafe fn flush() {}

    unsafe fn release() {
        // SAFETY: defmt calls this after `acquire`.
        if let Some(frame) = unsafe { frame() } {
            let sink = &frame.sink;
            frame.encoder.end_frame(|b| sink.write(b));
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
            let sink = &frame.sink;
            frame.encoder.write(bytes, |b| sink.write(b));
        }
    }
}
