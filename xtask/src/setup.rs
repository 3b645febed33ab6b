//! `cargo xtask setup`: the Rust thumb targets, WebAssembly target and components, the
//! Debian packages, `defmt-print` and `wasm-bindgen-cli`, each installed only when
//! missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use host_tools::device::qemu;

use crate::ctx::Ctx;
use crate::error::Result;
use crate::files::read;

/// The thumb targets the core crates and the firmware are built for: every board's, once.
pub(crate) fn thumb_targets() -> Vec<&'static str> {
    let mut targets: Vec<&str> = s2s_device::BOARDS.iter().map(|b| b.target).collect();
    targets.sort_unstable();
    targets.dedup();
    targets
}

/// The target the attention explorer's WebAssembly core is built for
/// (`cargo xtask explorer`).
pub(crate) const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Debian packages the tests need, each with a file that shows it is installed:
/// QEMU (the firmware tests and the demo), DejaVu Sans (the heatmap's reference
/// render of Arabic labels), make and the Arm GCC for the C embed example
/// (`examples/c`, tests/tests/embed.rs), and Chromium and its WebDriver for the
/// explorer's page (tests/tests/explorer.rs).
const APT_PACKAGES: [(&str, &str); 6] = [
    ("qemu-system-arm", "/usr/bin/qemu-system-arm"),
    ("make", "/usr/bin/make"),
    ("gcc-arm-none-eabi", "/usr/bin/arm-none-eabi-gcc"),
    (
        "fonts-dejavu-core",
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    ),
    ("chromium", "/usr/bin/chromium"),
    ("chromium-driver", "/usr/bin/chromedriver"),
];

/// The packages only the explorer needs (its browser test): the demo goes without them.
const EXPLORER_PACKAGES: [&str; 2] = ["chromium", "chromium-driver"];

impl Ctx {
    /// `cargo xtask setup` (see the module docs): everything, the explorer's tools too.
    pub(crate) fn setup(&self) -> Result {
        self.setup_for(true)
    }

