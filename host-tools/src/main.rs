//! The `s2s` command-line tool.
fn main() {}
