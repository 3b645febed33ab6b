//! `cargo xtask explorer`: the attention explorer's page, built into `target/explorer/`.
//!
//! The crate `explorer/` (`s2s-explorer`) compiled for `wasm32-unknown-unknown`,
//! `wasm-bindgen --target no-modules` for its JavaScript glue (`pkg/s2s_explorer.js`,
//! which defines the global `wasm_bindgen`, and `pkg/s2s_explorer_bg.wasm`), the wasm's
//! bytes once more in base64 as `pkg/s2s_explorer_wasm.js` (opened from disk, from a
//! `file://` address, Chromium fetches no `.wasm`, but it runs a classic script), Noto
//! Sans Khmer (the PNG heatmaps' font, `host-tools/fonts/`) as a `data:` URL in
//! `pkg/fonts.css` (for netra's Khmer output, on a machine without a Khmer font, from
//! disk too), and the page itself, `explorer/web/*`. `s2s explore` serves that folder;
//! tests/tests/explorer.rs drives it in headless Chromium.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::files::write;
use crate::setup::{cli_version_is, wasm_bindgen_cli, WASM_TARGET};

/// The explorer's package and its wasm file's stem.
const PACKAGE: &str = "s2s-explorer";
const WASM_STEM: &str = "s2s_explorer";

/// The Khmer font the page's `pkg/fonts.css` embeds, its licence beside it, and the
/// family name the page's style asks for.
const KHMER_FONT: &str = "host-tools/fonts/NotoSansKhmer-Regular.ttf";
const KHMER_FONT_LICENCE: &str = "host-tools/fonts/OFL.txt";
const KHMER_FAMILY: &str = "Noto Sans Khmer";

impl Ctx {
    /// `cargo xtask explorer` (see the module docs).
    pub(crate) fn explorer(&self) -> Result {
        println!("==> explorer");
        let version = self.wasm_bindgen_version()?;
        match wasm_bindgen_cli() {
            Some(line) if cli_version_is(&line, &version) => {}
            Some(line) => {
                return Err(format!(
                    "`wasm-bindgen --version` prints `{line}`, Cargo.lock has wasm-bindgen {version}: \
                     run `cargo xtask setup` (it installs wasm-bindgen-cli {version})"
                )
                .into())
            }
            None => {
                return Err(format!(
                    "no wasm-bindgen on PATH: run `cargo xtask setup` (it installs wasm-bindgen-cli {version})"
                )
                .into())
            }
        }

        self.run(self.cargo().args([
            "build",
            "-p",
            PACKAGE,
            "--release",
            "--target",
            WASM_TARGET,
        ]))?;
        let wasm = self
            .target
            .join(WASM_TARGET)
            .join("release")
            .join(format!("{WASM_STEM}.wasm"));
        let out = self.target.join("explorer");
        let pkg = out.join("pkg");
        fs::create_dir_all(&pkg).map_err(Error::io(&pkg))?;
        self.run(
            Command::new("wasm-bindgen")
                .args(["--target", "no-modules", "--no-typescript", "--out-dir"])
                .arg(&pkg)
                .arg(&wasm),
        )?;

        // The module's bytes as a classic script, for the page opened from disk.
        let bg = pkg.join(format!("{WASM_STEM}_bg.wasm"));
        let bytes = fs::read(&bg).map_err(Error::io(&bg))?;
        let script = pkg.join(format!("{WASM_STEM}_wasm.js"));
        write(
            &script,
            &format!("const S2S_EXPLORER_WASM = \"{}\";\n", base64(&bytes)),
        )?;
        println!("wrote {}", self.show(&script));

        // The Khmer font as a data: URL, with its licence.
        let font = self.root.join(KHMER_FONT);
        let font_bytes = fs::read(&font).map_err(Error::io(&font))?;
        let css = pkg.join("fonts.css");
        write(&css, &font_css(&font_bytes))?;
        let licence = self.root.join(KHMER_FONT_LICENCE);
        let licence_copy = pkg.join("OFL.txt");
        fs::copy(&licence, &licence_copy).map_err(Error::io(&licence_copy))?;
        println!(
            "wrote {} ({} as a data: URL; its licence: {})",
            self.show(&css),
            KHMER_FONT,
            self.show(&licence_copy)
        );

        let web = self.root.join("explorer").join("web");
        copy_tree(&web, &out)?;
        println!("copied {}/* into {}", self.show(&web), self.show(&out));

        let index = out.join("index.html");
        if !index.is_file() {
            return Err(format!(
                "{}: missing (explorer/web has no index.html)",
                index.display()
            )
            .into());
        }
        println!("explorer: {}", index.display());
        println!("  (open it in a browser and drop a .s2s file on it, or `s2s explore MODEL`)");
        println!("wasm: {} bytes ({})", bytes.len(), self.show(&bg));
        Ok(())
    }
}

/// Copies the files of `from` (and of its folders, recursively) into `to`.
fn copy_tree(from: &Path, to: &Path) -> Result {
    fs::create_dir_all(to).map_err(Error::io(to))?;
    for entry in fs::read_dir(from).map_err(Error::io(from))? {
        let entry = entry.map_err(Error::io(from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(Error::io(&src))?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).map_err(Error::io(&dst))?;
        }
    }
    Ok(())
}

/// `pkg/fonts.css`: an `@font-face` of [`KHMER_FAMILY`] whose source is `ttf` itself.
fn font_css(ttf: &[u8]) -> String {
    format!(
        "/* {KHMER_FAMILY} Regular, unmodified ({KHMER_FONT}), SIL Open Font License 1.1 \
         (OFL.txt beside this file); written by `cargo xtask explorer`. */\n\
         @font-face {{ font-family: \"{KHMER_FAMILY}\"; font-style: normal; font-weight: 400; \
         src: url(\"data:font/ttf;base64,{}\") format(\"truetype\"); }}\n",
        base64(ttf)
    )
}

/// Standard base64 (RFC 4648, `+/`, with `=` padding), as `atob` reads it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                s.push(char::from(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize]));
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::base64;

    /// RFC 4648's test vectors, and every byte value.
    #[test]
    fn base64_is_rfc_4648s() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
        let all: Vec<u8> = (0..=255).collect();
        let coded = base64(&all);
        assert!(coded.starts_with("AAECAwQFBgcICQoLDA0ODx"));
        assert!(coded.ends_with("+/w=="));
        assert_eq!(coded.len(), 344);
    }
}
