//! What `s2s train` refuses before it starts (issue 30, finding 4): options out of
//! their range, a `max_steps` longer than the training graph can be walked, and a
//! configuration whose parameters and activations would not fit in this machine's
//! memory (or above [`MAX_TRAIN_BYTES`]). Each is one error line naming the option or
//! key; nothing is written.

use seq2seq::desc::ModelDesc;

use super::TrainOptions;
use crate::error::{Error, Place, Result};
use crate::import::config::Config;

/// Most decoder steps `s2s train` trains (`[target] max_steps`): the training graph of a
/// batch is one chain per step, walked recursively by the tensor library's backward pass
/// and its drop, so a longer chain would overflow the stack. The same bound as the
/// host's source positions ([`crate::model::HOST_MAX_POSITIONS`]).
pub const MAX_TRAIN_STEPS: usize = crate::model::HOST_MAX_POSITIONS;

/// Most bytes a training run may need by [`estimate_bytes`], whatever the machine.
pub const MAX_TRAIN_BYTES: u64 = 64 << 30;

/// Most `--threads`.
pub const MAX_THREADS: usize = 1024;

/// Refuses options out of their range: `--dropout` and `--label-smoothing` in [0, 1), `--lr` finite and above
/// 0, `--lr-decay` in (0, 1], `--clip` finite and at least 0, `--batch` and `--epochs`
/// at least 1, `--threads` at most [`MAX_THREADS`].
pub fn check_options(opt: &TrainOptions) -> Result {
    let d = opt.dropout;
    if !(0.0..1.0).contains(&d) {
        return Err(Error::usage(format!(
            "--dropout {d}: the dropout rate is at least 0 and below 1"
        )));
    }
    let e = opt.label_smoothing;
    if !(0.0..1.0).contains(&e) {
        return Err(Error::usage(format!(
            "--label-smoothing {e}: the smoothing is at least 0 and below 1"
        )));
    }
    if !(opt.lr.is_finite() && opt.lr > 0.0) {
        return Err(Error::usage(format!(
            "--lr {}: the learning rate is a finite number above 0",
            opt.lr
        )));
    }
    if !(opt.lr_decay > 0.0 && opt.lr_decay <= 1.0) {
        return Err(Error::usage(format!(
            "--lr-decay {}: the factor is above 0 and at most 1",
            opt.lr_decay
        )));
    }
    if !(opt.clip.is_finite() && opt.clip >= 0.0) {
        return Err(Error::usage(format!(
            "--clip {}: the norm is a finite number, at least 0 (0: no clipping)",
            opt.clip
        )));
    }
    if opt.batch == 0 || opt.epochs == 0 {
        return Err(Error::usage("--batch and --epochs must be at least 1"));
    }
    if opt.threads > MAX_THREADS {
        return Err(Error::usage(format!(
            "--threads {}: at most {MAX_THREADS}",
            opt.threads
        )));
    }
    Ok(())
}

