//! Attention heatmaps: a picture (`.svg` or `.png`) and a terminal rendering of one
//! attention map (rows = output steps, columns = source positions).
//!
//! Both pictures come from one `Layout` (positions computed once) turned into one
//! list of drawing items; the SVG writer serialises the items as text, the PNG
//! writer rasterises them itself with `ab_glyph` (glyph outlines) and `png`
//! (encoding). Colours follow viridis on a fixed 0..1 scale, so maps compare.
//!
//! PNG text needs a font file: fonts are looked up at run time under the system font
//! directories (`/usr/share/fonts` and the like); a label that no installed font
//! covers is drawn as its code points and reported in [`ImageReport::warnings`]. SVG
//! text is left to the viewer, which shapes any script (Khmer included) correctly.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ab_glyph::{point, Font, FontVec, GlyphId, PxScale, ScaleFont};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

// ---------------------------------------------------------------------------------
// The map
// ---------------------------------------------------------------------------------

/// One attention map: rows = output steps, columns = source positions.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionMap {
    /// Picture title, e.g. `"netra: sophea -> សុភា"`.
    pub title: String,
    /// Column labels: the source tokens (may include `"<pad>"` or `"</s>"`).
    pub source: Vec<String>,
    /// Row labels: the output tokens; the last one may be an end token such as
    /// `"</s>"` or `"\n"` (control characters are shown visibly, e.g. `⏎`).
    pub output: Vec<String>,
    /// `output.len()` rows of `source.len()` weights in `[0, 1]`, each row summing
    /// to about 1.
    pub weights: Vec<Vec<f32>>,
}

impl AttentionMap {
    /// Entropy of row `row` in nats, `-Σ p ln p` over its positive weights: 0 for a
    /// one-hot row, `ln n` for a uniform row over `n` columns.
    ///
    /// # Panics
    /// If `row >= self.weights.len()`.
    pub fn entropy(&self, row: usize) -> f32 {
        let h: f64 = self.weights[row]
            .iter()
            .filter(|p| p.is_finite() && **p > 0.0)
            .map(|&p| {
                let p = f64::from(p);
                -p * p.ln()
            })
            .sum();
        h as f32
    }

    /// The weight at `(row, col)`, NaN where the map is ragged.
    fn weight(&self, row: usize, col: usize) -> f32 {
        self.weights
            .get(row)
            .and_then(|r| r.get(col))
            .copied()
            .unwrap_or(f32::NAN)
    }

    /// Entropy of a row, NaN where the row is missing.
    fn row_entropy(&self, row: usize) -> f32 {
        if row < self.weights.len() {
            self.entropy(row)
        } else {
            f32::NAN
        }
    }

