//! `cargo xtask setup`: the Rust thumb targets and components, the Debian packages and
//! `defmt-print`, each installed only when missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ctx::Ctx;
use crate::error::Result;

/// The thumb targets the core crates and the firmware are built for: every board's, once.
pub(crate) fn thumb_targets() -> Vec<&'static str> {
    let mut targets: Vec<&str> = s2s_device::BOARDS.iter().map(|b| b.target).collect();
    targets.sort_unstable();
    targets.dedup();
    targets
}

/// Debian packages the tests need, each with a file that shows it is installed:
/// QEMU (the firmware tests and the demo), DejaVu Sans (the heatmap's reference
/// render of Arabic labels), and make and the Arm GCC for the C embed example
/// (`examples/c`, tests/tests/embed.rs).
const APT_PACKAGES: [(&str, &str); 4] = [
    ("qemu-system-arm", "/usr/bin/qemu-system-arm"),
    ("make", "/usr/bin/make"),
    ("gcc-arm-none-eabi", "/usr/bin/arm-none-eabi-gcc"),
    (
        "fonts-dejavu-core",
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    ),
];

impl Ctx {
    /// `cargo xtask setup` (see the module docs).
    pub(crate) fn setup(&self) -> Result {
        println!("==> setup");
        // Rust: the thumb targets, rustfmt and clippy.
        let rustup = || Command::new("rustup");
        let installed = self
            .capture(rustup().args(["target", "list", "--installed"]))
            .map_err(|e| {
                format!("{e}\n(rustup manages the Rust targets; install it from https://rustup.rs)")
            })?;
        let have: Vec<&str> = installed.lines().map(str::trim).collect();
        let targets = thumb_targets();
        if targets.iter().all(|t| have.contains(t)) {
            println!("rust targets: {} already installed", targets.join(", "));
        } else {
            self.run(rustup().args(["target", "add"]).args(&targets))?;
        }
        let components = self.capture(rustup().args(["component", "list", "--installed"]))?;
        // llvm-tools: the llvm-objdump that the kernel test disassembles the firmware with.
        let missing: Vec<&str> = ["rustfmt", "clippy", "llvm-tools"]
            .into_iter()
            .filter(|c| !components.lines().any(|l| l.starts_with(&format!("{c}-"))))
            .collect();
        if missing.is_empty() {
            println!("rust components: rustfmt, clippy, llvm-tools already installed");
        } else {
            self.run(rustup().args(["component", "add"]).args(&missing))?;
        }

        // QEMU and fonts, from Debian's packages.
        let qemu = std::env::var("QEMU_SYSTEM_ARM").unwrap_or_else(|_| "qemu-system-arm".into());
        let have = |package: &str, file: &str| {
            if package == "qemu-system-arm" {
                find_program(&qemu).is_some()
            } else {
                Path::new(file).is_file()
            }
        };
        let missing: Vec<&str> = APT_PACKAGES
            .iter()
            .filter(|(p, f)| !have(p, f))
            .map(|(p, _)| *p)
            .collect();
        // --no-remove: an install that would remove a package (e.g. a newer
        // qemu-utils than Debian's qemu-system-arm wants) stops instead.
        let install = ["install", "-y", "--no-install-recommends", "--no-remove"];
        if missing.is_empty() {
            println!(
                "debian packages: {} already installed",
                APT_PACKAGES.map(|(p, _)| p).join(", ")
            );
        } else if is_root() {
            let apt = |args: &[&str]| {
                let mut c = Command::new("apt-get");
                c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
                c
            };
            self.run(&mut apt(&["update"]))?;
            self.run(apt(&install).args(&missing))?;
            if let Some((p, _)) = APT_PACKAGES.iter().find(|(p, f)| !have(p, f)) {
                return Err(format!("{p} is still missing after `apt-get install {p}`").into());
            }
        } else {
            return Err(format!(
                "{} missing; install with:\n  sudo apt-get update && sudo apt-get {} {}",
                missing.join(", "),
                install.join(" "),
                missing.join(" ")
            )
            .into());
        }

        // defmt-print decodes the firmware's log (host-tools/src/device/qemu.rs).
        if let Some(p) = find_program("defmt-print") {
            println!("defmt-print: {} already installed", p.display());
        } else {
            self.run(self.cargo().args(["install", "defmt-print", "--locked"]))?;
        }
        Ok(())
    }
}

/// The program's path if `name` is on `PATH` (or is a path to a file).
fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::APT_PACKAGES;

    /// The README names every package the set-up may install.
    #[test]
    fn the_readme_names_every_debian_package() {
        let readme = include_str!("../../README.md");
        let intro = readme.split("## What this is").next().unwrap_or_default();
        for (package, _) in APT_PACKAGES {
            assert!(
                intro.contains(&format!("`{package}`")),
                "README.md's set-up paragraph does not name `{package}`"
            );
        }
    }
}
