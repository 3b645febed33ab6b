//! The directory `s2s` builds and keeps device tools in, outside any checkout: the
//! firmware builds ([`super::Firmware::target_dir`]) and, where Debian's QEMU cannot be
//! installed beside the machine's own packages, a private copy of it
//! ([`super::qemu::private_dir`], made by `cargo xtask setup`).

use std::path::PathBuf;

/// The environment variable naming the cache directory.
pub const CACHE_DIR_VAR: &str = "S2S_CACHE_DIR";

/// `S2S_CACHE_DIR`, else `$XDG_CACHE_HOME/s2s`, else `~/.cache/s2s`, else (no home)
/// `s2s-cache` in the system's temporary directory.
pub fn cache_dir() -> PathBuf {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var(CACHE_DIR_VAR)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("s2s")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/s2s")))
        .unwrap_or_else(|| std::env::temp_dir().join("s2s-cache"))
}
