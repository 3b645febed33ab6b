//! Measurements: deterministic tick counts (see each board's `Counter`), converted to
//! instructions under QEMU's `-icount` ([`ticks_to_insns`]), peak stack use by stack
//! painting, static RAM and flash use from linker symbols, and the model region reserved
//! in `memory.x`.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::BOARD;

// Linker symbols: `cortex-m-rt`'s link.x and the board's memory.x. Only their addresses
// are used.
extern "C" {
    static __vector_table: u8;
    static __sidata: u8;
    static __sdata: u8;
    static __edata: u8;
    static __euninit: u8;
    static __sheap: u8;
    static _ram_start: u8;
    static _stack_start: u8;
    static __model_start: u8;
    static __model_end: u8;
}

macro_rules! sym {
    ($name:ident) => {
        (&raw const $name) as usize
    };
}

/// Word written over the free stack at boot; the deepest overwritten word gives the peak.
const PAINT: u32 = 0x5AC3_A53C;
/// Bytes left unpainted below the stack pointer of [`paint_stack`] itself.
const PAINT_MARGIN: usize = 64;

static PAINTED: AtomicBool = AtomicBool::new(false);

/// Fills the unused stack (from the end of static RAM up to just below the current stack
/// pointer) with a pattern. Call once, first thing in `main`; [`stack_peak_bytes`] then
/// reports the deepest stack use since.
#[inline(never)]
pub fn paint_stack() {
    let sp = cortex_m::register::msp::read() as usize;
    let mut p = sym!(__sheap);
    let end = (sp - PAINT_MARGIN) & !3;
    while p < end {
        // SAFETY: [__sheap, end) is RAM (it lies between the end of the statics and the
        // stack pointer, inside the RAM region of memory.x), 4-byte aligned, and no Rust
        // object lives there: there is no heap, and the stack (this frame included) is
        // above `sp`. An interrupt that pushes a frame below `sp` meanwhile has finished
        // with it by the time the loop overwrites it.
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
    PAINTED.store(true, Ordering::Relaxed);
}

/// Deepest stack use since [`paint_stack`], in bytes from the top of the stack (0 if
/// [`paint_stack`] was not called). If the stack ever reached the statics, this is the
/// whole stack area and the run's results are suspect.
pub fn stack_peak_bytes() -> usize {
    if !PAINTED.load(Ordering::Relaxed) {
        return 0;
    }
    let top = sym!(_stack_start);
    let mut p = sym!(__sheap);
    // Only words below the current stack pointer can still hold the pattern.
    let sp = cortex_m::register::msp::read() as usize;
    while p < sp {
        // SAFETY: `p` is 4-byte aligned and in [__sheap, sp): RAM that is either free
        // stack or belongs to no Rust object; a volatile read of it has no side effect.
        if unsafe { core::ptr::read_volatile(p as *const u32) } != PAINT {
            break;
        }
        p += 4;
    }
    top - p
}

/// Stack bytes next to the statics that [`stack_exhausted`] wants untouched. A frame
/// need not write every word it reserves, so a stack that ran past the statics may
/// leave the lowest painted words intact; a margin catches most such overflows.
pub const STACK_GUARD: usize = 512;

/// True when the stack has come within [`STACK_GUARD`] bytes of the statics since
/// [`paint_stack`]: it may have overflowed into them. Call it only after
/// [`paint_stack`]; it reads the painted words alone, not the statics (which an overflow
/// may have overwritten).
pub fn stack_exhausted() -> bool {
    let start = sym!(__sheap);
    let end = (start + STACK_GUARD).min(cortex_m::register::msp::read() as usize);
    (start..end).step_by(4).any(|p| {
        // SAFETY: `p` is 4-byte aligned (`__sheap` is) and in [__sheap, sp): RAM that is
        // free stack or belongs to no Rust object; a volatile read has no side effect.
        unsafe { core::ptr::read_volatile(p as *const u32) != PAINT }
    })
}

/// Memory use of the firmware image and the model region (a one-model build's: the
/// section of the model linked in), from linker symbols.
#[derive(Clone, Copy, Debug, defmt::Format)]
pub struct MemoryStats {
    /// `.data` + `.bss` + `.uninit` bytes in RAM.
    pub ram_static: usize,
    /// Stack area: from the end of the statics to the top of RAM.
    pub stack_size: usize,
    /// Flash used by the runtime: vector table, `.text`, `.rodata` and `.data`'s load image
    /// (in a one-model build, without the model linked in: its section `.s2s_model`).
    pub flash_runtime: usize,
    /// Start address of the model region.
    pub model_start: usize,
    /// Size of the model region in bytes.
    pub model_size: usize,
}

/// Reads the [`MemoryStats`] from the linker symbols.
pub fn memory_stats() -> MemoryStats {
    let data_len = sym!(__edata) - sym!(__sdata);
    let model_size = sym!(__model_end) - sym!(__model_start);
    // The model region lies outside the runtime's flash, except in a one-model build.
    let linked_in = if cfg!(s2s_embedded) { model_size } else { 0 };
    MemoryStats {
        ram_static: sym!(__euninit) - sym!(_ram_start),
        stack_size: sym!(_stack_start) - sym!(__sheap),
        flash_runtime: sym!(__sidata) + data_len - sym!(__vector_table) - linked_in,
        model_start: sym!(__model_start),
        model_size,
    }
}

/// The model region reserved in `memory.x`, as bytes. It holds whatever was placed there
/// (QEMU: `-device loader,file=MODEL,addr=<start>,force-raw=on`; a real board: flashed at
/// that address); all zeros or erased flash when nothing was.
pub fn model_region() -> &'static [u8] {
    let start = sym!(__model_start);
    let len = sym!(__model_end) - start;
    // SAFETY: memory.x reserves [__model_start, __model_end) for the model: it is mapped
    // (flash, or SSRAM on the mps2 boards) for the whole run, the linker places nothing
    // there, and nothing in the firmware writes it, so a shared 'static slice is valid.
    // The address comes from a linker symbol and refers to no Rust allocation, hence the
    // exposed provenance.
    unsafe { core::slice::from_raw_parts(core::ptr::with_exposed_provenance::<u8>(start), len) }
}

/// Converts ticks of the board's `Counter` to instructions (exact under QEMU's
/// `-icount shift=7`; the counter clock is the board's clock). A real board has no such
/// relation: its counts stay ticks of its counter (cycles of its core clock).
pub fn ticks_to_insns(ticks: u64) -> u64 {
    const RATIO: s2s_device::qemu::Ratio = match BOARD.qemu {
        Some(_) => s2s_device::qemu::ticks_per_insn(BOARD.clock_hz),
        None => s2s_device::qemu::Ratio { num: 1, den: 1 },
    };
    RATIO.ticks_to_insns(ticks)
}
