//! The boards driven through their HAL (`firmware/boards/<crate>`, each its own cargo
//! workspace): their CI step, `cargo xtask test`'s rustfmt, clippy and link of each
//! board's firmware.

use std::process::Command;

use s2s_device::board::Driver;
use s2s_device::Board;

use std::path::PathBuf;

use crate::ctx::Ctx;
use crate::error::Result;

/// The HAL boards whose firmware cannot link with `no-panic`: a panic is reachable inside
/// their HAL or USB stack (not in this repository's code), which the optimiser cannot
/// remove. Measured with `scripts/firmware/panic_sites.py` on each board's release ELF
/// (docs/RELIABILITY.md); the other HAL boards are linked with `no-panic` by their CI step.
const PANICKING_HALS: [(&str, &str); 2] = [
    (
        "nrf52840-dk",
        "nrf-hal-common 0.19's UARTE (its TX buffer slicing and one-byte read)",
    ),
    (
        "rp-pico",
        "usb-device 0.3, usbd-serial 0.2 and rp2040-hal 0.12 (their USB buffers and descriptors)",
    ),
];

/// The error of a failed no-panic link of `board`'s firmware, with how to find the panics
/// (`elf`: the board's build without `no-panic`).
pub(crate) fn panic_reachable(
    e: crate::error::Error,
    board: &Board,
    elf: &std::path::Path,
) -> crate::error::Error {
    format!(
        "{e}\nif the linker above names `a_panic_is_reachable_in_this_no_panic_build`, a panic \
         is reachable from the firmware on {}: build it without `--features no-panic` and \
         list the places with scripts/firmware/panic_sites.py {} (else the linker says what \
         failed, a region overflow say)",
        board.name,
        elf.display()
    )
    .into()
}

/// The boards whose firmware is a HAL crate of `firmware/boards/`.
pub(crate) fn hal_boards() -> impl Iterator<Item = &'static Board> {
    s2s_device::BOARDS
        .iter()
        .filter(|b| matches!(b.driver, Driver::Hal { .. }))
}

impl Ctx {
    /// The directory of a HAL board's crate.
    pub(crate) fn hal_crate(&self, board: &Board) -> Result<PathBuf> {
        match board.driver {
            Driver::Hal { dir } => Ok(self.root.join("firmware/boards").join(dir)),
            Driver::Registers => Err(format!(
                "{} is built by the firmware crate itself, not a board crate",
                board.name
            )
            .into()),
        }
    }

    /// `cargo <command> --release --features <board>` in the board's crate, for the
    /// board (`S2S_BOARD`).
    pub(crate) fn hal_cargo(&self, board: &Board, command: &str) -> Result<Command> {
        let mut c = self.cargo();
        c.args([command, "--release", "--target", board.target])
            .args(["--features", board.name])
            .env("S2S_BOARD", board.name)
            .current_dir(self.hal_crate(board)?);
        Ok(c)
    }

    /// The CI step of a HAL board: rustfmt of its crate, clippy, the link of its
    /// `firmware` binary (the ELF that `cargo xtask flash` writes, or that the tests run
    /// under QEMU), and its link with `no-panic` (in a target directory of its own, so
    /// that it leaves that ELF alone; not for the [`PANICKING_HALS`]): the board's
    /// set-up ends through `firmware::run::setup_failed`, never a panic.
    pub(crate) fn hal_board_check(&self, board: &Board) -> Result {
        let dir = self.hal_crate(board)?;
        self.run(
            self.cargo()
                .args(["fmt", "--", "--check"])
                .current_dir(&dir),
        )?;
        self.run(
            self.hal_cargo(board, "clippy")?
                .args(["--", "-D", "warnings"]),
        )?;
        self.run(&mut self.hal_cargo(board, "build")?)?;
        let elf = self.hal_elf(board)?;
        println!("{}: linked {}", board.name, elf.display());
        if let Some((_, why)) = PANICKING_HALS.iter().find(|(b, _)| *b == board.name) {
            println!(
                "{}: not linked with no-panic: a panic is reachable in {why}",
                board.name
            );
            return Ok(());
        }
        self.run(
            self.hal_cargo(board, "build")?
                .args(["--features", "no-panic", "--target-dir"])
                .arg(dir.join("target/no-panic")),
        )
        .map_err(|e| panic_reachable(e, board, &elf))?;
        println!("{}: linked with no-panic", board.name);
        Ok(())
    }

    /// The firmware ELF of a HAL board's release build.
    pub(crate) fn hal_elf(&self, board: &Board) -> Result<PathBuf> {
        Ok(self
            .hal_crate(board)?
            .join("target")
            .join(board.target)
            .join("release/firmware"))
    }
}
