//! Checkpoints: after every epoch, the parameters, the optimizer's moments and the
//! training state go to a directory, so `--resume` continues exactly where a run
//! stopped (the same weights as a run that never stopped: every epoch's random numbers
//! come from the seed and the epoch number alone).
//!
//! * `epoch-NNNN.safetensors`: parameters (`p/<layer>.weight`, ...) and moments
//!   (`m/...`, `v/...`) after the last finished epoch;
//! * `best-NNNN.safetensors`: the parameters of the epoch with the lowest validation
//!   token error so far;
//! * `state.json`: [`TrainState`], naming those two files. It is written last, and
//!   files it no longer names are removed after it: a run stopped at any moment leaves
//!   a consistent checkpoint.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Place, Result};
use crate::io::write_atomic;

/// One row of the epoch log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EpochRow {
    /// Epoch, from 1 (0: before training).
    pub epoch: usize,
    /// Mean training loss per token (0 for epoch 0).
    pub train_loss: f64,
    /// Validation loss per token (teacher forcing).
    pub valid_loss: f64,
    /// Validation token error rate of greedy decoding, percent.
    pub valid_ter: f64,
    /// Validation sequence error rate, percent.
    pub valid_ser: f64,
    /// Learning rate used in the epoch.
    pub lr: f64,
    /// Seconds of training (forward, backward, updates) in the epoch.
    pub train_seconds: f64,
    /// Seconds of validation.
    pub valid_seconds: f64,
    /// Whether it is the best epoch so far.
    pub best: bool,
}

/// Where a run is: enough to continue it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// A hash of the configuration, the data and the options that change the weights;
    /// a checkpoint of another run is refused.
    pub fingerprint: String,
    /// Epochs finished.
    pub epoch: usize,
    /// Optimizer updates made.
    pub step: u64,
    /// Current learning rate.
    pub lr: f64,
    /// The best epoch and its validation token error (percent).
    pub best_epoch: usize,
    /// See `best_epoch`.
    pub best_ter: f64,
    /// Epochs since the best one.
    pub bad_epochs: usize,
    /// Whether training has stopped early (no better epoch for `patience` epochs).
    pub finished: bool,
    /// The file of the last epoch's parameters and moments.
    pub last_file: String,
    /// The file of the best epoch's parameters.
    pub best_file: String,
    /// Every epoch so far.
    pub history: Vec<EpochRow>,
}

/// A checkpoint directory.
pub struct Checkpoints {
    /// The directory.
    pub dir: PathBuf,
}

impl Checkpoints {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The saved state, if any.
    pub fn state(&self) -> Result<Option<TrainState>> {
        let p = self.path("state.json");
        if !p.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&p).map_err(Error::io(&p))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::invalid(p.display(), Place::Line(e.line()), e.to_string()))
    }

    /// Writes the last epoch's tensors (and the best ones, when this epoch is the
    /// best), then the state naming them, then removes the files it no longer names.
    pub fn save(
        &self,
        last: HashMap<String, Tensor>,
        best: Option<HashMap<String, Tensor>>,
        state: &mut TrainState,
    ) -> Result {
        std::fs::create_dir_all(&self.dir).map_err(Error::io(&self.dir))?;
        let write = |name: &str, map: &HashMap<String, Tensor>| -> Result {
            let path = self.path(name);
            let bytes = safetensors::serialize(map.iter().map(|(k, v)| (k.clone(), v)), None)
                .map_err(|e| Error::invalid(path.display(), Place::File, e.to_string()))?;
            write_atomic(&path, &bytes)
        };
        state.last_file = format!("epoch-{:04}.safetensors", state.epoch);
        write(&state.last_file, &last)?;
        if let Some(best) = best {
            state.best_file = format!("best-{:04}.safetensors", state.epoch);
            write(&state.best_file, &best)?;
        }
        let json = serde_json::to_string_pretty(state).map_err(|e| Error::Io {
            path: self.path("state.json"),
            source: e.into(),
        })?;
        write_atomic(&self.path("state.json"), json.as_bytes())?;
        let entries = std::fs::read_dir(&self.dir).map_err(Error::io(&self.dir))?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".safetensors") && name != state.last_file && name != state.best_file
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(())
    }

    /// Reads the tensors of `name`.
    pub fn load(&self, name: &str) -> Result<HashMap<String, Tensor>> {
        let path = self.path(name);
        candle_core::safetensors::load(&path, &Device::Cpu)
            .map_err(|e| Error::invalid(path.display(), Place::File, e.to_string()))
    }
}

/// The default checkpoint directory of an output file: `MODEL.s2s` -> `MODEL.ckpt/`.
pub fn default_dir(output: &Path) -> PathBuf {
    output.with_extension("ckpt")
}
