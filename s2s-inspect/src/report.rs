//! The rows of `s2s inspect`'s report ([`rows`]) and the whole report ([`render`]).

use std::fmt::Write;

use rnn_core::{Masked, Recurrent};
use seq2seq::desc::{Activation, CellKind, Init, Logits, ModelDesc, Ordering};
use seq2seq::plan::{Buf, Plan};
use seq2seq::{with_net, ModelFile, Split};

use crate::firmware::{minimal_command, minimal_features, smallest_board};
use crate::numbers::thousands;

/// Source positions the report sizes the workspace for when the model has no fixed length.
pub const DEFAULT_POSITIONS: usize = 32;

/// The boards of the table whose firmware compiles `precision` by default, each with the
/// source positions its firmware plans the model for (`Capacities::positions_for`, the
/// firmware's own rule: the fixed length `pad`, else the board's cap) and that
/// workspace (`plan_bytes`) against its arena: `microbit 25 (7,712 of 10,064 bytes)`.
fn boards(precision: &str, pad: usize, plan_bytes: impl Fn(usize) -> usize) -> String {
    let each: Vec<String> = s2s_device::BOARDS
        .iter()
        .filter(|b| b.precisions.contains(&precision))
        .map(|b| {
            let c = &b.capacities;
            match c.positions_for(pad) {
                None => format!(
                    "{} none (fixed length {pad}, the board takes {})",
                    b.name, c.max_positions
                ),
                Some(n) => {
                    let bytes = plan_bytes(n);
                    let (need, arena) = (thousands(bytes), thousands(c.arena_bytes));
                    if bytes <= c.arena_bytes {
                        format!("{} {n} ({need} of {arena} bytes)", b.name)
                    } else {
                        format!("{} {n} ({need} bytes: over its {arena}-byte arena)", b.name)
                    }
                }
            }
        })
        .collect();
    if each.is_empty() {
        format!("none compiles {precision} by default")
    } else {
        format!(
            "source positions (workspace of the arena): {}",
            each.join(", ")
        )
    }
}

/// A stack's cell and its notes: `("GRU", " (reset after)")`, `("LSTM", "")`, ...
fn cell(kind: CellKind, r: rnn_core::ResetMode, rec: Recurrent) -> (&'static str, String) {
    let mut notes = vec![];
    if kind == CellKind::Gru {
        notes.push(match r {
            rnn_core::ResetMode::After => "reset after",
            rnn_core::ResetMode::Before => "reset before",
        });
    }
    match rec {
        Recurrent::Sigmoid => {}
        Recurrent::HardSigmoidKeras2 => notes.push("hard sigmoid of Keras 2"),
        Recurrent::HardSigmoidKeras3 => notes.push("hard sigmoid of Keras 3"),
    }
    let name = kind.name();
    if notes.is_empty() {
        (name, String::new())
    } else {
        (name, format!(" ({})", notes.join(", ")))
    }
}

fn init_name(i: Init) -> &'static str {
    match i {
        Init::Zeros => "zeros",
        Init::Last => "last encoder state",
        Init::Dense => "tanh(W h_enc + b)",
        Init::Mean => "tanh(W mean(enc outputs) + b)",
    }
}

/// The source row's prefix slots: `, prefix slots NAME {TOKEN, ...; default TOKEN}`.
fn prefix_slots(file: &seq2seq::ModelFile<'_>, sv: &seq2seq::Vocab<'_>) -> String {
    let slots = file.slots();
    file.desc()
        .extras
        .slots()
        .enumerate()
        .map(|(i, s)| {
            let tokens: Vec<String> = slots.tokens(i).map(|id| token(sv, Some(id))).collect();
            let default = match s.default {
                Some(id) => format!("; default {}", token(sv, Some(id))),
                None => String::new(),
            };
            let name = slots.name(i).unwrap_or("?");
            format!(", prefix slot {name} {{{}{default}}}", tokens.join(", "))
        })
        .collect()
}

fn token(v: &seq2seq::Vocab<'_>, id: Option<u16>) -> String {
    id.map_or("none".into(), |i| format!("{:?}", v.get(i).unwrap_or("?")))
}

