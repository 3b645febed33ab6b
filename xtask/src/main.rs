//! Project automation: `cargo xtask demo`, `cargo xtask test`, `cargo xtask models`.
fn main() {}
