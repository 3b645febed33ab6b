//! BBC micro:bit v1: nRF51822, Cortex-M0 at 16 MHz (QEMU `-machine microbit`).
//!
//! The UART is the nRF51 UART0 at 0x4000_2000 (QEMU's first `-serial`); the counter is
//! TIMER0 at 0x4000_8000 in 32-bit timer mode at 16 MHz, read with its CAPTURE task.
//! Memory map: the board table (`s2s-device`).

use core::sync::atomic::{AtomicBool, Ordering};

use super::{Polled, Reg, Serial};


/// An address with nothing mapped: a load from it raises a HardFault. Used by the
/// `hardfault-test` firmware.
pub const INVALID_ADDR: usize = 0x6000_0000;

const UART0: usize = 0x4000_2000;
const UART_STARTRX: usize = 0x000;
const UART_STARTTX: usize = 0x008;
const UART_RXDRDY: usize = 0x108;
const UART_TXDRDY: usize = 0x11C;
const UART_ENABLE: usize = 0x500;
const UART_PSELTXD: usize = 0x50C;
const UART_PSELRXD: usize = 0x514;
const UART_RXD: usize = 0x518;
const UART_TXD: usize = 0x51C;
const UART_BAUDRATE: usize = 0x524;
const BAUD_115200: u32 = 0x01D7_E000;
const PIN_TX: u32 = 24; // micro:bit v1 USB-serial pins
const PIN_RX: u32 = 25;

const TIMER0: usize = 0x4000_8000;
const TIMER_START: usize = 0x000;
const TIMER_STOP: usize = 0x004;
const TIMER_CLEAR: usize = 0x00C;
const TIMER_CAPTURE0: usize = 0x040;
const TIMER_MODE: usize = 0x504;
const TIMER_BITMODE: usize = 0x508;
const TIMER_PRESCALER: usize = 0x510;
const TIMER_CC0: usize = 0x540;

fn reg(addr: usize) -> Reg {
    // SAFETY: only called with the register addresses defined in this module (nRF51
    // reference manual), which are mapped for the whole run.
    unsafe { Reg::new(addr) }
}

/// The UART0 registers, 8N1 at 115200 baud on the USB-serial pins.
pub struct Uart0(());

/// The console UART.
pub type Uart = Polled<Uart0>;

impl Serial for Uart0 {
    fn open() -> Self {
        reg(UART0 + UART_PSELTXD).write(PIN_TX);
        reg(UART0 + UART_PSELRXD).write(PIN_RX);
        reg(UART0 + UART_BAUDRATE).write(BAUD_115200);
        reg(UART0 + UART_ENABLE).write(4);
        reg(UART0 + UART_STARTTX).write(1);
        reg(UART0 + UART_STARTRX).write(1);
        Uart0(())
    }

    fn put(&mut self, byte: u8) {
        reg(UART0 + UART_TXDRDY).write(0);
        reg(UART0 + UART_TXD).write(byte as u32);
        while reg(UART0 + UART_TXDRDY).read() == 0 {}
    }

    fn get(&mut self) -> Option<u8> {
        if reg(UART0 + UART_RXDRDY).read() == 0 {
            return None;
        }
        // Clear the event before reading RXD, as the reference manual asks.
        reg(UART0 + UART_RXDRDY).write(0);
        Some(reg(UART0 + UART_RXD).read() as u8)
    }

    fn flush(&mut self) {
        // `put` returns only after each byte has gone out.
    }
}

static TIMER_RUNNING: AtomicBool = AtomicBool::new(false);

/// Deterministic tick counter: TIMER0, 32-bit up-counter at 16 MHz (prescaler 0).
pub struct Counter {
    start: u32,
}

impl Counter {
    /// Starts TIMER0 if it is not running yet (it is shared by all `Counter`s and never
    /// stopped) and starts counting from now.
    pub fn new() -> Self {
        if !TIMER_RUNNING.load(Ordering::Relaxed) {
            reg(TIMER0 + TIMER_STOP).write(1);
            reg(TIMER0 + TIMER_MODE).write(0); // timer
            reg(TIMER0 + TIMER_BITMODE).write(3); // 32 bit
            reg(TIMER0 + TIMER_PRESCALER).write(0); // 16 MHz
            reg(TIMER0 + TIMER_CLEAR).write(1);
            reg(TIMER0 + TIMER_START).write(1);
            TIMER_RUNNING.store(true, Ordering::Relaxed);
        }
        Counter { start: Self::now() }
    }

    fn now() -> u32 {
        reg(TIMER0 + TIMER_CAPTURE0).write(1);
        reg(TIMER0 + TIMER_CC0).read()
    }
}

counter_common!([] Counter);
