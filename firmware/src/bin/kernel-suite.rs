//! The shared kernel test suite (`s2s_kernels::suite`) on the board (built with the
//! `kernel-suite` feature: `cargo run --release --bin kernel-suite --features
//! kernel-suite`, plus the board's target and feature): every primitive of
//! the integer precision with this target's native kernels (`W8A16`), against f64 and
//! bit for bit against the portable kernels (`W8A16Portable`), and on the FPU boards the
//! same for f32 (`F32` against `F32Portable`), and every weight layout of the integer
//! precision read natively as the row layout read portably (`suite::layouts`). Prints
//! `READY <board>`, `SUITE <test> ok` per test, then `SUITE PASS`, and exits with status
//! 0; the first failure panics (`PANIC ...`, exit status 101).
//!
//! The suite builds its test layers on a heap (`firmware::heap`); the boards with
//! little RAM run the same generators with the layers' sizes capped ([`SCALE`]).
#![no_std]
#![no_main]

extern crate alloc;

use core::mem::MaybeUninit;

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use embedded_io::Write as _;
use firmware::boards::board;
use firmware::{app, fault, heap};
use s2s_device::exit::Exit;
use s2s_kernels::suite::{self, IntFixture, Scale, Tolerances, W8A16_TOL};
use s2s_kernels::{Precision, W8A16Portable, W8A16};

/// Bytes of RAM of the board (its table entry).
const RAM: usize = firmware::BOARD.memory.ram.length as usize;

/// Bytes of the heap: what the board's RAM holds next to the stack (the kernels'
/// buffers and the suite's frames).
const HEAP_BYTES: usize = if RAM >= 1024 * 1024 {
    2 * 1024 * 1024
} else if RAM >= 64 * 1024 {
    44 * 1024
} else {
    11 * 1024
};

/// The cases' sizes: the host's on the boards with megabytes of RAM; on the 64 KiB and
/// 16 KiB boards the test layers capped (long parts still beyond the kernels'
/// buffers: 560 columns on the former, beyond `RUN` too; two parts of 140 on the latter).
const SCALE: Scale = if RAM >= 1024 * 1024 {
    Scale::FULL
} else if RAM >= 64 * 1024 {
    Scale {
        rows: 8,
        long_rows: 1,
        long_cols: 560,
        embed_rows: 20,
    }
} else {
    Scale {
        rows: 2,
        long_rows: 1,
        long_cols: 140,
        embed_rows: 4,
    }
};

/// One suite test: its name and how to run it.
type Test = (&'static str, fn(&Tolerances, bool, &Scale));

/// Every test of the suite for fixture `F` against `R`.
fn tests<F: suite::Fixture, R: Precision>() -> [Test; 12] {
    [
        ("linear", suite::linear::<F, R>),
        ("embed", suite::embed::<F, R>),
        ("sigmoid", suite::sigmoid::<F, R>),
        ("tanh", suite::tanh::<F, R>),
        ("add", suite::add::<F, R>),
        ("gate", suite::gate::<F, R>),
        ("blend", suite::blend::<F, R>),
        ("widen_narrow", suite::widen_narrow::<F, R>),
        ("dot", suite::dot::<F, R>),
        ("softmax", suite::softmax::<F, R>),
        ("weighted_sum", suite::weighted_sum::<F, R>),
        ("additive_scores", suite::additive_scores::<F, R>),
    ]
}

/// Runs `tests` with tolerances `tol` bit-exact against their reference, one UART line
/// per test.
fn run(uart: &mut board::Uart, precision: &str, tol: &Tolerances, tests: &[Test]) {
    for (name, test) in tests {
        test(tol, true, &SCALE);
        if writeln!(uart, "SUITE {precision} {name} ok").is_err() {
            panic!("UART write failed");
        }
        defmt::info!("SUITE {=str} {=str} ok", precision, *name);
    }
}

#[entry]
fn main() -> ! {
    // `#[entry]` makes this `&'static mut`, held only here.
    static mut MEMORY: [MaybeUninit<u8>; HEAP_BYTES] = [MaybeUninit::uninit(); HEAP_BYTES];
    heap::init(MEMORY);
    let mut uart = app::start();
    run(
        &mut uart,
        "w8a16",
        &W8A16_TOL,
        &tests::<IntFixture<W8A16>, W8A16Portable>(),
    );
    run(
        &mut uart,
        "w8a16",
        &W8A16_TOL,
        &[("layouts", suite::layouts::<W8A16, W8A16Portable>)],
    );
    #[cfg(precision = "f32")]
    {
        use s2s_kernels::suite::{FloatFixture, F32_TOL};
        use s2s_kernels::{F32Portable, F32};
        run(
            &mut uart,
            "f32",
            &F32_TOL,
            &tests::<FloatFixture<F32>, F32Portable>(),
        );
    }
    if writeln!(uart, "SUITE PASS").is_err() {
        panic!("UART write failed");
    }
    fault::exit(Exit::Success)
}
