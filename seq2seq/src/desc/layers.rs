//! What a description implies: the size of each layer's input and output, the dense
//! layers in file order ([`LayerSpec`]) and the activation formats of their inputs.

use s2s_kernels::Fmt;

use super::limits::{MAX_OUT_PARTS, MAX_SPECS};
use super::model::{Activation, CellKind, Init, ModelDesc, Part};
use super::role::Role;

impl ModelDesc {
    /// Number of bridges `bridge.l<l>` (0 without [`Init::Dense`] / [`Init::Mean`]).
    pub fn bridges(&self) -> usize {
        match (self.init.is_bridge(), self.extras.bridge_shared) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => self.dec_layers,
        }
    }

    /// Gate blocks of the encoder's cells (3 GRU, 4 LSTM).
    pub fn enc_gates(&self) -> usize {
        self.cells.enc.gates()
    }
    /// Gate blocks of the decoder's cells.
    pub fn dec_gates(&self) -> usize {
        self.cells.dec.gates()
    }
    /// The attentional layer's input parts.
    pub fn att_parts(&self) -> impl Iterator<Item = Part> + '_ {
        self.att_parts.iter().flatten().copied()
    }
    /// Input size of the attentional layer, and its number of parts.
    pub fn att_input(&self) -> (usize, usize) {
        self.att_parts()
            .fold((0, 0), |(d, n), p| (d + self.part_dim(p), n + 1))
    }

    /// Encoder output size per position (`H` or `2H`).
    pub fn enc_output(&self) -> usize {
        self.enc_hidden * (1 + self.enc_bidir as usize)
    }
    /// Memory (value) size per position.
    pub fn memory_dim(&self) -> usize {
        self.memory_proj.unwrap_or(self.enc_output())
    }
    /// True when the decoder attends.
    pub fn has_attention(&self) -> bool {
        self.attention.attends()
    }
    /// Size of the keys per position (when stored apart from the memory).
    pub fn key_dim(&self) -> usize {
        self.attention.key_dim(self.dec_hidden, self.memory_dim())
    }
    /// True when keys are computed and stored apart from the memory.
    pub fn keys_stored(&self) -> bool {
        self.attention.keys_stored()
    }
    /// Input size of encoder layer `l`.
    pub fn enc_input(&self, l: usize) -> usize {
        if l == 0 {
            self.enc_emb
        } else {
            self.enc_output()
        }
    }
    /// Input size of decoder layer `l`, and its number of parts.
    pub fn dec_input(&self, l: usize) -> (usize, usize) {
        match (l, self.attention.ordering) {
            (0, o) if o.context_first() => (self.dec_emb + self.memory_dim(), 2),
            (0, _) if self.extras.input_feed => (self.dec_emb + self.attentional.unwrap_or(0), 2),
            (0, _) => (self.dec_emb, 1),
            _ => (self.dec_hidden, 1),
        }
    }
    /// Size of an output part.
    pub fn part_dim(&self, p: Part) -> usize {
        match p {
            Part::State => self.dec_hidden,
            Part::Context => self.memory_dim(),
            Part::Embedding => self.dec_emb,
            Part::Attentional => self.attentional.unwrap_or(0),
        }
    }
    /// The output layer's parts.
    pub fn out_parts(&self) -> impl Iterator<Item = Part> + '_ {
        self.out_parts.iter().flatten().copied()
    }
    /// Input size of the output layer, and its number of parts.
    pub fn out_input(&self) -> (usize, usize) {
        self.out_parts()
            .fold((0, 0), |(d, n), p| (d + self.part_dim(p), n + 1))
    }
    /// Every dense layer (embeddings and recurrent matrices included) the description calls
    /// for, with its shape: the one list that binding, importing and quantizing follow.
    pub fn layer_specs(&self) -> heapless::Vec<LayerSpec, MAX_SPECS> {
        let mut v = heapless::Vec::new();
        // MAX_SPECS covers the largest description check() admits.
        self.for_each_layer(|s| {
            let _ = v.push(s);
        });
        v
    }

    /// The spec of one dense layer, if the description has it (without building the
    /// whole list: binding on a small device calls this for every layer).
    pub fn layer_spec(&self, role: Role, layer: usize, dir: usize) -> Option<LayerSpec> {
        let mut found = None;
        self.for_each_layer(|s| {
            if s.role == role && s.layer == layer && s.dir == dir {
                found = Some(s);
            }
        });
        found
    }

    /// Calls `f` with every dense layer, in [`ModelDesc::layer_specs`] order, without
    /// building the list.
    pub fn for_each_layer(&self, mut f: impl FnMut(LayerSpec)) {
        let mut index = 0;
        let mut add = |role, layer, dir, rows, cols, parts| {
            f(LayerSpec {
                index,
                role,
                layer,
                dir,
                rows,
                cols,
                parts,
            });
            index += 1;
        };
        add(Role::EncEmb, 0, 0, self.src_vocab, self.enc_emb, 1);
        for l in 0..self.enc_layers {
            for dir in 0..1 + self.enc_bidir as usize {
                let gh = self.enc_gates() * self.enc_hidden;
                add(Role::EncWih, l, dir, gh, self.enc_input(l), 1);
                add(Role::EncWhh, l, dir, gh, self.enc_hidden, 1);
            }
        }
        if let Some(m) = self.memory_proj {
            add(Role::MemoryProj, 0, 0, m, self.enc_output(), 1);
        }
        self.attention
            .for_each_layer(self.dec_hidden, self.memory_dim(), |role, rows, cols| {
                add(role, 0, 0, rows, cols, 1)
            });
        for l in 0..self.bridges() {
            add(Role::Bridge, l, 0, self.dec_hidden, self.enc_output(), 1);
        }
        if self.cells.init_cell == Init::Dense {
            for l in 0..self.dec_layers {
                add(Role::BridgeC, l, 0, self.dec_hidden, self.enc_output(), 1);
            }
        }
        add(Role::DecEmb, 0, 0, self.tgt_vocab, self.dec_emb, 1);
        for l in 0..self.dec_layers {
            let (i, parts) = self.dec_input(l);
            let gh = self.dec_gates() * self.dec_hidden;
            add(Role::DecWih, l, 0, gh, i, parts);
            add(Role::DecWhh, l, 0, gh, self.dec_hidden, 1);
        }
        if let Some(c) = self.attentional {
            let (ai, ap) = self.att_input();
            add(Role::Attentional, 0, 0, c, ai, ap);
        }
        let (oi, op) = self.out_input();
        add(Role::Out, 0, 0, self.tgt_vocab, oi, op);
    }

    /// Format of the memory: the projection's calibrated format, or `Q0.15` when the
    /// memory is the encoder states themselves.
    pub fn memory_fmt(&self) -> Fmt {
        if self.memory_proj.is_some() {
            self.fmt_memory
        } else {
            Fmt::Q15
        }
    }

    /// Format of each input part of a dense layer on the integer path; for an
    /// embedding table, the format of the rows it produces. The quantizer folds these
    /// into the layer's requantizers.
    pub fn part_fmts(&self, s: &LayerSpec) -> heapless::Vec<Fmt, MAX_OUT_PARTS> {
        let q15 = Fmt::Q15;
        let mut v = heapless::Vec::new();
        let mut push = |f| {
            let _ = v.push(f);
        };
        match s.role {
            Role::EncEmb => push(self.fmt_src_emb),
            Role::DecEmb => push(self.fmt_dec_emb),
            Role::EncWih if s.layer == 0 => push(self.fmt_src_emb),
            Role::AttnKey | Role::AttnGeneral => push(self.memory_fmt()),
            Role::DecWih if s.layer == 0 => {
                push(self.fmt_dec_emb);
                if self.attention.ordering.context_first() {
                    push(self.memory_fmt());
                }
                if self.extras.input_feed {
                    push(self.part_fmt(Part::Attentional));
                }
            }
            Role::Attentional => {
                for p in self.att_parts() {
                    push(self.part_fmt(p));
                }
            }
            Role::Out => {
                for p in self.out_parts() {
                    push(self.part_fmt(p));
                }
            }
            // The cell states of an LSTM encoder, or a GRU encoder's states.
            Role::BridgeC => push(match self.cells.enc {
                CellKind::Lstm => self.cells.fmt_enc,
                CellKind::Gru => q15,
            }),
            // Recurrent states and outputs, tanh outputs: Q0.15.
            Role::EncWih
            | Role::EncWhh
            | Role::DecWih
            | Role::DecWhh
            | Role::MemoryProj
            | Role::AttnQuery
            | Role::AttnV
            | Role::AttnPosW
            | Role::AttnPosV
            | Role::Bridge => push(q15),
        }
        v
    }
}

