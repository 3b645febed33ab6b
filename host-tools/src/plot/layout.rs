//! Where everything goes in a picture: positions computed once, as a list of drawing
//! items (rectangles, the colour bar, text) that the SVG writer serialises.

use unicode_width::UnicodeWidthStr;

use super::colour::{contrast, palette, GREY, INK, LIGHT, WHITE};
use super::labels::visible;
use super::map::AttentionMap;

/// Text width estimate (the fonts are chosen by the rasteriser or the viewer): DejaVu
/// Sans averages about 0.62 em per column of display width.
pub(crate) fn estimate_width(s: &str, size: f32) -> f32 {
    s.width() as f32 * 0.62 * size
}

const MARGIN: i32 = 22;
const TITLE_SIZE: f32 = 16.0;
const SMALL_SIZE: f32 = 11.0;
/// Longest label (in characters) drawn in a picture before it is cut with `…`.
const MAX_LABEL_CHARS: usize = 16;
/// Baseline offset that centres a line of digits/lower case on a point, in em.
const CENTRE_DY: f32 = 0.36;

/// Where everything goes in a picture of one map, computed once for the SVG (and so
/// for the PNG rasterised from it). Text widths are estimated from display widths.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) width: i32,
    pub(crate) height: i32,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    /// Cell pitch; a cell is `cell - gap` pixels square.
    pub(crate) cell: i32,
    pub(crate) gap: i32,
    pub(crate) grid_x: i32,
    pub(crate) grid_y: i32,
    pub(crate) title: String,
    pub(crate) title_baseline: f32,
    pub(crate) col_labels: Vec<String>,
    pub(crate) row_labels: Vec<String>,
    pub(crate) label_size: f32,
    /// Per column label: rotated (read bottom to top) because it is wider than a cell.
    pub(crate) vertical_cols: Vec<bool>,
    pub(crate) row_label_right: i32,
    /// Font size of the weight printed inside cells, `None` when cells are too small.
    pub(crate) value_size: Option<f32>,
    /// Each row's entropy written beside its bar (not in a dense picture, whose rows
    /// are too thin for text).
    pub(crate) entropy_values: bool,
    pub(crate) entropy_x: i32,
    pub(crate) entropy_w: i32,
    pub(crate) bar_x: i32,
    pub(crate) bar_w: i32,
    pub(crate) bar_h: i32,
}

/// The largest picture side, in pixels: a map that needs more is refused (a
/// 65,535-step map would be 786,432 pixels tall).
pub(crate) const MAX_SIDE: i32 = 16_384;

/// Why [`Layout::bounded`] refuses a map.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TooLarge {
    /// More rows or columns than cells of one pixel fit.
    #[error("a map of {rows} output steps by {cols} source positions does not fit a picture of at most {MAX_SIDE} pixels a side (at most {most} of either)")]
    Map {
        /// Output steps.
        rows: usize,
        /// Source positions.
        cols: usize,
        /// The most of either that fit.
        most: usize,
    },
    /// The laid-out picture is larger than [`MAX_SIDE`].
    #[error("the picture would be {width}x{height} pixels, more than {MAX_SIDE} a side")]
    Picture {
        /// Its width in pixels.
        width: i32,
        /// Its height in pixels.
        height: i32,
    },
}

/// The smallest cell pitch of a labelled picture ([`Layout::new`]).
const MIN_CELL: i32 = 12;

/// The side a dense picture's grid aims at ([`Layout::dense`]).
const DENSE_GRID: i32 = 4_096;

/// Most rows or columns of a dense picture: cells of one pixel, and room for the
/// margins, the entropy column and the colour bar.
const MOST_DENSE: usize = (MAX_SIDE - 512) as usize;

/// Longest title (in characters) before it is cut with `…`: a long source would
/// otherwise make the picture wider than its map.
const MAX_TITLE_CHARS: usize = 120;

