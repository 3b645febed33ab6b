//! Line charts (error rate against source length, one line per model), drawn as SVG
//! like the heatmaps and rasterised the same way for PNG.

use std::fmt::Write as _;

use super::colour::{hex, GREY, INK, LIGHT, WHITE};
use super::labels::xml_escape;
use super::layout::estimate_width;
use super::svg::SVG_FONTS;

/// Line colours, one per series (colour-blind safe, Okabe and Ito).
const LINES: [[u8; 3]; 6] = [
    [0x00, 0x72, 0xb2],
    [0xd5, 0x5e, 0x00],
    [0x00, 0x9e, 0x73],
    [0xcc, 0x79, 0xa7],
    [0xe6, 0x9f, 0x00],
    [0x56, 0xb4, 0xe9],
];

/// One line: a name and a value per x position (`None`: no point there).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// Values, one per x label.
    pub values: Vec<Option<f64>>,
    /// Drawn dashed.
    pub dashed: bool,
}

/// A line chart over labelled x positions.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// The x axis's caption and its position labels.
    pub x_caption: String,
    /// See `x_caption`.
    pub x_labels: Vec<String>,
    /// The y axis's caption.
    pub y_caption: String,
    /// The lines.
    pub series: Vec<Series>,
}

/// A round step for about five ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

impl Chart {
    /// The chart as SVG text.
    pub fn svg(&self) -> String {
        let (w, h) = (760.0f64, 440.0f64);
        let (left, right, top, bottom) = (70.0, 190.0, 56.0, 64.0);
        let (pw, ph) = (w - left - right, h - top - bottom);
        let max = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .fold(0.0f64, |a, &b| a.max(b));
        let step = tick_step(max.max(1e-6));
        let top_value = (max / step).ceil().max(1.0) * step;
        let n = self.x_labels.len().max(1);
        let x = |i: usize| left + pw * (i as f64 + 0.5) / n as f64;
        let y = |v: f64| top + ph * (1.0 - v / top_value);
        let mut s = String::new();
        let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{SVG_FONTS}">"#
        );
        let _ = writeln!(s, "<title>{}</title>", xml_escape(&self.title));
        let _ = writeln!(
            s,
            r#"<rect width="{w}" height="{h}" fill="{}"/>"#,
            hex(WHITE)
        );
        let text = |s: &mut String,
                    x: f64,
                    y: f64,
                    size: f64,
                    anchor: &str,
                    fill: [u8; 3],
                    t: &str| {
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" fill="{}" text-anchor="{anchor}">{}</text>"#,
                hex(fill),
                xml_escape(t)
            );
        };
        text(&mut s, 22.0, 32.0, 16.0, "start", INK, &self.title);
        // Grid and y ticks.
        let mut v = 0.0;
        while v <= top_value + step / 2.0 {
            let yy = y(v);
            let _ = writeln!(
                s,
                r#"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{}" stroke-width="1"/>"#,
                left + pw,
                hex(LIGHT)
            );
            let label = if step < 1.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.0}")
            };
            text(&mut s, left - 8.0, yy + 4.0, 11.0, "end", GREY, &label);
            v += step;
        }
        // Axes.
        let _ = writeln!(
            s,
            r#"<path d="M{left} {top} V{:.1} H{:.1}" fill="none" stroke="{}" stroke-width="1"/>"#,
            top + ph,
            left + pw,
            hex(GREY)
        );
        let every = (n as f64 / 16.0).ceil().max(1.0) as usize;
        for (i, l) in self
            .x_labels
            .iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0)
        {
            text(&mut s, x(i), top + ph + 18.0, 11.0, "middle", GREY, l);
        }
        text(
            &mut s,
            left + pw / 2.0,
            h - 18.0,
            12.0,
            "middle",
            INK,
            &self.x_caption,
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(22 {:.1}) rotate(-90)" font-size="12" fill="{}" text-anchor="middle">{}</text>"#,
            top + ph / 2.0,
            hex(INK),
            xml_escape(&self.y_caption)
        );
        // Lines, points and the legend.
        for (k, series) in self.series.iter().enumerate() {
            let colour = hex(LINES[k % LINES.len()]);
            let dash = if series.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            let mut d = String::new();
            for (i, v) in series.values.iter().enumerate() {
                if let Some(v) = v {
                    let cmd = if d.is_empty() || series.values[i - 1].is_none() {
                        'M'
                    } else {
                        'L'
                    };
                    let _ = write!(d, "{cmd}{:.1} {:.1} ", x(i), y(*v));
                }
            }
            let _ = writeln!(
                s,
                r#"<path class="series" d="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
                d.trim_end()
            );
            for (i, v) in series.values.iter().enumerate() {
                if let Some(v) = v {
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"><title>{}: {v:.2}</title></circle>"#,
                        x(i),
                        y(*v),
                        xml_escape(&format!("{} {}", series.name, self.x_labels[i]))
                    );
                }
            }
            let ly = top + 8.0 + 20.0 * k as f64;
            let lx = left + pw + 16.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/>"#,
                lx + 24.0
            );
            let name = if estimate_width(&series.name, 12.0) > right as f32 - 44.0 {
                series.name.chars().take(18).collect::<String>() + "…"
            } else {
                series.name.clone()
            };
            text(&mut s, lx + 30.0, ly + 4.0, 12.0, "start", INK, &name);
        }
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_draws_every_series_and_skips_gaps() {
        let c = Chart {
            title: "error".into(),
            x_caption: "source length".into(),
            x_labels: vec!["1-4".into(), "5-8".into(), "9+".into()],
            y_caption: "TER %".into(),
            series: vec![
                Series {
                    name: "a".into(),
                    values: vec![Some(1.0), None, Some(3.0)],
                    dashed: false,
                },
                Series {
                    name: "b & c".into(),
                    values: vec![Some(2.0), Some(2.5), Some(40.0)],
                    dashed: true,
                },
            ],
        };
        let svg = c.svg();
        assert_eq!(svg.matches(r#"class="series""#).count(), 2);
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains("b &amp; c") && svg.contains("stroke-dasharray"));
        // A gap starts a new segment.
        assert_eq!(
            svg.matches(" M").count() + svg.matches("\"M").count(),
            3 + 1
        );
        assert_eq!(tick_step(40.0), 10.0);
        assert_eq!(tick_step(9.0), 2.0);
    }
}
