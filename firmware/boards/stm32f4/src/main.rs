//! The s2s model runner on an STM32F4 through `stm32f4xx-hal`: the clocks, the pins and
//! the serial link of the board, then the firmware library's run (`READY`, the model in
//! the board's model region, one answer per input line; `firmware::run`). The board is
//! the Nucleo-F411RE or QEMU's netduinoplus2 (Cargo.toml).
#![no_std]
#![no_main]

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
#[cfg(all(feature = "nucleo-f411re", not(feature = "no-panic")))]
use panic_probe as _;

use firmware::capacity::ARENA_WORDS;
use firmware::link::Nb;
use firmware::BOARD;
use stm32f4xx_hal::pac;
use stm32f4xx_hal::prelude::*;
use stm32f4xx_hal::rcc::Config;

/// The counter: the DWT cycle counter on the real part; SysTick under QEMU, which does
/// not model the DWT.
#[cfg(feature = "nucleo-f411re")]
type Counter = firmware::counter::Dwt;
#[cfg(feature = "netduinoplus2")]
type Counter = firmware::counter::SysTick;

/// The clocks: 100 MHz from the HSI through the PLL on the F411 (the board table's
/// clock); under QEMU, whose RCC is a stub that reads 0 (so a PLL never locks), the reset
/// clock, the 16 MHz HSI.
fn clocks() -> Config {
    if cfg!(feature = "nucleo-f411re") {
        Config::hsi().sysclk(BOARD.clock_hz.Hz())
    } else {
        Config::hsi()
    }
}

#[entry]
fn main() -> ! {
    // The model's workspace: a static buffer (`.bss`), no heap.
    static mut ARENA: [u32; ARENA_WORDS] = [0; ARENA_WORDS];

    firmware::run::start();
    let Some(dp) = pac::Peripherals::take() else {
        firmware::run::setup_failed("the peripherals were taken before main");
    };
    let mut rcc = dp.RCC.freeze(clocks());
    let gpioa = dp.GPIOA.split(&mut rcc);
    // LD2 (the Nucleo's green LED, PA5): lit while a line is decoded.
    let busy = gpioa.pa5.into_push_pull_output();
    // 8N1 at 115200 baud. The USART is enabled before `READY` is written: QEMU's drops
    // what arrives before, and the host sends only after `READY`.
    #[cfg(feature = "nucleo-f411re")]
    let serial = dp
        .USART2
        .serial((gpioa.pa2, gpioa.pa3), 115_200.bps(), &mut rcc);
    #[cfg(feature = "netduinoplus2")]
    let serial = dp
        .USART1
        .serial((gpioa.pa9, gpioa.pa10), 115_200.bps(), &mut rcc);
    let Ok(serial) = serial else {
        firmware::run::setup_failed("the USART refused 115200 baud at these clocks");
    };
    let mut link = Nb::<stm32f4xx_hal::serial::Serial<_, u8>>(serial);
    firmware::run::serve_model::<_, Counter, _>(&mut link, busy, ARENA)
}
