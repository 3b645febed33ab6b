//! The board: [`BOARD`], its entry in `s2s_device::BOARDS` (chosen by `build.rs` from
//! `S2S_BOARD`), and [`board`], its driver `src/boards/<name>.rs`, which every board
//! writes with the same items: `Uart` (implements `embedded_io::{Read, Write}`),
//! `Counter` (a deterministic tick counter at the board's clock) and `INVALID_ADDR`.
//! Raw register access stays in these modules; drivers that several boards share
//! (`cmsdk`) are modules here.

pub mod cmsdk;

include!(concat!(env!("OUT_DIR"), "/board.rs"));

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
