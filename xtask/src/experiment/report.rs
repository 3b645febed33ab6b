//! The evaluation stages and docs/EXPERIMENTS.md.

use super::Exp;
use crate::Result;

/// CMUdict: error rates by length, stratified, entropy, heatmaps.
pub fn cmudict_eval(_e: &Exp) -> Result {
    Err("not written yet".into())
}

/// The length task's error against length.
pub fn length_eval(_e: &Exp) -> Result {
    Err("not written yet".into())
}

/// Dates: heatmaps and monotonic shares.
pub fn dates_eval(_e: &Exp) -> Result {
    Err("not written yet".into())
}

/// The device stage.
pub fn device(_e: &Exp) -> Result {
    Err("not written yet".into())
}

/// Writes docs/EXPERIMENTS.md from the results so far.
pub fn write(_e: &Exp) -> Result {
    Ok(())
}
