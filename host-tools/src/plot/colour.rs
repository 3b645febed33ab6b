//! Colours: viridis on a fixed 0..1 scale (so maps compare), text that reads on a cell,
//! and terminal shades.

/// Viridis (matplotlib) sampled at 0, 0.1, ..., 1.
pub(crate) const VIRIDIS: [[u8; 3]; 11] = [
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
pub(crate) const NAN_COLOUR: [u8; 3] = [0xc8, 0xc8, 0xc8];
pub(crate) const WHITE: [u8; 3] = [0xff, 0xff, 0xff];
pub(crate) const INK: [u8; 3] = [0x22, 0x22, 0x22];
pub(crate) const GREY: [u8; 3] = [0x6b, 0x6b, 0x6b];
pub(crate) const LIGHT: [u8; 3] = [0xe3, 0xe7, 0xee];

/// The colour of weight `w` on the fixed 0..1 viridis scale (clamped).
pub(crate) fn palette(w: f32) -> [u8; 3] {
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
pub(crate) fn contrast(bg: [u8; 3]) -> [u8; 3] {
    let luma = 0.2126 * f32::from(bg[0]) + 0.7152 * f32::from(bg[1]) + 0.0722 * f32::from(bg[2]);
    if luma > 140.0 {
        [0x1a, 0x1a, 0x1a]
    } else {
        WHITE
    }
}

/// Terminal shade of weight `w` (nearest of five levels).
pub(crate) fn shade(w: f32) -> char {
    if !w.is_finite() {
        return '?';
    }
    const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];
    SHADES[(w.clamp(0.0, 1.0) * 4.0).round() as usize]
}

pub(crate) fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}
