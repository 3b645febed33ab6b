//! TI Stellaris LM3S6965 evaluation board: Cortex-M3 (QEMU `-machine lm3s6965evb`).
//!
//! The system clock is switched to 50 MHz (PLL, SYSDIV 4) on first use of the UART or the
//! counter; QEMU derives its clock from RCC.SYSDIV alone (200 MHz / (SYSDIV + 1)), so it
//! follows. UART0 is the PL011-style UART at 0x4000_C000 (QEMU's first `-serial`). QEMU
//! does not model reading the general-purpose timers' counters (GPTM TAR/TBR read as 0),
//! so the counter is SysTick on the processor clock, 24 bits, extended to 32 bits by
//! counting wraps in the SysTick exception. Memory map: the board table (`s2s-device`).

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m_rt::exception;

use super::{Polled, Reg, Serial};
use crate::BOARD;

// The system clock after `clock_init` is the board's clock (QEMU's 12.5 MHz reset clock
// gave 1.6 ticks per instruction instead of 6.4).
const _: () = assert!(BOARD.clock_hz == 50_000_000);


/// An address with nothing mapped. On the real chip a load from it raises a BusFault
/// (escalated to HardFault); QEMU 7.2's lm3s6965evb reads unmapped addresses as 0 without
/// a fault, so `hardfault-test` falls back to `udf` there. Used by `hardfault-test`.
pub const INVALID_ADDR: usize = 0x6000_0000;

const SYSCTL_RIS: usize = 0x400F_E050;
const SYSCTL_RCC: usize = 0x400F_E060;
const SYSCTL_RCGC1: usize = 0x400F_E104;
const SYSCTL_RCGC2: usize = 0x400F_E108;
const GPIOA: usize = 0x4000_4000;
const GPIO_AFSEL: usize = 0x420;
const GPIO_DEN: usize = 0x51C;
const UART0: usize = 0x4000_C000;
const UART_DR: usize = 0x000;
const UART_FR: usize = 0x018;
const UART_IBRD: usize = 0x024;
const UART_FBRD: usize = 0x028;
const UART_LCRH: usize = 0x02C;
const UART_CTL: usize = 0x030;
const FR_RXFE: u32 = 1 << 4;
const FR_TXFF: u32 = 1 << 5;
const FR_BUSY: u32 = 1 << 3;

fn reg(addr: usize) -> Reg {
    // SAFETY: only called with the register addresses defined in this module (LM3S6965
    // data sheet and ARMv7-M architecture manual), which are mapped for the whole run.
    unsafe { Reg::new(addr) }
}

const RCC_SYSDIV_MASK: u32 = 0xF << 23;
const RCC_SYSDIV_4: u32 = 3 << 23; // 200 MHz PLL / 4 = 50 MHz
const RCC_USESYSDIV: u32 = 1 << 22;
const RCC_PWRDN: u32 = 1 << 13;
const RCC_BYPASS: u32 = 1 << 11;
const RCC_XTAL_MASK: u32 = 0xF << 6;
const RCC_XTAL_8MHZ: u32 = 0xE << 6; // the EVB's crystal
const RCC_OSCSRC_MASK: u32 = 0x3 << 4; // 0 = main oscillator
const RIS_PLLLRIS: u32 = 1 << 6;

/// Runs the system clock at 50 MHz from the PLL (the data sheet's sequence), once.
fn clock_init() {
    let rcc = reg(SYSCTL_RCC).read();
    let target = (rcc
        & !(RCC_SYSDIV_MASK | RCC_XTAL_MASK | RCC_OSCSRC_MASK | RCC_PWRDN | RCC_BYPASS))
        | RCC_SYSDIV_4
        | RCC_USESYSDIV
        | RCC_XTAL_8MHZ;
    if rcc == target {
        return;
    }
    let bypassed = (rcc | RCC_BYPASS) & !RCC_USESYSDIV;
    reg(SYSCTL_RCC).write(bypassed);
    reg(SYSCTL_RCC).write(target | RCC_BYPASS);
    while reg(SYSCTL_RIS).read() & RIS_PLLLRIS == 0 {}
    reg(SYSCTL_RCC).write(target);
}

