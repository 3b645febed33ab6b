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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::error::Result;

/// How a crate is cut into units for the floors.
#[derive(Clone, Copy)]
enum Unit {
    /// Each source file is a unit.
    File,
    /// Each folder under `src/` is a unit (a file directly in `src/` is one alone).
    Folder,
}

/// The crates whose floors are checked, and at what grain.
const CRATES: [(&str, Unit); 7] = [
    ("s2s-kernels", Unit::File),
    ("rnn-core", Unit::File),
    ("attention-core", Unit::File),
    ("seq2seq", Unit::File),
    ("s2s-device", Unit::File),
    ("s2s-weights", Unit::File),
    ("host-tools", Unit::Folder),
];

/// What one module (a file, or an inline `mod` inside one) holds.
#[derive(Default)]
struct Module {
    /// The file it is written in, relative to the crate's `src/`.
    file: String,
    /// Names of the items it defines (types, functions, constants, traits, macros).
    items: BTreeSet<String>,
    /// Names of its child modules.
    children: BTreeSet<String>,
    /// `use` declarations: the name they bring in, and the absolute path it stands for.
    uses: BTreeMap<String, Vec<String>>,
    /// `use path::*`: the absolute module paths whose names come in.
    globs: Vec<Vec<String>>,
}

/// One crate's module tree, keyed by absolute module path (`[]` is the crate root).
#[derive(Default)]
struct Tree {
    modules: HashMap<Vec<String>, Module>,
    /// Per file, the paths it names: the module it is written in, the path as written
    /// (made absolute once the whole tree is read) and the line.
    refs: Vec<Ref>,
}

/// One path a file names.
struct Ref {
    file: String,
    module: Vec<String>,
    written: Vec<String>,
    path: Vec<String>,
    line: usize,
}

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

/// The file defining what `path` (absolute, from the crate root) names, if it is in the
/// crate. A path that ends at a module names nothing defined (a `use` of a module).
fn resolve(tree: &Tree, path: &[String], depth: usize) -> Option<String> {
    if depth > 16 {
        return None;
    }
    let mut module: Vec<String> = Vec::new();
    for (i, seg) in path.iter().enumerate() {
        let m = tree.modules.get(&module)?;
        if m.children.contains(seg) {
            module.push(seg.clone());
            continue;
        }
        if m.items.contains(seg) {
            return Some(m.file.clone());
        }
        if let Some(target) = m.uses.get(seg) {
            let mut full = target.clone();
            full.extend_from_slice(&path[i + 1..]);
            return resolve(tree, &full, depth + 1);
        }
        for glob in &m.globs {
            let mut full = glob.clone();
            full.extend_from_slice(&path[i..]);
            if let Some(f) = resolve(tree, &full, depth + 1) {
                return Some(f);
            }
        }
        return None;
    }
    None
}

/// Reads the module tree from `src/lib.rs` down.
fn read_tree(src: &Path) -> Result<Tree> {
    let mut tree = Tree::default();
    read_file(src, Path::new("lib.rs"), Vec::new(), &mut tree)?;
    // Paths written relative to a module (a child's name, a `use`d name) become absolute.
    let mut refs = std::mem::take(&mut tree.refs);
    for r in &mut refs {
        r.path = absolute(&tree, &r.module, &r.written);
    }
    tree.refs = refs;
    Ok(tree)
}

/// Makes `path`, written inside `module`, absolute from the crate root.
fn absolute(tree: &Tree, module: &[String], path: &[String]) -> Vec<String> {
    let mut out: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            out.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                out.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            // A name the module `use`d: expand it (one level; `resolve` follows further).
            if let Some(m) = tree.modules.get(module) {
                if let Some(target) = m.uses.get(first) {
                    let mut full = target.clone();
                    full.extend_from_slice(&rest[1..]);
                    return full;
                }
            }
        }
        None => {}
    }
    out.extend_from_slice(rest);
    out
}

/// Whether the attributes hold `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .map(|m| m.path().is_ident("test"))
                .unwrap_or(false)
    })
}

