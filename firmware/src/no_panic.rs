//! The panic handler of a `no-panic` build, for every board (the QEMU boards' and the
//! HAL boards' crates, which then leave out `panic-probe`): a call of a symbol that no
//! object defines, so the build links only if the optimiser removed every panic path.
//! `cargo xtask test` links every firmware build it compiles so.

use core::panic::PanicInfo;

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    extern "C" {
        /// Defined nowhere: the linker names it when a panic is reachable.
        fn a_panic_is_reachable_in_this_no_panic_build() -> !;
    }
    // SAFETY: never executed: a build in which this call is reachable does not link.
    unsafe { a_panic_is_reachable_in_this_no_panic_build() }
}
