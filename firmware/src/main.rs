//! The model-runner firmware of the QEMU boards' register drivers: boots, prints
//! `READY <board>`, serves the model in the board's model region (`MODEL ...` line, then
//! one answer per input line; see `firmware::model` and `README.md`) and exits QEMU with
//! status 0 at the end of the session. A model that cannot be served (none loaded,
//! corrupted, a precision this build leaves out, beyond the board's capacities) gives
//! `ERR model: <reason>` and exit status 3 (`s2s_device::exit::Exit::ModelError`).
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use firmware::capacity::ARENA_WORDS;

#[entry]
fn main() -> ! {
    // The model's workspace: a static buffer (`.bss`), no heap. `#[entry]` turns this
    // `static mut` into a `&'static mut` that only this call of `main` holds.
    static mut ARENA: [u32; ARENA_WORDS] = [0; ARENA_WORDS];

    firmware::run::serve_registers(ARENA)
}