impl Layout {
    /// [`Layout::new`] for a map whose picture fits [`MAX_SIDE`] pixels each way, or
    /// else [`Layout::dense`] (a long source: thousands of positions); the error says
    /// why a map fits neither.
    pub(crate) fn bounded(map: &AttentionMap) -> Result<Layout, TooLarge> {
        let (rows, cols) = (map.output.len(), map.source.len());
        let fits = |l: &Layout| l.width <= MAX_SIDE && l.height <= MAX_SIDE;
        if rows.max(cols) <= (MAX_SIDE / MIN_CELL) as usize {
            let layout = Layout::new(map);
            if fits(&layout) {
                return Ok(layout);
            }
        }
        if rows.max(cols) > MOST_DENSE {
            return Err(TooLarge::Map {
                rows,
                cols,
                most: MOST_DENSE,
            });
        }
        let layout = Layout::dense(map);
        if fits(&layout) {
            Ok(layout)
        } else {
            Err(TooLarge::Picture {
                width: layout.width,
                height: layout.height,
            })
        }
    }

    /// The layout of `map`: labelled cells of at least 12 pixels; its sides fit `i32`
    /// for maps of up to `MAX_SIDE / 12` rows and columns.
    pub(crate) fn new(map: &AttentionMap) -> Layout {
        let n = map.output.len().max(map.source.len()).max(1) as i32;
        let cell = if n <= 48 {
            (560 / n).clamp(28, 40)
        } else {
            (1344 / n).max(MIN_CELL)
        };
        Layout::with_cells(map, cell, false)
    }

    /// The layout of a map too large for [`Layout::new`]: cells of 1 to 11 pixels
    /// without gaps, labels, values or row entropies (the bars remain), so that a
    /// source of thousands of positions still shows its alignment.
    pub(crate) fn dense(map: &AttentionMap) -> Layout {
        let n = map.output.len().max(map.source.len()).max(1);
        let cell = (DENSE_GRID / n.min(MOST_DENSE) as i32).clamp(1, MIN_CELL - 1);
        Layout::with_cells(map, cell, true)
    }

    fn with_cells(map: &AttentionMap, cell: i32, dense: bool) -> Layout {
        let measure = estimate_width;
        let (rows, cols) = (map.output.len(), map.source.len());
        let gap = match cell {
            24.. => 2,
            _ if dense => 0,
            _ => 1,
        };
        let inner = (cell - gap) as f32;
        let label_size = if cell >= 34 {
            13.0
        } else if cell >= 26 {
            12.0
        } else {
            10.0
        };

        let cut = |s: &str| {
            let v = visible(s);
            if v.chars().count() > MAX_LABEL_CHARS {
                let mut c: String = v.chars().take(MAX_LABEL_CHARS - 1).collect();
                c.push('…');
                c
            } else {
                v
            }
        };
        let title = visible(&map.title);
        let title = if title.chars().count() > MAX_TITLE_CHARS {
            let mut t: String = title.chars().take(MAX_TITLE_CHARS - 1).collect();
            t.push('…');
            t
        } else {
            title
        };
        let labels = |v: &[String]| -> Vec<String> {
            if dense {
                Vec::new()
            } else {
                v.iter().map(|s| cut(s)).collect()
            }
        };
        let (col_labels, row_labels) = (labels(&map.source), labels(&map.output));

        let col_widths: Vec<f32> = col_labels.iter().map(|s| measure(s, label_size)).collect();
        let vertical_cols: Vec<bool> = col_widths.iter().map(|w| *w > inner - 4.0).collect();
        let band = col_widths
            .iter()
            .zip(&vertical_cols)
            .map(|(w, v)| {
                if *v {
                    w.ceil() as i32 + 6
                } else {
                    (label_size * 1.3).ceil() as i32 + 4
                }
            })
            .max()
            .unwrap_or(0);
        let row_w = row_labels
            .iter()
            .map(|s| measure(s, label_size))
            .fold(0.0, f32::max)
            .ceil() as i32;

        let title_baseline = MARGIN as f32 + TITLE_SIZE;
        let caption_h = (SMALL_SIZE * 1.6) as i32;
        let grid_y = (title_baseline + TITLE_SIZE * 0.9) as i32 + caption_h + band;
        let caption_w = (SMALL_SIZE * 1.6) as i32;
        let row_label_right = MARGIN + caption_w + 6 + row_w;
        let grid_x = row_label_right + 8;
        let (grid_w, grid_h) = (grid_span(cols, cell, gap), grid_span(rows, cell, gap));

        let value_size = (inner * 0.3).clamp(9.0, 11.0);
        let value_size =
            (cell >= 24 && measure("0.00", value_size) <= inner - 3.0).then_some(value_size);
        let entropy_values = !dense;

        let entropy_x = grid_x + grid_w + 12;
        let entropy_w = (measure("H (nats)", SMALL_SIZE).ceil() as i32).max(48);
        let bar_x = entropy_x + entropy_w + 24;
        let bar_w = 14;
        let bar_h = grid_h.max(120);
        let ticks_right = bar_x + bar_w + 8 + measure("0.5", SMALL_SIZE).ceil() as i32;
        let width =
            (ticks_right + MARGIN).max(2 * MARGIN + measure(&title, TITLE_SIZE).ceil() as i32);
        let height = grid_y + grid_h.max(bar_h) + MARGIN;

        Layout {
            width,
            height,
            rows,
            cols,
            cell,
            gap,
            grid_x,
            grid_y,
            title,
            title_baseline,
            col_labels,
            row_labels,
            label_size,
            vertical_cols,
            row_label_right,
            value_size,
            entropy_values,
            entropy_x,
            entropy_w,
            bar_x,
            bar_w,
            bar_h,
        }
    }

