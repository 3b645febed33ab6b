//! Tests of the pictures: terminal, SVG, PNG (with a reference render of Khmer and
//! Arabic labels).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use resvg::usvg::fontdb;
use unicode_width::UnicodeWidthStr;

use super::colour::{palette, NAN_COLOUR};
use super::labels::{clusters, visible};
use super::layout::Layout;
use super::*;
use crate::error::Error;

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
    let decoder = ::png::Decoder::new(io::BufReader::new(fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, ::png::ColorType::Rgb);
    assert_eq!(info.bit_depth, ::png::BitDepth::Eight);
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
    let luma =
        |c: [u8; 3]| 0.2126 * f32::from(c[0]) + 0.7152 * f32::from(c[1]) + 0.0722 * f32::from(c[2]);
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
fn khmer_clusters() {
    // ស + coeng + ត + vowel sign E: one cluster.
    assert_eq!(clusters("ស្តេ"), vec!["ស្តេ"]);
    assert_eq!(clusters("សុខ"), vec!["សុ", "ខ"]);
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
    let layout = Layout::new(&map);
    assert!(layout.cell >= 28 && layout.cell <= 40);
    for (name, fonts) in [
        ("plain.png", fontdb::Database::new()),
        ("text.png", png::fonts()),
    ] {
        let path = dir.0.join(name);
        write_image_with(&map, &path, || fonts).unwrap();
        let png = decode(&path);
        assert_eq!((png.0 as i32, png.1 as i32), (layout.width, layout.height));
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
        // The colour bar's top and bottom rows are near the ramp ends (a gradient).
        let (bx, by) = (layout.bar_x + layout.bar_w / 2, layout.grid_y);
        let near = |a: [u8; 3], b: [u8; 3]| a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 8);
        assert!(near(pixel(&png, bx, by), palette(1.0)));
        assert!(near(pixel(&png, bx, by + layout.bar_h - 1), palette(0.0)));
    }
    assert_eq!(dir.entries(), vec!["plain.png", "text.png"]);
}

#[test]
fn png_without_fonts_says_so() {
    let dir = TempDir::new("nofont");
    let report = write_image_with(&map_3x4(), &dir.0.join("m.png"), fontdb::Database::new).unwrap();
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].contains("without text"),
        "{:?}",
        report.warnings
    );
}

#[test]
fn a_label_no_font_covers_is_reported() {
    let mut map = map_3x4();
    map.output[0] = "a\u{10ffff}".into();
    let dir = TempDir::new("coverage");
    let report = write_image_with(&map, &dir.0.join("m.png"), png::fonts).unwrap();
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0].contains("'a\u{10ffff}'"),
        "{:?}",
        report.warnings
    );
    // The Khmer labels of the same map are covered by the shipped font.
    assert!(!report.warnings[0].contains('ស'), "{:?}", report.warnings);
}

