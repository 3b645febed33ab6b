//! ARM MPS2 with the AN386 FPGA image: Cortex-M4F at 25 MHz (QEMU `-machine mps2-an386`).
//!
//! UART0 is the CMSDK APB UART at 0x4000_4000 (QEMU's first `-serial`); the counter is CMSDK
//! APB TIMER0 at 0x4000_0000, clocked at SYSCLK. Memory map: `boards/mps2-an386/memory.x`.

use super::{cmsdk, Ratio};

/// Board name, as in the `READY` line and the cargo feature.
pub const NAME: &str = "mps2-an386";
/// System (and APB) clock.
pub const SYSCLK_HZ: u32 = 25_000_000;

/// The console UART (UART0).
pub type Uart = cmsdk::Uart<0x4000_4000, SYSCLK_HZ>;
/// Deterministic tick counter: CMSDK TIMER0, a 32-bit down-counter at SYSCLK.
pub type Counter = cmsdk::Counter<0x4000_0000>;

/// Under `-icount shift=7` one instruction is 128 ns, i.e. 3.2 ticks at 25 MHz
/// (measured: `probe` firmware, `loop N`).
pub const TICKS_PER_INSN: Ratio = Ratio { num: 16, den: 5 };

/// An address with nothing mapped: a load from it raises a BusFault (escalated to
/// HardFault). Used by the `hardfault-test` firmware.
pub const INVALID_ADDR: usize = 0x6000_0000;
