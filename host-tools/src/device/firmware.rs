//! Finding and building the firmware (`firmware/` of the s2s repository) for a board.
//!
//! `s2s` installed with `cargo install --locked --path host-tools` knows where its checkout was;
//! elsewhere `--firmware-dir` (or `S2S_FIRMWARE_DIR`) names the `firmware/` directory.
//! The builds go to a cache directory outside the checkout ([`Firmware::target_dir`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use s2s_device::board::Driver;
use s2s_device::Board;

use super::cache::cache_dir;
use crate::error::{Error, Result};

/// The environment variable naming the firmware directory.
pub const FIRMWARE_DIR_VAR: &str = "S2S_FIRMWARE_DIR";

/// The firmware sources: a `firmware/` directory of the s2s repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Firmware {
    /// The directory (holding `Cargo.toml` and `.cargo/config.toml`).
    pub dir: PathBuf,
}

impl Firmware {
    /// `dir` if given, else `S2S_FIRMWARE_DIR`, else the `firmware/` of the checkout this
    /// `s2s` was built from, if it is still there.
    pub fn locate(dir: Option<&Path>) -> Result<Firmware> {
        let env = std::env::var_os(FIRMWARE_DIR_VAR).map(PathBuf::from);
        let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware");
        let dir = match dir.map(Path::to_path_buf).or(env) {
            Some(dir) => dir,
            None if built_from.join("Cargo.toml").is_file() => built_from,
            None => {
                return Err(Error::usage(format!(
                    "running on a board needs the firmware sources of the s2s repository: \
                     run s2s from its checkout, or pass --firmware-dir DIR (or set {FIRMWARE_DIR_VAR})"
                )))
            }
        };
        if !dir.join("Cargo.toml").is_file() {
            return Err(Error::usage(format!(
                "{}: not the s2s firmware directory (no Cargo.toml)",
                dir.display()
            )));
        }
        Ok(Firmware { dir })
    }

    /// Builds one binary (`firmware`, `probe`, `panic-test`, `hardfault-test`) for `board`
    /// with `cargo build` in the firmware directory (so that its `.cargo/config.toml`
    /// applies) and `S2S_BOARD` set, and returns the ELF's path. Cargo rebuilds only what
    /// changed.
    pub fn build(&self, board: &Board, bin: &str, release: bool) -> Result<PathBuf> {
        self.build_with(board, bin, release, &[])
    }

    /// [`Firmware::build`] with the firmware's cargo `features` on (e.g. `no-panic`).
    pub fn build_with(
        &self,
        board: &Board,
        bin: &str,
        release: bool,
        features: &[&str],
    ) -> Result<PathBuf> {
        self.cargo_build(board, bin, release, features, Variant::Default)
    }

    /// The minimal firmware: [`Firmware::build`] with only `features` (a precision and
    /// model parts, see [`minimal_features`]) instead of the default ones. It is built
    /// in a target directory of its own (`target/minimal`), so that it never replaces
    /// the default build's ELF.
    pub fn build_minimal(
        &self,
        board: &Board,
        bin: &str,
        release: bool,
        features: &[&str],
    ) -> Result<PathBuf> {
        self.cargo_build(board, bin, release, features, Variant::Minimal)
    }

    /// The one-model firmware: the model of `module` (written by `s2s embed` for
    /// `board`, [`super::embed::embed`]) linked in, with only `features` (the model's
    /// parts, [`minimal_features`]); in a target directory of its own (`target/one-model`).
    pub fn build_one_model(
        &self,
        board: &Board,
        module: &Path,
        release: bool,
        features: &[&str],
    ) -> Result<PathBuf> {
        self.cargo_build(
            board,
            "firmware",
            release,
            features,
            Variant::OneModel(module),
        )
    }

