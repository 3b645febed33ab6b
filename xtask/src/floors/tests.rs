//! The floors of small generated crates.

use super::*;
use std::fs;

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