/// The UART0 registers (pins PA0/PA1), 8N1 at 115200 baud.
pub struct Uart0(());

/// The console UART.
pub type Uart = Polled<Uart0>;

impl Serial for Uart0 {
    /// Sets up the system clock if needed, then clocks and enables UART0.
    fn open() -> Self {
        clock_init();
        reg(SYSCTL_RCGC1).write(reg(SYSCTL_RCGC1).read() | 1); // UART0 clock
        reg(SYSCTL_RCGC2).write(reg(SYSCTL_RCGC2).read() | 1); // GPIOA clock
        reg(GPIOA + GPIO_AFSEL).write(reg(GPIOA + GPIO_AFSEL).read() | 0b11);
        reg(GPIOA + GPIO_DEN).write(reg(GPIOA + GPIO_DEN).read() | 0b11);
        reg(UART0 + UART_CTL).write(0);
        // 50 MHz / (16 * 115200) = 27.127: IBRD 27, FBRD round(0.127 * 64) = 8.
        reg(UART0 + UART_IBRD).write(27);
        reg(UART0 + UART_FBRD).write(8);
        // 8 bits, FIFOs left off: switching them on flushes what was received (in QEMU
        // too, where input can arrive before this runs); the 1-byte holding register is
        // enough for polled line input (QEMU holds further input back, no overrun).
        reg(UART0 + UART_LCRH).write(0x60);
        reg(UART0 + UART_CTL).write(0x301); // UARTEN | TXE | RXE
        Uart0(())
    }

    fn put(&mut self, byte: u8) {
        while reg(UART0 + UART_FR).read() & FR_TXFF != 0 {}
        reg(UART0 + UART_DR).write(byte as u32);
    }

    fn get(&mut self) -> Option<u8> {
        (reg(UART0 + UART_FR).read() & FR_RXFE == 0).then(|| reg(UART0 + UART_DR).read() as u8)
    }

    fn flush(&mut self) {
        while reg(UART0 + UART_FR).read() & FR_BUSY != 0 {}
    }
}


const SYST_CSR: usize = 0xE000_E010;
const SYST_RVR: usize = 0xE000_E014;
const SYST_CVR: usize = 0xE000_E018;
const SCB_ICSR: usize = 0xE000_ED04;
const CSR_ENABLE_TICKINT_CLKSOURCE: u32 = 0b111;
const ICSR_PENDSTSET: u32 = 1 << 26;
const SYST_BITS: u32 = 24;
const SYST_MAX: u32 = (1 << SYST_BITS) - 1;

/// SysTick wraps since the counter was started.
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// Deterministic tick counter: SysTick (24-bit down-counter on the processor clock) with
/// wraps counted in its exception, read as one 32-bit count. Needs interrupts enabled
/// (they are, unless code masks them with PRIMASK).
pub struct Counter {
    start: u32,
}

impl Counter {
    /// Sets up the system clock and starts SysTick if not done yet (SysTick is shared by
    /// all `Counter`s and never stopped), and starts counting from now.
    pub fn new() -> Self {
        clock_init();
        if reg(SYST_CSR).read() & 1 == 0 {
            reg(SYST_RVR).write(SYST_MAX);
            reg(SYST_CVR).write(0);
            reg(SYST_CSR).write(CSR_ENABLE_TICKINT_CLKSOURCE);
        }
        Counter { start: Self::now() }
    }

    fn now() -> u32 {
        loop {
            let wraps = WRAPS.load(Ordering::Relaxed);
            let value = reg(SYST_CVR).read();
            let pending = reg(SCB_ICSR).read() & ICSR_PENDSTSET != 0;
            if WRAPS.load(Ordering::Relaxed) != wraps {
                continue; // the exception ran in between: read again
            }
            // A wrap whose exception has not run yet (interrupts masked, or just
            // happening) is pending; it belongs to `value` only if `value` was read
            // after it, i.e. is near the top of the range.
            let wraps = if pending && value > SYST_MAX / 2 {
                wraps + 1
            } else {
                wraps
            };
            return (wraps << SYST_BITS).wrapping_add(SYST_MAX - value);
        }
    }
}

counter_common!([] Counter);