/// The `#[path = ".."]` of a `mod` declaration.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn read_file(src: &Path, rel: &Path, module: Vec<String>, tree: &mut Tree) -> Result {
    let full = src.join(rel);
    let text = fs::read_to_string(&full).map_err(|e| format!("{}: {e}", full.display()))?;
    let file = syn::parse_file(&text).map_err(|e| format!("{}: {e}", full.display()))?;
    let rel_s = rel.to_string_lossy().replace('\\', "/");
    // A child `x` of `a/b.rs` lives in `a/b/x.rs`; of `a/mod.rs` or `lib.rs`, in `a/x.rs`.
    let dir: PathBuf = match rel.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs" | "main.rs") => {
            rel.parent().unwrap_or(Path::new("")).to_path_buf()
        }
        _ => rel.with_extension(""),
    };
    read_items(src, &rel_s, &dir, &file.items, module, tree)
}

/// A child module to read once its parent is recorded.
enum Child<'a> {
    /// `mod x { .. }`: its module path, its folder for further children, its items.
    Inline(Vec<String>, PathBuf, &'a [syn::Item]),
    /// `mod x;`: its module path and its file.
    File(Vec<String>, PathBuf),
}

fn read_items(
    src: &Path,
    file: &str,
    dir: &Path,
    items: &[syn::Item],
    module: Vec<String>,
    tree: &mut Tree,
) -> Result {
    let mut m = Module {
        file: file.to_string(),
        ..Module::default()
    };
    let mut later: Vec<Child> = Vec::new();
    for item in items {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => &[],
        };
        if is_test(attrs) {
            continue;
        }
        let name = match item {
            syn::Item::Fn(i) => Some(i.sig.ident.to_string()),
            syn::Item::Struct(i) => Some(i.ident.to_string()),
            syn::Item::Enum(i) => Some(i.ident.to_string()),
            syn::Item::Union(i) => Some(i.ident.to_string()),
            syn::Item::Const(i) => Some(i.ident.to_string()),
            syn::Item::Static(i) => Some(i.ident.to_string()),
            syn::Item::Trait(i) => Some(i.ident.to_string()),
            syn::Item::Type(i) => Some(i.ident.to_string()),
            syn::Item::Macro(i) => i.ident.as_ref().map(|i| i.to_string()),
            _ => None,
        };
        if let Some(n) = name {
            m.items.insert(n);
        }
        match item {
            syn::Item::Mod(i) => {
                let n = i.ident.to_string();
                m.children.insert(n.clone());
                let mut child = module.clone();
                child.push(n.clone());
                match &i.content {
                    Some((_, inner)) => later.push(Child::Inline(child, dir.join(&n), inner)),
                    None => {
                        let rel = match path_attr(&i.attrs) {
                            Some(p) => dir.join(p),
                            None if src.join(dir).join(format!("{n}.rs")).exists() => {
                                dir.join(format!("{n}.rs"))
                            }
                            None => dir.join(&n).join("mod.rs"),
                        };
                        later.push(Child::File(child, rel));
                    }
                }
            }
            syn::Item::Use(u) => {
                let mut out = Vec::new();
                flatten_use(&u.tree, Vec::new(), &mut out);
                for (alias, path) in out {
                    let line = u.use_token.span.start().line;
                    match alias {
                        Some(alias) => {
                            tree.refs.push(Ref {
                                file: file.to_string(),
                                module: module.clone(),
                                written: path.clone(),
                                path: Vec::new(),
                                line,
                            });
                            m.uses.insert(alias, path);
                        }
                        None => m.globs.push(path),
                    }
                }
            }
            other => {
                let mut v = Paths { out: Vec::new() };
                v.visit_item(other);
                for (written, line) in v.out {
                    tree.refs.push(Ref {
                        file: file.to_string(),
                        module: module.clone(),
                        written,
                        path: Vec::new(),
                        line,
                    });
                }
            }
        }
    }
    // Globs and `use` targets are written relative to this module: make them absolute
    // once the module is known.
    let module_key = module.clone();
    tree.modules.insert(module_key.clone(), m);
    let fixed_uses: BTreeMap<String, Vec<String>> = {
        let m = &tree.modules[&module_key];
        m.uses
            .iter()
            .map(|(k, v)| (k.clone(), absolute_plain(&module_key, v, &m.children)))
            .collect()
    };
    let fixed_globs: Vec<Vec<String>> = {
        let m = &tree.modules[&module_key];
        m.globs
            .iter()
            .map(|v| absolute_plain(&module_key, v, &m.children))
            .collect()
    };
    if let Some(m) = tree.modules.get_mut(&module_key) {
        m.uses = fixed_uses;
        m.globs = fixed_globs;
    }
    for child in later {
        match child {
            Child::Inline(module, dir, inner) => read_items(src, file, &dir, inner, module, tree)?,
            Child::File(module, rel) => read_file(src, &rel, module, tree)?,
        }
    }
    Ok(())
}

