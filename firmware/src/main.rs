//! The model-runner firmware: boots, prints `READY <board>`, serves the model in the
//! board's model region (`MODEL ...` line, then one answer per input line; see
//! `firmware::model` and `README.md`) and exits QEMU with status 0 at the end of the
//! session. A model that cannot be served (none loaded, corrupted, a precision this build
//! leaves out, beyond the board's capacities) gives `ERR model: <reason>` and exit
//! status 3 (`s2s_device::exit::Exit::ModelError`).
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use embedded_io::Write as _;
use firmware::app::{self, FmtOut};
use firmware::capacity::ARENA_WORDS;
use firmware::{fault, measure, model};
use s2s_device::exit::Exit;
use s2s_device::protocol;

#[entry]
fn main() -> ! {
    // The model's workspace: a static buffer (`.bss`), no heap. `#[entry]` turns this
    // `static mut` into a `&'static mut` that only this call of `main` holds.
    static mut ARENA: [u32; ARENA_WORDS] = [0; ARENA_WORDS];

    let mut uart = app::start();
    let e = match model::serve(&mut uart, measure::model_region(), ARENA) {
        Ok(never) => match never {},
        Err(e) => e,
    };
    let _ = protocol::write_model_error(&mut FmtOut::new(&mut uart), &e);
    let _ = uart.flush();
    // After a stack overflow the logger's state may be corrupted: UART only.
    if !matches!(e, model::ServeError::StackOverflow { .. }) {
        firmware::log!(error, "ERR model: {}", e);
    }
    fault::exit(Exit::ModelError)
}
