//! Host side of the project: importers, quantizer, runner and the `s2s` CLI.
pub mod formats;
