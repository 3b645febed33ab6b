//! Boots like the real firmware (`READY <board>`), then panics: the run must end with
//! exit status 101 (`s2s_device::exit::Exit::Panic`) and a `PANIC ...` line, not a hang.
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation

#[cortex_m_rt::entry]
fn main() -> ! {
    firmware::app::start();
    panic!("deliberate panic (panic-test)");
}
