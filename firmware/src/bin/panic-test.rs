//! Boots like the real firmware (`READY <board>`), then panics: the run must end with
//! exit status 101 (`firmware::fault::EXIT_PANIC`) and a `PANIC ...` line, not a hang.
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use embedded_io::Write as _;
use firmware::board;

#[entry]
fn main() -> ! {
    let mut uart = board::Uart::new();
    defmt::info!("READY {=str}", board::NAME);
    writeln!(uart, "READY {}", board::NAME).ok();
    panic!("deliberate panic (panic-test)");
}
