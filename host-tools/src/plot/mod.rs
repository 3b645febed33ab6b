//! Pictures of a model's attention: heatmaps in the terminal, SVG and PNG.

pub mod heatmap;
