//! Kernel micro-benchmarks: exact instruction counts (QEMU `-icount`, the board's
//! counter) of the matrix-vector products, the nonlinearities, the softmax and the
//! attention's weighted sum, each with the native kernels (`Native`: the instruction-set
//! ones of this target) and the portable ones side by side. Prints `READY <board>`, one
//! line per measurement, `DONE`, and exits with status 0:
//!
//! ```text
//! BENCH <kernel> <kernels> <shape> insns=<n> per=<units> <unit>
//! ```
//!
//! `<kernels>` is `native` or `portable`; the count is net of the counter reads (an
//! empty measurement is subtracted). Every native result is compared with the portable
//! one: a difference panics (exit status 101). Where the target's kernels have a weight
//! layout of their own ([`Layout::NATIVE`], e.g. `v6m` on the Cortex-M0), the int8
//! products run in it too, as `linear_w8a16_<layout>` (the same bytes read in that
//! layout: the counts do not depend on the values).
//!
//! The weights of the matrix products are read from the model region, loaded by QEMU
//! (`-device loader`): int8 at its start (768 x 256 = 196,608 bytes; on the lm3s6965evb
//! and microbit boards, whose region is smaller, the first 768 x 256 product keeps as
//! many rows as fit, a multiple of 32, and the line names the shape run) and, on the
//! FPU boards, f32 at
//! [`F32_OFFSET`]. Whatever the bytes are, the counts are the same (no kernel branches on
//! data); `tests/tests/kernels_on_device.rs` loads pseudo-random weights.
#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m as _; // critical-section implementation
use cortex_m_rt::entry;
use embedded_io::Write as _;
use firmware::boards::board;
use firmware::{app, fault, measure, Counter as _};
use s2s_device::exit::Exit;
use s2s_kernels::{Layout, Linear, Precision, Requant, W8A16Portable, W8A16};

/// Where the f32 weights start in the model region (FPU boards).
#[cfg(precision = "f32")]
const F32_OFFSET: usize = 256 * 1024;
/// The layer shapes of the real models: g2p-en's GRU matrices and netra's.
const SHAPES: [(usize, usize); 2] = [(768, 256), (192, 64)];
/// Inputs of the nonlinearity benchmarks.
const ELEMENTS: usize = 256;
/// Positions of the softmax and attention benchmarks (netra's source length).
const POSITIONS: usize = 25;
/// Values per position of the weighted-sum benchmark (netra's memory).
const DIM: usize = 64;

/// Instructions of `f`, net of the counter reads.
fn count<R>(f: impl FnOnce() -> R) -> u64 {
    let mut c = board::Counter::new();
    c.start();
    let r = f();
    let t = c.read();
    black_box(r);
    measure::ticks_to_insns(u64::from(t))
}

struct Bench<'u> {
    uart: &'u mut board::Uart,
    base: u64,
}

impl Bench<'_> {
    fn line(
        &mut self,
        kernel: &str,
        kernels: &str,
        shape: impl core::fmt::Display,
        insns: u64,
        per: usize,
        unit: &str,
    ) {
        let net = insns.saturating_sub(self.base);
        defmt::info!(
            "BENCH {=str} {=str} {} insns={=u64}",
            kernel,
            kernels,
            defmt::Display2Format(&shape),
            net
        );
        if writeln!(
            self.uart,
            "BENCH {kernel} {kernels} {shape} insns={net} per={per} {unit}"
        )
        .is_err()
        {
            panic!("UART write failed");
        }
    }
}

/// A deterministic input vector in [-1, 1) as Q0.15 (what the GRU states are).
fn input(x: &mut [i16]) {
    let mut s = 0x1234_5678u32;
    for v in x {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        *v = (s >> 16) as i16;
    }
}

/// Room for the largest layer's requantizers and outputs (static: the micro:bit's
/// stack could not hold them).
struct Scratch {
    q: &'static mut [Requant; 768],
    out: &'static mut [i32; 768],
}

/// FNV-1a of the outputs, to compare the native and portable results in one buffer.
fn digest(x: &[i32]) -> u32 {
    x.iter().fold(0x811C_9DC5, |h, &v| {
        (h ^ v as u32).wrapping_mul(0x0100_0193)
    })
}

