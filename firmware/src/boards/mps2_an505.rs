//! ARM MPS2 with the AN505 FPGA image (IoTKit / SSE-200 subsystem): Cortex-M33 with FPU at
//! 20 MHz (QEMU `-machine mps2-an505`). The firmware runs in the Secure state and uses the
//! Secure aliases (address bit 28 set) of memory and peripherals.
//!
//! UART0 is the CMSDK APB UART at 0x5020_0000 (Secure alias of 0x4020_0000; QEMU's first
//! `-serial`); the counter is the IoTKit CMSDK APB TIMER0 at 0x5000_0000 (Secure alias of
//! 0x4000_0000). Memory map: the board table (`s2s-device`).

use super::{cmsdk, Polled};
use crate::BOARD;

/// The console UART (UART0), clocked by SYSCLK (the board's clock).
pub type Uart = Polled<cmsdk::Uart<0x5020_0000, { BOARD.clock_hz }>>;
/// Deterministic tick counter: CMSDK TIMER0, a 32-bit down-counter at SYSCLK.
pub type Counter = cmsdk::Counter<0x5000_0000>;

/// An address with nothing mapped: a load from it raises a BusFault (escalated to
/// HardFault). Used by the `hardfault-test` firmware.
pub const INVALID_ADDR: usize = 0x6000_0000;
