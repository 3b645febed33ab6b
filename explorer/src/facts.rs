//! What the page says about a model: `s2s inspect`'s report and, for each board of
//! the board table, the workspace (RAM) its firmware plans for it and whether the file
//! fits the board's model region.

use s2s_kernels::Precision;
use seq2seq::{ModelFile, Plan};
use serde::Serialize;

use seq2seq::with_net;

use crate::model::Model;

/// The model's description and plans.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Facts {
    /// `(label, text)` rows: `s2s inspect`'s (`s2s_inspect::rows`).
    pub lines: Vec<(String, String)>,
    /// Whether the model has attention (else the page draws no heatmap).
    pub attention: bool,
    /// One plan per board of the table.
    pub boards: Vec<BoardPlan>,
}

/// A model on one board, by the firmware's own rule
/// (`Capacities::positions_for`, `Plan::new` at those positions).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardPlan {
    /// The board's name.
    pub name: String,
    /// What it is.
    pub summary: String,
    /// Source positions the firmware plans for (none: the model's fixed length is
    /// over the board's cap).
    pub positions: Option<usize>,
    /// Workspace bytes at those positions.
    pub plan_bytes: Option<usize>,
    /// The board's arena.
    pub arena_bytes: usize,
    /// The file's bytes and the board's model region.
    pub model_bytes: usize,
    /// The model region's bytes.
    pub region_bytes: usize,
    /// Whether the board's default firmware compiles the file's precision.
    pub precision_compiled: bool,
}

/// The facts of `model` (an unreadable file gives none: it was checked at load).
pub fn facts(model: &Model) -> Facts {
    let Ok(file) = model.file() else {
        return Facts {
            lines: Vec::new(),
            attention: false,
            boards: Vec::new(),
        };
    };
    with_net!(&file, |_net: P| describe::<P>(&model.name, &file))
}

fn describe<P: Precision>(name: &str, file: &ModelFile<'_>) -> Facts {
    let d = file.desc();
    let precision = file.precision().name();
    // `s2s inspect`'s rows (a checked file always binds).
    let lines = s2s_inspect::rows(name, file, None).unwrap_or_default();
    let boards = s2s_device::BOARDS
        .iter()
        .map(|b| {
            let positions = b.capacities.positions_for(d.src_pad_to);
            BoardPlan {
                name: b.name.into(),
                summary: b.summary.into(),
                positions,
                plan_bytes: positions.map(|n| Plan::new::<P>(d, n).bytes()),
                arena_bytes: b.capacities.arena_bytes,
                model_bytes: file.bytes().len(),
                region_bytes: b.memory.model.length as usize,
                precision_compiled: b.precisions.contains(&precision),
            }
        })
        .collect();
    Facts {
        lines,
        attention: d.has_attention(),
        boards,
    }
}
