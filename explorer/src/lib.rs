//! The attention explorer's core: a model file read from bytes, and a source decoded
//! step by step by the same `seq2seq` code the firmware runs, with everything a page
//! shows about each step (the attention row, its entropy, the most probable next
//! tokens, a beam search's hypotheses). Compiled to WebAssembly for the page in
//! `explorer/web/` (`cargo xtask explorer`), where [`Explorer`] is its whole interface;
//! the same functions run on the host in the tests.
//!
//! The files: `model` (a file read into aligned memory, checked and bound at its
//! precision), `trace` (one decode and what it recorded), `facts` (the model's
//! description and its RAM plan on each board). This file only exports them.

#![forbid(unsafe_code)]

pub mod facts;
pub mod model;
pub mod trace;

use wasm_bindgen::prelude::*;

pub use model::{Error, Model};
pub use trace::Trace;

/// A model loaded into the page: the interface JavaScript calls.
#[wasm_bindgen]
pub struct Explorer {
    model: Model,
}

#[wasm_bindgen]
impl Explorer {
    /// Reads and checks the model file `bytes` (named `name` in its errors).
    #[wasm_bindgen(constructor)]
    pub fn new(name: &str, bytes: &[u8]) -> Result<Explorer, JsError> {
        let model = Model::load(name, bytes).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(Explorer { model })
    }

    /// The model's description and its RAM plan on every board, as JSON
    /// ([`facts::Facts`]).
    pub fn facts(&self) -> String {
        to_json(&facts::facts(&self.model))
    }

    /// Decodes `source` (greedy, and with `beam` over 1 a beam search of that width
    /// too), as JSON ([`Trace`]); a source the model cannot take is an error of one line.
    pub fn decode(&self, source: &str, beam: usize) -> Result<String, JsError> {
        let trace =
            trace::decode(&self.model, source, beam).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(to_json(&trace))
    }
}

/// The error for a file of `bytes` bytes if it is too large to read (checked before it
/// is read: `File.size`), else `undefined`.
#[wasm_bindgen]
pub fn refuse_size(name: &str, bytes: f64) -> Option<String> {
    let error = model::Error::TooLarge {
        name: name.to_string(),
        bytes: bytes as usize,
    };
    (bytes > model::MAX_MODEL_BYTES as f64).then(|| error.to_string())
}

/// `value` as JSON (serialising these plain structures cannot fail).
fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