// Not inlined: each benchmark's buffers live only during its own frame (the micro:bit
// has 16 KiB of RAM).
#[inline(never)]
fn linear_w8a16(
    b: &mut Bench<'_>,
    s: &mut Scratch,
    region: &[u8],
    (rows, cols): (usize, usize),
    layout: Layout,
) {
    let rows = rows.min(region.len() / cols / 32 * 32);
    let Some(w) = region.get(..rows * cols) else {
        return;
    };
    let w: &[i8] = bytemuck_i8(w);
    s.q.fill(Requant::from_real(1.0 / 4096.0));
    s.q[0] = Requant::from_real(0.75); // one short multiplier among the long ones
    let q = &s.q[..rows];
    let layer = Linear::<W8A16>::new(rows, cols, 1, w, q, None)
        .and_then(|l| l.with_layout(layout))
        .expect("shape");
    let portable = Linear::<W8A16Portable>::new(rows, cols, 1, w, q, None)
        .and_then(|l| l.with_layout(layout))
        .expect("shape");
    let kernel = match layout {
        Layout::Row => "linear_w8a16",
        Layout::V6m => "linear_w8a16_v6m",
    };
    let mut x = [0i16; 256];
    input(&mut x);
    let x = &x[..cols];
    let out = &mut s.out[..rows];
    let shape = Shape(rows, cols);
    let n = count(|| layer.apply(black_box(&[x]), out));
    let native = digest(out);
    b.line(kernel, "native", &shape, n, rows * cols, "MACs");
    let n = count(|| portable.apply(black_box(&[x]), out));
    b.line(kernel, "portable", &shape, n, rows * cols, "MACs");
    assert!(
        native == digest(out),
        "{kernel} {rows}x{cols}: native differs"
    );
}

#[cfg(precision = "f32")]
#[inline(never)]
fn linear_f32(b: &mut Bench<'_>, s: &mut Scratch, region: &[u8], rows: usize, cols: usize) {
    use s2s_kernels::{F32Portable, F32};
    let Some(bytes) = region.get(F32_OFFSET..F32_OFFSET + 4 * rows * cols) else {
        return;
    };
    // SAFETY: the region is 4-byte aligned (memory.x) and so is F32_OFFSET; any bit
    // pattern is an f32.
    let w: &[f32] =
        unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), rows * cols) };
    let layer = Linear::<F32>::new(rows, cols, 1, w, &[], None).expect("shape");
    let portable = Linear::<F32Portable>::new(rows, cols, 1, w, &[], None).expect("shape");
    let mut xi = [0i16; 256];
    input(&mut xi);
    let mut x = [0f32; 256];
    for (o, &v) in x.iter_mut().zip(&xi) {
        *o = v as f32 / 32768.0;
    }
    let x = &x[..cols];
    // The f32 outputs go to the same static buffer, as bit patterns.
    let out: &mut [f32] = bytemuck_f32(&mut s.out[..rows]);
    let shape = Shape(rows, cols);
    let n = count(|| layer.apply(black_box(&[x]), out));
    let native = digest(bytemuck_i32(out));
    b.line("linear_f32", "native", &shape, n, rows * cols, "MACs");
    let n = count(|| portable.apply(black_box(&[x]), out));
    b.line("linear_f32", "portable", &shape, n, rows * cols, "MACs");
    assert!(
        native == digest(bytemuck_i32(out)),
        "linear_f32 {rows}x{cols}: native differs"
    );
}

/// The weights as int8 (same size, any bit pattern is an i8).
fn bytemuck_i8(b: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size and alignment, every bit pattern is valid.
    unsafe { core::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}

/// i32 storage seen as f32 (same size and alignment, any bit pattern valid).
#[cfg(precision = "f32")]
fn bytemuck_f32(x: &mut [i32]) -> &mut [f32] {
    // SAFETY: i32 and f32 have the same size and alignment; every bit pattern is valid.
    unsafe { core::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) }
}

/// f32 seen as i32 (same size and alignment, any bit pattern valid).
#[cfg(precision = "f32")]
fn bytemuck_i32(x: &[f32]) -> &[i32] {
    // SAFETY: f32 and i32 have the same size and alignment; every bit pattern is valid.
    unsafe { core::slice::from_raw_parts(x.as_ptr().cast::<i32>(), x.len()) }
}

/// `ROWSxCOLS`.
struct Shape(usize, usize);

impl core::fmt::Display for Shape {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}x{}", self.0, self.1)
    }
}

