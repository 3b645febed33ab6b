//! Streaming: a source read a token at a time through a model that waits for nothing at
//! its end ([`ModelDesc::streams`](crate::ModelDesc::streams)), its outputs handed out
//! as they are decided. The workspace's positions are a window of encoder states: the
//! encoder adds the next positions of the source as the monotonic scan reaches them,
//! and once the scan has passed every one of a full window (it never looks back) the
//! window is filled again from its first row (after the rows a MoChA chunk still
//! reaches); for local attention the encoder adds positions up to `D` past the step's
//! index, and a full window keeps the rows from `D` before it. The workspace is the plan
//! of the window's positions,
//! whatever the source's length; every output is the one the whole source gives
//! ([`Runner::run`]) with as many steps.

use attention_core::MONOTONIC_CHUNK;
use rnn_core::CellScratch;
use s2s_kernels::part::Part as _;
use s2s_kernels::Precision;

use super::encode::{init_states, Layout};
use super::greedy::choose;
use super::lane::{b, cell_states, Lane};
use super::observe::{with_marks, Observer, Step};
use super::runner::Runner;
use super::step::{clear_weight, lane_attention, step_lanes};
use crate::net::Net;
use crate::vocab::{char_id, prefix_ids, Prefix};
use crate::{Error, Split};

/// How a streamed source went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Streamed {
    /// Source positions read: the prefix tokens, the source's own and the end token.
    pub positions: usize,
    /// Output tokens handed out (the end token not counted).
    pub tokens: usize,
    /// Whether the decoder chose the end token (else it stopped at the step cap).
    pub ended: bool,
}

/// How long a streamed source may decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamLimits {
    /// Decoder steps at most.
    pub max_steps: usize,
    /// Consecutive steps one source position may be attended (0: no limit): after that
    /// many, the next step's scan starts at the position after it. A decoding rule,
    /// like `max_steps`, not a property of the model: with a limit the outputs are no
    /// longer the whole source's ([`Runner::run`]'s), but the host's and a board's
    /// streams given the same limit agree token for token.
    pub max_repeats: usize,
}

/// What the window has read of the source, and how long the scan has stayed put.
struct Window {
    /// The source position of the window's first row.
    base: usize,
    /// Whether the source's last position (its end token, if the model has one) is in.
    ended: bool,
    /// Consecutive steps that attended the lane's position.
    repeats: usize,
}

impl<'n, 'a, 'w, P: Precision, const L: usize, const B: usize> Runner<'n, 'a, 'w, P, L, B> {
    /// Streams one source through lane 0, its ids read one at a time from `next` (`None`
    /// at its end; the model's end-of-source token is added) into the window of the
    /// runner's positions, the outputs handed to `emit` as they are decided, within
    /// `limits`. The source is read to its end, also after the decoder has ended.
    /// Without a repeat limit every output is what [`Runner::run`] gives the whole
    /// source with as many steps; `obs` sees the steps (the weights of the window's
    /// positions) and their phases.
    pub fn stream<E: From<Error>>(
        &mut self,
        mut next: impl FnMut() -> Result<Option<u16>, E>,
        limits: StreamLimits,
        obs: &mut impl Observer<P>,
        mut emit: impl FnMut(u16) -> Result<(), E>,
    ) -> Result<Streamed, E> {
        let lane = self
            .lanes
            .first_mut()
            .ok_or(Error::Inconsistent("no lane"))?;
        stream_lane(self.net, lane, &mut next, limits, obs, &mut emit)
    }

    /// [`Runner::stream`] of a source split into characters, read one at a time from
    /// `next`, after the prefix tokens `prefix` chooses: each is tokenized as
    /// [`crate::vocab::encode_source`] tokenizes a line's (an unknown character is an
    /// error naming it and its position when the model has no unknown token).
    pub fn stream_chars<E: From<Error>>(
        &mut self,
        prefix: &Prefix,
        mut next: impl FnMut() -> Result<Option<char>, E>,
        limits: StreamLimits,
        obs: &mut impl Observer<P>,
        emit: impl FnMut(u16) -> Result<(), E>,
    ) -> Result<Streamed, E> {
        let (net, slots) = (self.net, self.net.slots());
        let d = &net.desc;
        if d.split != Split::Chars {
            return Err(
                Error::NotStreamable("its source is split into words, not characters").into(),
            );
        }
        let mut first = prefix_ids(d, &slots, prefix)?;
        let mut position = 0;
        let ids = move || -> Result<Option<u16>, E> {
            if let Some(id) = first.next() {
                return Ok(Some(id));
            }
            let Some(c) = next()? else {
                return Ok(None);
            };
            position += 1;
            Ok(Some(char_id(d, &net.src_vocab, c, position - 1)?))
        };
        self.stream(ids, limits, obs, emit)
    }
}

