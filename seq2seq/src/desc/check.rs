//! [`ModelDesc::check`]: every range, and that the parts fit together.

use rnn_core::ResetMode;

use super::attention::Ordering;
use super::limits::{MAX_CELL_FRAC, MAX_FRAC, MAX_LAYERS, MAX_OUT_PARTS, MAX_SIZE, MIN_FRAC};
use super::model::{Activation, CellKind, Init, ModelDesc, Part};
use crate::Error;

impl ModelDesc {
    /// Checks every range (sizes up to [`MAX_SIZE`], token ids, formats, scales) and
    /// that the parts fit together (sizes that must agree, options that need others,
    /// fields a variant does not use left at zero). Called by [`ModelDesc::from_raw`];
    /// call it after building one by hand.
    pub fn check(&self) -> Result<(), Error> {
        let sizes = [
            ("src_vocab", self.src_vocab),
            ("tgt_vocab", self.tgt_vocab),
            ("enc_emb", self.enc_emb),
            ("dec_emb", self.dec_emb),
            ("enc_layers", self.enc_layers),
            ("enc_hidden", self.enc_hidden),
            ("dec_layers", self.dec_layers),
            ("dec_hidden", self.dec_hidden),
            ("max_steps", self.max_steps),
        ];
        let optional = [
            ("memory_proj", self.memory_proj.unwrap_or(0)),
            ("src_pad_to", self.src_pad_to),
            ("attentional", self.attentional.unwrap_or(0)),
        ];
        for (name, v) in sizes {
            if v == 0 || v > MAX_SIZE {
                return Err(Error::BadField(name));
            }
        }
        for (name, v) in optional {
            if v > MAX_SIZE {
                return Err(Error::BadField(name));
            }
        }
        // `Some(0)` for an optional layer: stored as 0 it would read back as none.
        if self.memory_proj == Some(0) {
            return Err(Error::BadField("memory_proj"));
        }
        if self.attentional == Some(0) {
            return Err(Error::BadField("attentional"));
        }
        let tokens = [
            ("src_pad", Some(self.src_pad), self.src_vocab),
            ("src_unk", self.src_unk, self.src_vocab),
            ("src_eos", self.src_eos, self.src_vocab),
            ("tgt_start", Some(self.tgt_start), self.tgt_vocab),
            ("tgt_end", Some(self.tgt_end), self.tgt_vocab),
            ("src_prefix", self.extras.src_prefix[0], self.src_vocab),
            ("src_prefix", self.extras.src_prefix[1], self.src_vocab),
            ("src_prefix", self.extras.src_prefix[2], self.src_vocab),
            ("src_prefix", self.extras.src_prefix[3], self.src_vocab),
        ];
        for (what, t, vocab) in tokens {
            if let Some(id) = t.filter(|&t| t as usize >= vocab) {
                return Err(Error::TokenOutOfRange {
                    what,
                    id: id as u32,
                    vocab,
                });
            }
        }
        for (name, f) in [
            ("fmt_src_emb", self.fmt_src_emb),
            ("fmt_dec_emb", self.fmt_dec_emb),
            ("fmt_memory", self.fmt_memory),
        ] {
            if !(MIN_FRAC..=MAX_FRAC).contains(&f.frac) {
                return Err(Error::BadField(name));
            }
        }
        for (name, f, cell) in [
            ("fmt_enc_cell", self.cells.fmt_enc, self.cells.enc),
            ("fmt_dec_cell", self.cells.fmt_dec, self.cells.dec),
        ] {
            let ok = match cell {
                CellKind::Lstm => (0..=MAX_CELL_FRAC).contains(&f.frac),
                // A GRU stack has no cell state: the field is not used.
                CellKind::Gru => f.frac == 0,
            };
            if !ok {
                return Err(Error::BadField(name));
            }
        }

        let bad = |rule| Err(Error::Inconsistent(rule));
        if self.enc_layers > MAX_LAYERS || self.dec_layers > MAX_LAYERS {
            return bad("layers: at most 4 per stack");
        }
        let attention = self.has_attention();
        if !attention && (self.memory_proj.is_some() || self.attentional.is_some()) {
            return bad("memory projection or attentional layer without attention");
        }
        self.attention.check(self.dec_hidden, self.memory_dim())?;
        if self.init == Init::Last {
            if self.dec_layers > self.enc_layers {
                return bad("init last: more decoder than encoder layers");
            }
            if self.enc_output() != self.dec_hidden {
                return bad("init last: encoder state size differs from decoder hidden size");
            }
        }
        if self.cells.enc == CellKind::Lstm && self.enc_reset != ResetMode::After {
            return bad("enc_reset: set for an LSTM encoder (a GRU field)");
        }
        if self.cells.dec == CellKind::Lstm && self.dec_reset != ResetMode::After {
            return bad("dec_reset: set for an LSTM decoder (a GRU field)");
        }
        if self.cells.init_cell == Init::Mean {
            return bad("init_cell mean: the mean bridge is for the state only");
        }
        if self.cells.dec == CellKind::Gru && self.cells.init_cell != Init::Zeros {
            return bad("init_cell: a cell state for a GRU decoder");
        }
        if self.cells.init_cell == Init::Last {
            if self.cells.enc != CellKind::Lstm {
                return bad("init_cell last: the encoder has no cell state (GRU)");
            }
            if self.dec_layers > self.enc_layers {
                return bad("init_cell last: more decoder than encoder layers");
            }
            if self.enc_output() != self.dec_hidden {
                return bad("init_cell last: encoder state size differs from decoder hidden size");
            }
        }
        if self.cells.enc_mask.is_some() && self.src_pad_to == 0 {
            return bad("enc_mask: a mask without source padding (src_pad_to)");
        }
        self.check_extras()?;
        check_parts(&self.out_parts, OUT_PARTS_RULES, |p| match p {
            Part::State | Part::Embedding => true,
            Part::Context => attention,
            Part::Attentional => self.attentional.is_some(),
        })?;
        match self.attentional {
            Some(_) => check_parts(&self.att_parts, ATT_PARTS_RULES, |p| {
                !matches!(p, Part::Attentional)
            })?,
            None if self.att_parts != [None; MAX_OUT_PARTS] => {
                return bad("att_parts: set without an attentional layer");
            }
            None => {}
        }
        Ok(())
    }

