//! The module tree of one crate as its sources write it, and the resolution of a path
//! to the file that defines what it names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::error::Result;

/// What one module (a file, or an inline `mod` inside one) holds.
#[derive(Default)]
pub(super) struct Module {
    /// The file it is written in, relative to the crate's `src/`.
    pub(super) file: String,
    /// Names of the items it defines (types, functions, constants, traits, macros).
    pub(super) items: BTreeSet<String>,
    /// Names of its child modules.
    pub(super) children: BTreeSet<String>,
    /// `use` declarations: the name they bring in, and the absolute path it stands for.
    pub(super) uses: BTreeMap<String, Vec<String>>,
    /// `use path::*`: the absolute module paths whose names come in.
    pub(super) globs: Vec<Vec<String>>,
}

/// One crate's module tree, keyed by absolute module path (`[]` is the crate root).
#[derive(Default)]
pub(super) struct Tree {
    pub(super) modules: HashMap<Vec<String>, Module>,
    /// Per file, the paths it names: the module it is written in, the path as written
    /// (made absolute once the whole tree is read) and the line.
    pub(super) refs: Vec<Ref>,
}

/// One path a file names.
pub(super) struct Ref {
    pub(super) file: String,
    pub(super) module: Vec<String>,
    pub(super) written: Vec<String>,
    pub(super) path: Vec<String>,
    pub(super) line: usize,
}

/// The file defining what `path` (absolute, from the crate root) names, if it is in the
/// crate. A path that ends at a module names nothing defined (a `use` of a module).
pub(super) fn resolve(tree: &Tree, path: &[String], depth: usize) -> Option<String> {
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
pub(super) fn read_tree(src: &Path) -> Result<Tree> {
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

/// Makes `path`, written inside `module`, absolute from the crate root: a name the
/// module `use`d is expanded (one level; `resolve` follows further).
fn absolute(tree: &Tree, module: &[String], path: &[String]) -> Vec<String> {
    if let Some(first) = path.first() {
        if let Some(target) = tree.modules.get(module).and_then(|m| m.uses.get(first)) {
            let mut full = target.clone();
            full.extend_from_slice(&path[1..]);
            return full;
        }
    }
    relative_to(module, path).unwrap_or_else(|| {
        let mut out = module.to_vec();
        out.extend_from_slice(path);
        out
    })
}

/// `path` from the crate root when it starts with `crate`, `self` or `super`.
fn relative_to(module: &[String], path: &[String]) -> Option<Vec<String>> {
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
        _ => return None,
    }
    out.extend_from_slice(rest);
    Some(out)
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
/// anything else (another crate, `core`, `std`) resolves to nothing.
fn absolute_plain(module: &[String], path: &[String], children: &BTreeSet<String>) -> Vec<String> {
    match path.first() {
        Some(first) if children.contains(first) => {
            let mut out = module.to_vec();
            out.extend_from_slice(path);
            out
        }
        _ => relative_to(module, path).unwrap_or_else(|| vec!["<extern>".to_string()]),
    }
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
