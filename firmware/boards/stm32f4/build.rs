//! Checks that the board (`S2S_BOARD`, which the firmware library's build script reads
//! for the board table) is the one whose chip feature is on, and that this crate drives
//! it. (`memory.x` comes from the library's build script.)

use std::env;

use s2s_device::board::{self, Driver};

const BOARDS: [&str; 2] = ["netduinoplus2", "nucleo-f411re"];

fn main() {
    println!("cargo:rerun-if-env-changed=S2S_BOARD");
    let on: Vec<&str> = BOARDS
        .into_iter()
        .filter(|b| {
            env::var_os(format!(
                "CARGO_FEATURE_{}",
                b.to_uppercase().replace('-', "_")
            ))
            .is_some()
        })
        .collect();
    let [feature] = on[..] else {
        panic!("build with exactly one board feature, one of {BOARDS:?} (this build: {on:?})");
    };
    let name = env::var("S2S_BOARD").unwrap_or_default();
    if name != feature {
        panic!("set S2S_BOARD={feature} for --features {feature} (S2S_BOARD is {name:?})");
    }
    let b = board::find(&name).expect("a board of the table");
    assert_eq!(
        b.driver,
        Driver::Hal { dir: "stm32f4" },
        "{name}: not a board of this crate"
    );
}
