//! PNG: the SVG drawing rasterised by `resvg` (usvg lays the text out and shapes it with
//! harfrust, so Khmer clusters, Arabic joining and Devanagari conjuncts come out as the
//! scripts want), with the system's fonts plus Noto Sans Khmer, which ships inside the
//! tool (`host-tools/fonts/`, SIL Open Font License 1.1).

use std::sync::Arc;

use resvg::tiny_skia;
use resvg::usvg::{self, fontdb};

/// Noto Sans Khmer Regular, unmodified (`host-tools/fonts/OFL.txt`).
pub const KHMER_FONT: &[u8] = include_bytes!("../../fonts/NotoSansKhmer-Regular.ttf");

/// The fonts pictures are drawn with: the system's, and the Khmer font shipped here.
pub fn fonts() -> fontdb::Database {
    let mut db = fontdb::Database::new();
    db.load_system_fonts();
    db.load_font_data(KHMER_FONT.to_vec());
    db
}

/// Why [`render_png`] could not make a picture.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenderError {
    /// The SVG does not parse.
    #[error("{0}")]
    Svg(#[from] usvg::Error),
    /// The pixmap cannot be allocated.
    #[error("a picture of {width}x{height} pixels is too large")]
    TooLarge {
        /// Its width in pixels.
        width: u32,
        /// Its height in pixels.
        height: u32,
    },
    /// The PNG encoder failed.
    #[error("{0}")]
    Encode(#[from] png::EncodingError),
}

/// Rasterises `svg` (white background, 8-bit RGB) and encodes it as PNG.
pub(crate) fn render_png(svg: &str, fonts: Arc<fontdb::Database>) -> Result<Vec<u8>, RenderError> {
    let options = usvg::Options {
        fontdb: fonts,
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options)?;
    let size = tree.size().to_int_size();
    let (w, h) = (size.width(), size.height());
    let mut pixmap = tiny_skia::Pixmap::new(w, h).ok_or(RenderError::TooLarge {
        width: w,
        height: h,
    })?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    // Opaque everywhere (white background), so the premultiplied RGBA is plain RGB.
    let rgb: Vec<u8> = pixmap
        .data()
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&rgb)?;
    writer.finish()?;
    Ok(out)
}

/// Characters that draw nothing and need no glyph (spaces, joiners, selectors).
fn ignorable(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' | '\u{fe00}'..='\u{fe0f}')
}

/// Whether some font of `db` has a glyph for `c`.
fn covered(db: &fontdb::Database, c: char) -> bool {
    db.faces().any(|face| {
        db.with_face_data(face.id, |data, index| {
            skrifa::FontRef::from_index(data, index)
                .ok()
                .and_then(|f| skrifa::MetadataProvider::charmap(&f).map(c))
                .is_some()
        })
        .unwrap_or(false)
    })
}

/// The labels of `texts` with a character that no font of `db` covers (drawn as empty
/// boxes), as one-line notes for the user.
pub(crate) fn coverage_warnings<'t>(
    db: &fontdb::Database,
    texts: impl IntoIterator<Item = &'t str>,
) -> Vec<String> {
    if db.is_empty() {
        return vec![
            "PNG drawn without text: no font found; install one (e.g. fonts-dejavu-core) or use the .svg output"
                .into(),
        ];
    }
    let mut missing: Vec<&str> = texts
        .into_iter()
        .filter(|t| t.chars().any(|c| !ignorable(c) && !covered(db, c)))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if missing.is_empty() {
        return Vec::new();
    }
    const SHOWN: usize = 4;
    let mut labels: Vec<String> = missing
        .iter()
        .take(SHOWN)
        .map(|s| format!("'{s}'"))
        .collect();
    if missing.len() > SHOWN {
        labels.push(format!("{} more", missing.len() - SHOWN));
    }
    vec![format!(
        "PNG: no available font has glyphs for {}; install fonts that cover them (e.g. fonts-noto-core) or use the .svg output",
        labels.join(", ")
    )]
}