    /// Checks that the weights form an `output.len() x source.len()` grid.
    fn check_shape(&self) -> Result<(), String> {
        if self.weights.len() != self.output.len() {
            return Err(format!(
                "the map has {} output labels but {} weight rows",
                self.output.len(),
                self.weights.len()
            ));
        }
        for (r, row) in self.weights.iter().enumerate() {
            if row.len() != self.source.len() {
                return Err(format!(
                    "weight row {r} has {} values for {} source labels",
                    row.len(),
                    self.source.len()
                ));
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------
// Errors and report
// ---------------------------------------------------------------------------------

/// Why a heatmap picture could not be written.
#[derive(Debug)]
pub enum HeatmapError {
    /// The path's extension is neither `.png` nor `.svg`.
    UnsupportedFormat {
        /// The requested output path.
        path: PathBuf,
    },
    /// The map's weights do not form an `output x source` grid.
    InvalidMap {
        /// The requested output path.
        path: PathBuf,
        /// What is wrong with the map.
        reason: String,
    },
    /// Creating, writing or renaming the file failed.
    Io {
        /// The requested output path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The PNG encoder failed.
    Encode {
        /// The requested output path.
        path: PathBuf,
        /// The encoder's message.
        message: String,
    },
}

impl fmt::Display for HeatmapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedFormat { path } => write!(
                f,
                "cannot write heatmap {}: unknown image format (use a .png or .svg extension)",
                path.display()
            ),
            Self::InvalidMap { path, reason } => {
                write!(f, "cannot write heatmap {}: {reason}", path.display())
            }
            Self::Io { path, source } => {
                write!(f, "cannot write heatmap {}: {source}", path.display())
            }
            Self::Encode { path, message } => write!(
                f,
                "cannot write heatmap {}: PNG encoding failed: {message}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for HeatmapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What [`write_image`] has to say about a picture it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageReport {
    /// One-line notes for the user, e.g. that a PNG label was drawn as code points
    /// because no installed font covers it. Empty for SVG.
    pub warnings: Vec<String>,
}

// ---------------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------------

/// Writes the map as a picture; the format follows the extension (`.png` or `.svg`,
/// any case), anything else is an error naming the path. The picture goes to a
/// temporary file in the same directory that is then renamed over `path`, so an
/// error never leaves a half-written file behind.
///
/// PNG text uses fonts found in the system font directories; see
/// [`ImageReport::warnings`] for labels they could not draw.
pub fn write_image(map: &AttentionMap, path: &Path) -> Result<ImageReport, HeatmapError> {
    let format = image_format(path)?;
    let mut fonts = match format {
        ImageFormat::Png => FontSet::system(),
        ImageFormat::Svg => FontSet::empty(),
    };
    write_image_with(map, path, format, &mut fonts)
}

/// The map for a terminal: title, column labels on top (vertical when wider than a
/// cell), one line per output row (label, one two-column cell per weight, entropy in
/// nats), then a legend line. Cells use 24-bit ANSI background colours when `color`
/// is true, otherwise the shades `" ░▒▓█"`. Labels are padded by display width, so
/// the grid stays aligned with wide (East Asian) and combining (Khmer) characters.
pub fn render_terminal(map: &AttentionMap, color: bool) -> String {
    const CELL: usize = 2;
    const MAX_ROW_LABEL: usize = 12;
    const MAX_HEADER_LINES: usize = 8;
    const ENTROPY_HEADER: &str = "H(nats)";
    let entropy_w = ENTROPY_HEADER.width();

    let mut out = String::new();
    out.push_str(&visible(&map.title));
    out.push('\n');
    let (rows, cols) = (map.output.len(), map.source.len());
    if rows == 0 || cols == 0 {
        out.push_str("(empty attention map)\n");
        return out;
    }

    let row_labels: Vec<String> = map
        .output
        .iter()
        .map(|s| truncate_width(&visible(s), MAX_ROW_LABEL))
        .collect();
    let label_w = row_labels.iter().map(|s| s.width()).max().unwrap_or(0);

    // Column labels: one header line if every label fits a cell, else one cluster
    // (a base character with its combining marks) per line, read top to bottom.
    let col_labels: Vec<String> = map.source.iter().map(|s| visible(s)).collect();
    let header: Vec<Vec<String>> = if col_labels.iter().all(|s| s.width() <= CELL) {
        vec![col_labels.clone()]
    } else {
        let stacks: Vec<Vec<String>> = col_labels
            .iter()
            .map(|s| {
                let mut c = clusters(s);
                if c.len() > MAX_HEADER_LINES {
                    c.truncate(MAX_HEADER_LINES - 1);
                    c.push("…".to_string());
                }
                c
            })
            .collect();
        let lines = stacks.iter().map(Vec::len).max().unwrap_or(0);
        (0..lines)
            .map(|i| {
                stacks
                    .iter()
                    .map(|s| s.get(i).cloned().unwrap_or_default())
                    .collect()
            })
            .collect()
    };
    for (i, line) in header.iter().enumerate() {
        out.push_str(&" ".repeat(label_w + 2));
        for label in line {
            out.push_str(&pad_right(label, CELL));
        }
        out.push(' ');
        let last = i + 1 == header.len();
        out.push_str(&pad_left(if last { ENTROPY_HEADER } else { "" }, entropy_w));
        out.push('\n');
    }

    for (r, label) in row_labels.iter().enumerate() {
        out.push_str(&pad_left(label, label_w));
        out.push_str(" │");
        for c in 0..cols {
            let w = map.weight(r, c);
            if color {
                let [red, green, blue] = palette(w);
                out.push_str(&format!(
                    "\x1b[48;2;{red};{green};{blue}m{}",
                    " ".repeat(CELL)
                ));
            } else {
                out.push_str(&shade(w).to_string().repeat(CELL));
            }
        }
        if color {
            out.push_str("\x1b[0m");
        }
        out.push('│');
        let h = map.row_entropy(r);
        out.push_str(&pad_left(&format!("{h:.3}"), entropy_w));
        out.push('\n');
    }

    out.push_str("scale ");
    if color {
        out.push_str("0 ");
        for i in 0..=10 {
            let [red, green, blue] = palette(i as f32 / 10.0);
            out.push_str(&format!("\x1b[48;2;{red};{green};{blue}m "));
        }
        out.push_str("\x1b[0m 1");
    } else {
        out.push_str("' '<.125 '░'<.375 '▒'<.625 '▓'<.875 '█'≤1");
    }
    out.push_str(
        " (weights, fixed 0..1); rows = output, columns = source; \
         H = row entropy in nats (uniform over n = ln n)\n",
    );
    out
}

// ---------------------------------------------------------------------------------
// Colours
// ---------------------------------------------------------------------------------

/// Viridis (matplotlib) sampled at 0, 0.1, ..., 1.
const VIRIDIS: [[u8; 3]; 11] = [
    [0x44, 0x01, 0x54],
    [0x48, 0x24, 0x75],
    [0x41, 0x44, 0x87],
    [0x35, 0x5f, 0x8d],
    [0x2a, 0x78, 0x8e],
    [0x21, 0x91, 0x8c],
    [0x22, 0xa8, 0x84],
    [0x44, 0xbf, 0x70],
    [0x7a, 0xd1, 0x51],
    [0xbd, 0xdf, 0x26],
    [0xfd, 0xe7, 0x25],
];
/// Colour of a weight that is not a number (a ragged or broken map).
const NAN_COLOUR: [u8; 3] = [0xc8, 0xc8, 0xc8];
const WHITE: [u8; 3] = [0xff, 0xff, 0xff];
const INK: [u8; 3] = [0x22, 0x22, 0x22];
const GREY: [u8; 3] = [0x6b, 0x6b, 0x6b];
const LIGHT: [u8; 3] = [0xe3, 0xe7, 0xee];

/// The colour of weight `w` on the fixed 0..1 viridis scale (clamped).
fn palette(w: f32) -> [u8; 3] {
    if !w.is_finite() {
        return NAN_COLOUR;
    }
    let t = w.clamp(0.0, 1.0) * 10.0;
    let i = (t.floor() as usize).min(9);
    let f = t - i as f32;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    std::array::from_fn(|k| {
        (f32::from(a[k]) + (f32::from(b[k]) - f32::from(a[k])) * f).round() as u8
    })
}

/// Text colour that reads on a cell of colour `bg`.
fn contrast(bg: [u8; 3]) -> [u8; 3] {
    let luma = 0.2126 * f32::from(bg[0]) + 0.7152 * f32::from(bg[1]) + 0.0722 * f32::from(bg[2]);
    if luma > 140.0 {
        [0x1a, 0x1a, 0x1a]
    } else {
        WHITE
    }
}

/// Terminal shade of weight `w` (nearest of five levels).
fn shade(w: f32) -> char {
    if !w.is_finite() {
        return '?';
    }
    const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];
    SHADES[(w.clamp(0.0, 1.0) * 4.0).round() as usize]
}

fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

// ---------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------

/// A label with control characters made visible: newline `⏎`, tab `\t`, carriage
/// return `\r`, other controls `\xNN`, a lone space `␣`, the empty label `∅`; a
/// label that starts with a combining mark (a Khmer vowel sign or subscript) is
/// shown on a dotted circle `◌`, as scripts' charts do.
fn visible(s: &str) -> String {
    if s.is_empty() {
        return "∅".to_string();
    }
    if s == " " {
        return "␣".to_string();
    }
    let mut out = String::new();
    if s.chars()
        .next()
        .is_some_and(|c| c.width() == Some(0) || is_khmer_dependent(c))
    {
        out.push('◌');
    }
    for c in s.chars() {
        match c {
            '\n' => out.push('⏎'),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Khmer sign coeng: the next consonant is written below, in the same cluster.
const COENG: char = '\u{17d2}';

/// Khmer dependent vowels and signs: written around the preceding consonant.
fn is_khmer_dependent(c: char) -> bool {
    matches!(c, '\u{17b4}'..='\u{17d3}' | '\u{17dd}')
}

/// Splits a label into clusters: a character of non-zero display width followed by
/// the zero-width ones (combining marks), with a coeng joining the next consonant and
/// Khmer vowel signs joining their consonant while the cluster stays two columns wide.
fn clusters(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut join_next = false;
    for c in s.chars() {
        let zero = c.width().unwrap_or(0) == 0;
        match out.last_mut() {
            Some(last)
                if zero
                    || join_next
                    || (is_khmer_dependent(c) && format!("{last}{c}").width() <= 2) =>
            {
                last.push(c)
            }
            _ => out.push(c.to_string()),
        }
        join_next = c == COENG || c == '\u{200d}';
    }
    out
}

/// `s` cut to at most `max` display columns, ending in `…` when cut.
fn truncate_width(s: &str, max: usize) -> String {
    if s.width() <= max {
        return s.to_string();
    }
    let mut out = String::new();
    for cluster in clusters(s) {
        if out.width() + cluster.width() + 1 > max {
            break;
        }
        out.push_str(&cluster);
    }
    out.push('…');
    out
}

fn pad_left(s: &str, width: usize) -> String {
    format!("{}{s}", " ".repeat(width.saturating_sub(s.width())))
}

fn pad_right(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.width())))
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------------
// Layout: every position, computed once for both picture formats
// ---------------------------------------------------------------------------------

const MARGIN: i32 = 22;
const TITLE_SIZE: f32 = 16.0;
const SMALL_SIZE: f32 = 11.0;
/// Longest label (in characters) drawn in a picture before it is cut with `…`.
const MAX_LABEL_CHARS: usize = 16;
/// Baseline offset that centres a line of digits/lower case on a point, in em.
const CENTRE_DY: f32 = 0.36;

/// Where everything goes in a picture of one map. Text widths come from a
/// measuring function, so the same code lays out SVG (estimated widths) and PNG
/// (widths of the fonts actually used).
#[derive(Debug, Clone)]
struct Layout {
    width: i32,
    height: i32,
    rows: usize,
    cols: usize,
    /// Cell pitch; a cell is `cell - gap` pixels square.
    cell: i32,
    gap: i32,
    grid_x: i32,
    grid_y: i32,
    title: String,
    title_baseline: f32,
    col_labels: Vec<String>,
    row_labels: Vec<String>,
    label_size: f32,
    /// Per column label: rotated (read bottom to top) because it is wider than a cell.
    vertical_cols: Vec<bool>,
    row_label_right: i32,
    /// Font size of the weight printed inside cells, `None` when cells are too small.
    value_size: Option<f32>,
    entropy_x: i32,
    entropy_w: i32,
    bar_x: i32,
    bar_w: i32,
    bar_h: i32,
}

impl Layout {
    fn new(map: &AttentionMap, measure: &mut dyn FnMut(&str, f32) -> f32) -> Layout {
        let (rows, cols) = (map.output.len(), map.source.len());
        let n = rows.max(cols).max(1) as i32;
        let cell = if n <= 48 {
            (560 / n).clamp(28, 40)
        } else {
            (1344 / n).max(12)
        };
        let gap = if cell >= 24 { 2 } else { 1 };
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
        let col_labels: Vec<String> = map.source.iter().map(|s| cut(s)).collect();
        let row_labels: Vec<String> = map.output.iter().map(|s| cut(s)).collect();

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
            entropy_x,
            entropy_w,
            bar_x,
            bar_w,
            bar_h,
        }
    }

    /// Side of a cell square.
    fn inner(&self) -> i32 {
        self.cell - self.gap
    }

    /// Top-left corner of cell `(row, col)`.
    fn cell_origin(&self, row: usize, col: usize) -> (i32, i32) {
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
    fn items(&self, map: &AttentionMap) -> Vec<Item> {
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
enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn svg(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }

    /// Offset of the anchor point from the start of a text `advance` long.
    fn offset(self, advance: f32) -> f32 {
        match self {
            Anchor::Start => 0.0,
            Anchor::Middle => advance / 2.0,
            Anchor::End => advance,
        }
    }
}

/// One thing to draw.
#[derive(Debug, Clone)]
enum Item {
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
struct Text {
    text: String,
    x: f32,
    y: f32,
    size: f32,
    fill: [u8; 3],
    anchor: Anchor,
    vertical: bool,
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

// ---------------------------------------------------------------------------------
// Writing files
// ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImageFormat {
    Png,
    Svg,
}

fn image_format(path: &Path) -> Result<ImageFormat, HeatmapError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("png") => Ok(ImageFormat::Png),
        Some("svg") => Ok(ImageFormat::Svg),
        _ => Err(HeatmapError::UnsupportedFormat {
            path: path.to_path_buf(),
        }),
    }
}

fn write_image_with(
    map: &AttentionMap,
    path: &Path,
    format: ImageFormat,
    fonts: &mut FontSet,
) -> Result<ImageReport, HeatmapError> {
    map.check_shape()
        .map_err(|reason| HeatmapError::InvalidMap {
            path: path.to_path_buf(),
            reason,
        })?;
    let (bytes, warnings) = match format {
        ImageFormat::Svg => {
            let layout = Layout::new(map, &mut estimate_width);
            (render_svg(&layout, map).into_bytes(), Vec::new())
        }
        ImageFormat::Png => {
            let layout = Layout::new(map, &mut |s, size| fonts.measure(s, size));
            let png = render_png(&layout, map, fonts).map_err(|e| HeatmapError::Encode {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
            (png, fonts.warnings())
        }
    };
    write_atomically(path, &bytes).map_err(|source| HeatmapError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(ImageReport { warnings })
}

/// Writes `bytes` to a temporary file beside `path`, then renames it to `path`;
/// the temporary file is removed on any error.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

// ---------------------------------------------------------------------------------
// SVG
// ---------------------------------------------------------------------------------

const SVG_FONTS: &str = "DejaVu Sans, Noto Sans Khmer, sans-serif";

/// Text width estimate for SVG layout (the viewer picks the font): DejaVu Sans
/// averages about 0.62 em per column of display width.
fn estimate_width(s: &str, size: f32) -> f32 {
    s.width() as f32 * 0.62 * size
}

fn render_svg(layout: &Layout, map: &AttentionMap) -> String {
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
                let tip = format!(
                    "{} ← {}: {weight:.3}",
                    layout.row_labels[r], layout.col_labels[c]
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

// ---------------------------------------------------------------------------------
// PNG
// ---------------------------------------------------------------------------------

/// An RGB picture being drawn.
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i32, height: i32) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![0xff; (width.max(0) * height.max(0) * 3) as usize],
        }
    }

    fn fill_rect(&mut self, x: i32, y: i32, w: i32, h: i32, fill: [u8; 3]) {
        for py in y.max(0)..(y + h).min(self.height) {
            for px in x.max(0)..(x + w).min(self.width) {
                let i = ((py * self.width + px) * 3) as usize;
                self.pixels[i..i + 3].copy_from_slice(&fill);
            }
        }
    }

    /// Mixes `fill` into the pixel at `(x, y)` with coverage `alpha`.
    fn blend(&mut self, x: i32, y: i32, fill: [u8; 3], alpha: f32) {
        if x < 0 || y < 0 || x >= self.width || y >= self.height || alpha <= 0.0 {
            return;
        }
        let a = alpha.min(1.0);
        let i = ((y * self.width + x) * 3) as usize;
        for (dst, &src) in self.pixels[i..i + 3].iter_mut().zip(&fill) {
            let old = f32::from(*dst);
            *dst = (old + (f32::from(src) - old) * a).round() as u8;
        }
    }

    /// Draws `text`, already rasterised as `mask`, at its place.
    fn draw_text(&mut self, mask: &TextMask, text: &Text) {
        let ax = mask.origin_x + text.anchor.offset(mask.advance);
        let ay = mask.baseline;
        let (x0, y0) = (text.x.round() as i32, text.y.round() as i32);
        for my in 0..mask.height {
            for mx in 0..mask.width {
                let a = mask.alpha[my * mask.width + mx];
                if a <= 0.0 {
                    continue;
                }
                let (dx, dy) = (
                    (mx as f32 - ax).round() as i32,
                    (my as f32 - ay).round() as i32,
                );
                let (px, py) = if text.vertical {
                    (x0 + dy, y0 - dx)
                } else {
                    (x0 + dx, y0 + dy)
                };
                self.blend(px, py, text.fill, a);
            }
        }
    }

    fn encode(&self) -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&self.pixels)?;
        writer.finish()?;
        Ok(out)
    }
}

fn render_png(
    layout: &Layout,
    map: &AttentionMap,
    fonts: &mut FontSet,
) -> Result<Vec<u8>, png::EncodingError> {
    let mut canvas = Canvas::new(layout.width, layout.height);
    for item in layout.items(map) {
        match item {
            Item::Rect {
                x, y, w, h, fill, ..
            } => canvas.fill_rect(x, y, w, h, fill),
            Item::Ramp { x, y, w, h } => {
                for i in 0..h {
                    let t = 1.0 - i as f32 / (h - 1).max(1) as f32;
                    canvas.fill_rect(x, y + i, w, 1, palette(t));
                }
            }
            Item::Text(text) => {
                if let Some(mask) = fonts.render(&text.text, text.size) {
                    canvas.draw_text(&mask, &text);
                }
            }
        }
    }
    canvas.encode()
}

// ---------------------------------------------------------------------------------
// Fonts for PNG text
// ---------------------------------------------------------------------------------

/// Directories searched (recursively) for `.ttf`/`.otf`/`.ttc` files.
const FONT_DIRS: &[&str] = &[
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "~/.local/share/fonts",
    "~/.fonts",
    "/Library/Fonts",
    "/System/Library/Fonts",
    "C:\\Windows\\Fonts",
];

/// Scripts whose fonts are tried first for their characters, by a word in the file
/// name (so `NotoSansKhmer-Regular.ttf` or `KhmerOS.ttf` come before the rest).
const SCRIPT_HINTS: &[(u32, u32, &str)] = &[
    (0x1780, 0x17ff, "khmer"),
    (0x19e0, 0x19ff, "khmer"),
    (0x0e00, 0x0e7f, "thai"),
    (0x0e80, 0x0eff, "lao"),
    (0x1000, 0x109f, "myanmar"),
    (0x0600, 0x06ff, "arab"),
    (0x0590, 0x05ff, "hebrew"),
    (0x0900, 0x097f, "devanagari"),
    (0x3040, 0x9fff, "cjk"),
    (0xac00, 0xd7af, "cjk"),
];

/// A font file that may be loaded when a character needs it.
struct Candidate {
    path: PathBuf,
    /// Lower-case file name, for preferences and hints.
    name: String,
    state: LoadState,
}

enum LoadState {
    NotTried,
    Failed,
    Loaded(usize),
}

/// Which part of a text is drawn with which font.
#[derive(Debug, Clone, PartialEq)]
struct Segment {
    /// Index into `FontSet::faces`; `None` for text that no font covers, drawn as
    /// its code points with the primary font.
    face: Option<usize>,
    text: String,
}

/// Text as coverage values, one per pixel, before it is put on the canvas.
struct TextMask {
    width: usize,
    height: usize,
    alpha: Vec<f32>,
    /// Mask x where the text's pen starts.
    origin_x: f32,
    /// Mask y of the baseline.
    baseline: f32,
    /// Pen advance over the whole text.
    advance: f32,
}

/// The fonts a PNG is drawn with: candidate files in order of preference, loaded
/// lazily when a character is not covered by the fonts loaded so far.
struct FontSet {
    candidates: Vec<Candidate>,
    faces: Vec<FontVec>,
    /// Candidate index of each face (its rank in the order of preference).
    face_candidate: Vec<usize>,
    /// The face chosen for each character met so far.
    by_char: HashMap<char, Option<usize>>,
    /// Cached [`FontSet::khmer_factor`] by face.
    khmer_factors: HashMap<usize, f32>,
    /// Labels with characters no font covers.
    missing: BTreeSet<String>,
    /// Whether a text had to be drawn without any font at all.
    no_font: bool,
}

impl FontSet {
    /// No fonts: PNG text is left out (used for SVG, and by tests).
    fn empty() -> FontSet {
        FontSet::from_files(Vec::new())
    }

    /// The fonts under the system font directories ([`FONT_DIRS`]), ordered so that
    /// DejaVu Sans comes first, then regular sans faces, regular faces of other
    /// styles, and bold/italic/condensed/mono faces last.
    fn system() -> FontSet {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut files = Vec::new();
        for dir in FONT_DIRS {
            let dir = match (dir.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                (Some(_), None) => continue,
                (None, _) => PathBuf::from(dir),
            };
            find_font_files(&dir, 0, &mut files);
        }
        FontSet::from_files(files)
    }

    fn from_files(mut files: Vec<PathBuf>) -> FontSet {
        files.sort_by_cached_key(|p| {
            let name = file_name_lower(p);
            (font_rank(&name), name)
        });
        files.dedup();
        let candidates = files
            .into_iter()
            .map(|path| Candidate {
                name: file_name_lower(&path),
                path,
                state: LoadState::NotTried,
            })
            .collect();
        FontSet {
            candidates,
            faces: Vec::new(),
            face_candidate: Vec::new(),
            by_char: HashMap::new(),
            khmer_factors: HashMap::new(),
            missing: BTreeSet::new(),
            no_font: false,
        }
    }

    /// Loads candidate `i` if not tried yet; its face index when it loads.
    fn load(&mut self, i: usize) -> Option<usize> {
        let candidate = &mut self.candidates[i];
        if let LoadState::NotTried = candidate.state {
            let font = fs::read(&candidate.path).ok().and_then(|data| {
                let ttc = candidate.name.ends_with(".ttc");
                let font = if ttc {
                    FontVec::try_from_vec_and_index(data, 0)
                } else {
                    FontVec::try_from_vec(data)
                };
                font.ok()
            });
            candidate.state = match font {
                Some(font) => {
                    self.faces.push(font);
                    self.face_candidate.push(i);
                    LoadState::Loaded(self.faces.len() - 1)
                }
                None => LoadState::Failed,
            };
        }
        match self.candidates[i].state {
            LoadState::Loaded(face) => Some(face),
            _ => None,
        }
    }

    /// The preferred face: the first candidate that loads.
    fn primary(&mut self) -> Option<usize> {
        (0..self.candidates.len()).find_map(|i| self.load(i))
    }

    /// The first face, in order of preference (files named after the character's
    /// script first), that has a glyph for `c`.
    fn face_for_char(&mut self, c: char) -> Option<usize> {
        if let Some(found) = self.by_char.get(&c) {
            return *found;
        }
        let hint = SCRIPT_HINTS
            .iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&u32::from(c)))
            .map(|(_, _, word)| *word);
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        if let Some(word) = hint {
            order.sort_by_key(|&i| !self.candidates[i].name.contains(word));
        }
        let found = order
            .into_iter()
            .find_map(|i| self.load(i).filter(|&f| self.faces[f].glyph_id(c).0 != 0));
        self.by_char.insert(c, found);
        found
    }

    /// Splits `text` by font: one face for the whole text when one covers it all,
    /// else the preferred face of each character, combining marks staying with
    /// their base's face when it has them.
    fn segments(&mut self, text: &str) -> Vec<Segment> {
        let chars: Vec<char> = text.chars().filter(|c| !ignorable(*c)).collect();
        let per_char: Vec<Option<usize>> = chars.iter().map(|&c| self.face_for_char(c)).collect();
        let mut used: Vec<usize> = per_char.iter().flatten().copied().collect();
        used.sort_unstable_by_key(|&f| self.face_candidate[f]);
        used.dedup();
        let whole = used
            .into_iter()
            .find(|&f| chars.iter().all(|&c| self.faces[f].glyph_id(c).0 != 0));
        let mut out: Vec<Segment> = Vec::new();
        for (&c, &own) in chars.iter().zip(&per_char) {
            let prev = out.last().and_then(|s| s.face);
            let face = if let Some(f) = whole {
                Some(f)
            } else if c.width() == Some(0) && prev.is_some_and(|f| self.faces[f].glyph_id(c).0 != 0)
            {
                prev
            } else {
                own
            };
            if face.is_none() {
                self.missing.insert(text.to_string());
            }
            match out.last_mut() {
                Some(last) if last.face == face => last.text.push(c),
                _ => out.push(Segment {
                    face,
                    text: c.to_string(),
                }),
            }
        }
        for seg in &mut out {
            if seg.face.is_none() {
                seg.text = seg
                    .text
                    .chars()
                    .map(|c| format!("U+{:04X}", u32::from(c)))
                    .collect::<Vec<_>>()
                    .join(" ");
            } else {
                seg.text = reorder_khmer(&seg.text);
            }
        }
        out
    }

    /// Glyph ids and pen positions of `text` at em size `size`, by face, with the
    /// largest ascent and descent of the faces used, or `None` without any font.
    #[allow(clippy::type_complexity)]
    fn place(
        &mut self,
        text: &str,
        size: f32,
    ) -> Option<(Vec<(usize, GlyphId, PxScale, f32)>, f32, f32, f32)> {
        let Some(primary) = self.primary() else {
            self.no_font = true;
            return None;
        };
        let mut glyphs = Vec::new();
        let (mut caret, mut ascent, mut descent) = (0.0f32, 0.0f32, 0.0f32);
        for seg in self.segments(text) {
            let face = seg.face.unwrap_or(primary);
            let factor = if seg.text.chars().any(is_khmer) {
                self.khmer_factor(face)
            } else {
                1.0
            };
            let font = &self.faces[face];
            let scale = em_scale(font, size * factor);
            let scaled = font.as_scaled(scale);
            ascent = ascent.max(scaled.ascent());
            descent = descent.min(scaled.descent());
            let mut prev: Option<GlyphId> = None;
            for c in seg.text.chars() {
                let id = font.glyph_id(c);
                if let Some(p) = prev {
                    caret += scaled.kern(p, id);
                }
                glyphs.push((face, id, scale, caret));
                caret += scaled.h_advance(id);
                prev = Some(id);
            }
        }
        Some((glyphs, caret, ascent, descent))
    }

    /// Size factor for Khmer text in `face`: Khmer is dense and hard to read at
    /// Latin label sizes, so it is scaled until a consonant's body (ក) is about
    /// 0.8 em tall (at most 1.4 times); Latin x-height is about 0.55 em.
    fn khmer_factor(&mut self, face: usize) -> f32 {
        *self.khmer_factors.entry(face).or_insert_with(|| {
            let font = &self.faces[face];
            let upm = font.units_per_em().unwrap_or(1000.0);
            match font.outline(font.glyph_id('\u{1780}')) {
                Some(o) if o.bounds.height() != 0.0 => {
                    (0.8 * upm / o.bounds.height().abs()).clamp(1.0, 1.4)
                }
                _ => 1.0,
            }
        })
    }

    /// Width of `text` at em size `size` in pixels (an estimate without fonts).
    fn measure(&mut self, text: &str, size: f32) -> f32 {
        match self.place(text, size) {
            Some((_, advance, _, _)) => advance,
            None => estimate_width(text, size),
        }
    }

    /// Rasterises `text` at em size `size`; `None` without any font.
    fn render(&mut self, text: &str, size: f32) -> Option<TextMask> {
        let (glyphs, advance, ascent, descent) = self.place(text, size)?;
        let pad = (size * 0.6).ceil();
        let width = (advance + 2.0 * pad).ceil() as usize;
        let height = (ascent - descent + 2.0 * pad).ceil() as usize;
        let baseline = pad + ascent;
        let mut alpha = vec![0.0f32; width * height];
        for (face, id, scale, x) in glyphs {
            let glyph = id.with_scale_and_position(scale, point(pad + x, baseline));
            if let Some(outlined) = self.faces[face].outline_glyph(glyph) {
                let bounds = outlined.px_bounds();
                outlined.draw(|gx, gy, cov| {
                    let px = bounds.min.x as i64 + i64::from(gx);
                    let py = bounds.min.y as i64 + i64::from(gy);
                    if px >= 0 && py >= 0 && (px as usize) < width && (py as usize) < height {
                        let a = &mut alpha[py as usize * width + px as usize];
                        *a = (*a + cov).min(1.0);
                    }
                });
            }
        }
        Some(TextMask {
            width,
            height,
            alpha,
            origin_x: pad,
            baseline,
            advance,
        })
    }

    /// One-line notes about text the fonts could not draw.
    fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.no_font {
            out.push(format!(
                "PNG drawn without text: no usable font file found under {}; use the .svg output or install fonts-dejavu-core",
                FONT_DIRS[0]
            ));
        } else if !self.missing.is_empty() {
            const SHOWN: usize = 4;
            let mut labels: Vec<String> = self
                .missing
                .iter()
                .take(SHOWN)
                .map(|s| format!("'{s}'"))
                .collect();
            if self.missing.len() > SHOWN {
                labels.push(format!("{} more", self.missing.len() - SHOWN));
            }
            out.push(format!(
                "PNG: no installed font has glyphs for {} (drawn as code points); use the .svg output or install fonts-noto-core",
                labels.join(", ")
            ));
        }
        out
    }
}

fn is_khmer(c: char) -> bool {
    matches!(c, '\u{1780}'..='\u{17ff}' | '\u{19e0}'..='\u{19ff}')
}

/// Characters that draw nothing and need no glyph (joiners, variation selectors).
fn ignorable(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' | '\u{fe00}'..='\u{fe0f}')
}

/// The `PxScale` that gives `font` an em of `size` pixels (CSS `font-size`), so PNG
/// text has the size the SVG asks for.
fn em_scale(font: &FontVec, size: f32) -> PxScale {
    let upm = font.units_per_em().unwrap_or(1000.0);
    PxScale::from(size * font.height_unscaled() / upm)
}

/// Khmer vowel signs E, AE and AI are stored after their consonant cluster but
/// written before it; without a shaping engine, move them in front of the cluster.
fn reorder_khmer(s: &str) -> String {
    if !s.chars().any(|c| ('\u{17c1}'..='\u{17c3}').contains(&c)) {
        return s.to_string();
    }
    let mut out: Vec<char> = Vec::new();
    let mut base = 0; // index in `out` where the current cluster starts
    let mut after_coeng = false;
    for c in s.chars() {
        if ('\u{17c1}'..='\u{17c3}').contains(&c) {
            out.insert(base, c);
        } else {
            let joins = after_coeng || is_khmer_dependent(c) || c.width() == Some(0);
            if !joins {
                base = out.len();
            }
            out.push(c);
        }
        after_coeng = c == COENG;
    }
    out.into_iter().collect()
}

fn file_name_lower(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

/// Preference of a font file by name: lower is tried first.
fn font_rank(name: &str) -> u8 {
    const STYLED: &[&str] = &[
        "bold",
        "italic",
        "oblique",
        "light",
        "thin",
        "black",
        "condensed",
        "mono",
        "medium",
        "semi",
        "extra",
        "narrow",
        "heavy",
    ];
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    if stem == "dejavusans" {
        0
    } else if STYLED.iter().any(|s| stem.contains(s)) {
        3
    } else if stem.contains("sans") && !stem.contains("serif") {
        1
    } else {
        2
    }
}

/// Collects font files under `dir`, following links, at most a few levels deep.
fn find_font_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if depth < 6 {
                find_font_files(&path, depth + 1, out);
            }
        } else {
            let name = file_name_lower(&path);
            if [".ttf", ".otf", ".ttc"].iter().any(|e| name.ends_with(e)) {
                out.push(path);
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn map_3x4() -> AttentionMap {
        AttentionMap {
            title: "netra: sok -> សុខ & <friends>".to_string(),
            source: vec!["s".into(), "o".into(), "k".into(), "<pad>".into()],
            output: vec!["ស".into(), "ុ".into(), "\n".into()],
            weights: vec![
                vec![1.0, 0.0, 0.0, 0.0],
                vec![0.1, 0.7, 0.2, 0.0],
                vec![0.25, 0.25, 0.25, 0.25],
            ],
        }
    }

    /// A fresh directory under the system temp directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::SeqCst);
            let dir =
                std::env::temp_dir().join(format!("heatmap-test-{}-{tag}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn entries(&self) -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(io::BufReader::new(fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    fn pixel(png: &(u32, u32, Vec<u8>), x: i32, y: i32) -> [u8; 3] {
        let i = ((y as u32 * png.0 + x as u32) * 3) as usize;
        [png.2[i], png.2[i + 1], png.2[i + 2]]
    }

    #[test]
    fn entropy_in_nats() {
        let map = map_3x4();
        assert!(map.entropy(0).abs() < 1e-7);
        assert!((map.entropy(2) - 4f32.ln()).abs() < 1e-6);
        let h1 = -(0.1f32 * 0.1f32.ln() + 0.7 * 0.7f32.ln() + 0.2 * 0.2f32.ln());
        assert!((map.entropy(1) - h1).abs() < 1e-6);
    }

    #[test]
    fn palette_ends_and_monotone_lightness() {
        assert_eq!(palette(0.0), [0x44, 0x01, 0x54]);
        assert_eq!(palette(1.0), [0xfd, 0xe7, 0x25]);
        assert_eq!(palette(-3.0), palette(0.0));
        assert_eq!(palette(7.0), palette(1.0));
        assert_eq!(palette(f32::NAN), NAN_COLOUR);
        let luma = |c: [u8; 3]| {
            0.2126 * f32::from(c[0]) + 0.7152 * f32::from(c[1]) + 0.0722 * f32::from(c[2])
        };
        for i in 0..100 {
            assert!(luma(palette(i as f32 / 100.0)) < luma(palette((i + 1) as f32 / 100.0)));
        }
    }

    #[test]
    fn visible_labels() {
        assert_eq!(visible("\n"), "⏎");
        assert_eq!(visible("\t"), "\\t");
        assert_eq!(visible("a\u{1}"), "a\\x01");
        assert_eq!(visible(" "), "␣");
        assert_eq!(visible(""), "∅");
        assert_eq!(visible("</s>"), "</s>");
    }

    #[test]
    fn khmer_clusters_and_reordering() {
        // ស + coeng + ត + vowel sign E: one cluster; E drawn before the cluster.
        assert_eq!(clusters("ស្តេ"), vec!["ស្តេ"]);
        assert_eq!(clusters("សុខ"), vec!["សុ", "ខ"]);
        assert_eq!(reorder_khmer("កេ"), "េក");
        assert_eq!(reorder_khmer("ស្តេក"), "េស្តក");
    }

    #[test]
    fn svg_cells_labels_and_colours() {
        let map = map_3x4();
        let dir = TempDir::new("svg");
        let path = dir.0.join("map.svg");
        let report = write_image(&map, &path).unwrap();
        assert!(report.warnings.is_empty());
        let svg = fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<rect class=\"cell\"").count(), 3 * 4);
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        // Labels are escaped, and no raw `<pad>`/`&` remains.
        assert!(svg.contains(">&lt;pad&gt;</text>"));
        assert!(!svg.contains("<pad>"));
        assert!(svg.contains("sok -&gt; សុខ &amp; &lt;friends&gt;"));
        assert!(svg.contains(">⏎</text>"));
        let cell = |r: usize, c: usize| {
            let key = format!("data-row=\"{r}\" data-col=\"{c}\" ");
            svg.lines().find(|l| l.contains(&key)).unwrap().to_string()
        };
        assert!(cell(0, 0).contains("fill=\"#fde725\""), "{}", cell(0, 0));
        assert!(cell(0, 1).contains("fill=\"#440154\""), "{}", cell(0, 1));
        // Values are printed in cells from 0.1 on, not below.
        assert!(svg.contains(">1.00</text>") && svg.contains(">0.70</text>"));
        assert!(!svg.contains(">0.00</text>"));
        // Entropy column and colour bar ticks.
        assert!(svg.contains(">1.39</text>"));
        for tick in [">0</text>", ">0.5</text>", ">1</text>"] {
            assert!(svg.contains(tick), "{tick}");
        }
        assert_eq!(svg.matches("class=\"colorbar\"").count(), 1);
        assert_eq!(dir.entries(), vec!["map.svg"]);
    }

    #[test]
    fn png_dimensions_and_cell_colours() {
        let map = map_3x4();
        let dir = TempDir::new("png");
        for (name, mut fonts) in [
            ("plain.png", FontSet::empty()),
            ("text.png", FontSet::system()),
        ] {
            let path = dir.0.join(name);
            write_image_with(&map, &path, ImageFormat::Png, &mut fonts).unwrap();
            let bytes = fs::read(&path).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            assert_eq!(&bytes[12..16], b"IHDR");
            let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
            let layout = Layout::new(&map, &mut |s, size| fonts.measure(s, size));
            assert_eq!((w as i32, h as i32), (layout.width, layout.height));
            assert!(layout.cell >= 28 && layout.cell <= 40);
            let png = decode(&path);
            assert_eq!((png.0, png.1), (w, h));
            let inner = layout.inner();
            let (x, y) = layout.cell_origin(0, 0);
            let (x0, y0) = layout.cell_origin(0, 1);
            if name == "plain.png" {
                // Without fonts there is no text: the cell centres show the ramp ends.
                assert_eq!(pixel(&png, x + inner / 2, y + inner / 2), palette(1.0));
                assert_eq!(pixel(&png, x0 + inner / 2, y0 + inner / 2), palette(0.0));
            }
            // Near a corner, clear of any printed value.
            assert_eq!(pixel(&png, x + 2, y + 2), palette(1.0));
            assert_eq!(pixel(&png, x0 + 2, y0 + 2), palette(0.0));
            // The colour bar's top and bottom rows are the ramp ends.
            let (bx, by) = (layout.bar_x + layout.bar_w / 2, layout.grid_y);
            assert_eq!(pixel(&png, bx, by), palette(1.0));
            assert_eq!(pixel(&png, bx, by + layout.bar_h - 1), palette(0.0));
        }
        assert_eq!(dir.entries(), vec!["plain.png", "text.png"]);
    }

    #[test]
    fn png_without_fonts_says_so() {
        let dir = TempDir::new("nofont");
        let mut fonts = FontSet::empty();
        let report = write_image_with(
            &map_3x4(),
            &dir.0.join("m.png"),
            ImageFormat::Png,
            &mut fonts,
        )
        .unwrap();
        assert_eq!(report.warnings.len(), 1);
        assert!(
            report.warnings[0].contains("without text"),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn png_text_is_drawn_with_system_fonts() {
        let mut fonts = FontSet::system();
        if fonts.primary().is_none() {
            eprintln!("no system font installed; skipping");
            return;
        }
        let mask = fonts.render("AH0", 13.0).unwrap();
        assert!(mask.advance > 13.0);
        assert!(mask.alpha.iter().filter(|a| **a > 0.5).count() > 20);
        // A character no font has is drawn as its code point and reported.
        let segs = fonts.segments("a\u{10ffff}");
        assert_eq!(segs.last().unwrap().text, "U+10FFFF");
        assert!(segs.last().unwrap().face.is_none());
        let warnings = fonts.warnings();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains(".svg"), "{warnings:?}");
    }

    #[test]
    fn write_errors_name_the_path_and_leave_nothing() {
        let map = map_3x4();
        let dir = TempDir::new("err");
        let bad = dir.0.join("map.jpg");
        let err = write_image(&map, &bad).unwrap_err();
        assert!(matches!(err, HeatmapError::UnsupportedFormat { .. }));
        let msg = err.to_string();
        assert!(msg.contains(&bad.display().to_string()), "{msg}");
        assert!(!msg.contains('\n'));

        for name in ["map.svg", "map.png"] {
            let missing = dir.0.join("no-such-dir").join(name);
            let err = write_image(&map, &missing).unwrap_err();
            assert!(matches!(err, HeatmapError::Io { .. }), "{err}");
            assert!(err.to_string().contains(&missing.display().to_string()));
            assert!(std::error::Error::source(&err).is_some());
        }

        // A ragged map is refused before anything is written.
        let mut ragged = map.clone();
        ragged.weights[1].pop();
        let err = write_image(&ragged, &dir.0.join("ragged.svg")).unwrap_err();
        assert!(matches!(err, HeatmapError::InvalidMap { .. }), "{err}");

        // Renaming onto a directory fails after the temporary file was written:
        // the temporary file is removed.
        fs::create_dir(dir.0.join("taken.svg")).unwrap();
        let err = write_image(&map, &dir.0.join("taken.svg")).unwrap_err();
        assert!(matches!(err, HeatmapError::Io { .. }), "{err}");
        assert_eq!(dir.entries(), vec!["taken.svg"]);
    }

    fn strip_ansi(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for d in chars.by_ref() {
                    if d == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn terminal_rows_entropy_and_legend() {
        let map = map_3x4();
        let text = render_terminal(&map, false);
        let lines: Vec<&str> = text.lines().collect();
        // Title, 5 header lines ("<pad>" stacked vertically), 3 rows, legend.
        assert_eq!(lines.len(), 1 + 5 + 3 + 1, "{text}");
        assert_eq!(lines[0], visible(&map.title));
        let rows = &lines[6..9];
        assert!(rows[0].trim_start().starts_with("ស │██      "), "{text}");
        assert!(rows[0].ends_with("0.000"));
        assert!(rows[2].trim_start().starts_with("⏎ │"));
        assert!(rows[2].ends_with(&format!("{:.3}", 4f32.ln())));
        assert!(rows[2].ends_with("1.386"));
        assert!(lines[9].starts_with("scale"));
        assert!(lines[5].ends_with("H(nats)"));
    }

    #[test]
    fn terminal_columns_align_with_khmer_and_wide_labels() {
        let map = AttentionMap {
            title: "khmer".to_string(),
            source: vec!["ស្ត".into(), "ទី".into(), "中文".into(), "a".into()],
            output: vec![
                "សុ".into(),
                "ភា".into(),
                "ស្តេ".into(),
                "</s>".into(),
                "中".into(),
            ],
            weights: vec![vec![0.25; 4]; 5],
        };
        for color in [false, true] {
            let text = strip_ansi(&render_terminal(&map, color));
            let lines: Vec<&str> = text.lines().collect();
            let grid = &lines[1..lines.len() - 1];
            assert!(grid.len() > map.output.len());
            let w = grid[0].width();
            for line in grid {
                assert_eq!(line.width(), w, "{line:?} in\n{text}");
            }
            // The grid's right edge is in the same column on every row.
            let rows = &grid[grid.len() - map.output.len()..];
            for line in rows {
                let edge = line.rfind('│').unwrap();
                assert_eq!(
                    line[..edge].width(),
                    rows[0][..rows[0].rfind('│').unwrap()].width()
                );
            }
        }
    }

    #[test]
    fn terminal_colours_use_the_ramp() {
        let text = render_terminal(&map_3x4(), true);
        assert!(text.contains("\x1b[48;2;253;231;37m  "));
        assert!(text.contains("\x1b[48;2;68;1;84m  "));
        assert!(text.contains("\x1b[0m"));
        assert_eq!(
            render_terminal(&map_3x4(), false).matches('\x1b').count(),
            0
        );
    }

    #[test]
    fn empty_map_does_not_panic() {
        let map = AttentionMap {
            title: "empty".into(),
            source: vec![],
            output: vec![],
            weights: vec![],
        };
        assert!(render_terminal(&map, true).contains("empty"));
        let dir = TempDir::new("empty");
        write_image(&map, &dir.0.join("e.svg")).unwrap();
        write_image(&map, &dir.0.join("e.png")).unwrap();
    }
}
