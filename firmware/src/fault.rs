//! Panic and HardFault handlers, and exiting QEMU through semihosting.
//!
//! Both handlers print what they can (a defmt error and a `PANIC ...` / `HARDFAULT ...` line
//! on the UART) and then exit QEMU with a non-zero status, so a test sees a failure instead
//! of a hang. Exit statuses: `s2s_device::exit::Exit`.

use core::sync::atomic::{AtomicBool, Ordering};

use cortex_m_rt::{exception, ExceptionFrame};
#[cfg(s2s_registers)]
use embedded_io::Write as _;
use s2s_device::exit::Exit;
#[cfg(s2s_registers)]
use s2s_device::protocol::{self, Fault};

#[cfg(s2s_registers)]
use crate::app::FmtOut;
#[cfg(s2s_registers)]
use crate::boards::board;

/// Ends the QEMU run with `exit`'s code as the exit status of `qemu-system-arm`.
///
/// Uses semihosting SYS_EXIT_EXTENDED (QEMU passes the code through), falling back to
/// SYS_EXIT (status 0 or 1) on hosts without it. Without a debugger/semihosting host (a
/// real board running stand-alone) the `bkpt` faults instead: it still stops.
pub fn exit(exit: Exit) -> ! {
    semihosting::process::exit(exit.code())
}

/// Set on the first panic: a panic while panicking (e.g. inside the defmt logger) skips
/// defmt and goes straight to the UART and exit.
static PANICKING: AtomicBool = AtomicBool::new(false);

#[cfg(not(feature = "no-panic"))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    cortex_m::interrupt::disable();
    let (file, line) = info.location().map_or(("?", 0), |l| (l.file(), l.line()));
    let first = !PANICKING.load(Ordering::Relaxed);
    PANICKING.store(true, Ordering::Relaxed);
    // The UART first: should the logger panic (its state corrupted, e.g. by a stack
    // overflow), this message is already out. (A HAL board's link belongs to its `main`:
    // there the message goes to the log alone.)
    #[cfg(s2s_registers)]
    {
        let mut uart = board::Uart::new();
        let _ = protocol::write_panic(&mut FmtOut::new(&mut uart), info.message(), file, line);
        let _ = uart.flush();
    }
    if first {
        log!(
            error,
            "PANIC {} at {=str}:{=u32}",
            defmt::Display2Format(&info.message()),
            file,
            line
        );
    }
    exit(Exit::Panic)
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    let (pc, lr, xpsr) = (frame.pc(), frame.lr(), frame.xpsr());
    if !PANICKING.load(Ordering::Relaxed) {
        log!(
            error,
            "HARDFAULT pc={=u32:#010x} lr={=u32:#010x} xpsr={=u32:#010x}",
            pc,
            lr,
            xpsr
        );
    }
    #[cfg(s2s_registers)]
    {
        let mut uart = board::Uart::new();
        let _ = protocol::write_hardfault(&mut FmtOut::new(&mut uart), &Fault { pc, lr, xpsr });
        let _ = uart.flush();
    }
    exit(Exit::HardFault)
}

/// Loads from the board's [`board::INVALID_ADDR`], which faults (a bus error, escalated to
/// HardFault). Should the load not fault, executes a permanently undefined instruction.
/// For the `hardfault-test` firmware.
#[cfg(s2s_registers)]
#[cfg_attr(not(feature = "defmt"), allow(unused_variables))] // `value` is only logged
pub fn trigger_hardfault() -> ! {
    // SAFETY: nothing is mapped at INVALID_ADDR: the load is answered with a bus error and
    // raises a fault exception (which does not return); no Rust object lives there.
    let value = unsafe { core::ptr::read_volatile(board::INVALID_ADDR as *const u32) };
    log!(
        warn,
        "load from {=usize:#x} did not fault (read {=u32:#x}): udf",
        board::INVALID_ADDR,
        value
    );
    cortex_m::asm::udf()
}
