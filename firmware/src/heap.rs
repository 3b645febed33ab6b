//! The heap of the `kernel-suite` binary (feature `kernel-suite`): the shared kernel test
//! suite builds its test layers in `Vec`s. Without the feature there is no allocator at
//! all; with it, the other binaries link one and never use it.

use core::mem::MaybeUninit;

use embedded_alloc::LlffHeap;

#[global_allocator]
static HEAP: LlffHeap = LlffHeap::empty();

/// Gives the heap `memory`, for the whole run. Call it once, before anything allocates
/// (a second call panics).
pub fn init(memory: &'static mut [MaybeUninit<u8>]) {
    // SAFETY: `memory` is borrowed for the rest of the run, so nothing else uses it; the
    // allocator refuses a second initialization.
    unsafe { HEAP.init(memory.as_mut_ptr() as usize, memory.len()) };
}
