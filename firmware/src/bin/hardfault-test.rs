//! Boots like the real firmware (`READY <board>`), then loads from an unmapped address: the
//! run must end with exit status 102 (`s2s_device::exit::Exit`) and a
//! `HARDFAULT ...` line, not a hang.
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use firmware::{app, board, fault};

#[entry]
fn main() -> ! {
    let mut uart = board::Uart::new();
    app::ready(&mut uart);
    fault::trigger_hardfault()
}