    /// The crate that builds `board`'s firmware: this directory for the boards with a
    /// register driver, `boards/<dir>` for a HAL board (`s2s_device::board::Driver`).
    pub fn crate_dir(&self, board: &Board) -> PathBuf {
        match board.driver {
            Driver::Registers => self.dir.clone(),
            Driver::Hal { dir } => self.dir.join("boards").join(dir),
        }
    }

    /// Where `board`'s firmware crate is built: `<crate>-<hash of its path>` in the cache
    /// directory ([`cache_dir`]), so that a build never writes into the checkout and two
    /// checkouts never share one build. The minimal build goes to its `minimal/` folder.
    pub fn target_dir(&self, board: &Board) -> PathBuf {
        let dir = self.crate_dir(board);
        let dir = dir.canonicalize().unwrap_or(dir);
        let mut hasher = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&dir, &mut hasher);
        let name = dir
            .file_name()
            .map_or("firmware".into(), |n| n.to_string_lossy());
        cache_dir().join(format!(
            "{name}-{:016x}",
            std::hash::Hasher::finish(&hasher)
        ))
    }

    fn cargo_build(
        &self,
        board: &Board,
        bin: &str,
        release: bool,
        features: &[&str],
        variant: Variant<'_>,
    ) -> Result<PathBuf> {
        let minimal = variant != Variant::Default;
        let mut cmd_env = Vec::new();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let dir = self.crate_dir(board);
        if dir != self.dir && (minimal || !features.is_empty() || bin != "firmware") {
            return Err(Error::usage(format!(
                "{} is built by its own crate ({}): only its default `firmware` binary, \
                 without extra features or a minimal build",
                board.name,
                dir.display()
            )));
        }
        let mut target_dir = self.target_dir(board);
        match variant {
            Variant::Default => {}
            Variant::Minimal => target_dir.push("minimal"),
            Variant::OneModel(module) => {
                target_dir.push("one-model");
                cmd_env.push((s2s_device::EMBED_VAR, module.as_os_str().to_owned()));
            }
        }
        let mut cmd = Command::new(cargo);
        cmd.current_dir(&dir)
            .args(["build", "--bin", bin, "--target", board.target])
            .arg("--target-dir")
            .arg(&target_dir)
            .env("S2S_BOARD", board.name)
            .env_remove(s2s_device::EMBED_VAR)
            .envs(cmd_env);
        if release {
            cmd.arg("--release");
        }
        if minimal {
            cmd.arg("--no-default-features");
        }
        let mut features = features.to_vec();
        if dir != self.dir {
            // A HAL board's crate: the board is also its feature (the chip).
            features.push(board.name);
        }
        if !features.is_empty() {
            cmd.args(["--features", &features.join(",")]);
        }
        // Flags meant for the calling (host) build would replace the firmware's link flags.
        for var in [
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
        ] {
            cmd.env_remove(var);
        }
        let out = cmd.stdin(Stdio::null()).output().map_err(|e| Error::Tool {
            program: "cargo".into(),
            message: format!("cannot run it: {e}"),
        })?;
        if !out.status.success() {
            return Err(Error::Tool {
                program: "cargo".into(),
                message: format!(
                    "building the firmware for {} failed: {}",
                    board.name,
                    String::from_utf8_lossy(&out.stderr).trim_end()
                ),
            });
        }
        let profile = if release { "release" } else { "debug" };
        Ok(target_dir.join(board.target).join(profile).join(bin))
    }
}

/// Which firmware build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant<'a> {
    /// The default features.
    Default,
    /// Only the features given.
    Minimal,
    /// Only the features given, with the model of this module (`S2S_EMBED`).
    OneModel(&'a Path),
}

pub use s2s_inspect::{minimal_command, minimal_features, smallest_board};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_the_firmware_is_refused_in_one_line() {
        let e = Firmware::locate(Some(Path::new("/nonexistent"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/nonexistent: not the s2s firmware directory (no Cargo.toml)"
        );
        assert!(
            Firmware::locate(None).is_ok(),
            "this checkout has its firmware"
        );
    }
}