/// Bytes a training run of `desc` needs, about: every parameter four times (the value,
/// its gradient and Adam's two moments) and twice more for the checkpoint written after
/// every epoch; and the activations the backward pass keeps for a batch of `batch`
/// sequences over `positions` source positions and `max_steps` steps (per position and
/// layer direction about 16 values of the hidden size; per step as much of the
/// decoder's, the attention's weights and keys, and 4 values of the target vocabulary:
/// logits, log-softmax and their gradients). Saturates instead of overflowing.
pub fn estimate_bytes(desc: &ModelDesc, batch: usize, positions: usize) -> u64 {
    let u = |n: usize| n as u64;
    let parameters = desc.layer_specs().iter().fold(0u64, |sum, s| {
        sum.saturating_add(u(s.rows).saturating_mul(u(s.cols).saturating_add(1)))
    });
    let dirs = if desc.enc_bidir { 2 } else { 1 };
    let enc = u(desc.enc_layers)
        .saturating_mul(dirs)
        .saturating_mul(16)
        .saturating_mul(u(desc.enc_hidden))
        .saturating_add(u(desc.enc_emb));
    let attention = u(positions).saturating_mul(u(desc.attention.score_dim()).saturating_add(4));
    let dec = u(desc.dec_layers)
        .saturating_mul(16)
        .saturating_mul(u(desc.dec_hidden))
        .saturating_add(u(desc.dec_emb))
        .saturating_add(attention)
        .saturating_add(u(desc.attentional.unwrap_or(0)).saturating_mul(4))
        .saturating_add(u(desc.tgt_vocab).saturating_mul(4));
    let per_sequence = u(positions)
        .saturating_mul(enc)
        .saturating_add(u(desc.max_steps).saturating_mul(dec));
    let activations = u(batch).saturating_mul(per_sequence);
    parameters
        .saturating_mul(6)
        .saturating_add(activations)
        .saturating_mul(4)
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`), where it can be read.
pub fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Refuses a `max_steps` above [`MAX_TRAIN_STEPS`] and a configuration whose
/// [`estimate_bytes`] is above [`MAX_TRAIN_BYTES`] or `memory`; the error names the
/// configuration's largest size (its key) and the estimate.
pub fn check_sizes(
    cfg: &Config,
    desc: &ModelDesc,
    batch: usize,
    positions: usize,
    memory: Option<u64>,
) -> Result {
    if let Some(m) = too_many_steps(desc) {
        return Err(cfg.error(
            Place::Inside(format!("[target] max_steps = {}", desc.max_steps)),
            m,
        ));
    }
    let Some((need, limit, whose)) = over_limit(desc, batch, positions, memory) else {
        return Ok(());
    };
    let attention = cfg.attention.as_ref().and_then(|a| a.dim).unwrap_or(0);
    let sizes = [
        ("[encoder] hidden", cfg.encoder.hidden),
        ("[decoder] hidden", cfg.decoder.hidden),
        ("[encoder] embedding", cfg.encoder.embedding),
        ("[decoder] embedding", cfg.decoder.embedding),
        ("[attention] dim", attention),
        ("[target] max_steps", desc.max_steps),
    ];
    // The largest, the first of equals.
    let (key, value) = sizes
        .iter()
        .copied()
        .fold(sizes[0], |best, s| if s.1 > best.1 { s } else { best });
    Err(cfg.error(
        Place::Inside(format!("{key} = {value}")),
        format!(
            "training would need about {} (parameters, gradients, Adam's moments and the \
             activations of a batch of {batch}), more than {whose} ({})",
            gigabytes(need),
            gigabytes(limit)
        ),
    ))
}

/// Why `desc`'s `max_steps` is more than `s2s train` trains, if it is.
fn too_many_steps(desc: &ModelDesc) -> Option<String> {
    (desc.max_steps > MAX_TRAIN_STEPS)
        .then(|| format!("s2s train trains at most {MAX_TRAIN_STEPS} decoder steps"))
}

/// `(need, limit, whose limit)` when [`estimate_bytes`] is over the machine's memory or
/// [`MAX_TRAIN_BYTES`].
fn over_limit(
    desc: &ModelDesc,
    batch: usize,
    positions: usize,
    memory: Option<u64>,
) -> Option<(u64, u64, &'static str)> {
    let need = estimate_bytes(desc, batch, positions);
    let (limit, whose) = match memory {
        Some(m) if m < MAX_TRAIN_BYTES => (m, "this machine's memory"),
        _ => (MAX_TRAIN_BYTES, "the bound of s2s train"),
    };
    (need > limit).then_some((need, limit, whose))
}

/// `n` bytes in GB, one decimal.
fn gigabytes(n: u64) -> String {
    format!("{:.1} GB", n as f64 / 1e9)
}

/// [`check_sizes`] for a model file (`s2s train --init`): the error names the file.
pub fn check_model_size(
    path: &std::path::Path,
    desc: &ModelDesc,
    batch: usize,
    positions: usize,
    memory: Option<u64>,
) -> Result {
    if let Some(m) = too_many_steps(desc) {
        return Err(Error::invalid(
            path.display(),
            Place::File,
            format!("max_steps = {}: {m}", desc.max_steps),
        ));
    }
    match over_limit(desc, batch, positions, memory) {
        Some((need, limit, whose)) => Err(Error::invalid(
            path.display(),
            Place::File,
            format!(
                "training would need about {}, more than {whose} ({})",
                gigabytes(need),
                gigabytes(limit)
            ),
        )),
        None => Ok(()),
    }
}
