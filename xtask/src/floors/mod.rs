//! `cargo xtask floors`: the floors of each crate, from the code's own imports.
//!
//! Every non-test file of a crate is read with `syn`; each path it names that starts in
//! the crate (`use crate::..`, `super::..`, `self::..`, a child module, or a name a
//! `use` brought in) is resolved, through re-exports, to the file that DEFINES the item.
//! "File A imports file B" then means A names an item defined in B; a `mod x;`
//! declaration alone is not an import, and a `mod.rs` that re-exports a child's item
//! imports the child. `#[cfg(test)]` items and modules do not count.
//!
//! The files (or, for host-tools, the pipeline folders under `src/`) are then put on
//! floors: floor 0 imports nothing of its crate, floor n imports only floors below n. A
//! circle (files that import each other, directly or around) has no floor: it is printed
//! with one import line per edge, and the command fails. `cargo xtask test` runs it.

#[cfg(test)]
mod tests;
mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::Result;
use tree::{read_tree, resolve, Tree};

/// How a crate is cut into units for the floors.
#[derive(Clone, Copy)]
enum Unit {
    /// Each source file is a unit.
    File,
    /// Each folder under `src/` is a unit (a file directly in `src/` is one alone).
    Folder,
}

/// The crates whose floors are checked, and at what grain.
const CRATES: [(&str, Unit); 9] = [
    ("s2s-kernels", Unit::File),
    ("rnn-core", Unit::File),
    ("attention-core", Unit::File),
    ("seq2seq", Unit::File),
    ("s2s-device", Unit::File),
    ("s2s-weights", Unit::File),
    ("s2s-inspect", Unit::File),
    ("explorer", Unit::File),
    ("host-tools", Unit::Folder),
];

/// `cargo xtask floors`: prints every crate's floors; fails on a circle.
pub(crate) fn floors(root: &Path) -> Result {
    let mut circles = 0;
    for (name, unit) in CRATES {
        let dir = root.join(name).join("src");
        if !dir.join("lib.rs").exists() {
            continue;
        }
        let (units, edges) = graph(&dir, unit)?;
        let grain = match unit {
            Unit::File => "files",
            Unit::Folder => "folders",
        };
        println!("{name} ({} {grain})", units.len());
        let (floors, stuck) = layer(&units, &edges);
        for (i, floor) in floors.iter().enumerate() {
            println!("  floor {i}: {}", floor.join(", "));
        }
        if !stuck.is_empty() {
            circles += 1;
            println!(
                "  CIRCLE among: {}",
                stuck.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            for ((a, b), why) in &edges {
                if stuck.contains(a) && stuck.contains(b) {
                    println!("    {a} -> {b}   ({why})");
                }
            }
        }
    }
    if circles > 0 {
        return Err(
            format!("{circles} crate(s) have files or folders that import each other").into(),
        );
    }
    println!("no circles");
    Ok(())
}

/// The units of the crate whose sources are in `src`, and the import edges between them.
type Graph = (BTreeSet<String>, BTreeMap<(String, String), String>);

fn graph(src: &Path, unit: Unit) -> Result<Graph> {
    let tree = read_tree(src)?;
    let edges = edges(&tree, unit);
    let units = tree
        .modules
        .values()
        .map(|m| unit_of(&m.file, unit))
        .collect();
    Ok((units, edges))
}

/// The unit a file belongs to.
fn unit_of(file: &str, unit: Unit) -> String {
    match unit {
        Unit::File => file.to_string(),
        Unit::Folder => match file.split_once('/') {
            Some((folder, _)) => format!("{folder}/"),
            None => file.to_string(),
        },
    }
}

/// Puts units on floors; what is left over is the circles (and what stands on them).
fn layer(
    units: &BTreeSet<String>,
    edges: &BTreeMap<(String, String), String>,
) -> (Vec<Vec<String>>, BTreeSet<String>) {
    let mut left: BTreeSet<String> = units.clone();
    let mut floors = Vec::new();
    loop {
        let floor: Vec<String> = left
            .iter()
            .filter(|u| {
                !edges
                    .keys()
                    .any(|(a, b)| a == *u && left.contains(b) && a != b)
            })
            .cloned()
            .collect();
        if floor.is_empty() {
            break;
        }
        for u in &floor {
            left.remove(u);
        }
        floors.push(floor);
    }
    // Of what is left, keep only the units on a circle (not those merely above one).
    let on_circle: BTreeSet<String> = left
        .iter()
        .filter(|u| reaches(u, u, &left, edges))
        .cloned()
        .collect();
    (floors, on_circle)
}

/// Whether `to` is reachable from `from` by one or more edges within `among`.
fn reaches(
    from: &str,
    to: &str,
    among: &BTreeSet<String>,
    edges: &BTreeMap<(String, String), String>,
) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(u) = stack.pop() {
        for (a, b) in edges.keys() {
            if *a == u && among.contains(b) && a != b {
                if b == to {
                    return true;
                }
                if seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
    }
    false
}

/// The import edges between units, each with one example (`file:line path`).
fn edges(tree: &Tree, unit: Unit) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for r in &tree.refs {
        let Some(target) = resolve(tree, &r.path, 0) else {
            continue;
        };
        let (a, b) = (unit_of(&r.file, unit), unit_of(&target, unit));
        if a != b {
            out.entry((a, b))
                .or_insert_with(|| format!("{}:{} {}", r.file, r.line, r.written.join("::")));
        }
    }
    out
}
