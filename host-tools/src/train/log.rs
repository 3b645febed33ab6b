//! What a run shows while it trains: a progress bar per epoch with the running loss
//! (`indicatif`, on standard error when it is a terminal), one line per finished epoch,
//! and the CSV log of every epoch.

use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::checkpoint::EpochRow;
use crate::error::Result;
use crate::io::write_atomic;

/// The CSV header of the epoch log.
pub const CSV_HEADER: &str =
    "epoch,train_loss,valid_loss,valid_ter_pct,valid_ser_pct,lr,train_seconds,valid_seconds,best";

/// Writes every row so far (atomically: the log always matches the checkpoint).
pub fn write_csv(path: &Path, rows: &[EpochRow]) -> Result {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in rows {
        s += &format!(
            "{},{:.6},{:.6},{:.3},{:.3},{:.3e},{:.2},{:.2},{}\n",
            r.epoch,
            r.train_loss,
            r.valid_loss,
            r.valid_ter,
            r.valid_ser,
            r.lr,
            r.train_seconds,
            r.valid_seconds,
            r.best as u8
        );
    }
    write_atomic(path, s.as_bytes())
}

/// The progress display of a run.
pub struct Progress {
    quiet: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Bars only on a terminal and unless `quiet`; epoch lines unless `quiet`.
    pub fn new(quiet: bool) -> Self {
        Progress { quiet, bar: None }
    }

    /// A new bar for `batches` batches of epoch `epoch` (of at most `epochs`).
    pub fn start_epoch(&mut self, epoch: usize, epochs: usize, batches: usize) {
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(batches as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "epoch {prefix} [{bar:30}] {pos}/{len} batches, {msg}, {elapsed} (eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(format!("{epoch}/{epochs}"));
        self.bar = Some(bar);
    }

    /// After each batch: the running mean loss.
    pub fn batch(&self, loss: f64) {
        if let Some(b) = &self.bar {
            b.set_message(format!("loss {loss:.4}"));
            b.inc(1);
        }
    }

    /// Validation is running.
    pub fn validating(&self) {
        if let Some(b) = &self.bar {
            b.set_message("validating".to_string());
        }
    }

    /// The epoch's line.
    pub fn end_epoch(&mut self, r: &EpochRow, epochs: usize) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        if self.quiet {
            return;
        }
        let what = if r.epoch == 0 {
            "before training:".to_string()
        } else {
            format!(
                "epoch {}/{epochs}: train loss {:.4},",
                r.epoch, r.train_loss
            )
        };
        eprintln!(
            "{what} valid loss {:.4}, TER {:.2} %, SER {:.2} % ({:.1} s + {:.1} s){}",
            r.valid_loss,
            r.valid_ter,
            r.valid_ser,
            r.train_seconds,
            r.valid_seconds,
            if r.best && r.epoch > 0 { ", best" } else { "" }
        );
    }

    /// A note line.
    pub fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }
}
