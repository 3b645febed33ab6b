//! One module per board, each with the same items: `NAME`, `Uart` (implements
//! `embedded_io::{Read, Write}`), `Counter` (a deterministic tick counter),
//! `TICKS_PER_INSN` and `INVALID_ADDR`. Raw register access stays in these modules.
//!
//! Only the selected board's module is compiled; [`board`] names it.

#[cfg(any(board = "mps2-an386", board = "mps2-an505"))]
mod cmsdk;

#[cfg(board = "lm3s6965evb")]
pub mod lm3s6965evb;
#[cfg(board = "microbit")]
pub mod microbit;
#[cfg(board = "mps2-an386")]
pub mod mps2_an386;
#[cfg(board = "mps2-an505")]
pub mod mps2_an505;

#[cfg(board = "lm3s6965evb")]
pub use lm3s6965evb as board;
#[cfg(board = "microbit")]
pub use microbit as board;
#[cfg(board = "mps2-an386")]
pub use mps2_an386 as board;
#[cfg(board = "mps2-an505")]
pub use mps2_an505 as board;

/// Ticks of a board's [`board::Counter`] per executed instruction under QEMU's
/// `-icount shift=7` (one instruction = 2^7 ns of virtual time), as `num / den`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    /// Numerator.
    pub num: u32,
    /// Denominator.
    pub den: u32,
}

impl Ratio {
    /// Converts a tick count to instructions (rounded to nearest).
    pub const fn ticks_to_insns(self, ticks: u64) -> u64 {
        (ticks * self.den as u64 + self.num as u64 / 2) / self.num as u64
    }
}

/// A 32-bit memory-mapped register, accessed with volatile reads and writes.
#[derive(Clone, Copy)]
struct Reg(usize);

// Not every board uses every method.
#[allow(dead_code)]
impl Reg {
    /// # Safety
    /// `addr` must be the address of a 32-bit device register of the selected board that
    /// is mapped for the whole run, and that may be read and written with 32-bit volatile
    /// accesses at any time without breaking memory safety (device registers, not memory
    /// that Rust code owns).
    const unsafe fn new(addr: usize) -> Self {
        Reg(addr)
    }

    #[inline(always)]
    fn read(self) -> u32 {
        // SAFETY: `Reg::new`'s contract: a mapped, aligned device register.
        unsafe { core::ptr::read_volatile(self.0 as *const u32) }
    }

    #[inline(always)]
    fn write(self, value: u32) {
        // SAFETY: `Reg::new`'s contract: a mapped, aligned device register.
        unsafe { core::ptr::write_volatile(self.0 as *mut u32, value) }
    }
}