    /// The rules of [`Extras`] (part of [`ModelDesc::check`]).
    fn check_extras(&self) -> Result<(), Error> {
        let bad = |rule| Err(Error::Inconsistent(rule));
        let x = &self.extras;
        if x.bridge_shared && !self.init.is_bridge() {
            return bad("bridge_shared: without a bridge (init dense or mean)");
        }
        if x.input_feed
            && (self.attention.ordering != Ordering::Luong || self.attentional.is_none())
        {
            return bad("input_feed: needs the Luong ordering and an attentional layer");
        }
        if self.attentional.is_none()
            && (x.att_act != Activation::Tanh || x.fmt_attentional.frac != 0)
        {
            return bad("att_act, fmt_attentional: set without an attentional layer");
        }
        match x.att_act {
            Activation::Tanh if x.fmt_attentional.frac != 0 => {
                return Err(Error::BadField("fmt_attentional"));
            }
            Activation::Relu | Activation::Identity
                if !(MIN_FRAC..=MAX_FRAC).contains(&x.fmt_attentional.frac) =>
            {
                return Err(Error::BadField("fmt_attentional"));
            }
            _ => {}
        }
        let mut ended = false;
        for p in &x.src_prefix {
            match p {
                None => ended = true,
                Some(_) if ended => return bad("src_prefix: a token after an empty slot"),
                Some(_) => {}
            }
        }
        ended = false;
        for s in &x.slots {
            match s {
                None => ended = true,
                Some(_) if ended => return bad("slots: a prefix slot after an empty one"),
                Some(s) => {
                    if let Some(id) = s.default.filter(|&t| t as usize >= self.src_vocab) {
                        return Err(Error::TokenOutOfRange {
                            what: "slot default",
                            id: id.into(),
                            vocab: self.src_vocab,
                        });
                    }
                }
            }
        }
        if self.src_pad_to > 0 && x.prefix_len() >= self.src_pad_to {
            return bad("src_prefix, slots: no room for a source token within src_pad_to");
        }
        if x.min_steps > self.max_steps {
            return bad("min_steps: above max_steps");
        }
        Ok(())
    }
}

/// The rules a list of parts breaks, by list: a gap, a part it cannot have, none.
type PartsRules = [&'static str; 3];
const OUT_PARTS_RULES: PartsRules = [
    "out_parts: a part after an empty slot",
    "out_parts: part not produced by this decoder",
    "out_parts: empty",
];
const ATT_PARTS_RULES: PartsRules = [
    "att_parts: a part after an empty slot",
    "att_parts: part not available to the attentional layer",
    "att_parts: empty",
];

/// Checks a list of parts: no gap, not empty, and each part allowed by `ok`.
fn check_parts(
    parts: &[Option<Part>; MAX_OUT_PARTS],
    rules: PartsRules,
    ok: impl Fn(Part) -> bool,
) -> Result<(), Error> {
    let mut ended = false;
    for p in parts {
        let Some(p) = p else {
            ended = true;
            continue;
        };
        if ended {
            return Err(Error::Inconsistent(rules[0]));
        }
        if !ok(*p) {
            return Err(Error::Inconsistent(rules[1]));
        }
    }
    if parts[0].is_none() {
        return Err(Error::Inconsistent(rules[2]));
    }
    Ok(())
}