#[test]
fn write_errors_name_the_path_and_leave_nothing() {
    let map = map_3x4();
    let dir = TempDir::new("err");
    let bad = dir.0.join("map.jpg");
    let err = write_image(&map, &bad).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("unknown image format"), "{msg}");
    assert!(msg.contains(&bad.display().to_string()), "{msg}");
    assert!(!msg.contains('\n'));

    for name in ["map.svg", "map.png"] {
        let missing = dir.0.join("no-such-dir").join(name);
        let err = write_image(&map, &missing).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert!(err.to_string().contains(&missing.display().to_string()));
        assert!(std::error::Error::source(&err).is_some());
    }

    // A ragged map is refused before anything is written.
    let mut ragged = map.clone();
    ragged.weights[1].pop();
    let err = write_image(&ragged, &dir.0.join("ragged.svg")).unwrap_err();
    assert!(
        err.to_string().contains("weight row 1 has 3 values"),
        "{err}"
    );

    // Renaming onto a directory fails after the temporary file was written:
    // the temporary file is removed.
    fs::create_dir(dir.0.join("taken.svg")).unwrap();
    let err = write_image(&map, &dir.0.join("taken.svg")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
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

/// DejaVu Sans from Debian's fonts-dejavu-core (`cargo xtask setup` installs it): the
/// Arabic of the reference render.
const DEJAVU_SANS: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// The reference render of the label region (`S2S_BLESS=1` rewrites it).
fn reference_path() -> PathBuf {
    [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "tests",
        "fixtures",
        "plot",
        "labels-khmer-arabic.png",
    ]
    .iter()
    .collect()
}

/// A Khmer source label (a subscript consonant and a vowel sign written before its
/// consonant) and an Arabic output label (joined letters, right to left), rendered with
/// the shipped Khmer font and DejaVu Sans only, match the committed reference render in
/// the region of the labels.
#[test]
fn khmer_and_arabic_labels_match_the_reference_render() {
    let dejavu = std::fs::read(DEJAVU_SANS).unwrap_or_else(|e| {
        panic!("{DEJAVU_SANS}: {e}; install fonts-dejavu-core (cargo xtask setup does)")
    });
    let fonts = || {
        let mut db = fontdb::Database::new();
        db.load_font_data(png::KHMER_FONT.to_vec());
        db.load_font_data(dejavu);
        db
    };
    let map = AttentionMap {
        title: String::new(),
        source: vec!["ខ្មែរ".into()],
        output: vec!["عربي".into()],
        weights: vec![vec![0.0]],
    };
    let dir = TempDir::new("labels");
    let path = dir.0.join("labels.png");
    let report = write_image_with(&map, &path, fonts).unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let layout = Layout::new(&map);
    // From left of the row label to the right of the grid, from above the column label
    // to the bottom of the grid.
    let (x0, y0) = (layout.row_label_right - 48, layout.grid_y - 34);
    let (x1, y1) = (
        layout.grid_x + layout.inner() + 8,
        layout.grid_y + layout.inner(),
    );
    let png = decode(&path);
    let crop = crop(&png, x0, y0, x1, y1);
    let reference = reference_path();
    if std::env::var_os("S2S_BLESS").is_some() {
        write_rgb(&reference, &crop);
    }
    let want = decode(&reference);
    assert_eq!(
        (want.0, want.1),
        (crop.0, crop.1),
        "size of the label region"
    );
    let differ = want
        .2
        .chunks(3)
        .zip(crop.2.chunks(3))
        .filter(|(a, b)| a.iter().zip(*b).any(|(x, y)| x.abs_diff(*y) > 24))
        .count();
    let total = (crop.0 * crop.1) as usize;
    assert!(
        differ * 200 <= total,
        "{differ} of {total} pixels differ from {} (S2S_BLESS=1 rewrites it after a look)",
        reference.display()
    );
    let ink = crop
        .2
        .chunks(3)
        .filter(|p| p.iter().all(|&v| v < 96))
        .count();
    assert!(ink > 40, "the labels are drawn ({ink} dark pixels)");
}

/// The pixels of `png` in `[x0, x1) x [y0, y1)`.
fn crop(png: &(u32, u32, Vec<u8>), x0: i32, y0: i32, x1: i32, y1: i32) -> (u32, u32, Vec<u8>) {
    let mut out = Vec::new();
    for y in y0..y1 {
        for x in x0..x1 {
            out.extend_from_slice(&pixel(png, x, y));
        }
    }
    ((x1 - x0) as u32, (y1 - y0) as u32, out)
}

fn write_rgb(path: &Path, img: &(u32, u32, Vec<u8>)) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut encoder = ::png::Encoder::new(fs::File::create(path).unwrap(), img.0, img.1);
    encoder.set_color(::png::ColorType::Rgb);
    encoder.set_depth(::png::BitDepth::Eight);
    encoder
        .write_header()
        .unwrap()
        .write_image_data(&img.2)
        .unwrap();
}

/// A diagonal map of `cols` source positions and `rows` output steps with a title of
/// the whole source, as a long running text gives.
fn long_map(rows: usize, cols: usize) -> AttentionMap {
    AttentionMap {
        title: format!("m: {}", "a".repeat(cols)),
        source: (0..cols).map(|c| format!("{}", c % 10)).collect(),
        output: (0..rows).map(|r| format!("t{r}")).collect(),
        weights: (0..rows)
            .map(|r| (0..cols).map(|c| f32::from(c == r * cols / rows)).collect())
            .collect(),
    }
}

#[test]
fn a_long_source_gets_a_cut_title_and_past_the_labelled_size_a_dense_picture() {
    // 1,000 positions: labelled cells, the title cut so that it does not widen the picture.
    let map = long_map(900, 1_000);
    let layout = Layout::bounded(&map).unwrap();
    assert_eq!((layout.cell, layout.col_labels.len()), (12, 1_000));
    assert!(layout.title.chars().count() <= 120 && layout.title.ends_with('…'));
    assert!(layout.width < 1_000 * 12 + 1_000, "{}", layout.width);
    // 3,000 positions do not fit labelled cells: dense cells without gaps or labels.
    let map = long_map(2_000, 3_000);
    let layout = Layout::bounded(&map).unwrap();
    assert_eq!((layout.cell, layout.gap), (1, 0));
    assert!(layout.col_labels.is_empty() && layout.row_labels.is_empty());
    assert!(layout.width <= 16_384 && layout.height <= 16_384);
    // Its SVG: every cell (tips naming the positions), no row entropy written.
    let small = long_map(40, 1_500);
    let layout = Layout::bounded(&small).unwrap();
    assert_eq!((layout.cell, layout.gap), (2, 0));
    let svg = svg::render_svg(&layout, &small);
    assert_eq!(svg.matches("class=\"cell\"").count(), 40 * 1_500);
    assert!(
        svg.contains("<title>39 ← 1462: 1.000</title>"),
        "the last step's tip"
    );
    assert!(!svg.contains(">0.00<"), "no row entropy written");
    // Beyond one-pixel cells: refused, naming the map's size.
    let e = Layout::bounded(&long_map(2, 20_000))
        .unwrap_err()
        .to_string();
    assert!(e.contains("20000 source positions"), "{e}");
}
