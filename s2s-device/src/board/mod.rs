//! The board table: every board the firmware is built for, with the facts the firmware's
//! build (`memory.x`, the precisions and capacities it compiles), the host tool (model
//! region, QEMU machine) and `xtask` (targets to build) take from it.
//!
//! Adding a board that QEMU emulates is one entry in [`BOARDS`] plus its UART and counter
//! driver, `firmware/src/boards/<name with _ for ->.rs` ([`Driver::Registers`]); a
//! board driven through its HAL is an entry plus its crate in `firmware/boards/<dir>`
//! ([`Driver::Hal`]), and a physical one says how it is flashed ([`Hardware`]).

mod table;
mod types;

pub use table::BOARDS;
pub use types::{
    same, Board, Capacities, Driver, Flashing, Hardware, MemoryMap, ModuleFile, OneModel, Region,
};

/// The boards whose firmware is the `firmware` crate with a register driver under QEMU
/// ([`Driver::Registers`]): every binary of that crate runs on them.
pub fn register_boards() -> impl Iterator<Item = &'static Board> {
    BOARDS
        .iter()
        .filter(|b| b.driver == Driver::Registers && b.qemu.is_some())
}

/// The boards that the HAL crate `firmware/boards/<dir>` drives ([`Driver::Hal`]).
pub fn hal_boards(dir: &str) -> impl Iterator<Item = &'static Board> + '_ {
    BOARDS
        .iter()
        .filter(move |b| matches!(b.driver, Driver::Hal { dir: d } if d == dir))
}

/// For the build script of the HAL crate `firmware/boards/<dir>`: the board it is being
/// built for. `s2s_board` is `S2S_BOARD` (the firmware library's build script reads the
/// board table by it); it must name a board of that crate ([`hal_boards`]) whose cargo
/// feature is the only board feature on (`feature_on(name)`).
pub fn hal_build_board<'a>(
    dir: &'a str,
    s2s_board: Option<&'a str>,
    feature_on: impl Fn(&str) -> bool,
) -> Result<&'static Board, HalBuildError<'a>> {
    let mut on = hal_boards(dir).filter(|b| feature_on(b.name));
    let (Some(board), None) = (on.next(), on.next()) else {
        return Err(HalBuildError::Features { dir });
    };
    if s2s_board != Some(board.name) {
        return Err(HalBuildError::Mismatch {
            feature: board.name,
            s2s_board,
        });
    }
    Ok(board)
}

/// Why [`hal_build_board`] refused a build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalBuildError<'a> {
    /// Not exactly one of the crate's board features is on.
    Features {
        /// The crate's directory under `firmware/boards/`.
        dir: &'a str,
    },
    /// `S2S_BOARD` is not the board whose feature is on.
    Mismatch {
        /// The board whose feature is on.
        feature: &'static str,
        /// `S2S_BOARD`, if set.
        s2s_board: Option<&'a str>,
    },
}

impl core::fmt::Display for HalBuildError<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            HalBuildError::Features { dir } => {
                write!(
                    f,
                    "build firmware/boards/{dir} with exactly one board feature:"
                )?;
                for b in hal_boards(dir) {
                    write!(f, " {}", b.name)?;
                }
                Ok(())
            }
            HalBuildError::Mismatch { feature, s2s_board } => write!(
                f,
                "set S2S_BOARD={feature} for --features {feature} (S2S_BOARD is {s2s_board:?})"
            ),
        }
    }
}

impl core::error::Error for HalBuildError<'_> {}

/// The board named `name`.
pub fn find(name: &str) -> Option<&'static Board> {
    BOARDS.iter().find(|b| b.name == name)
}

/// The default board of a Rust target: the first one in [`BOARDS`] built for it.
pub fn default_for_target(target: &str) -> Option<&'static Board> {
    BOARDS.iter().find(|b| b.target == target)
}