impl ModelDesc {
    /// Format of the attentional vector on the integer path: `Q0.15` after `tanh`,
    /// else the calibrated [`Extras::fmt_attentional`](super::Extras::fmt_attentional).
    pub fn attentional_fmt(&self) -> Fmt {
        match self.extras.att_act {
            Activation::Tanh => Fmt::Q15,
            Activation::Relu | Activation::Identity => self.extras.fmt_attentional,
        }
    }

    /// Format of an output or attentional part on the integer path.
    pub fn part_fmt(&self, p: Part) -> Fmt {
        match p {
            Part::Attentional => self.attentional_fmt(),
            Part::State => Fmt::Q15,
            Part::Context => self.memory_fmt(),
            Part::Embedding => self.fmt_dec_emb,
        }
    }
}

/// A dense layer of a model: where it is and its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LayerSpec {
    /// Position in [`ModelDesc::layer_specs`] (the layer's bit in a model file's bias
    /// mask).
    pub index: usize,
    /// Which layer.
    pub role: Role,
    /// Index in its stack.
    pub layer: usize,
    /// Direction (0 forward, 1 backward).
    pub dir: usize,
    /// Output size.
    pub rows: usize,
    /// Input size.
    pub cols: usize,
    /// Parts of the input (concatenations).
    pub parts: usize,
}

impl LayerSpec {
    /// Whether its input may carry a bias slot: embeddings have none.
    pub fn is_embedding(&self) -> bool {
        matches!(self.role, Role::EncEmb | Role::DecEmb)
    }
}
