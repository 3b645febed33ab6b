//! The picture as SVG text: the one drawing of a map, which `png` rasterises.

use super::colour::{hex, VIRIDIS};
use super::labels::xml_escape;
use super::layout::{Item, Layout};
use super::map::AttentionMap;

/// The font families asked for; the rasteriser falls back to any font that covers a
/// character the first ones lack.
pub(crate) const SVG_FONTS: &str = "DejaVu Sans, Noto Sans Khmer, sans-serif";

/// Writes the picture of `map` laid out by `layout` as SVG text.
pub(crate) fn render_svg(layout: &Layout, map: &AttentionMap) -> String {
    use std::fmt::Write as _;
    let (w, h) = (layout.width, layout.height);
    let mut svg = String::new();
    let _ = writeln!(svg, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{SVG_FONTS}">"#
    );
    let _ = writeln!(svg, "<title>{}</title>", xml_escape(&layout.title));
    let _ = writeln!(
        svg,
        r#"<defs><linearGradient id="ramp" x1="0" y1="1" x2="0" y2="0">"#
    );
    for (i, c) in VIRIDIS.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"  <stop offset="{}" stop-color="{}"/>"#,
            i as f32 / 10.0,
            hex(*c)
        );
    }
    let _ = writeln!(svg, "</linearGradient></defs>");
    for item in layout.items(map) {
        match item {
            Item::Rect {
                x,
                y,
                w,
                h,
                fill,
                cell: Some((r, c, weight)),
            } => {
                // A dense picture has no labels: its cells' tips name the positions.
                let label = |v: &[String], i: usize| v.get(i).cloned().unwrap_or(i.to_string());
                let tip = format!(
                    "{} ← {}: {weight:.3}",
                    label(&layout.row_labels, r),
                    label(&layout.col_labels, c)
                );
                let _ = writeln!(
                    svg,
                    r#"<rect class="cell" data-row="{r}" data-col="{c}" x="{x}" y="{y}" width="{w}" height="{h}" fill="{}"><title>{}</title></rect>"#,
                    hex(fill),
                    xml_escape(&tip)
                );
            }
            Item::Rect {
                x, y, w, h, fill, ..
            } => {
                let _ = writeln!(
                    svg,
                    r#"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{}"/>"#,
                    hex(fill)
                );
            }
            Item::Ramp { x, y, w, h } => {
                let _ = writeln!(
                    svg,
                    r#"<rect class="colorbar" x="{x}" y="{y}" width="{w}" height="{h}" fill="url(#ramp)"/>"#
                );
            }
            Item::Text(t) => {
                let (x, y) = (t.x, t.y);
                let place = if t.vertical {
                    format!(r#"transform="translate({x:.1} {y:.1}) rotate(-90)""#)
                } else {
                    format!(r#"x="{x:.1}" y="{y:.1}""#)
                };
                let _ = writeln!(
                    svg,
                    r#"<text {place} font-size="{}" fill="{}" text-anchor="{}">{}</text>"#,
                    t.size,
                    hex(t.fill),
                    t.anchor.svg(),
                    xml_escape(&t.text)
                );
            }
        }
    }
    svg.push_str("</svg>\n");
    svg
}
