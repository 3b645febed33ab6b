//! The report of `s2s inspect`: what a model file holds and what it costs to run, on
//! the host and on each board of the table, as text. One definition for the two tools
//! that show it: `s2s inspect` and the attention explorer's page (`explorer/`, in
//! WebAssembly). It reads a checked [`ModelFile`](seq2seq::ModelFile); nothing here reads a file system.
//!
//! The files: `numbers` (thousands separators), `firmware` (the minimal firmware a model needs and the command that
//! builds it), `report` (the rows and the whole report). This file only names them.

#![forbid(unsafe_code)]

mod firmware;
mod numbers;
mod report;

pub use firmware::{minimal_command, minimal_features, smallest_board};
pub use numbers::thousands;
pub use report::{architecture, render, rows, DEFAULT_POSITIONS};