/// Describes the architecture in one line per part.
pub fn architecture(d: &ModelDesc) -> Vec<(String, String)> {
    let mut v = vec![];
    let layers = |n: usize, h: usize, bi: bool, (cell, notes): (&str, String)| {
        format!(
            "{n} x {}{cell} {h}{notes}",
            if bi { "bidirectional " } else { "" },
        )
    };
    let masked = match d.cells.enc_mask {
        None => "",
        Some(Masked::Previous) => ", padding masked (previous output repeated)",
        Some(Masked::Zeros) => ", padding masked (zero outputs)",
    };
    v.push((
        "encoder".into(),
        format!(
            "embedding {}, {}{}{masked}",
            d.enc_emb,
            layers(
                d.enc_layers,
                d.enc_hidden,
                d.enc_bidir,
                cell(d.cells.enc, d.enc_reset, d.cells.enc_recurrent)
            ),
            d.memory_proj
                .map_or(String::new(), |m| format!(", memory projection {m}"))
        ),
    ));
    let att = match d.attention.ordering {
        Ordering::None => "none".to_string(),
        o => {
            let score = match d.attention.score {
                seq2seq::ScoreKind::Additive => format!(
                    "additive {} (W: {}, U: {})",
                    d.attention.dim,
                    if d.attention.query_proj { "yes" } else { "no" },
                    if d.attention.key_proj { "yes" } else { "no" }
                ),
                s => s.name().to_string(),
            };
            let chunk = match (d.attention.chunk, d.attention.window) {
                (0 | 1, 0) => String::new(),
                (0 | 1, half) if d.attention.predicted() => format!(
                    " (local-p, window of {} positions, D = {half}, position predictor of {})",
                    2 * usize::from(half) + 1,
                    d.attention.predict
                ),
                (0 | 1, half) => format!(
                    " (local-m, window of {} positions, D = {half})",
                    2 * usize::from(half) + 1
                ),
                (w, _) => format!(" (MoChA, chunk {w})"),
            };
            format!(
                "{o:?}{chunk}, {score}, {}",
                if d.attention.mask_padding {
                    "padding attended"
                } else {
                    "masked to source length"
                }
            )
        }
    };
    v.push(("attention".into(), att));
    let mut init = init_name(d.init).to_string();
    if d.cells.dec == CellKind::Lstm {
        init += &format!(
            ", cell state {}",
            match d.cells.init_cell {
                Init::Zeros => "zeros",
                Init::Last => "last encoder cell state",
                Init::Dense if d.cells.enc == CellKind::Lstm => "tanh(W c_enc + b)",
                Init::Dense => "tanh(W h_enc + b)",
                Init::Mean => "mean",
            }
        );
    }
    let x = &d.extras;
    if x.bridge_shared {
        init += " (one bridge for every layer)";
    }
    let names = |parts: &mut dyn Iterator<Item = seq2seq::Part>| -> String {
        parts
            .map(|p| format!("{p:?}").to_lowercase())
            .collect::<Vec<_>>()
            .join(", ")
    };
    v.push((
        "decoder".into(),
        format!(
            "embedding {}, {}, init {init}{}, output from [{}]",
            d.dec_emb,
            layers(
                d.dec_layers,
                d.dec_hidden,
                false,
                cell(d.cells.dec, d.dec_reset, d.cells.dec_recurrent)
            ),
            d.attentional.map_or(String::new(), |a| format!(
                ", attentional {a} = {}([{}]){}",
                match x.att_act {
                    Activation::Tanh => "tanh",
                    Activation::Relu => "relu",
                    Activation::Identity => "",
                },
                names(&mut d.att_parts()),
                if x.input_feed {
                    ", fed to the next step's input"
                } else {
                    ""
                }
            )),
            names(&mut d.out_parts())
        ) + match x.logits {
            Logits::Softmax => "",
            Logits::LogSoftmax => ", log-softmax",
        },
    ));
    v
}

/// The workspace's source positions: `positions`, else the model's fixed length, else
/// [`DEFAULT_POSITIONS`].
fn positions_of(d: &ModelDesc, positions: Option<usize>) -> usize {
    positions.unwrap_or(match d.src_pad_to {
        0 => DEFAULT_POSITIONS,
        n => n,
    })
}

/// The report of `s2s inspect` on the model `file` (named `name`): its rows, then with
/// `tensors` the workspace buffers and every tensor. The workspace is sized for
/// `positions` source positions (default: the model's fixed length, or
/// [`DEFAULT_POSITIONS`]). An error is the model's binding at its precision failing
/// (never, for a checked file).
pub fn render(
    name: &str,
    file: &ModelFile<'_>,
    positions: Option<usize>,
    tensors: bool,
) -> Result<String, seq2seq::Error> {
    let mut s = String::new();
    for (k, v) in rows(name, file, positions)? {
        let _ = writeln!(s, "{k:<11} {v}");
    }
    if tensors {
        let t = positions_of(file.desc(), positions);
        let plan = with_net!(file, |net: P| Plan::new::<P>(&net?.desc, t));
        let _ = writeln!(s, "\nworkspace buffers:");
        for b in Buf::ALL {
            if plan.bytes_of(b) > 0 {
                let _ = writeln!(
                    s,
                    "  {:<30} {:>9} bytes",
                    b.name(),
                    thousands(plan.bytes_of(b))
                );
            }
        }
        let _ = writeln!(s, "\ntensors:");
        for ti in file.tensors() {
            let _ = writeln!(
                s,
                "  {:<32} {:<7} {:>5} x {:<5} {:>10} bytes",
                ti.id.to_string(),
                ti.dtype.name(),
                ti.rows,
                ti.cols,
                thousands(ti.len)
            );
        }
    }
    Ok(s)
}

