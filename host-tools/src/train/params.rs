//! The trainable parameters: one weight matrix (and bias) per dense layer of the model
//! description, named and shaped exactly as in the model file, so the trained values go
//! to [`ModelBuilder::linear_f32`] unchanged.

use std::collections::{BTreeMap, HashMap};

use candle_core::{DType, Device, Result, Tensor, Var};
use s2s_kernels::PrecisionKind;
use seq2seq::builder::ModelBuilder;
use seq2seq::desc::{LayerSpec, ModelDesc, Ordering};
use seq2seq::format::Role;

use crate::data::rng::SplitMix64;
use crate::import::layer_name;

/// Whether training gives a layer of `desc` a bias. Embeddings have none; neither have
/// the key matrix and `v` of an additive score nor the general score's matrix, whose
/// biases would add the same number to every position's score (softmax ignores it),
/// except `v`'s under monotonic attention, where it is the energy's offset `r`.
pub fn has_bias(desc: &ModelDesc, role: Role) -> bool {
    match role {
        Role::AttnV => desc.attention.ordering == Ordering::Monotonic,
        _ => !matches!(
            role,
            Role::EncEmb | Role::DecEmb | Role::AttnKey | Role::AttnGeneral
        ),
    }
}

/// The initial offset `r` of a monotonic energy: `sigmoid(-1) = 0.27` to stop at
/// a position at first (Raffel et al. start with a negative offset, so that the
/// expected alignment does not run ahead of the output).
const MONOTONIC_OFFSET: f32 = -1.0;

/// The initial bias of local-p's `v_p`: `sigmoid(-4) = 0.018`, so that the first windows
/// are at the source's start (within 4 positions of it up to 200 positions). From 0,
/// the windows start about the middle of the source, where the first outputs' letters
/// are not once a source is longer than the window, and the predictor learns only from
/// the positions inside it: on running text (docs/EXPERIMENTS.md section 6) its
/// validation TER was still 168 % after 3 epochs.
const LOCAL_P_OFFSET: f32 = -4.0;

/// The weights a forward pass reads, by layer: the parameters themselves
/// ([`Params::weights`]) or their int8 grid passed straight through
/// ([`Params::quantized_weights`], quantization-aware training).
pub struct Weights {
    map: HashMap<String, Tensor>,
}

impl Weights {
    /// The weight and bias of a layer (`encoder.w_ih.l0.fwd`, `output`, ...).
    ///
    /// # Panics
    /// If the model has no such layer (a bug in the training model, not bad input).
    pub fn linear(&self, layer: &str) -> (&Tensor, Option<&Tensor>) {
        let w = self
            .map
            .get(&format!("{layer}.weight"))
            .unwrap_or_else(|| panic!("no layer {layer}"));
        (w, self.map.get(&format!("{layer}.bias")))
    }
}

/// The parameters of one model.
pub struct Params {
    /// `layer.weight` / `layer.bias` -> variable, in [`ModelDesc::layer_specs`] order.
    vars: Vec<(String, Var)>,
    index: HashMap<String, usize>,
    specs: Vec<(String, LayerSpec)>,
}

