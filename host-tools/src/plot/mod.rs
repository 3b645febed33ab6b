//! Pictures of a model's attention: a heatmap in the terminal ([`render_terminal`]) or
//! as a picture ([`write_image`]). A picture is laid out once ([`layout`]), written as
//! SVG ([`svg`]), and for PNG rasterised from that SVG by `resvg` ([`png`]), which shapes
//! every script with real fonts.

pub mod chart;
pub mod colour;
pub mod labels;
pub mod layout;
pub mod map;
pub mod png;
pub mod svg;
pub mod terminal;

use std::path::Path;
use std::sync::Arc;

pub use map::{attention_map, AttentionMap};
pub use terminal::render_terminal;

use crate::error::{Error, Result};
use crate::io::write_atomic;
use layout::{Item, Layout};

/// `s2s heatmap`: the attention map of `source` through `model`, written as a picture
/// to `output` (returning the notes for the user), or else drawn for a terminal into
/// `out` (with 24-bit colours when `color`).
pub fn heatmap(
    m: &crate::model::LoadedModel,
    source: &str,
    output: Option<&Path>,
    color: bool,
    out: &mut dyn std::io::Write,
) -> Result<Vec<String>> {
    let map = attention_map(m, source)?;
    match output {
        Some(path) => Ok(write_image(&map, path)?.warnings),
        None => {
            out.write_all(render_terminal(&map, color).as_bytes())
                .map_err(Error::io(crate::io::STDOUT_NAME))?;
            Ok(Vec::new())
        }
    }
}

/// What [`write_image`] has to say about a picture it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageReport {
    /// One-line notes for the user, e.g. that no font covers a label. Empty for SVG.
    pub warnings: Vec<String>,
}

/// Writes the map as a picture; the format follows the extension (`.png` or `.svg`,
/// any case), anything else is an error naming the path. The file is written atomically:
/// an error never leaves a half-written file behind.
pub fn write_image(map: &AttentionMap, path: &Path) -> Result<ImageReport> {
    write_image_with(map, path, png::fonts)
}

/// [`write_image`] with the fonts `fonts` gives (called only for PNG).
pub fn write_image_with(
    map: &AttentionMap,
    path: &Path,
    fonts: impl FnOnce() -> resvg::usvg::fontdb::Database,
) -> Result<ImageReport> {
    let fail = |reason: &dyn std::fmt::Display| {
        Error::usage(format!("cannot write heatmap {}: {reason}", path.display()))
    };
    let png = is_png(path).map_err(|e| fail(&e))?;
    if let Some(reason) = map.shape_error() {
        return Err(fail(&reason));
    }
    let layout = Layout::bounded(map).map_err(|e| fail(&e))?;
    let svg = svg::render_svg(&layout, map);
    let (bytes, warnings) = if png {
        let db = fonts();
        let items = layout.items(map);
        let texts = items.iter().filter_map(|i| match i {
            Item::Text(t) => Some(t.text.as_str()),
            _ => None,
        });
        let warnings = png::coverage_warnings(&db, texts);
        (
            png::render_png(&svg, Arc::new(db)).map_err(|e| fail(&e))?,
            warnings,
        )
    } else {
        (svg.into_bytes(), Vec::new())
    };
    write_atomic(path, &bytes)?;
    Ok(ImageReport { warnings })
}

/// A picture path whose extension is neither `.png` nor `.svg`.
#[derive(Debug, thiserror::Error)]
#[error("unknown image format (use a .png or .svg extension)")]
struct UnknownFormat;

/// Whether a picture path asks for PNG (else SVG); another extension is an error.
fn is_png(path: &Path) -> std::result::Result<bool, UnknownFormat> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("png") => Ok(true),
        Some("svg") => Ok(false),
        _ => Err(UnknownFormat),
    }
}

/// Writes a chart to `path`: SVG, or PNG rasterised from it (by the extension).
pub fn write_chart(chart: &chart::Chart, path: &Path) -> Result {
    let fail = |reason: &dyn std::fmt::Display| {
        Error::usage(format!("cannot write chart {}: {reason}", path.display()))
    };
    let svg = chart.svg();
    let bytes = if is_png(path).map_err(|e| fail(&e))? {
        png::render_png(&svg, Arc::new(png::fonts())).map_err(|e| fail(&e))?
    } else {
        svg.into_bytes()
    };
    write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests;
