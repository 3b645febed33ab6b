//! The s2s model runner on the nRF52840 DK through `nrf52840-hal`: the clocks, the pins
//! and UARTE0 (to the on-board J-Link's virtual COM port), then the firmware library's
//! run (`READY`, the model in the board's model region, one answer per input line;
//! `firmware::run`). The log goes out over RTT (the firmware library's logger), a panic halts
//! (`panic-probe`; a set-up failure: `firmware::run::setup_failed`).
#![no_std]
#![no_main]

mod link;

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
#[cfg(not(feature = "no-panic"))]
use panic_probe as _;

use firmware::capacity::ARENA_WORDS;
use nrf52840_hal::clocks::Clocks;
use nrf52840_hal::gpio::{p0, p1, Level};
use nrf52840_hal::pac;
use nrf52840_hal::uarte::{Baudrate, Parity, Pins, Uarte};

#[entry]
fn main() -> ! {
    // The model's workspace: a static buffer (`.bss`), no heap; and the UARTE's DMA
    // buffers (EasyDMA reads and writes RAM only).
    static mut ARENA: [u32; ARENA_WORDS] = [0; ARENA_WORDS];
    static mut TX: [u8; 64] = [0; 64];
    static mut RX: [u8; 1] = [0; 1];

    firmware::run::start();
    let Some(p) = pac::Peripherals::take() else {
        firmware::run::setup_failed("the peripherals were taken before main");
    };
    // The crystal: the UARTE's baud rate is accurate only from the HFXO.
    let _clocks = Clocks::new(p.CLOCK).enable_ext_hfosc();
    let port0 = p0::Parts::new(p.P0);
    let port1 = p1::Parts::new(p.P1);
    // P1.01 (on the DK's header): high while a line is decoded, for a logic analyser.
    let busy = port1.p1_01.into_push_pull_output(Level::Low);
    // UARTE0 on the J-Link's virtual COM port pins, with RTS/CTS: the host's bytes wait
    // while the runner decodes instead of overrunning the receiver.
    let pins = Pins {
        txd: port0.p0_06.into_push_pull_output(Level::High).degrade(),
        rxd: port0.p0_08.into_floating_input().degrade(),
        cts: Some(port0.p0_07.into_floating_input().degrade()),
        rts: Some(port0.p0_05.into_push_pull_output(Level::High).degrade()),
    };
    let uarte = Uarte::new(p.UARTE0, pins, Parity::EXCLUDED, Baudrate::BAUD115200);
    let Ok((tx, rx)) = uarte.split(TX, RX) else {
        firmware::run::setup_failed("the UARTE refused its DMA buffers");
    };
    let mut link = link::Link { tx, rx };
    firmware::run::serve_model::<_, firmware::counter::Dwt, _>(&mut link, busy, ARENA)
}
