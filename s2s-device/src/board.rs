//! The board table: every board the firmware is built for, with the facts the firmware's
//! build (`memory.x`, the precisions and capacities it compiles), the host tool (model
//! region, QEMU machine) and `xtask` (targets to build) take from it.
//!
//! Adding a board that QEMU emulates is one entry in [`BOARDS`] plus its UART and counter
//! driver, `firmware/src/boards/<name with _ for ->.rs` ([`Driver::Registers`]); a
//! board driven through its HAL is an entry plus its crate in `firmware/boards/<dir>`
//! ([`Driver::Hal`]), and a physical one says how it is flashed ([`Hardware`]).

use crate::qemu::Qemu;

/// A memory region: start address and size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Start address, as the CPU sees it.
    pub origin: u32,
    /// Size in bytes.
    pub length: u32,
}

impl Region {
    /// One past the last address.
    pub const fn end(&self) -> u64 {
        self.origin as u64 + self.length as u64
    }
}

/// Where the firmware, the model and the data go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryMap {
    /// The runtime: vector table, code, read-only data (`FLASH` in `memory.x`).
    pub flash: Region,
    /// The model file, read in place (`MODEL`); the linker puts nothing there.
    pub model: Region,
    /// Statics and the stack (`RAM`).
    pub ram: Region,
}

/// What the model runner holds on a board, fixed at build time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacities {
    /// Bytes of the static workspace arena (a multiple of 4).
    pub arena_bytes: usize,
    /// Source positions (end token and padding included) the runner accepts.
    pub max_positions: usize,
    /// Output steps (end token included) the output buffer holds.
    pub max_steps: usize,
    /// Longest input line in bytes (the protocol's line buffer, on the stack).
    pub max_line: usize,
    /// Widest beam search the firmware compiles (0: greedy decoding only, no beam code
    /// in the image); a model gets the widest up to this that fits the arena beside its
    /// workspace.
    pub max_beam: usize,
}

/// One board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board {
    /// The board's name: `S2S_BOARD` of the firmware build, `--board` of `s2s`, the word
    /// after `READY`. Its driver file is `firmware/src/boards/<name, - as _>.rs`.
    pub name: &'static str,
    /// What it is, in a few words.
    pub summary: &'static str,
    /// The Rust target the firmware is built for.
    pub target: &'static str,
    /// System clock in Hz; the firmware's tick counter counts at this rate.
    pub clock_hz: u32,
    /// Where the firmware, the model and the data go.
    pub memory: MemoryMap,
    /// Model precisions the firmware compiles by default (`f32`, `w8f32`, `w8a16`).
    pub precisions: &'static [&'static str],
    /// What the model runner holds.
    pub capacities: Capacities,
    /// The QEMU machine that emulates it, for boards QEMU runs.
    pub qemu: Option<Qemu>,
    /// Which firmware crate drives it.
    pub driver: Driver,
    /// The physical part, for boards one can buy and flash: how.
    pub hardware: Option<Hardware>,
}

/// Which firmware crate drives a board. Both use the firmware library (`firmware/src`:
/// the model runner, the line protocol, the measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The `firmware` crate itself, with the board's register driver
    /// `firmware/src/boards/<name, - as _>.rs` (the QEMU boards).
    Registers,
    /// A crate of its own in `firmware/boards/<dir>`, which drives the board through its
    /// maintained HAL; it is built with `S2S_BOARD=<name>` and `--features <name>` and
    /// its model runner is the binary `firmware`.
    Hal {
        /// The crate's directory under `firmware/boards/`.
        dir: &'static str,
    },
}

/// A physical board: what flashing it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hardware {
    /// The chip as `probe-rs` names it (`probe-rs chip list`).
    pub chip: &'static str,
    /// How the firmware and the model get onto it.
    pub flashing: Flashing,
    /// Size of the flash erase sector that the model region starts with: the region
    /// starts on such a boundary, so writing the model never erases the runtime.
    pub model_sector: u32,
    /// The cable and the serial link, in a few words.
    pub link: &'static str,
}

/// How a board is flashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flashing {
    /// With a debug probe (on the board): `probe-rs download` of the firmware ELF, then
    /// of the model file as raw bytes at the model region.
    Probe,
    /// A UF2 file copied to the board's USB mass-storage bootloader (BOOTSEL), with the
    /// model linked into the image at the model region.
    Uf2 {
        /// The UF2 family ID of the chip.
        family_id: u32,
        /// Bytes of the second-stage bootloader at the start of flash, just before the
        /// runtime (`BOOT2` in `memory.x`; 0 for none).
        boot2: u32,
    },
}

