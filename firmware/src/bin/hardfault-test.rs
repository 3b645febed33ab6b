//! Boots like the real firmware (`READY <board>`), then loads from an unmapped address:
//! the run must end with exit status 102 (`s2s_device::exit::Exit::HardFault`) and a
//! `HARDFAULT ...` line, not a hang.
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use firmware::{app, fault};

#[cortex_m_rt::entry]
fn main() -> ! {
    let _uart = app::start();
    fault::trigger_hardfault()
}