/// Wide inputs of the nonlinearities: `ELEMENTS` values evenly over [-10, 10).
fn wide_inputs() -> [i32; ELEMENTS] {
    let mut x = [0i32; ELEMENTS];
    for (i, v) in x.iter_mut().enumerate() {
        *v = (i as i32 - ELEMENTS as i32 / 2) * (20 << 15) / ELEMENTS as i32 + 77;
    }
    x
}

#[inline(never)]
fn nonlinear<P: Precision<Wide = i32, Act = i16>, Q: Precision<Wide = i32, Act = i16>>(
    b: &mut Bench<'_>,
) {
    let x = wide_inputs();
    let (mut y, mut yp) = ([0i16; ELEMENTS], [0i16; ELEMENTS]);
    for (name, f, g) in [
        (
            "tanh_q15",
            P::tanh as fn(i32) -> i16,
            Q::tanh as fn(i32) -> i16,
        ),
        ("sigmoid_q15", P::sigmoid, Q::sigmoid),
    ] {
        // A streaming loop unrolled by four: per element, the function, a load, a store
        // and a quarter of the loop control.
        let n = count(|| {
            for (o, v) in y.chunks_exact_mut(4).zip(black_box(&x).chunks_exact(4)) {
                o[0] = f(v[0]);
                o[1] = f(v[1]);
                o[2] = f(v[2]);
                o[3] = f(v[3]);
            }
        });
        b.line(name, "native", "256", n, ELEMENTS, "elements");
        let n = count(|| {
            for (o, v) in yp.chunks_exact_mut(4).zip(black_box(&x).chunks_exact(4)) {
                o[0] = g(v[0]);
                o[1] = g(v[1]);
                o[2] = g(v[2]);
                o[3] = g(v[3]);
            }
        });
        b.line(name, "portable", "256", n, ELEMENTS, "elements");
        assert!(y == yp, "{name}: native differs");
    }
    // Softmax over netra's 25 positions: scores spread over about [-6, 6].
    let mut s = [0i32; POSITIONS];
    for (i, v) in s.iter_mut().enumerate() {
        *v = ((i as i32 * 7919) % 400 - 200) * 983;
    }
    let (mut w, mut wp) = ([0i16; POSITIONS], [0i16; POSITIONS]);
    let n = count(|| P::softmax(black_box(&s), &mut w));
    b.line("softmax_q15", "native", "25", n, POSITIONS, "elements");
    let n = count(|| Q::softmax(black_box(&s), &mut wp));
    b.line("softmax_q15", "portable", "25", n, POSITIONS, "elements");
    assert!(w == wp, "softmax: native differs");
    // The context: 25 weights over 25 rows of 64.
    let mut rows = [0i16; POSITIONS * DIM];
    input(&mut rows);
    let (mut c, mut cp) = ([0i16; DIM], [0i16; DIM]);
    let n = count(|| P::weighted_sum(black_box(&w), &rows, &mut c));
    b.line(
        "weighted_sum",
        "native",
        "25x64",
        n,
        POSITIONS * DIM,
        "MACs",
    );
    let n = count(|| Q::weighted_sum(black_box(&w), &rows, &mut cp));
    b.line(
        "weighted_sum",
        "portable",
        "25x64",
        n,
        POSITIONS * DIM,
        "MACs",
    );
    assert!(c == cp, "weighted_sum: native differs");
}

#[entry]
fn main() -> ! {
    // `#[entry]` makes these `&'static mut` that only this call holds.
    static mut Q: [Requant; 768] = [Requant { mult: 0, shift: 0 }; 768];
    static mut OUT: [i32; 768] = [0; 768];
    let mut scratch = Scratch { q: Q, out: OUT };
    let mut uart = app::start();
    let region = measure::model_region();
    let base = count(|| ());
    let mut b = Bench {
        uart: &mut uart,
        base,
    };
    for (rows, cols) in SHAPES {
        linear_w8a16(&mut b, &mut scratch, region, (rows, cols), Layout::Row);
        if Layout::NATIVE != Layout::Row {
            linear_w8a16(&mut b, &mut scratch, region, (rows, cols), Layout::NATIVE);
        }
        #[cfg(precision = "f32")]
        linear_f32(&mut b, &mut scratch, region, rows, cols);
    }
    nonlinear::<W8A16, W8A16Portable>(&mut b);
    if writeln!(b.uart, "DONE").is_err() {
        panic!("UART write failed");
    }
    fault::exit(Exit::Success)
}
