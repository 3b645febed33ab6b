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

/// The fewest decimals that write every multiple of `step` exactly, `step` being 1, 2,
/// 2.5 or 5 times a power of ten: 0 for 10, 1 for 0.2, 2 for 0.25, 4 for 0.0001.
fn decimals(step: f64) -> usize {
    (0..=15)
        .find(|&d| {
            let s = step * 10f64.powi(d);
            (s - s.round()).abs() <= 1e-6 * s
        })
        .unwrap_or(15) as usize
}

/// The y axis's ticks for values up to `max`: about five round steps from 0 to the
/// first at or above `max` (up to 1 when `max` is 0: no error at all, or no value),
/// each labelled with the decimals its step needs, so that neighbouring labels differ
/// (`0.0001`, `0.0002` for rates near 0; `10`, `20` for large ones). Returns the
/// values, the labels and the decimals.
fn y_ticks(max: f64) -> (Vec<(f64, String)>, usize) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let step = tick_step(max);
    let steps = (max / step - 1e-9).ceil().max(1.0) as usize;
    let d = decimals(step);
    let ticks = (0..=steps)
        .map(|i| {
            let v = i as f64 * step;
            (v, format!("{v:.d$}"))
        })
        .collect();
    (ticks, d)
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
        let (ticks, decimals) = y_ticks(max);
        let top_value = ticks.last().map_or(1.0, |t| t.0);
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
        for (v, label) in &ticks {
            let yy = y(*v);
            let _ = writeln!(
                s,
                r#"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{}" stroke-width="1"/>"#,
                left + pw,
                hex(LIGHT)
            );
            text(&mut s, left - 8.0, yy + 4.0, 11.0, "end", GREY, label);
        }
        // A point's value, one decimal finer than the axis (two at least).
        let exact = decimals.max(1) + 1;
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
                        r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"><title>{}: {v:.exact$}</title></circle>"#,
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

    /// A chart of one series with these values.
    fn one_line(values: Vec<Option<f64>>) -> Chart {
        Chart {
            title: "t".into(),
            x_caption: "x".into(),
            x_labels: (1..=values.len()).map(|i| i.to_string()).collect(),
            y_caption: "y".into(),
            series: vec![Series {
                name: "m".into(),
                values,
                dashed: false,
            }],
        }
    }

    /// The y axis's labels of an SVG chart, bottom up (the right-aligned texts).
    fn y_labels(svg: &str) -> Vec<String> {
        svg.lines()
            .filter(|l| l.starts_with("<text") && l.contains(r#"text-anchor="end""#))
            .map(|l| l[l.find('>').unwrap() + 1..l.rfind("</text>").unwrap()].to_string())
            .collect()
    }

    #[test]
    fn tick_labels_have_the_decimals_the_rates_need() {
        // Rates under 0.05 %: every label read "0.0".
        let labels = y_labels(&one_line(vec![Some(0.0001), Some(0.0004)]).svg());
        assert_eq!(labels, ["0.0000", "0.0001", "0.0002", "0.0003", "0.0004"]);
        // A step of 0.25 needs two decimals.
        let labels = y_labels(&one_line(vec![Some(0.3), Some(1.2)]).svg());
        assert_eq!(labels, ["0.00", "0.25", "0.50", "0.75", "1.00", "1.25"]);
        // Large rates keep short labels.
        let labels = y_labels(&one_line(vec![Some(12.0), Some(38.0)]).svg());
        assert_eq!(labels, ["0", "10", "20", "30", "40"]);
        // No error at all: an axis up to 1, not ticks of 2e-7.
        let labels = y_labels(&one_line(vec![Some(0.0), Some(0.0)]).svg());
        assert_eq!(labels, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        for max in [1e-5, 3e-4, 0.0004, 0.007, 0.05, 0.3, 2.6, 7.0, 99.0, 387.0] {
            let labels = y_labels(&one_line(vec![Some(max)]).svg());
            assert!(labels.len() >= 2, "{max}: {labels:?}");
            for pair in labels.windows(2) {
                assert_ne!(pair[0], pair[1], "{max}: {labels:?}");
            }
        }
    }

    #[test]
    fn a_bucket_without_a_value_is_a_gap() {
        let svg = one_line(vec![None, Some(2.0), None, Some(4.0), Some(1.0), None]).svg();
        // Points at 2, 4 and 5 only; the line starts again after the gap.
        assert_eq!(svg.matches("<circle").count(), 3);
        let path = svg
            .lines()
            .find(|l| l.contains(r#"class="series""#))
            .unwrap();
        let d = &path[path.find(" d=\"").unwrap() + 4..];
        let d = &d[..d.find('"').unwrap()];
        let moves: Vec<char> = d.chars().filter(|c| c.is_ascii_uppercase()).collect();
        assert_eq!(moves, ['M', 'M', 'L'], "{d}");
        // The empty buckets are not points at 0 %: nothing is drawn at their x.
        for title in ["m 1", "m 3", "m 6"] {
            assert!(!svg.contains(&format!("<title>{title}:")), "{title}");
        }
    }
}
