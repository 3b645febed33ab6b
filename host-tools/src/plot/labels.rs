//! Labels: control characters made visible, clusters (a base character with its
//! combining marks), cutting and padding by display width, XML escaping.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A label with control characters made visible: newline `⏎`, tab `\t`, carriage
/// return `\r`, other controls `\xNN`, a lone space `␣`, the empty label `∅`; a
/// label that starts with a combining mark (a Khmer vowel sign or subscript) is
/// shown on a dotted circle `◌`, as scripts' charts do.
pub(crate) fn visible(s: &str) -> String {
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
pub(crate) fn is_khmer_dependent(c: char) -> bool {
    matches!(c, '\u{17b4}'..='\u{17d3}' | '\u{17dd}')
}

/// Splits a label into clusters: a character of non-zero display width followed by
/// the zero-width ones (combining marks), with a coeng joining the next consonant and
/// Khmer vowel signs joining their consonant while the cluster stays two columns wide.
pub(crate) fn clusters(s: &str) -> Vec<String> {
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
pub(crate) fn truncate_width(s: &str, max: usize) -> String {
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

pub(crate) fn pad_left(s: &str, width: usize) -> String {
    format!("{}{s}", " ".repeat(width.saturating_sub(s.width())))
}

pub(crate) fn pad_right(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.width())))
}

pub(crate) fn xml_escape(s: &str) -> String {
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
