//! ARM MPS2 with the AN385 FPGA image: Cortex-M3 at 25 MHz (QEMU `-machine mps2-an385`),
//! the AN386's peripherals and memory map without its FPU.
//!
//! UART0 is the CMSDK APB UART at 0x4000_4000 (QEMU's first `-serial`); the counter is
//! CMSDK APB TIMER0 at 0x4000_0000, clocked at SYSCLK.

use super::{cmsdk, Polled};
use crate::BOARD;

/// The console UART (UART0), clocked by SYSCLK (the board's clock).
pub type Uart = Polled<cmsdk::Uart<0x4000_4000, { BOARD.clock_hz }>>;
/// Deterministic tick counter: CMSDK TIMER0, a 32-bit down-counter at SYSCLK.
pub type Counter = cmsdk::Counter<0x4000_0000>;

/// An address with nothing mapped: a load from it raises a BusFault (escalated to
/// HardFault). Used by the `hardfault-test` firmware.
pub const INVALID_ADDR: usize = 0x6000_0000;