/// The rows of the report on `file` (named `name`), label and text: the file, its
/// vocabularies, the architecture, the workspace for `positions` (see [`render`]),
/// the boards, the beam rule, the MACs, and the minimal firmware.
pub fn rows(
    name: &str,
    file: &ModelFile<'_>,
    positions: Option<usize>,
) -> Result<Vec<(String, String)>, seq2seq::Error> {
    let d = file.desc();
    let t = positions_of(d, positions);
    let mut out = Vec::new();
    let mut row = |k: &str, v: String| out.push((k.to_string(), v));
    row(
        "model",
        format!(
            "{} ({}{}, format v{})",
            name,
            file.precision().name(),
            match file.precision() {
                s2s_kernels::PrecisionKind::W8A16 => format!(", {} layout", file.layout().name()),
                _ => String::new(),
            },
            seq2seq::format::VERSION
        ),
    );
    row(
        "file",
        format!(
            "{} bytes ({} in {} tensors)",
            thousands(file.bytes().len()),
            thousands(file.tensor_bytes()),
            file.tensor_count()
        ),
    );
    row("parameters", thousands(file.parameters()));
    let (sv, tv) = (file.src_vocab(), file.tgt_vocab());
    row(
        "source",
        format!(
            "{} tokens, {}{}, unk {}, end {}{}",
            d.src_vocab,
            match d.split {
                Split::Chars => "characters",
                Split::Whitespace => "words",
            },
            if d.lowercase { " (lowercased)" } else { "" },
            token(&sv, d.src_unk),
            token(&sv, d.src_eos),
            if d.src_pad_to > 0 {
                format!(
                    ", padded to {} with {}",
                    d.src_pad_to,
                    token(&sv, Some(d.src_pad))
                )
            } else {
                String::new()
            }
        ) + &match d.extras.prefix().count() {
            0 => String::new(),
            _ => format!(
                ", prefix [{}]",
                d.extras
                    .prefix()
                    .map(|id| token(&sv, Some(id)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        } + &prefix_slots(file, &sv),
    );
    row(
        "target",
        format!(
            "{} tokens, start {}, end {}, {}at most {} steps, joined by {:?}",
            d.tgt_vocab,
            token(&tv, Some(d.tgt_start)),
            token(&tv, Some(d.tgt_end)),
            match d.extras.min_steps {
                0 => String::new(),
                n => format!("at least {n} tokens, "),
            },
            d.max_steps,
            file.separator()
        ),
    );
    for (k, v) in architecture(d) {
        row(&k, v);
    }
    let precision = file.precision().name();
    let (plan, enc, dec, per_beam, beam2, boards) = with_net!(file, |net: P| {
        let net = net?;
        (
            Plan::new::<P>(&net.desc, t),
            net.macs_per_source_position(),
            net.macs_per_step(t),
            seq2seq::BeamPlan::bytes_per_beam::<P>(&net.desc),
            seq2seq::BeamPlan::new::<P>(&net.desc, 2).bytes(),
            boards(precision, d.src_pad_to, |n| {
                Plan::new::<P>(&net.desc, n).bytes()
            }),
        )
    });
    let greedy_only = d.attention.ordering.greedy_only();
    let beam_ram = match greedy_only {
        true => String::new(),
        false => format!(
            "; a beam search adds {} bytes at width 2 and {} per further hypothesis",
            thousands(beam2),
            thousands(per_beam)
        ),
    };
    row(
        "RAM",
        format!(
            "{} bytes of workspace for {t} source positions{beam_ram}",
            thousands(plan.bytes()),
        ),
    );
    row("boards", boards);
    row(
        "beam",
        match d.beam.variant {
            _ if greedy_only => "none: a monotonic model decodes greedily only".to_string(),
            seq2seq::BeamVariant::Netra => "netra (no length normalisation)".to_string(),
            v => format!("{}, alpha {}", v.name(), d.beam.alpha.value()),
        },
    );
    row(
        "stream",
        match d.streams_in(t) {
            Ok(()) => format!(
                "yes: `s2s run --stream` holds a window of {t} source positions, the {} bytes above whatever the source's length",
                thousands(plan.bytes())
            ),
            Err(seq2seq::Error::NotStreamable(why)) => format!("no: {why}"),
            Err(e) => format!("no: {e}"),
        },
    );
    row(
        "MACs",
        format!(
            "{} per encoder step (source position), {} per decoder step (at {t} positions)",
            thousands(enc),
            thousands(dec)
        ),
    );
    let features = minimal_features(file);
    row("features", features.join(" "));
    if let Some(board) = smallest_board(file.precision()) {
        row("firmware", minimal_command(board, &features));
    }
    Ok(out)
}
