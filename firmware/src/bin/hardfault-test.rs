//! Boots like the real firmware (`READY <board>`), then loads from an unmapped address: the
//! run must end with exit status 102 (`firmware::fault::EXIT_HARDFAULT`) and a
//! `HARDFAULT ...` line, not a hang.
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use embedded_io::Write as _;
use firmware::{board, fault};

#[entry]
fn main() -> ! {
    let mut uart = board::Uart::new();
    defmt::info!("READY {=str}", board::NAME);
    writeln!(uart, "READY {}", board::NAME).ok();
    fault::trigger_hardfault()
}