const KIB: u32 = 1024;
const MIB: u32 = 1024 * KIB;

const fn region((origin, length): (u32, u32)) -> Region {
    Region { origin, length }
}

/// A memory map: (origin, length) of the runtime flash, the model region and RAM.
const fn map(flash: (u32, u32), model: (u32, u32), ram: (u32, u32)) -> MemoryMap {
    MemoryMap {
        flash: region(flash),
        model: region(model),
        ram: region(ram),
    }
}

/// Capacities: arena bytes, positions, steps, line bytes, beam width.
const fn caps(
    arena_bytes: usize,
    max_positions: usize,
    max_steps: usize,
    max_line: usize,
    max_beam: usize,
) -> Capacities {
    Capacities {
        arena_bytes,
        max_positions,
        max_steps,
        max_line,
        max_beam,
    }
}

/// The QEMU machine and CPU.
const fn qemu(machine: &'static str, cpu: &'static str) -> Option<Qemu> {
    Some(Qemu { machine, cpu })
}

/// The boards, the default one for each Rust target first. lm3s6965evb and microbit have
/// no FPU and 256 KiB of flash; they compile w8a16 only (the float code would fill it).
/// lm3s6965evb gives the runtime 96 KiB (the w8a16 runtime with GRU and LSTM cells, the
/// instruction-set kernels, beam search up to width 4 and format 5's decoders is 86,380
/// bytes, `STATS flash_runtime`) and its model region 160 KiB (netra w8a16 takes 129 KB);
/// the micro:bit keeps 84 KiB and 172 KiB and no beam search (`max_beam` 0: 73,416
/// bytes),
/// and its arena is exactly netra w8a16's workspace (10,064 bytes at its 25
/// positions), so that the stack keeps every other byte of its 16 KiB. The mps2-an505 model region is at the Secure alias: QEMU's
/// `-device loader` writes through the CPU's view.
pub const BOARDS: &[Board] = &[
    Board {
        name: "mps2-an386",
        summary: "ARM MPS2 + AN386, Cortex-M4F at 25 MHz; 4 MiB code SSRAM1 (runtime, then the model), 4 MiB data SSRAM2/3",
        target: "thumbv7em-none-eabihf",
        clock_hz: 25_000_000,
        memory: map((0x0000_0000, 256 * KIB), (0x0004_0000, 3840 * KIB), (0x2000_0000, 4 * MIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(1024 * 1024, 256, 256, 1024, 8),
        qemu: qemu("mps2-an386", "cortex-m4"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "lm3s6965evb",
        summary: "TI Stellaris LM3S6965 EVB, Cortex-M3 at 50 MHz; 256 KiB flash, 64 KiB SRAM",
        target: "thumbv7m-none-eabi",
        clock_hz: 50_000_000,
        memory: map((0x0000_0000, 96 * KIB), (0x0001_8000, 160 * KIB), (0x2000_0000, 64 * KIB)),
        precisions: &["w8a16"],
        capacities: caps(40 * 1024, 64, 64, 1024, 4),
        qemu: qemu("lm3s6965evb", "cortex-m3"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "mps2-an385",
        summary: "ARM MPS2 + AN385, Cortex-M3 at 25 MHz; the AN386 without its FPU",
        target: "thumbv7m-none-eabi",
        clock_hz: 25_000_000,
        memory: map((0x0000_0000, 256 * KIB), (0x0004_0000, 3840 * KIB), (0x2000_0000, 4 * MIB)),
        precisions: &["w8a16"],
        capacities: caps(1024 * 1024, 256, 256, 1024, 8),
        qemu: qemu("mps2-an385", "cortex-m3"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "microbit",
        summary: "BBC micro:bit v1, nRF51822, Cortex-M0 at 16 MHz; 256 KiB flash, 16 KiB SRAM",
        target: "thumbv6m-none-eabi",
        clock_hz: 16_000_000,
        memory: map((0x0000_0000, 84 * KIB), (0x0001_5000, 172 * KIB), (0x2000_0000, 16 * KIB)),
        precisions: &["w8a16"],
        capacities: caps(10_064, 25, 32, 256, 0),
        qemu: qemu("microbit", "cortex-m0"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "mps2-an505",
        summary: "ARM MPS2 + AN505 (SSE-200), Cortex-M33 with FPU at 20 MHz, Secure state: SSRAM1 at its Secure alias 0x1000_0000, SSRAM2/3 at 0x3800_0000",
        target: "thumbv8m.main-none-eabihf",
        clock_hz: 20_000_000,
        memory: map((0x1000_0000, 256 * KIB), (0x1004_0000, 3840 * KIB), (0x3800_0000, 4 * MIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(1024 * 1024, 256, 256, 1024, 8),
        qemu: qemu("mps2-an505", "cortex-m33"),
        driver: Driver::Registers,
        hardware: None,
    },
    Board {
        name: "nucleo-f411re",
        summary: "ST Nucleo-F411RE, STM32F411RE, Cortex-M4F at 100 MHz (HSI and PLL); 512 KiB flash (runtime in sectors 0-5, the model in sectors 6-7), 128 KiB SRAM",
        target: "thumbv7em-none-eabihf",
        clock_hz: 100_000_000,
        memory: map((0x0800_0000, 256 * KIB), (0x0804_0000, 256 * KIB), (0x2000_0000, 128 * KIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(64 * 1024, 64, 64, 1024, 4),
        qemu: None,
        driver: Driver::Hal { dir: "stm32f4" },
        hardware: Some(Hardware {
            chip: "STM32F411RETx",
            flashing: Flashing::Probe,
            model_sector: 128 * KIB,
            link: "USB to the ST-LINK/V2-1: USART2 (PA2/PA3) through its virtual COM port, 115200 8N1",
        }),
    },
    Board {
        name: "nrf52840-dk",
        summary: "Nordic nRF52840 DK, nRF52840, Cortex-M4F at 64 MHz; 1 MiB flash in 4 KiB pages (runtime 256 KiB, the model 768 KiB), 256 KiB SRAM",
        target: "thumbv7em-none-eabihf",
        clock_hz: 64_000_000,
        memory: map((0x0000_0000, 256 * KIB), (0x0004_0000, 768 * KIB), (0x2000_0000, 256 * KIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(128 * 1024, 128, 128, 1024, 4),
        qemu: None,
        driver: Driver::Hal { dir: "nrf52840" },
        hardware: Some(Hardware {
            chip: "nRF52840_xxAA",
            flashing: Flashing::Probe,
            model_sector: 4 * KIB,
            link: "USB to the J-Link OB (J2): UARTE0 (P0.06 TX, P0.08 RX, P0.05 RTS, P0.07 CTS) through its virtual COM port, 115200 8N1 with hardware flow control",
        }),
    },
    Board {
        name: "rp-pico",
        summary: "Raspberry Pi Pico, RP2040, Cortex-M0+ at 125 MHz; 2 MiB QSPI flash in 4 KiB sectors (the 256-byte second-stage bootloader, the runtime to 512 KiB, the model 1536 KiB), 264 KiB SRAM",
        target: "thumbv6m-none-eabi",
        clock_hz: 125_000_000,
        memory: map((0x1000_0100, 512 * KIB - 256), (0x1008_0000, 1536 * KIB), (0x2000_0000, 264 * KIB)),
        precisions: &["w8a16"],
        capacities: caps(128 * 1024, 128, 128, 1024, 4),
        qemu: None,
        driver: Driver::Hal { dir: "rp2040" },
        hardware: Some(Hardware {
            chip: "RP2040",
            flashing: Flashing::Uf2 {
                family_id: 0xE48B_FF56,
                boot2: 256,
            },
            model_sector: 4 * KIB,
            link: "a USB cable: USB CDC serial (usbd-serial) from the RP2040 itself",
        }),
    },
    Board {
        name: "netduinoplus2",
        summary: "Netduino Plus 2 as QEMU emulates it: STM32F405, Cortex-M4F at its reset clock (16 MHz HSI; QEMU's SysTick counts at 168 MHz); 1 MiB flash (runtime in sectors 0-5, the model in sectors 6-11), 128 KiB SRAM; the Nucleo-F411RE's firmware crate and capacities",
        target: "thumbv7em-none-eabihf",
        clock_hz: 168_000_000,
        memory: map((0x0800_0000, 256 * KIB), (0x0804_0000, 768 * KIB), (0x2000_0000, 128 * KIB)),
        precisions: &["f32", "w8f32", "w8a16"],
        capacities: caps(64 * 1024, 64, 64, 1024, 4),
        qemu: qemu("netduinoplus2", "cortex-m4"),
        driver: Driver::Hal { dir: "stm32f4" },
        hardware: None,
    },
];

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

impl Board {
    /// The board's driver module file name in `firmware/src/boards/`.
    pub fn module_file(&self) -> ModuleFile {
        ModuleFile(self.name)
    }

    /// `memory.x` for `cortex-m-rt`'s `link.x`, with `__model_start`/`__model_end` for
    /// the model region.
    pub fn write_memory_x(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        let m = &self.memory;
        writeln!(
            out,
            "/* {}: {} (generated from s2s-device's board table) */",
            self.name, self.summary
        )?;
        writeln!(out, "MEMORY\n{{")?;
        let boot2 = self.boot2();
        if boot2 > 0 {
            let origin = m.flash.origin - boot2;
            writeln!(out, "  BOOT2 : ORIGIN = {origin:#010x}, LENGTH = {boot2}")?;
        }
        for (name, r) in [("FLASH", m.flash), ("MODEL", m.model), ("RAM", m.ram)] {
            writeln!(
                out,
                "  {name:<5} : ORIGIN = {:#010x}, LENGTH = {}",
                r.origin, r.length
            )?;
        }
        writeln!(out, "}}\n")?;
        if boot2 > 0 {
            // The second-stage bootloader, first in flash (the `.boot2` static).
            writeln!(
                out,
                "SECTIONS {{\n  .boot2 ORIGIN(BOOT2) : {{ KEEP(*(.boot2)); }} > BOOT2\n}} INSERT BEFORE .text;\n"
            )?;
        }
        writeln!(out, "__model_start = ORIGIN(MODEL);")?;
        writeln!(out, "__model_end = ORIGIN(MODEL) + LENGTH(MODEL);")
    }

    /// Bytes of the second-stage bootloader before the runtime (RP2040), else 0.
    pub fn boot2(&self) -> u32 {
        match self.hardware {
            Some(Hardware {
                flashing: Flashing::Uf2 { boot2, .. },
                ..
            }) => boot2,
            _ => 0,
        }
    }

    /// The flash of a program that links its model in (the embed examples,
    /// `examples/`): the runtime flash and the model region, which follows it.
    pub fn app_flash(&self) -> Region {
        let m = &self.memory;
        Region {
            origin: m.flash.origin,
            length: m.model.end().saturating_sub(m.flash.origin as u64) as u32,
        }
    }

    /// `memory.x` (for `cortex-m-rt`'s `link.x`, or `INCLUDE`d by a GNU ld script) of a
    /// program that links its model in: FLASH is [`Board::app_flash`], RAM the board's.
    pub fn write_app_memory_x(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        writeln!(
            out,
            "/* {}: {} (generated from s2s-device's board table; the model linked into FLASH) */",
            self.name, self.summary
        )?;
        writeln!(out, "MEMORY\n{{")?;
        for (name, r) in [("FLASH", self.app_flash()), ("RAM", self.memory.ram)] {
            writeln!(
                out,
                "  {name:<5} : ORIGIN = {:#010x}, LENGTH = {}",
                r.origin, r.length
            )?;
        }
        writeln!(out, "}}")
    }
}

/// `name` with `-` written as `_`, plus `.rs`: the board's driver file.
#[derive(Clone, Copy, Debug)]
pub struct ModuleFile(&'static str);

impl core::fmt::Display for ModuleFile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for part in self.0.split('-').enumerate() {
            if part.0 > 0 {
                f.write_str("_")?;
            }
            f.write_str(part.1)?;
        }
        f.write_str(".rs")
    }
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

    #[test]
    fn model_regions_fit_the_planned_models() {
        let cap = |n| find(n).unwrap().memory.model.length;
        assert!(cap("mps2-an386") >= 3_400_000);
        assert!(cap("mps2-an505") >= 3_500 * 1024);
        assert!(cap("lm3s6965evb") >= 150_000 && cap("microbit") >= 150_000);
    }

    #[test]
    fn memory_x_names_the_three_regions() {
        let mut s = String::new();
        find("microbit").unwrap().write_memory_x(&mut s).unwrap();
        assert!(
            s.contains("FLASH : ORIGIN = 0x00000000, LENGTH = 86016"),
            "{s}"
        );
        assert!(
            s.contains("MODEL : ORIGIN = 0x00015000, LENGTH = 176128"),
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
