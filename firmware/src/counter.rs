//! The tick counter the model runner times each encoder pass, decoder step and line
//! with: [`Counter`], and the counters of the real parts: with the `dwt` feature
//! `Dwt` (the cycle counter of the Cortex-M3/M4/M7/M33) and with the `systick` feature
//! `SysTick` (every Cortex-M, the M0/M0+ included). The QEMU boards' timers are in their drivers
//! (`boards/`).
//!
//! A counter counts at the board's `clock_hz` (its entry in the board table); under
//! QEMU the counts convert to exact instruction counts (`measure::ticks_to_insns`).

/// A free-running tick counter at the board's clock.
pub trait Counter {
    /// Starts the hardware if it is not running yet (one timer is shared by all counters
    /// and never stopped) and starts counting from now.
    fn new() -> Self;
    /// Restarts counting from now.
    fn start(&mut self);
    /// Ticks since the last `start` (wraps after 2^32 ticks).
    fn read(&self) -> u32;
}

#[cfg(feature = "dwt")]
/// The DWT cycle counter (`CYCCNT`) of the Cortex-M3/M4/M7/M33: 32 bits at the core
/// clock (it wraps after 2^32 cycles, 43 s at 100 MHz; a line's counts are differences,
/// so one wrap within a line is harmless).
pub struct Dwt {
    start: u32,
}

#[cfg(feature = "dwt")]
impl Counter for Dwt {
    fn new() -> Self {
        // SAFETY: only the trace-enable bit of DCB.DEMCR and the cycle counter's enable
        // bit of DWT.CTRL are set (read-modify-write, once at the start, before anything
        // else uses them); no other code owns these peripherals in this firmware.
        let mut p = unsafe { cortex_m::Peripherals::steal() };
        if !cortex_m::peripheral::DWT::cycle_counter_enabled() {
            p.DCB.enable_trace();
            p.DWT.enable_cycle_counter();
        }
        Dwt {
            start: cortex_m::peripheral::DWT::cycle_count(),
        }
    }

    fn start(&mut self) {
        self.start = cortex_m::peripheral::DWT::cycle_count();
    }

    fn read(&self) -> u32 {
        cortex_m::peripheral::DWT::cycle_count().wrapping_sub(self.start)
    }
}

#[cfg(feature = "systick")]
pub use systick::SysTick;

#[cfg(feature = "systick")]
mod systick {
    use core::sync::atomic::{AtomicU32, Ordering};

    use cortex_m::peripheral::{syst::SystClkSource, SCB, SYST};
    use cortex_m_rt::exception;

    use super::Counter;

    const BITS: u32 = 24;
    const MAX: u32 = (1 << BITS) - 1;

    /// SysTick wraps since the counter was started.
    static WRAPS: AtomicU32 = AtomicU32::new(0);

    #[exception]
    fn SysTick() {
        // Load and store: the M0 has no atomic read-modify-write; nothing else writes it.
        WRAPS.store(
            WRAPS.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }

    /// SysTick (a 24-bit down-counter on the core clock) with its wraps counted in its
    /// exception, read as one 32-bit count: the counter of the Cortex-M0/M0+, which have
    /// no cycle counter. Needs interrupts enabled (they are unless code masks them).
    /// The firmware defines the `SysTick` exception handler with this feature.
    pub struct SysTick {
        start: u32,
    }

    fn now() -> u32 {
        loop {
            let wraps = WRAPS.load(Ordering::Relaxed);
            let value = SYST::get_current();
            let pending = SCB::is_pendst_pending();
            if WRAPS.load(Ordering::Relaxed) != wraps {
                continue; // the exception ran in between: read again
            }
            // A wrap whose exception has not run yet is pending; it belongs to `value`
            // only if `value` was read after it, i.e. is near the top of the range.
            let wraps = if pending && value > MAX / 2 {
                wraps.wrapping_add(1)
            } else {
                wraps
            };
            return (wraps << BITS).wrapping_add(MAX - value);
        }
    }

    impl Counter for SysTick {
        fn new() -> Self {
            // SAFETY: SysTick is this counter's alone in the firmware (no HAL delay or
            // timer on it); it is set up once, here, and never stopped.
            let mut p = unsafe { cortex_m::Peripherals::steal() };
            if !p.SYST.is_counter_enabled() {
                p.SYST.set_clock_source(SystClkSource::Core);
                p.SYST.set_reload(MAX);
                p.SYST.clear_current();
                p.SYST.enable_interrupt();
                p.SYST.enable_counter();
            }
            SysTick { start: now() }
        }

        fn start(&mut self) {
            self.start = now();
        }

        fn read(&self) -> u32 {
            now().wrapping_sub(self.start)
        }
    }
}