/// [`Runner::stream`] in `lane`, whose positions are the window.
fn stream_lane<P: Precision, O: Observer<P>, E: From<Error>>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    next: &mut impl FnMut() -> Result<Option<u16>, E>,
    limits: StreamLimits,
    o: &mut O,
    emit: &mut impl FnMut(u16) -> Result<(), E>,
) -> Result<Streamed, E> {
    let d = &net.desc;
    let ring = lane.act[b::WEIGHTS].len();
    d.streams_in(ring)?;
    let Some(att) = &net.attention else {
        return Err(Error::Inconsistent("a streaming model without attention").into());
    };
    (lane.y, lane.n, lane.done) = (d.tgt_start, 0, false);
    (lane.at, lane.t, lane.valid) = (Lane::<P>::UNSTARTED, 0, 0);
    lane.act[b::ENC_LAST].fill(P::Act::default());
    init_states(net, lane, false)?;
    init_states(net, lane, true)?;
    lane.act[b::ATTENTIONAL].fill(P::Act::default());
    // Memory rows are written in the first encoder buffer, or in the memory buffer when
    // projected wider than the encoder's outputs (as the whole source's are).
    let mem_buf = match &net.memory_proj {
        Some(p) if p.rows() > d.enc_output() => b::MEMORY,
        _ => b::ENC_A,
    };
    let lay = Layout {
        mem_buf,
        keys_buf: if att.keys_are_memory() {
            mem_buf
        } else {
            b::KEYS
        },
        top_state: cell_states(d).1 + (d.dec_layers - 1) * d.dec_hidden,
    };
    let mut win = Window {
        base: 0,
        ended: false,
        repeats: 0,
    };
    // The steps are given no keys: each has attended before it (`attend_stream`).
    let attended = Layout {
        keys_buf: b::ATTENDED,
        ..lay
    };
    let local = cfg!(feature = "local") && d.attention.local();
    let mut done = Streamed::default();
    for index in 0..limits.max_steps {
        let step_lay = match local {
            true => {
                read_local(net, lane, &lay, &mut win, (ring, index), next, o)?;
                &lay
            }
            false => {
                attend_stream(
                    net,
                    lane,
                    &lay,
                    &mut win,
                    (ring, limits.max_repeats),
                    next,
                    o,
                )?;
                &attended
            }
        };
        step_lanes::<P, O, 1>(
            net,
            core::slice::from_mut(lane),
            step_lay,
            core::slice::from_mut(o),
        )?;
        let logits = &lane.wide[b::LOGITS][..];
        let y = choose(d, index, logits);
        let weights = lane.act[b::WEIGHTS]
            .part(..lane.t, "attention weights")
            .map_err(Error::from)?;
        o.step(&Step {
            index,
            token: y,
            weights: Some(weights),
            logits,
        });
        lane.y = y;
        if y == d.tgt_end {
            (lane.done, done.ended) = (true, true);
            break;
        }
        emit(y)?;
        done.tokens += 1;
    }
    // The rest of the source is read (and not encoded): the caller's input stays in step.
    done.positions = win.base + lane.t;
    while !win.ended {
        match next()? {
            Some(_) => done.positions += 1,
            None => {
                done.positions += d.src_eos.is_some() as usize;
                win.ended = true;
            }
        }
    }
    Ok(done)
}