/// A `use` path made absolute: `crate::`, `self::`, `super::` or a child module's name;
/// anything else (another crate, `core`, `std`) is left as it is and resolves to nothing.
fn absolute_plain(module: &[String], path: &[String], children: &BTreeSet<String>) -> Vec<String> {
    let mut out = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            out.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                out.pop();
                rest = &rest[1..];
            }
        }
        Some(first) if children.contains(first) => {}
        _ => return vec!["<extern>".to_string()],
    }
    out.extend_from_slice(rest);
    out
}

/// Flattens a `use` tree into (name brought in, or None for a glob; path).
fn flatten_use(
    t: &syn::UseTree,
    prefix: Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match t {
        syn::UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            flatten_use(&p.tree, next, out);
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix;
            let name = n.ident.to_string();
            if name == "self" {
                let alias = path.last().cloned();
                out.push((alias, path));
            } else {
                path.push(name.clone());
                out.push((Some(name), path));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix;
            path.push(r.ident.to_string());
            out.push((Some(r.rename.to_string()), path));
        }
        syn::UseTree::Glob(_) => out.push((None, prefix)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix.clone(), out);
            }
        }
    }
}

/// Collects the multi-segment paths an item names (outside its `#[cfg(test)]` parts).
struct Paths {
    out: Vec<(Vec<String>, usize)>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() > 1 || p.segments.first().is_some_and(|s| s.ident != "Self") {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = p
                .segments
                .first()
                .map(|s| s.ident.span().start().line)
                .unwrap_or(0);
            self.out.push((segs, line));
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        if !is_test(&i.attrs) {
            syn::visit::visit_item_mod(self, i);
        }
    }
    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        if !is_test(&i.attrs) {
            syn::visit::visit_impl_item_fn(self, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a small crate: `lib.rs` re-exports `a::A`; `a.rs` uses `b::B` by a path in
    /// code; `b.rs` uses whatever `b_uses` says; `t.rs` is a test module only.
    fn crate_with(b_uses: &str) -> (tempdir::Dir, Graph) {
        let dir = tempdir::Dir::new();
        let src = dir.path();
        fs::write(
            src.join("lib.rs"),
            "mod a;\nmod b;\n#[cfg(test)]\nmod t;\npub use a::A;\n",
        )
        .unwrap();
        fs::write(
            src.join("a.rs"),
            "pub struct A;\nfn f() -> crate::b::B { crate::b::B }\n",
        )
        .unwrap();
        fs::write(src.join("b.rs"), format!("{b_uses}\npub struct B;\n")).unwrap();
        fs::write(src.join("t.rs"), "use crate::A;\n").unwrap();
        let g = graph(src, Unit::File).unwrap();
        (dir, g)
    }

    #[test]
    fn floors_follow_the_imports_and_skip_test_modules() {
        let (_d, (units, edges)) = crate_with("");
        assert!(!units.contains("t.rs"), "{units:?}");
        let (floors, circle) = layer(&units, &edges);
        assert!(circle.is_empty());
        assert_eq!(floors, [vec!["b.rs"], vec!["a.rs"], vec!["lib.rs"]]);
    }

    #[test]
    fn a_use_back_through_a_re_export_is_a_circle() {
        // `crate::A` is defined in a.rs (lib.rs only re-exports it): b -> a -> b.
        let (_d, (units, edges)) = crate_with("use crate::A;");
        let (floors, circle) = layer(&units, &edges);
        assert_eq!(
            circle,
            BTreeSet::from(["a.rs".to_string(), "b.rs".to_string()])
        );
        assert!(floors.is_empty(), "{floors:?}");
    }

    /// A directory removed when dropped (no extra dependency for one test).
    mod tempdir {
        use std::path::{Path, PathBuf};

        pub struct Dir(PathBuf);

        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let p = std::env::temp_dir().join(format!(
                    "xtask-floors-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
