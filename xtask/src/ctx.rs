//! Where things are ([`Ctx`]: the root, cargo's target directory, the tools built there)
//! and how commands are run: printed first (`$ ...`), failing with their command line.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::files::fresh;

/// Where things are.
pub(crate) struct Ctx {
    /// The repository root (the workspace directory).
    pub(crate) root: PathBuf,
    /// Cargo's target directory (honours `CARGO_TARGET_DIR`).
    pub(crate) target: PathBuf,
    /// The cargo that runs us.
    pub(crate) cargo: String,
}

/// Commands that take this long get their time printed after them.
const LONG_SECONDS: f64 = 10.0;

impl Ctx {
    pub(crate) fn new() -> Result<Self> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .ok_or("xtask is not inside the workspace")?
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut ctx = Ctx {
            target: root.join("target"),
            root,
            cargo,
        };
        ctx.target = ctx.target_dir()?;
        Ok(ctx)
    }

    /// Cargo's target directory, as `cargo metadata` reports it.
    pub(crate) fn target_dir(&self) -> Result<PathBuf> {
        let json = self.capture(Command::new(&self.cargo).args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
        ]))?;
        target_directory(&json).ok_or_else(|| "`cargo metadata` gave no target_directory".into())
    }

    pub(crate) fn models_dir(&self) -> PathBuf {
        self.target.join("models")
    }

    pub(crate) fn pkgs_dir(&self) -> PathBuf {
        self.target.join("pkgs")
    }

    /// The release `s2s` binary (built by [`Ctx::build_s2s`]).
    pub(crate) fn s2s(&self) -> PathBuf {
        self.target.join("release").join("s2s")
    }

    /// A path as printed: relative to the root when inside it.
    pub(crate) fn show(&self, p: &Path) -> String {
        p.strip_prefix(&self.root)
            .unwrap_or(p)
            .display()
            .to_string()
    }

    /// A command line as printed (arguments relative to the root, quoted when needed).
    pub(crate) fn cmdline(&self, cmd: &Command) -> String {
        let mut s = String::new();
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                let _ = write!(s, "{}={} ", k.to_string_lossy(), quote(v));
            }
        }
        let prog = Path::new(cmd.get_program());
        s += &if prog == Path::new(&self.cargo) {
            "cargo".into()
        } else {
            self.show(prog)
        };
        for a in cmd.get_args() {
            s.push(' ');
            s += &quote(OsStr::new(&self.show(Path::new(a))));
        }
        if let Some(dir) = cmd.get_current_dir() {
            if dir != self.root {
                s = format!("(cd {} && {s})", self.show(dir));
            }
        }
        s
    }

    /// Prints and runs a command (in the root unless it says otherwise); fails unless it
    /// exits with 0.
    pub(crate) fn run(&self, cmd: &mut Command) -> Result {
        if cmd.get_current_dir().is_none() {
            cmd.current_dir(&self.root);
        }
        let line = self.cmdline(cmd);
        println!("$ {line}");
        let start = std::time::Instant::now();
        let status = match cmd.status() {
            Ok(status) => status,
            Err(source) => return Err(Error::Start { line, source }),
        };
        let took = start.elapsed().as_secs_f64();
        if took >= LONG_SECONDS {
            println!("  ({took:.0} s)");
        }
        if status.success() {
            Ok(())
        } else {
            Err(Error::Failed {
                line,
                status,
                stderr: None,
            })
        }
    }

    /// Runs a command quietly and returns its standard output.
    pub(crate) fn capture(&self, cmd: &mut Command) -> Result<String> {
        if cmd.get_current_dir().is_none() {
            cmd.current_dir(&self.root);
        }
        let line = self.cmdline(cmd);
        let out = match cmd.stderr(Stdio::piped()).output() {
            Ok(out) => out,
            Err(source) => return Err(Error::Start { line, source }),
        };
        if !out.status.success() {
            return Err(Error::Failed {
                line,
                status: out.status,
                stderr: Some(String::from_utf8_lossy(&out.stderr).trim().to_string()),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub(crate) fn cargo(&self) -> Command {
        Command::new(&self.cargo)
    }

    /// `cargo build --release -p host-tools --bin s2s` (a no-op when up to date), with
    /// cargo's progress: a cold build takes minutes. With `train`, the `train` feature
    /// (candle), for `s2s train`; the models and the demo need none.
    pub(crate) fn build_s2s(&self, train: bool) -> Result {
        let mut cargo = self.cargo();
        cargo.args(["build", "--release", "-p", "host-tools", "--bin", "s2s"]);
        if train {
            cargo.args(["--features", "train"]);
        }
        self.run(&mut cargo)
    }

    /// Runs the command that makes `output` unless it is newer than all `inputs`.
    pub(crate) fn make(&self, output: &Path, inputs: &[&Path], mut cmd: Command) -> Result {
        if fresh(&[output], inputs) {
            println!("{}: up to date", self.show(output));
            return Ok(());
        }
        self.run(&mut cmd)
    }
}

/// The `target_directory` of `cargo metadata`'s JSON output.
fn target_directory(metadata: &str) -> Option<PathBuf> {
    let metadata: serde_json::Value = serde_json::from_str(metadata).ok()?;
    metadata["target_directory"].as_str().map(PathBuf::from)
}

/// Shell quoting for printed command lines.
fn quote(s: &OsStr) -> String {
    let s = s.to_string_lossy();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_directory_is_read_from_cargo_metadata() {
        let json = r#"{"packages":[],"target_directory":"/work/a \"b\"\u00e9\\t","version":1}"#;
        assert_eq!(
            target_directory(json),
            Some(PathBuf::from("/work/a \"b\"\u{e9}\\t"))
        );
        assert_eq!(target_directory(r#"{"version":1}"#), None);
        assert_eq!(target_directory("not json"), None);
    }
}
