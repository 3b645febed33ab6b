//! The board table's types: a board, its memory map, capacities, driver and how it is
//! flashed, and what a board writes about itself (`memory.x`, its driver file name).

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

impl Capacities {
    /// Source positions the model runner plans a model's workspace for: its fixed
    /// length (`src_pad_to`, 0 for none) if the board takes it, else the board's
    /// `max_positions`; `None` when the fixed length is longer. The firmware serves the
    /// model at these positions (if their workspace fits the arena); `s2s inspect` and
    /// `s2s qemu` say them.
    pub const fn positions_for(&self, src_pad_to: usize) -> Option<usize> {
        match src_pad_to {
            0 => Some(self.max_positions),
            n if n <= self.max_positions => Some(n),
            _ => None,
        }
    }
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
    pub const fn app_flash(&self) -> Region {
        let m = &self.memory;
        Region {
            origin: m.flash.origin,
            length: m.model.end().saturating_sub(m.flash.origin as u64) as u32,
        }
    }

    /// `memory.x` of a program whose model is embedded at build time (`s2s embed`):
    /// [`Board::write_app_memory_x`] and the output section `.s2s_model` after `.rodata`
    /// that gathers the model's statics (their link section), bracketed by
    /// `__model_start` and `__model_end`, so that the model's flash is known apart from
    /// the program's.
    pub fn write_one_model_memory_x(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        self.write_app_memory_x(out)?;
        writeln!(
            out,
            "SECTIONS {{\n  .s2s_model : ALIGN(8) {{\n    __model_start = .;\n    \
             KEEP(*(.s2s_model .s2s_model.*));\n    . = ALIGN(8);\n    __model_end = .;\n  \
             }} > FLASH\n}} INSERT AFTER .rodata;"
        )
    }

    /// What the one-model runtime (the firmware with its model linked in: `s2s embed`,
    /// `S2S_EMBED`) needs on this board beside the model: its flash ceiling, its statics
    /// other than the workspace, and a stack. Measured (BENCHMARKS.md, "A build for one
    /// model"): the Armv6-M build at opt-level s, the others at their firmware's level.
    /// `s2s embed` refuses a model that does not fit beside it, and the firmware's build
    /// checks it again.
    pub const fn one_model(&self) -> OneModel {
        if same(self.target, "thumbv6m-none-eabi") {
            // micro:bit, netra w8a16: 36,632 bytes of flash, 4 bytes of statics beside
            // the arena, a stack peak of 4,520 bytes; the stack: the peak and a margin.
            OneModel {
                flash: 48 << 10,
                statics: 64,
                stack: 6 << 10,
            }
        } else {
            // AN386 (opt-level 3), netra w8a16: 64,392 bytes of flash, a stack peak of
            // 6,000 bytes.
            OneModel {
                flash: 96 << 10,
                statics: 64,
                stack: 9 << 10,
            }
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

/// What the one-model runtime needs beside its model ([`Board::one_model`]), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneModel {
    /// Flash for its code and constants (its ceiling).
    pub flash: u32,
    /// RAM for its statics other than the workspace arena.
    pub statics: u32,
    /// The stack it is given at least (its measured peak and a margin).
    pub stack: u32,
}

/// Two strings equal, in a constant.
pub const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
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
    use super::Capacities;

    #[test]
    fn positions_are_the_fixed_length_else_the_cap() {
        let c = Capacities {
            arena_bytes: 1024,
            max_positions: 25,
            max_steps: 32,
            max_line: 128,
            max_beam: 0,
        };
        assert_eq!(c.positions_for(0), Some(25));
        assert_eq!(c.positions_for(20), Some(20));
        assert_eq!(c.positions_for(25), Some(25));
        assert_eq!(c.positions_for(26), None);
    }
}
