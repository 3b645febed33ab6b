//! The s2s model runner on the Raspberry Pi Pico through `rp2040-hal`: the second-stage
//! bootloader, the clocks (125 MHz from the 12 MHz crystal), USB CDC serial as the link
//! (a USB cable is all it takes), then the firmware library's run (`READY`, the model in
//! the board's model region, one answer per input line; `firmware::run`). The model is
//! linked in with `S2S_MODEL` (build.rs). The log goes out over RTT (the firmware
//! library's logger), a panic halts (`panic-probe`; a set-up failure:
//! `firmware::run::setup_failed`).
#![no_std]
#![no_main]

mod link;

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
#[cfg(not(feature = "no-panic"))]
use panic_probe as _;

use firmware::capacity::ARENA_WORDS;
use firmware::BOARD;
use rp2040_hal::clocks::{init_clocks_and_plls, Clock};
use rp2040_hal::gpio::Pins;
use rp2040_hal::usb::UsbBus;
use rp2040_hal::{pac, Sio, Watchdog};
use usb_device::bus::UsbBusAllocator;
use usb_device::device::{StringDescriptors, UsbDeviceBuilder, UsbVidPid};
use usbd_serial::{SerialPort, USB_CLASS_CDC};

/// The second-stage bootloader for the Pico's W25Q080 flash, first in flash.
// SAFETY: `.boot2` is the BOOT2 region of memory.x, made for these 256 bytes.
#[allow(unsafe_code)]
#[link_section = ".boot2"]
#[used]
static BOOT2: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

/// A value aligned for the model parser.
#[allow(dead_code)] // without a model linked in
#[repr(C, align(4))]
struct Aligned<T: ?Sized>(T);

include!(concat!(env!("OUT_DIR"), "/model.rs"));

/// The Pico's crystal.
const XTAL_HZ: u32 = 12_000_000;

#[entry]
fn main() -> ! {
    // The model's workspace: a static buffer (`.bss`), no heap; the USB bus lives as long
    // as the run.
    static mut ARENA: [u32; ARENA_WORDS] = [0; ARENA_WORDS];
    static mut USB: Option<UsbBusAllocator<UsbBus>> = None;

    firmware::run::start();
    let Some(mut p) = pac::Peripherals::take() else {
        firmware::run::setup_failed("the peripherals were taken before main");
    };
    let mut watchdog = Watchdog::new(p.WATCHDOG);
    let Ok(clocks) = init_clocks_and_plls(
        XTAL_HZ,
        p.XOSC,
        p.CLOCKS,
        p.PLL_SYS,
        p.PLL_USB,
        &mut p.RESETS,
        &mut watchdog,
    ) else {
        firmware::run::setup_failed("the crystal or a PLL did not start");
    };
    if clocks.system_clock.freq().to_Hz() != BOARD.clock_hz {
        firmware::run::setup_failed("the system clock is not the board table's");
    }
    let sio = Sio::new(p.SIO);
    let pins = Pins::new(p.IO_BANK0, p.PADS_BANK0, sio.gpio_bank0, &mut p.RESETS);
    // GP25, the on-board LED: lit while a line is decoded.
    let busy = pins.gpio25.into_push_pull_output();
    let usb = USB.insert(UsbBusAllocator::new(UsbBus::new(
        p.USBCTRL_REGS,
        p.USBCTRL_DPRAM,
        clocks.usb_clock,
        true,
        &mut p.RESETS,
    )));
    let serial = SerialPort::new(usb);
    let Ok(builder) = UsbDeviceBuilder::new(usb, UsbVidPid(0x16c0, 0x27dd)).strings(&[
        StringDescriptors::default()
            .manufacturer("s2s")
            .product("s2s model runner")
            .serial_number("rp-pico"),
    ]) else {
        firmware::run::setup_failed("the USB device refused its strings");
    };
    let device = builder.device_class(USB_CLASS_CDC).build();
    let mut link = link::Link { device, serial };
    firmware::run::serve_model::<_, firmware::counter::SysTick, _>(&mut link, busy, ARENA)
}
