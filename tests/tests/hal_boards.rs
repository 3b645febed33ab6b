//! The firmware library through a board's maintained HAL: the STM32F4 crate
//! (`firmware/boards/stm32f4`, `stm32f4xx-hal`) built for QEMU 7.2's `netduinoplus2`
//! (an STM32F405, the USART block of the Nucleo-F411RE) serves the golden words token for
//! token and weight for weight like the host, as `s2s qemu --board netduinoplus2` runs
//! them. The real boards' crates are built and linked by `cargo xtask test`.
//!
//! Needs `qemu-system-arm` and the thumb target; the models come from
//! `cargo xtask models`.

use std::time::Duration;

use host_tools::device::{self, QemuOptions};
use s2s_device::board::{find, Driver};
use s2s_tests::{eval_words, model_file};

/// Inputs per model.
const INPUTS: usize = 200;
/// Longest netra source (its fixed length).
const NETRA_MAX_LEN: usize = 25;
/// Timeout of a 200-input run.
const TIMEOUT: Duration = Duration::from_secs(900);

/// The golden words through `model` on netduinoplus2 and on the host, with the
/// attention rows: every output and every weight equal.
fn netduinoplus2_matches_the_host(model: &str) {
    let board = find("netduinoplus2").expect("netduinoplus2 in the board table");
    assert_eq!(board.driver, Driver::Hal { dir: "stm32f4" });
    let options = QemuOptions {
        attention: true,
        timeout: TIMEOUT,
        ..QemuOptions::new(board)
    };
    let path = model_file(model);
    let report = device::qemu_check(&path, &eval_words(INPUTS, NETRA_MAX_LEN), &options)
        .unwrap_or_else(|e| panic!("{model} on netduinoplus2: {e}"));
    println!("{}", report.render());
    assert!(report.agrees(), "{}", report.render());
    assert_eq!((report.inputs, report.rejected.len()), (INPUTS, 0));
    assert_eq!(report.enc.n, INPUTS, "every word decoded");
    assert_eq!(
        report.attention_rows, report.step.n,
        "every step's row compared"
    );
    assert!(
        report.stats.stack_peak < report.stats.stack_size,
        "the stack reached the statics: {:?}",
        report.stats
    );
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(
        report.stats.model_bytes as u64, size,
        "the model served is the file"
    );
}

#[test]
fn netra_w8a16_through_stm32f4xx_hal_on_netduinoplus2_matches_the_host() {
    netduinoplus2_matches_the_host("netra-w8a16.s2s");
}

#[test]
fn netra_f32_through_stm32f4xx_hal_on_netduinoplus2_matches_the_host() {
    netduinoplus2_matches_the_host("netra.s2s");
}