/// The monotonic attention of a streamed step (`step::attend_monotonic` over the
/// window): the scan goes on from the lane's position; when it has passed every
/// position read and the source has more, the next positions are read into the window
/// ([`MONOTONIC_CHUNK`] at a time), filling it again from its first row once it is
/// full, and the scan goes on there.
fn attend_stream<P: Precision, O: Observer<P>, E: From<Error>>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    lay: &Layout,
    win: &mut Window,
    (ring, max_repeats): (usize, usize),
    next: &mut impl FnMut() -> Result<Option<u16>, E>,
    o: &mut O,
) -> Result<(), E> {
    let Some(att) = &net.attention else {
        return Ok(());
    };
    let bufs = (lay.mem_buf, lay.keys_buf, lay.top_state);
    let dims = (att.memory_dim(), att.key_dim());
    let at = lane.at;
    let w = usize::from(net.desc.attention.chunk);
    let mut from = clear_weight::<P>(lane.act[b::WEIGHTS], at, w);
    // A position attended `max_repeats` steps running is passed.
    let last = (at != Lane::<P>::UNSTARTED).then_some(win.base + at);
    if max_repeats > 0 && win.repeats >= max_repeats && last.is_some() {
        from += 1;
    }
    loop {
        let n = lane.t;
        let a = lane_attention(lane, bufs, dims)?;
        let mut s = a.scratch;
        let scan = (from, n, w);
        let stop = with_marks!(P, O, core::slice::from_mut(o), |m| att
            .monotonic_marked(a.query, a.key, a.mem, scan, &mut s, a.weights, a.context, m)
            .map_err(Error::from)?);
        match stop {
            Some(j) => {
                win.repeats = match last == Some(win.base + j) {
                    true => win.repeats + 1,
                    false => 1,
                };
                lane.at = j;
                return Ok(());
            }
            None if win.ended => {
                lane.at = n;
                return Ok(());
            }
            None => {
                // Every position read is passed. A full window's are replaced, after
                // the last `chunk - 1` (a MoChA chunk's, moved to the first rows).
                if n == ring {
                    let keep = w.saturating_sub(1).min(n);
                    keep_rows(lane, lay, dims, n - keep..n)?;
                    win.base += n - keep;
                    lane.act[b::WEIGHTS].fill(P::Act::default());
                    (lane.t, lane.valid) = (keep, keep);
                }
                // The scan goes on over the next positions, read as it needs them
                // (as many at once as it scores at once): none is encoded far ahead of
                // the decoder, and an output waits for few characters.
                from = lane.t;
                let end = ring.min(lane.t + MONOTONIC_CHUNK);
                while lane.t < end && !win.ended {
                    read_position(net, lane, lay.mem_buf, win, next, o)?;
                }
                all_read(net, lane, win)?;
            }
        }
    }
}

/// The source read for local attention's step `index`: up to the position `D` past it
/// (or the source's end), a full window first keeping the rows from `D` before it (a
/// window of at least `2D + 1` positions, `ModelDesc::streams_in`, always frees one).
/// The step then attends the window's rows as a whole line's does
/// (`step::attend_local`), its index, [`Lane::n`], counted from the window's first row.
fn read_local<P: Precision, O: Observer<P>, E: From<Error>>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    lay: &Layout,
    win: &mut Window,
    (ring, index): (usize, usize),
    next: &mut impl FnMut() -> Result<Option<u16>, E>,
    o: &mut O,
) -> Result<(), E> {
    let Some(att) = &net.attention else {
        return Ok(());
    };
    let half = usize::from(net.desc.attention.window);
    while !win.ended && win.base + lane.t <= index.saturating_add(half) {
        if lane.t >= ring {
            let from = index.saturating_sub(half).saturating_sub(win.base);
            let dims = (att.memory_dim(), att.key_dim());
            keep_rows(lane, lay, dims, from.min(lane.t)..lane.t)?;
            win.base += from;
            lane.t -= from.min(lane.t);
        }
        read_position(net, lane, lay.mem_buf, win, next, o)?;
    }
    all_read(net, lane, win)?;
    lane.n = index.saturating_sub(win.base);
    Ok(())
}

/// Reads the source's next position into the window's next row: the next id, or at
/// the source's end the model's end token (if it has one), the window then ended.
#[inline(always)]
fn read_position<P: Precision, O: Observer<P>, E: From<Error>>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    mem_buf: usize,
    win: &mut Window,
    next: &mut impl FnMut() -> Result<Option<u16>, E>,
    o: &mut O,
) -> Result<(), E> {
    match next()? {
        Some(id) => push_position(net, lane, id, mem_buf, o)?,
        None => {
            if let Some(eos) = net.desc.src_eos {
                push_position(net, lane, eos, mem_buf, o)?;
            }
            win.ended = true;
        }
    }
    Ok(())
}

