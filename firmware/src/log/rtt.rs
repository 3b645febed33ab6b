//! The log's sink on a real board: one SEGGER RTT up channel, a ring in RAM that the
//! debug probe reads while the firmware runs (`probe-rs` finds the control block by its
//! symbol, `_SEGGER_RTT`).
//!
//! The firmware writes the ring and its write offset; the probe writes the read offset
//! and the channel's mode. Without a probe the mode stays "trim": what does not fit is
//! dropped. A probe that asks for "block if full" (probe-rs does while it decodes) makes
//! the writer wait for room. An offset outside the ring (only a confused probe could
//! write one) drops the bytes; nothing here panics.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// The ring's size in bytes: one byte always stays free, to tell a full ring from an
/// empty one.
const SIZE: usize = 1024;
/// The channel mode bits of `flags`.
const MODE_MASK: usize = 0b11;
/// Mode: write what fits, drop the rest (the mode until a probe changes it).
const MODE_TRIM: usize = 1;
/// Mode: wait until the probe has read enough.
const MODE_BLOCK_IF_FULL: usize = 2;

/// The RTT control block, laid out as the probe reads it.
#[repr(C)]
pub(super) struct ControlBlock {
    id: [u8; 16],
    max_up: usize,
    max_down: usize,
    up: Channel,
}

/// One up (target to probe) channel.
#[repr(C)]
struct Channel {
    /// NUL-terminated name.
    name: *const u8,
    ring: *mut u8,
    size: usize,
    /// Where the firmware writes next (the firmware's).
    write: AtomicUsize,
    /// Where the probe reads next (the probe's).
    read: AtomicUsize,
    /// The mode (the probe's).
    flags: AtomicUsize,
}

// SAFETY: the pointers are to the statics below, which live for the whole run; the
// offsets and the mode are atomics; the ring's bytes are written only by the logger,
// inside its critical section (`super::State`).
unsafe impl Sync for ControlBlock {}

/// The ring's bytes.
struct Ring(UnsafeCell<[u8; SIZE]>);

// SAFETY: written only by the logger, inside its critical section; read by the probe
// outside the program.
unsafe impl Sync for Ring {}

static RING: Ring = Ring(UnsafeCell::new([0; SIZE]));
static NAME: [u8; 6] = *b"defmt\0";

/// The control block the probe looks for.
#[no_mangle]
static _SEGGER_RTT: ControlBlock = ControlBlock {
    id: *b"SEGGER RTT\0\0\0\0\0\0",
    max_up: 1,
    max_down: 0,
    up: Channel {
        name: NAME.as_ptr(),
        ring: RING.0.get().cast(),
        size: SIZE,
        write: AtomicUsize::new(0),
        read: AtomicUsize::new(0),
        flags: AtomicUsize::new(MODE_TRIM),
    },
};

/// The RTT up channel (no state of its own: it is the control block).
pub(super) struct Sink;

impl Sink {
    pub(super) const fn new() -> Self {
        Sink
    }

    /// Nothing to open: the probe finds the control block.
    pub(super) fn open(&mut self) {}

    /// Copies `bytes` into the ring, waiting for room if the probe asks for it, else
    /// dropping what does not fit.
    pub(super) fn write(&self, mut bytes: &[u8]) {
        let up = &_SEGGER_RTT.up;
        while !bytes.is_empty() {
            let write = up.write.load(Ordering::Relaxed);
            let read = up.read.load(Ordering::Acquire);
            let Some(room) = room(read, write) else {
                return;
            };
            if room == 0 {
                if up.flags.load(Ordering::Relaxed) & MODE_MASK == MODE_BLOCK_IF_FULL {
                    continue;
                }
                return;
            }
            let n = room.min(bytes.len());
            let (now, rest) = bytes.split_at(n);
            // SAFETY: only the logger writes the ring, inside its critical section
            // (`super::State`): no other reference to it exists while this one lives.
            let ring = unsafe { &mut *RING.0.get() };
            let (before, after) = ring.split_at_mut(write);
            for (to, from) in after.iter_mut().chain(before).zip(now) {
                *to = *from;
            }
            up.write.store((write + n) % SIZE, Ordering::Release);
            bytes = rest;
        }
    }
}

/// The bytes that can be written at `write` without reaching `read`, or `None` if an
/// offset is outside the ring.
fn room(read: usize, write: usize) -> Option<usize> {
    if read >= SIZE || write >= SIZE {
        return None;
    }
    Some(if read > write {
        read - write - 1
    } else {
        SIZE - 1 - (write - read)
    })
}
