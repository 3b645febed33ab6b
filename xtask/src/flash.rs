//! `cargo xtask flash --board B --model M.s2s`: puts the firmware and a model on a
//! physical board, as its entry in the board table says (`s2s_device::board::Flashing`):
//!
//! * with a debug probe (nRF52840 DK, Nucleo-F411RE): builds the board's firmware, then
//!   `probe-rs download --chip CHIP ELF` and `probe-rs download --chip CHIP
//!   --binary-format bin --base-address <model region> M.s2s`. The model region starts
//!   on an erase sector, so writing the model leaves the firmware alone (and a new model
//!   needs only the second command);
//! * by UF2 (Raspberry Pi Pico): builds the firmware with the model linked in
//!   (`S2S_MODEL`) and writes `target/flash/<board>-<model>.uf2`, then copies it to the
//!   board's `RPI-RP2` drive if one is mounted.
//!
//! Without `probe-rs`, without a probe, or without the drive, it prints the exact
//! commands left to run and fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use s2s_device::board::{Flashing, Hardware};
use s2s_device::Board;

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::uf2;

/// How to install probe-rs.
const PROBE_RS_INSTALL: &str = "cargo install probe-rs-tools --locked";

impl Ctx {
    pub(crate) fn flash(&self, args: &[String]) -> Result {
        let (board, model) = match args {
            [a, b, c, d] if a == "--board" && c == "--model" => (b, d),
            [a, b, c, d] if a == "--model" && c == "--board" => (d, b),
            _ => return Err("usage: cargo xtask flash --board B --model M.s2s".into()),
        };
        let real: Vec<&str> = s2s_device::BOARDS
            .iter()
            .filter(|b| b.hardware.is_some())
            .map(|b| b.name)
            .collect();
        let (board, hardware) = s2s_device::board::find(board)
            .and_then(|b| Some((b, b.hardware?)))
            .ok_or_else(|| {
                format!(
                    "--board {board}: not a physical board of the table (these are: {})",
                    real.join(", ")
                )
            })?;
        let model = fs::canonicalize(model).map_err(|e| format!("{model}: {e}"))?;
        let len = fs::metadata(&model).map_err(Error::io(&model))?.len();
        let region = board.memory.model;
        if len > u64::from(region.length) {
            return Err(format!(
                "{}: {len} bytes do not fit the {}-byte model region of {}",
                model.display(),
                region.length,
                board.name
            )
            .into());
        }
        match hardware.flashing {
            Flashing::Probe => self.flash_probe(board, &hardware, &model),
            Flashing::Uf2 { family_id, .. } => self.flash_uf2(board, family_id, &model),
        }
    }

    /// Builds the firmware and writes it and the model with probe-rs.
    fn flash_probe(&self, board: &Board, hw: &Hardware, model: &Path) -> Result {
        self.run(&mut self.hal_cargo(board, "build")?)?;
        let elf = self.hal_elf(board)?;
        let commands = probe_commands(board, hw, &elf, model);
        let shown = commands
            .iter()
            .map(|c| c.join(" "))
            .collect::<Vec<_>>()
            .join("\n  ");
        let have_probe_rs = Command::new("probe-rs")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !have_probe_rs {
            return Err(format!(
                "probe-rs is not installed ({PROBE_RS_INSTALL}); with it and the board on \
                 USB, run:\n  {shown}"
            )
            .into());
        }
        for c in &commands {
            self.run(Command::new(&c[0]).args(&c[1..])).map_err(|e| {
                format!("{e}\n(is the board connected by USB?) The commands:\n  {shown}")
            })?;
        }
        println!(
            "{}: firmware and model written; open its serial port at 115200 baud ({})",
            board.name, hw.link
        );
        Ok(())
    }

    /// Builds the firmware with the model linked in, writes the UF2 and copies it to a
    /// mounted `RPI-RP2` drive.
    fn flash_uf2(&self, board: &Board, family_id: u32, model: &Path) -> Result {
        self.run(self.hal_cargo(board, "build")?.env("S2S_MODEL", model))?;
        let elf = self.hal_elf(board)?;
        let image = fs::read(&elf).map_err(Error::io(&elf))?;
        let segments = uf2::load_segments(&image).map_err(|e| format!("{}: {e}", elf.display()))?;
        let stem = model
            .file_stem()
            .map_or("model".into(), |s| s.to_string_lossy());
        let dir = self.target.join("flash");
        fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
        let out = dir.join(format!("{}-{stem}.uf2", board.name));
        let file = uf2::uf2(&segments, family_id);
        fs::write(&out, &file).map_err(Error::io(&out))?;
        println!("wrote {} ({} bytes)", out.display(), file.len());
        let drive = rpi_rp2_drive();
        let Some(drive) = drive else {
            return Err(format!(
                "no RPI-RP2 drive is mounted: hold BOOTSEL while plugging the board in, \
                 mount the drive, then run:\n  cp {} /path/to/RPI-RP2/",
                out.display()
            )
            .into());
        };
        let to = drive.join(out.file_name().unwrap_or_default());
        fs::copy(&out, &to).map_err(|e| format!("copying to {}: {e}", to.display()))?;
        println!(
            "{}: copied to {}; the board restarts as a USB serial port (115200 baud)",
            board.name,
            drive.display()
        );
        Ok(())
    }
}

/// The two probe-rs commands: the firmware ELF, then the model as raw bytes at the model
/// region.
fn probe_commands(board: &Board, hw: &Hardware, elf: &Path, model: &Path) -> [Vec<String>; 2] {
    let base = format!("{:#x}", board.memory.model.origin);
    let s = |x: &str| x.to_string();
    [
        vec![
            s("probe-rs"),
            s("download"),
            s("--chip"),
            s(hw.chip),
            elf.display().to_string(),
        ],
        vec![
            s("probe-rs"),
            s("download"),
            s("--chip"),
            s(hw.chip),
            s("--binary-format"),
            s("bin"),
            s("--base-address"),
            base,
            model.display().to_string(),
        ],
    ]
}

/// A mounted RP2040 bootloader drive (its volume is named `RPI-RP2`).
fn rpi_rp2_drive() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|p| PathBuf::from(p.replace("\\040", " ")))
        .find(|p| p.file_name().is_some_and(|n| n == "RPI-RP2") && p.join("INFO_UF2.TXT").is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_commands_write_the_model_at_the_region_of_the_table() {
        let board = s2s_device::board::find("nucleo-f411re").unwrap();
        let hw = board.hardware.unwrap();
        let [fw, model] = probe_commands(board, &hw, Path::new("/fw.elf"), Path::new("/m.s2s"));
        assert_eq!(
            fw.join(" "),
            "probe-rs download --chip STM32F411RETx /fw.elf"
        );
        assert_eq!(
            model.join(" "),
            "probe-rs download --chip STM32F411RETx --binary-format bin --base-address 0x8040000 /m.s2s"
        );
    }
}
