//! The map drawn in a terminal.

use unicode_width::UnicodeWidthStr;

use super::colour::{palette, shade};
use super::labels::{clusters, pad_left, pad_right, truncate_width, visible};
use super::map::AttentionMap;

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