/// The window's positions read for a step: all of them valid; a prefix alone is not a
/// source (as a whole line's), refused before a step decodes from it.
#[inline(always)]
fn all_read<P: Precision>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    win: &Window,
) -> Result<(), Error> {
    lane.valid = lane.t;
    if win.ended && win.base + lane.t == net.desc.extras.prefix_len() {
        return Err(Error::EmptyInput);
    }
    Ok(())
}

/// Moves the memory rows and keys of the window's positions `rows` to its first rows.
fn keep_rows<P: Precision>(
    lane: &mut Lane<'_, P>,
    lay: &Layout,
    (m, k): (usize, usize),
    rows: core::ops::Range<usize>,
) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut keep = |buf: usize, size: usize| -> Result<(), Error> {
        // Forwards, each value to a lower index (`copy_within`, and indexing `act` by
        // a buffer number not known here, each linked a panic path and `core::fmt`
        // into the micro:bit's build, 4.5 KB).
        let past = Error::Inconsistent("window rows past the buffer");
        let values = lane.act.get_mut(buf).ok_or(past)?;
        let from = rows.start * size;
        for to in 0..rows.len() * size {
            let v = *values.get(from + to).ok_or(past)?;
            *values.get_mut(to).ok_or(past)? = v;
        }
        Ok(())
    };
    keep(lay.mem_buf, m)?;
    if lay.keys_buf != lay.mem_buf {
        keep(lay.keys_buf, k)?;
    }
    Ok(())
}

/// Encodes source id `id` as the window's next row: the encoder's layers one step on
/// from their states, the top state as the memory row (or its projection, in
/// `mem_buf`), and its attention key.
fn push_position<P: Precision, O: Observer<P>>(
    net: &Net<'_, P>,
    lane: &mut Lane<'_, P>,
    id: u16,
    mem_buf: usize,
    o: &mut O,
) -> Result<(), Error> {
    let d = &net.desc;
    if usize::from(id) >= d.src_vocab {
        return Err(Error::TokenOutOfRange {
            what: "source id",
            id: u32::from(id),
            vocab: d.src_vocab,
        });
    }
    let (p, h) = (lane.t, d.enc_hidden);
    let (enc_cells, _) = cell_states(d);
    let Lane { act, wide, .. } = lane;
    let [_, enc_a, _, memory, keys, enc_last, xbuf, cell_act, ..] = act;
    let (cells, states) = enc_last.cut_mut(enc_cells, "encoder final states")?;
    let x0 = xbuf.part_mut(..d.enc_emb, "encoder input row")?;
    net.src_emb.embed(usize::from(id), x0)?;
    let mut scratch = CellScratch::with_hidden(
        d.enc_hidden.max(d.dec_hidden),
        &mut wide[b::CELL_WIDE][..],
        cell_act,
    )?;
    for (l, layer) in net.encoder.iter().enumerate() {
        let (below, here) = states.cut_mut(l * h, "encoder states")?;
        let x: &[P::Act] = match l {
            0 => x0,
            _ => below.part((l - 1) * h.., "encoder states")?,
        };
        let hs = here.part_mut(..h, "encoder state")?;
        let cs = cells.get_mut(l * h..(l + 1) * h).unwrap_or(&mut []);
        with_marks!(P, O, core::slice::from_mut(o), |m| layer
            .fwd
            .step_batch::<1>(
                &[&[x]],
                &mut [hs],
                &mut [cs],
                &mut [&mut scratch],
                m
            )?);
    }
    let top = states.part((d.enc_layers - 1) * h..d.enc_layers * h, "encoder states")?;
    let mem: &mut [P::Act] = if mem_buf == b::MEMORY { memory } else { enc_a };
    let m = d.memory_dim();
    let row = mem.part_mut(p * m..(p + 1) * m, "memory")?;
    match &net.memory_proj {
        Some(proj) => {
            let out = wide[b::PROJ].part_mut(..m, "memory projection")?;
            proj.apply(&[top], out)?;
            for (o, &w) in row.iter_mut().zip(out.iter()) {
                *o = P::narrow(w, d.fmt_memory);
            }
        }
        None => row.fill_from(top, "memory")?,
    }
    if let Some(att) = net.attention.as_ref().filter(|a| !a.keys_are_memory()) {
        let k = att.key_dim();
        let key = keys.part_mut(p * k..(p + 1) * k, "attention keys")?;
        att.precompute_keys(row, 1, key, &mut wide[b::PROJ][..])?;
    }
    lane.t = p + 1;
    Ok(())
}