    /// Side of a cell square.
    pub(crate) fn inner(&self) -> i32 {
        self.cell - self.gap
    }

    /// Top-left corner of cell `(row, col)`.
    pub(crate) fn cell_origin(&self, row: usize, col: usize) -> (i32, i32) {
        (
            self.grid_x + col as i32 * self.cell,
            self.grid_y + row as i32 * self.cell,
        )
    }

    fn col_centre(&self, col: usize) -> f32 {
        self.cell_origin(0, col).0 as f32 + self.inner() as f32 / 2.0
    }

    fn row_centre(&self, row: usize) -> f32 {
        self.cell_origin(row, 0).1 as f32 + self.inner() as f32 / 2.0
    }

    fn grid_w(&self) -> i32 {
        grid_span(self.cols, self.cell, self.gap)
    }

    fn grid_h(&self) -> i32 {
        grid_span(self.rows, self.cell, self.gap)
    }

    /// Every item of the picture of `map`, back to front.
    pub(crate) fn items(&self, map: &AttentionMap) -> Vec<Item> {
        let mut items = vec![Item::rect(0, 0, self.width, self.height, WHITE)];
        let grid_cx = self.grid_x as f32 + self.grid_w() as f32 / 2.0;
        let grid_cy = self.grid_y as f32 + self.grid_h() as f32 / 2.0;
        let header_baseline = self.grid_y as f32 - 7.0;
        let label = self.label_size;

        items.push(Text::new(&self.title, MARGIN as f32, self.title_baseline, TITLE_SIZE).into());
        // Axis captions: "source" above the column labels, "output" left of the rows.
        let caption_y = self.title_baseline + TITLE_SIZE * 0.9 + SMALL_SIZE;
        let source = Text::new("source →", grid_cx, caption_y, SMALL_SIZE);
        items.push(source.fill(GREY).anchor(Anchor::Middle).into());
        let output = Text::new(
            "← output",
            MARGIN as f32 + SMALL_SIZE * 0.8,
            grid_cy,
            SMALL_SIZE,
        );
        items.push(output.fill(GREY).anchor(Anchor::Middle).vertical().into());

        for (c, text) in self.col_labels.iter().enumerate() {
            let cx = self.col_centre(c);
            items.push(if self.vertical_cols[c] {
                let x = cx + CENTRE_DY * label;
                Text::new(text, x, header_baseline + 2.0, label)
                    .vertical()
                    .into()
            } else {
                Text::new(text, cx, header_baseline, label)
                    .anchor(Anchor::Middle)
                    .into()
            });
        }
        for (r, text) in self.row_labels.iter().enumerate() {
            let y = self.row_centre(r) + CENTRE_DY * label;
            let x = self.row_label_right as f32;
            items.push(Text::new(text, x, y, label).anchor(Anchor::End).into());
        }

        for r in 0..self.rows {
            for c in 0..self.cols {
                let w = map.weight(r, c);
                let (x, y) = self.cell_origin(r, c);
                let fill = palette(w);
                items.push(Item::Rect {
                    x,
                    y,
                    w: self.inner(),
                    h: self.inner(),
                    fill,
                    cell: Some((r, c, w)),
                });
                if let Some(size) = self.value_size.filter(|_| w >= 0.1) {
                    let (cx, cy) = (self.col_centre(c), self.row_centre(r) + CENTRE_DY * size);
                    let value = Text::new(&format!("{w:.2}"), cx, cy, size);
                    items.push(value.fill(contrast(fill)).anchor(Anchor::Middle).into());
                }
            }
        }

        // Entropy column: the value over a light bar of length H / ln n.
        let header = Text::new(
            "H (nats)",
            self.entropy_x as f32,
            header_baseline,
            SMALL_SIZE,
        );
        items.push(header.fill(GREY).into());
        let max_h = (self.cols.max(1) as f32).ln();
        for r in 0..self.rows {
            let h = map.row_entropy(r);
            let frac = if max_h > 0.0 && h.is_finite() {
                (h / max_h).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let bar = (frac * self.entropy_w as f32).round() as i32;
            let (_, y) = self.cell_origin(r, 0);
            items.push(Item::rect(self.entropy_x, y, bar, self.inner(), LIGHT));
            if !self.entropy_values {
                continue;
            }
            let baseline = self.row_centre(r) + CENTRE_DY * SMALL_SIZE;
            let x = self.entropy_x as f32 + 4.0;
            items.push(Text::new(&format!("{h:.2}"), x, baseline, SMALL_SIZE).into());
        }

        // Colour bar with ticks at 0, 0.5 and 1.
        let header = Text::new("weight", self.bar_x as f32, header_baseline, SMALL_SIZE);
        items.push(header.fill(GREY).into());
        items.push(Item::Ramp {
            x: self.bar_x,
            y: self.grid_y,
            w: self.bar_w,
            h: self.bar_h,
        });
        for (t, tick) in [(1.0, "1"), (0.5, "0.5"), (0.0, "0")] {
            let y = self.grid_y + ((1.0 - t) * (self.bar_h - 1) as f32).round() as i32;
            items.push(Item::rect(self.bar_x + self.bar_w, y, 4, 1, GREY));
            let baseline = y as f32 + CENTRE_DY * SMALL_SIZE;
            let x = (self.bar_x + self.bar_w + 7) as f32;
            items.push(Text::new(tick, x, baseline, SMALL_SIZE).into());
        }
        items
    }
}

/// Extent of `n` cells at pitch `cell`, without the gap after the last one.
fn grid_span(n: usize, cell: i32, gap: i32) -> i32 {
    (n as i32 * cell - gap).max(0)
}

/// Horizontal alignment of a text on its anchor point (SVG's `text-anchor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    pub(crate) fn svg(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// One thing to draw.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// A filled rectangle; `cell` is `(row, col, weight)` for a heatmap cell.
    Rect {
        x: i32,
        y: i32,
        w: i32,
        h: i32,
        fill: [u8; 3],
        cell: Option<(usize, usize, f32)>,
    },
    /// The colour bar: the palette from 0 (bottom) to 1 (top).
    Ramp { x: i32, y: i32, w: i32, h: i32 },
    /// A line of text.
    Text(Text),
}