    /// The set-up, with the explorer's WebAssembly target, Chromium and wasm-bindgen-cli
    /// only when `explorer` (`cargo xtask demo` does not use them).
    pub(crate) fn setup_for(&self, explorer: bool) -> Result {
        println!("==> setup");
        // Rust: the thumb targets, the explorer's WebAssembly target, rustfmt and clippy.
        let rustup = || Command::new("rustup");
        let installed = self
            .capture(rustup().args(["target", "list", "--installed"]))
            .map_err(|e| {
                format!("{e}\n(rustup manages the Rust targets; install it from https://rustup.rs)")
            })?;
        let have: Vec<&str> = installed.lines().map(str::trim).collect();
        let mut targets = thumb_targets();
        if explorer {
            targets.push(WASM_TARGET);
        }
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

        // QEMU, fonts, Chromium and its WebDriver, from Debian's packages.
        let have = |package: &str, file: &str| {
            if package == qemu::QEMU {
                find_program(&qemu::program().to_string_lossy()).is_some()
            } else {
                Path::new(file).is_file()
            }
        };
        let wanted: Vec<(&str, &str)> = APT_PACKAGES
            .into_iter()
            .filter(|(p, _)| explorer || !EXPLORER_PACKAGES.contains(p))
            .collect();
        let missing: Vec<&str> = wanted
            .iter()
            .filter(|(p, f)| !have(p, f))
            .map(|(p, _)| *p)
            .collect();
        if missing.is_empty() {
            let names: Vec<&str> = wanted.iter().map(|(p, _)| *p).collect();
            println!("debian packages: {} already installed", names.join(", "));
        } else if is_root() {
            self.run(&mut apt(&["update"]))?;
            let (qemu_missing, others): (Vec<&str>, Vec<&str>) =
                missing.iter().partition(|p| **p == qemu::QEMU);
            if !others.is_empty() {
                self.run(apt(&APT_INSTALL).args(&others))?;
            }
            if !qemu_missing.is_empty() && self.run(apt(&APT_INSTALL).arg(qemu::QEMU)).is_err() {
                self.private_qemu()?;
            }
            if let Some((p, _)) = wanted.iter().find(|(p, f)| !have(p, f)) {
                return Err(format!("{p} is still missing after `apt-get install {p}`").into());
            }
        } else {
            return Err(format!(
                "{} missing; install with:\n  sudo apt-get update && sudo apt-get {} {}",
                missing.join(", "),
                APT_INSTALL.join(" "),
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

        // wasm-bindgen-cli makes the explorer's JavaScript glue; it must be of the very
        // version of the `wasm-bindgen` crate the explorer is built with.
        // Not `--locked`: the CLI's own lockfile names a webpki-roots release (1.0.11)
        // that crates.io's index here does not hold, so cargo resolves its dependencies.
        if !explorer {
            return Ok(());
        }
        let version = self.wasm_bindgen_version()?;
        match wasm_bindgen_cli() {
            Some(v) if cli_version_is(&v, &version) => {
                println!("wasm-bindgen-cli: {version} already installed");
            }
            _ => {
                self.run(
                    self.cargo()
                        .args(["install", "wasm-bindgen-cli", "--version", &version]),
                )?
            }
        }
        Ok(())
    }

    /// The version of the `wasm-bindgen` crate in Cargo.lock.
    pub(crate) fn wasm_bindgen_version(&self) -> Result<String> {
        let lock = self.root.join("Cargo.lock");
        let text = read(&lock)?;
        locked_version(&text, "wasm-bindgen").ok_or_else(|| {
            format!(
                "{}: no `wasm-bindgen` package (the explorer depends on it)",
                lock.display()
            )
            .into()
        })
    }

    /// Debian's QEMU where installing it would remove a package (`--no-remove` stopped
    /// apt: a newer `qemu-utils` breaks Debian 12's `qemu-system-common`): its
    /// libraries installed, its three packages downloaded and unpacked into
    /// [`qemu::private_dir`], where `s2s` and the tests find it ([`qemu::program`]).
    fn private_qemu(&self) -> Result {
        let dir = qemu::private_dir();
        let debs = dir.join("debs");
        println!(
            "{}: apt would remove a package to install it; unpacking Debian's packages into {} instead",
            qemu::QEMU,
            dir.display()
        );
        std::fs::create_dir_all(&debs).map_err(|e| format!("{}: {e}", debs.display()))?;
        let shown = self.capture(
            Command::new("apt-cache")
                .args(["show", "--no-all-versions"])
                .args(QEMU_DEBS),
        )?;
        self.run(apt(&APT_INSTALL).args(library_depends(&shown)))?;
        self.run(apt(&["download"]).args(QEMU_DEBS).current_dir(&debs))?;
        let entries = std::fs::read_dir(&debs).map_err(|e| format!("{}: {e}", debs.display()))?;
        for deb in entries {
            let deb = deb.map_err(|e| format!("{}: {e}", debs.display()))?.path();
            if deb.extension().is_some_and(|e| e == "deb") {
                self.run(Command::new("dpkg").arg("-x").arg(&deb).arg(&dir))?;
            }
        }
        Ok(())
    }
}

/// `apt-get install` that never removes a package (a newer `qemu-utils` than Debian's
/// QEMU wants, say) and installs only what it names.
const APT_INSTALL: [&str; 4] = ["install", "-y", "--no-install-recommends", "--no-remove"];

/// Debian's QEMU for Arm in three packages (`qemu-system-arm` needs the other two).
const QEMU_DEBS: [&str; 3] = ["qemu-system-arm", "qemu-system-common", "qemu-system-data"];

/// `apt-get ARGS`, non-interactive.
fn apt(args: &[&str]) -> Command {
    let mut c = Command::new("apt-get");
    c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
    c
}

/// The packages named by the `Depends:` lines of `apt-cache show`'s output but QEMU's
/// own (the first of each set of alternatives, without version or architecture).
fn library_depends(shown: &str) -> Vec<String> {
    let mut names: Vec<String> = shown
        .lines()
        .filter_map(|l| l.strip_prefix("Depends:"))
        .flat_map(|l| l.split(','))
        .filter_map(|d| d.split('|').next()?.split_whitespace().next())
        .map(|n| n.split(':').next().unwrap_or(n).to_string())
        .filter(|n| !n.starts_with("qemu-"))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The version of the package `name` in a Cargo.lock's text (the first one, should
/// there be several).
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let quoted = format!("\"{name}\"");
    lock.split("[[package]]").find_map(|entry| {
        let field = |key: &str| {
            entry.lines().find_map(|l| {
                let v = l.trim().strip_prefix(key)?.trim_start().strip_prefix('=')?;
                Some(v.trim().to_string())
            })
        };
        if field("name")? != quoted {
            return None;
        }
        field("version").map(|v| v.trim_matches('"').to_string())
    })
}

/// What `wasm-bindgen --version` prints (`wasm-bindgen 0.2.130`), if it runs.
pub(crate) fn wasm_bindgen_cli() -> Option<String> {
    Command::new("wasm-bindgen")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// True when `wasm-bindgen --version`'s line (`wasm-bindgen 0.2.130`) is of `version`.
pub(crate) fn cli_version_is(line: &str, version: &str) -> bool {
    line.split_whitespace().nth(1) == Some(version)
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
    use super::{cli_version_is, library_depends, locked_version, APT_PACKAGES};

    /// A package's version is read from its own entry of Cargo.lock, not from a package
    /// whose name only starts the same.
    #[test]
    fn the_wasm_bindgen_version_comes_from_cargo_lock() {
        let lock = "version = 4\n\n\
            [[package]]\nname = \"wasm-bindgen-macro\"\nversion = \"0.2.9\"\n\n\
            [[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.130\"\n\
            source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\
            dependencies = [\n \"wasm-bindgen-macro\",\n]\n";
        assert_eq!(
            locked_version(lock, "wasm-bindgen").as_deref(),
            Some("0.2.130")
        );
        assert_eq!(locked_version(lock, "serde"), None);
        let real = include_str!("../../Cargo.lock");
        assert!(locked_version(real, "wasm-bindgen").is_some());
        assert!(cli_version_is("wasm-bindgen 0.2.130", "0.2.130"));
        assert!(!cli_version_is("wasm-bindgen 0.2.13", "0.2.130"));
    }

    /// QEMU's libraries from `apt-cache show`, without QEMU's own packages.
    #[test]
    fn qemu_libraries_come_from_the_depends_lines() {
        let shown = "Package: qemu-system-arm\n\
            Depends: libaio1 (>= 0.3.93), libc6:any (>= 2.34), qemu-system-common (= 1:7.2), \
            libfdt1 | libfdt-alt\n\
            Description: Depends: nothing\n\
            Package: qemu-system-common\nDepends: libc6 (>= 2.34), libslirp0\n";
        assert_eq!(
            library_depends(shown),
            ["libaio1", "libc6", "libfdt1", "libslirp0"]
        );
    }

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