/// The board names, for messages: `a, b, c`.
pub fn names() -> impl Iterator<Item = &'static str> {
    BOARDS.iter().map(|b| b.name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hal_build_needs_one_board_feature_and_its_s2s_board() {
        let only = |name: &'static str| move |f: &str| f == name;
        let b = hal_build_board("stm32f4", Some("netduinoplus2"), only("netduinoplus2"));
        assert_eq!(b.map(|b| b.name), Ok("netduinoplus2"));
        let none = hal_build_board("stm32f4", Some("netduinoplus2"), |_| false);
        assert_eq!(
            none.unwrap_err(),
            HalBuildError::Features { dir: "stm32f4" }
        );
        let two = hal_build_board("stm32f4", Some("netduinoplus2"), |_| true);
        let msg = two.unwrap_err().to_string();
        assert!(
            msg.contains("netduinoplus2") && msg.contains("nucleo-f411re"),
            "{msg}"
        );
        let other = hal_build_board("stm32f4", Some("nucleo-f411re"), only("netduinoplus2"));
        assert!(matches!(
            other,
            Err(HalBuildError::Mismatch {
                feature: "netduinoplus2",
                ..
            })
        ));
        // A board of another crate is no feature of this one.
        let foreign = hal_build_board("stm32f4", Some("nrf52840-dk"), only("nrf52840-dk"));
        assert!(matches!(foreign, Err(HalBuildError::Features { .. })));
    }

    use super::*;

    #[test]
    fn names_are_unique_and_regions_do_not_overlap() {
        for (i, b) in BOARDS.iter().enumerate() {
            assert!(BOARDS[..i].iter().all(|o| o.name != b.name), "{}", b.name);
            assert_eq!(find(b.name), Some(b));
            let m = &b.memory;
            assert!(m.flash.end() <= m.model.origin as u64, "{}", b.name);
            assert!(b.capacities.arena_bytes % 4 == 0);
            assert!(b.capacities.arena_bytes < m.ram.length as usize);
        }
        assert_eq!(
            default_for_target("thumbv7em-none-eabihf").unwrap().name,
            "mps2-an386"
        );
    }

    #[test]
    fn real_boards_keep_the_model_on_its_own_erase_sectors() {
        let mut real = 0;
        for b in BOARDS {
            if let Some(h) = b.hardware {
                real += 1;
                assert_eq!(b.memory.model.origin % h.model_sector, 0, "{}", b.name);
                assert!(matches!(b.driver, Driver::Hal { .. }), "{}", b.name);
            }
        }
        assert!(real >= 1);
        // The HAL board QEMU runs shares its crate with a real board.
        let qemu = find("netduinoplus2").unwrap();
        assert_eq!(qemu.driver, find("nucleo-f411re").unwrap().driver);
        assert!(register_boards().all(|b| b.driver == Driver::Registers));
        assert!(register_boards().all(|b| b.name != "netduinoplus2"));
    }

    #[test]
    fn the_pico_memory_x_puts_the_bootloader_first() {
        let mut s = String::new();
        find("rp-pico").unwrap().write_memory_x(&mut s).unwrap();
        assert!(
            s.contains("BOOT2 : ORIGIN = 0x10000000, LENGTH = 256"),
            "{s}"
        );
        assert!(
            s.contains("FLASH : ORIGIN = 0x10000100, LENGTH = 524032"),
            "{s}"
        );
        assert!(s.contains("MODEL : ORIGIN = 0x10080000"), "{s}");
        assert!(s.contains("INSERT BEFORE .text;"), "{s}");
        let mut m = String::new();
        find("microbit").unwrap().write_memory_x(&mut m).unwrap();
        assert!(!m.contains("BOOT2"), "{m}");
    }

    /// The models the tests and the README run on each board fit its model region: on
    /// the small boards netra w8a16 (129,392 bytes in model format 10), and on the
    /// micro:bit the running-text streaming models' one-plane w8a16 files (143,876
    /// bytes, docs/EXPERIMENTS.md section 6).
    #[test]
    fn model_regions_fit_the_planned_models() {
        let cap = |n| find(n).unwrap().memory.model.length;
        assert!(cap("mps2-an386") >= 3_400_000);
        assert!(cap("mps2-an505") >= 3_500 * 1024);
        assert!(cap("lm3s6965evb") >= 129_392 && cap("microbit") >= 143_876);
    }

    #[test]
    fn memory_x_names_the_three_regions() {
        let mut s = String::new();
        find("microbit").unwrap().write_memory_x(&mut s).unwrap();
        assert!(
            s.contains("FLASH : ORIGIN = 0x00000000, LENGTH = 98304"),
            "{s}"
        );
        assert!(
            s.contains("MODEL : ORIGIN = 0x00018000, LENGTH = 163840"),
            "{s}"
        );
        assert!(
            s.contains("RAM   : ORIGIN = 0x20000000, LENGTH = 16384"),
            "{s}"
        );
        assert!(s.contains("__model_end = ORIGIN(MODEL) + LENGTH(MODEL);"));
        let mut app = String::new();
        find("microbit")
            .unwrap()
            .write_app_memory_x(&mut app)
            .unwrap();
        assert!(
            app.contains("FLASH : ORIGIN = 0x00000000, LENGTH = 262144"),
            "{app}"
        );
        assert!(!app.contains("MODEL"), "{app}");
        assert_eq!(
            find("mps2-an386").unwrap().module_file().to_string(),
            "mps2_an386.rs"
        );
    }
}