impl Params {
    /// Fresh parameters for `desc`: uniform in `±1/sqrt(fan)` where `fan` is the
    /// layer's input size (the hidden size for recurrent layers, as PyTorch does),
    /// embeddings uniform in `±0.1`, biases of dense layers zero (but for the monotonic
    /// energy's offset and local-p's `v_p`, `MONOTONIC_OFFSET` and `LOCAL_P_OFFSET`).
    pub fn init(desc: &ModelDesc, rng: &mut SplitMix64, device: &Device) -> Result<Params> {
        let mut vars = Vec::new();
        let mut specs = Vec::new();
        for spec in desc.layer_specs() {
            let name = layer_name(&spec);
            let recurrent = matches!(
                spec.role,
                Role::EncWih | Role::EncWhh | Role::DecWih | Role::DecWhh
            );
            let bound = match spec.role {
                Role::EncEmb | Role::DecEmb => 0.1,
                _ if recurrent => 1.0 / ((spec.rows / 3) as f32).sqrt(),
                _ => 1.0 / (spec.cols as f32).sqrt(),
            };
            let mut uniform = |n: usize| -> Vec<f32> {
                (0..n)
                    .map(|_| (2.0 * rng.unit_f32() - 1.0) * bound)
                    .collect()
            };
            let w = Tensor::from_vec(
                uniform(spec.rows * spec.cols),
                (spec.rows, spec.cols),
                device,
            )?;
            vars.push((format!("{name}.weight"), Var::from_tensor(&w)?));
            if has_bias(desc, spec.role) {
                let b = if recurrent {
                    Tensor::from_vec(uniform(spec.rows), spec.rows, device)?
                } else if spec.role == Role::AttnV {
                    Tensor::full(MONOTONIC_OFFSET, spec.rows, device)?
                } else if spec.role == Role::AttnPosV {
                    Tensor::full(LOCAL_P_OFFSET, spec.rows, device)?
                } else {
                    Tensor::zeros(spec.rows, DType::F32, device)?
                };
                vars.push((format!("{name}.bias"), Var::from_tensor(&b)?));
            }
            specs.push((name, spec));
        }
        Ok(Params::new(vars, specs))
    }

    /// Parameters from their variables and layers, indexed by name.
    fn new(vars: Vec<(String, Var)>, specs: Vec<(String, LayerSpec)>) -> Params {
        let index = vars
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        Params { vars, index, specs }
    }

    /// The parameters of an f32 model file (`s2s train --init`): every layer's weights,
    /// and its bias where the file has one. A bias the training model would leave out
    /// (of an embedding or `v`) or a missing one it needs (recurrent and dense layers)
    /// is an error naming the layer.
    pub fn from_file(file: &seq2seq::ModelFile<'_>) -> std::result::Result<Params, String> {
        use seq2seq::format::{Slot, TensorId};
        let desc = file.desc();
        let (mut vars, mut specs) = (Vec::new(), Vec::new());
        let var = |data: &[f32], shape: &[usize]| -> std::result::Result<Var, String> {
            Tensor::from_vec(data.to_vec(), shape, &Device::Cpu)
                .and_then(|t| Var::from_tensor(&t))
                .map_err(|e| e.to_string())
        };
        for spec in desc.layer_specs() {
            let name = layer_name(&spec);
            let id = |slot| TensorId::new(spec.role, spec.layer, spec.dir, slot);
            let (_, w) = file
                .data::<f32>(id(Slot::Weight))
                .map_err(|e| format!("{name}: {e}"))?
                .ok_or_else(|| format!("{name}: no weights"))?;
            vars.push((format!("{name}.weight"), var(w, &[spec.rows, spec.cols])?));
            let bias = file
                .data::<f32>(id(Slot::Bias))
                .map_err(|e| format!("{name}: {e}"))?;
            // What the training model reads: a bias it needs, one it takes when there is
            // one, one it has no place for.
            let needs = matches!(
                spec.role,
                Role::EncWih
                    | Role::EncWhh
                    | Role::DecWih
                    | Role::DecWhh
                    | Role::Attentional
                    | Role::Out
                    | Role::AttnPosW
                    | Role::AttnPosV
            );
            let needs = needs || (spec.role == Role::AttnV && has_bias(desc, spec.role));
            let unused = match spec.role {
                Role::AttnV => !has_bias(desc, spec.role),
                _ => matches!(spec.role, Role::EncEmb | Role::DecEmb | Role::BridgeC),
            };
            match bias {
                Some(_) if unused => {
                    return Err(format!(
                        "{name} has a bias, which s2s train has no place for"
                    ))
                }
                Some((_, b)) => vars.push((format!("{name}.bias"), var(b, &[spec.rows])?)),
                None if needs => return Err(format!("{name} has no bias, which s2s train needs")),
                None => {}
            }
            specs.push((name, spec));
        }
        Ok(Params::new(vars, specs))
    }

