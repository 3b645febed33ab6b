//! The model runner's whole firmware run, for any board: [`serve_model`] takes the
//! board's link (`embedded_io::{Read, Write}`, enabled), its [`Counter`] type and a pin
//! raised around each decode, and never returns. A board's `main` sets up its clocks,
//! pins and link (from its HAL, or the QEMU boards' register drivers), then calls it.

use core::convert::Infallible;

use embedded_hal::digital::{ErrorType, OutputPin};
use embedded_io::{Read, Write};
use s2s_device::exit::Exit;
use s2s_device::protocol;

use crate::app::{self, FmtOut};
use crate::model::{self, Io, ServeError};
use crate::{measure, Counter};

/// No pin: for a board with nothing to raise around each decode (the QEMU boards). Its
/// calls compile to nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPin;

impl ErrorType for NoPin {
    type Error = Infallible;
}

impl OutputPin for NoPin {
    fn set_low(&mut self) -> Result<(), Infallible> {
        Ok(())
    }

    fn set_high(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// Paints the stack (for `STATS stack_peak`): call it first thing in `main`, before the
/// board's set-up, which then counts towards the peak.
pub fn start() {
    measure::paint_stack();
}

/// Ends the run when the board's set-up fails before `READY` (a clock that does not
/// start, a configuration its HAL refuses): logs `what`, then under QEMU exits with
/// [`Exit::SetupFailed`]; a real board, with no link yet to say it on, halts in a
/// low-power wait (the log over RTT says why). A board's `main` calls it where it could
/// otherwise only panic, so that its no-panic build links.
pub fn setup_failed(what: &'static str) -> ! {
    log!(error, "set-up failed: {=str}", what);
    let _ = what; // only logged
    #[cfg(s2s_semihosting)]
    crate::fault::exit(Exit::SetupFailed);
    #[cfg(not(s2s_semihosting))]
    loop {
        cortex_m::asm::wfi();
    }
}

/// Says `READY <board>` on `link` and serves the model in the board's model region (the
/// embedded model in a one-model build, `S2S_EMBED`) with
/// `arena` as its workspace, timing with `C` and raising `busy` around each decode
/// (`model::serve`). A model that cannot be served gets `ERR model: <reason>`: under
/// QEMU the run then exits with status 3; a real board repeats the line after each line
/// it receives, so that a host that connects later still reads why.
pub fn serve_model<L: Read + Write, C: Counter, B: OutputPin>(
    link: &mut L,
    busy: B,
    arena: &'static mut [u32],
) -> ! {
    app::ready(link);
    let io = Io { link, busy };
    #[cfg(not(s2s_embedded))]
    let served = model::serve::<L, C, B>(io, measure::model_region(), arena);
    #[cfg(s2s_embedded)]
    let served = model::serve_embedded::<L, C, B>(io, arena);
    let e = match served {
        Ok(never) => match never {},
        Err(e) => e,
    };
    let say = |link: &mut L| {
        let _ = protocol::write_model_error(&mut FmtOut::new(&mut *link), &e);
        let _ = link.flush();
    };
    say(link);
    // After a stack overflow the logger's state may be corrupted: the link only.
    if !matches!(e, ServeError::StackOverflow { .. }) {
        log!(error, "ERR model: {}", e);
    }
    loop {
        app::end(link, Exit::ModelError);
        skip_line(link);
        say(link);
    }
}

/// The whole run of the `firmware` binary on a QEMU board with a register driver:
/// [`start`], the board's UART, then [`serve_model`] with its counter and no pin.
/// Non-generic, so that the model runner is compiled in this crate as it always was
/// (the instruction counts of the QEMU boards depend on its code generation).
#[cfg(s2s_registers)]
pub fn serve_registers(arena: &'static mut [u32]) -> ! {
    use crate::boards::board;
    start();
    let mut uart = board::Uart::new();
    serve_model::<_, board::Counter, _>(&mut uart, NoPin, arena)
}

/// Reads up to the end of a line (or of input).
fn skip_line<L: Read>(link: &mut L) {
    let mut byte = [0u8; 1];
    while let Ok(1) = link.read(&mut byte) {
        if byte[0] == b'\n' {
            return;
        }
    }
}
