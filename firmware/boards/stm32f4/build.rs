//! Checks that the board (`S2S_BOARD`, which the firmware library's build script reads
//! for the board table) is the one whose chip feature is on, and that this crate drives
//! it. (`memory.x` comes from the library's build script.)

use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=S2S_BOARD");
    let s2s_board = env::var("S2S_BOARD").ok();
    let feature_on = |name: &str| {
        let var = format!("CARGO_FEATURE_{}", name.to_uppercase().replace('-', "_"));
        env::var_os(var).is_some()
    };
    if let Err(e) = s2s_device::board::hal_build_board("stm32f4", s2s_board.as_deref(), feature_on)
    {
        panic!("{e}");
    }
}
