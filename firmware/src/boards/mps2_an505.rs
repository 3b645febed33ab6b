//! ARM MPS2 with the AN505 FPGA image (IoTKit / SSE-200 subsystem): Cortex-M33 with FPU at
//! 20 MHz (QEMU `-machine mps2-an505`). The firmware runs in the Secure state and uses the
//! Secure aliases (address bit 28 set) of memory and peripherals.
//!
//! UART0 is the CMSDK APB UART at 0x5020_0000 (Secure alias of 0x4020_0000; QEMU's first
//! `-serial`); the counter is the IoTKit CMSDK APB TIMER0 at 0x5000_0000 (Secure alias of
//! 0x4000_0000). Memory map: `boards/mps2-an505/memory.x`.

use super::{cmsdk, Ratio};

/// Board name, as in the `READY` line and the cargo feature.
pub const NAME: &str = "mps2-an505";
/// System (and APB) clock.
pub const SYSCLK_HZ: u32 = 20_000_000;

/// The console UART (UART0).
pub type Uart = cmsdk::Uart<0x5020_0000, SYSCLK_HZ>;
/// Deterministic tick counter: CMSDK TIMER0, a 32-bit down-counter at SYSCLK.
pub type Counter = cmsdk::Counter<0x5000_0000>;

/// Under `-icount shift=7` one instruction is 128 ns, i.e. 2.56 ticks at 20 MHz
/// (measured: `probe` firmware, `loop N`).
pub const TICKS_PER_INSN: Ratio = Ratio { num: 64, den: 25 };

/// An address with nothing mapped: a load from it raises a BusFault (escalated to
/// HardFault). Used by the `hardfault-test` firmware.
pub const INVALID_ADDR: usize = 0x6000_0000;