    /// The weight and bias of a layer (`encoder.w_ih.l0.fwd`, `output`, ...).
    ///
    /// # Panics
    /// If the model has no such layer (a bug in the training model, not bad input).
    pub fn linear(&self, layer: &str) -> (&Tensor, Option<&Tensor>) {
        let w = self
            .get(&format!("{layer}.weight"))
            .unwrap_or_else(|| panic!("no layer {layer}"));
        (w, self.get(&format!("{layer}.bias")))
    }

    /// The parameters as the forward pass reads them.
    pub fn weights(&self) -> Weights {
        Weights {
            map: self
                .vars
                .iter()
                .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
                .collect(),
        }
    }

    /// The weights on their int8 grid per row as `s2s quantize` stores them, the
    /// rounding passed straight through by the gradient; biases as they are (the integer
    /// path keeps them in `Q16.15`).
    pub fn quantized_weights(&self) -> Result<Weights> {
        let map = self
            .vars
            .iter()
            .map(|(n, v)| {
                let t = v.as_tensor();
                let t = if n.ends_with(".weight") {
                    super::quant::fake_quant_rows(t)?
                } else {
                    t.clone()
                };
                Ok((n.clone(), t))
            })
            .collect::<Result<_>>()?;
        Ok(Weights { map })
    }

    /// Whether the model has this layer.
    pub fn has(&self, layer: &str) -> bool {
        self.index.contains_key(&format!("{layer}.weight"))
    }

    fn get(&self, name: &str) -> Option<&Tensor> {
        self.index.get(name).map(|&i| self.vars[i].1.as_tensor())
    }

    /// Every variable with its name, in a fixed order.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &Var)> {
        self.vars.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Number of trainable values.
    pub fn count(&self) -> usize {
        self.vars.iter().map(|(_, v)| v.elem_count()).sum()
    }

    /// The values by name (for checkpoints).
    pub fn tensors(&self, prefix: &str) -> HashMap<String, Tensor> {
        self.vars
            .iter()
            .map(|(n, v)| (format!("{prefix}{n}"), v.as_tensor().clone()))
            .collect()
    }

    /// Sets every variable from `map[prefix + name]`; a missing or misshapen one is an
    /// error naming it.
    pub fn load(&self, map: &HashMap<String, Tensor>, prefix: &str) -> Result<()> {
        for (n, v) in &self.vars {
            let t = map
                .get(&format!("{prefix}{n}"))
                .ok_or_else(|| candle_core::Error::Msg(format!("no tensor {prefix}{n}")))?;
            v.set(t)?;
        }
        Ok(())
    }

    /// The f32 model file of these parameters: every layer through the same
    /// [`ModelBuilder`] that `s2s import` uses.
    pub fn to_builder(
        &self,
        desc: ModelDesc,
        src_vocab: &[String],
        tgt_vocab: &[String],
        separator: &str,
    ) -> Result<ModelBuilder> {
        let mut b = ModelBuilder::new(PrecisionKind::F32, desc);
        b.src_vocab = src_vocab.to_vec();
        b.tgt_vocab = tgt_vocab.to_vec();
        b.separator = separator.to_string();
        for (name, spec) in &self.specs {
            let (w, bias) = self.linear(name);
            let w: Vec<f32> = w.flatten_all()?.to_vec1()?;
            let bias: Option<Vec<f32>> = bias.map(|b| b.to_vec1()).transpose()?;
            b.linear_f32(
                (spec.role, spec.layer, spec.dir),
                spec.rows,
                spec.cols,
                &w,
                bias.as_deref(),
            );
        }
        Ok(b)
    }

    /// Layer names and their shapes, for reports.
    pub fn layers(&self) -> BTreeMap<String, (usize, usize)> {
        self.specs
            .iter()
            .map(|(n, s)| (n.clone(), (s.rows, s.cols)))
            .collect()
    }
}