impl Item {
    fn rect(x: i32, y: i32, w: i32, h: i32, fill: [u8; 3]) -> Item {
        Item::Rect {
            x,
            y,
            w,
            h,
            fill,
            cell: None,
        }
    }
}

/// A line of text; `(x, y)` is the anchor point on the baseline. Vertical text is
/// rotated a quarter turn anticlockwise (read bottom to top).
#[derive(Debug, Clone)]
pub(crate) struct Text {
    pub(crate) text: String,
    pub(crate) x: f32,
    pub(crate) y: f32,
    pub(crate) size: f32,
    pub(crate) fill: [u8; 3],
    pub(crate) anchor: Anchor,
    pub(crate) vertical: bool,
}

impl Text {
    /// Dark, horizontal text starting at `(x, y)`, `size` pixels to the em.
    fn new(text: &str, x: f32, y: f32, size: f32) -> Text {
        Text {
            text: text.to_string(),
            x,
            y,
            size,
            fill: INK,
            anchor: Anchor::Start,
            vertical: false,
        }
    }

    fn fill(self, fill: [u8; 3]) -> Text {
        Text { fill, ..self }
    }

    fn anchor(self, anchor: Anchor) -> Text {
        Text { anchor, ..self }
    }

    fn vertical(self) -> Text {
        Text {
            vertical: true,
            ..self
        }
    }
}

impl From<Text> for Item {
    fn from(text: Text) -> Item {
        Item::Text(text)
    }
}
