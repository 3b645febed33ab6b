//! Boots like the real firmware (`READY <board>`), then panics: the run must end with
//! exit status 101 (`s2s_device::exit::Exit`) and a `PANIC ...` line, not a hang.
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use firmware::{app, board};

#[entry]
fn main() -> ! {
    let mut uart = board::Uart::new();
    app::ready(&mut uart);
    panic!("deliberate panic (panic-test)");
}
