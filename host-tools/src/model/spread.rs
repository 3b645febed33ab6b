//! Decoding many lines on all cores: [`decode_lines`], [`decode_each`] and the
//! streaming [`decode_stream`], each line decoded on its own so the results do not
//! depend on the thread count.

use std::path::PathBuf;

use s2s_kernels::Precision;
use seq2seq::{Net, Prefix};

use crate::dispatch;
use crate::error::{Error, Result};
use crate::model::decode::{forget_layers, Decoded, HostRunner, Keep, HOST_LANES};
use crate::model::limits::positions_for;
use crate::model::load::LoadedModel;
use crate::model::prefix::PrefixArgs;

/// Runners for rayon's threads (`RAYON_NUM_THREADS`, all cores by default), made once
/// per net, their workspaces reused group after group: a task takes one, decodes a
/// group of lines and gives it back. Made with one runner per thread; a task that finds
/// none makes another. Clears the cached layers of every thread first: a net's decoding
/// begins.
struct Runners<'n, 'a, P: Precision> {
    net: &'n Net<'a, P>,
    positions: usize,
    free: std::sync::Mutex<Vec<HostRunner<'n, 'a, P>>>,
}

impl<'n, 'a, P: Precision> Runners<'n, 'a, P>
where
    Net<'a, P>: Sync,
{
    fn new(net: &'n Net<'a, P>, positions: usize) -> Self {
        forget_layers();
        rayon::broadcast(|_| forget_layers());
        let free = (0..rayon::current_num_threads().max(1))
            .map(|_| HostRunner::keeping_cache(net, positions))
            .collect();
        Runners {
            net,
            positions,
            free: std::sync::Mutex::new(free),
        }
    }

    /// Decodes one group of lines (at most [`HOST_LANES`]) on a free runner, line `i`
    /// after `prefixes[i]` (the model's defaults past its end).
    fn decode(
        &self,
        lines: &[&str],
        prefixes: &[Prefix],
        keep: Keep,
    ) -> Vec<Result<Decoded, seq2seq::Error>> {
        let taken = self.free.lock().map(|mut f| f.pop()).ok().flatten();
        let mut runner =
            taken.unwrap_or_else(|| HostRunner::keeping_cache(self.net, self.positions));
        let out = runner.decode_all(lines, prefixes, keep);
        if let Ok(mut f) = self.free.lock() {
            f.push(runner);
        }
        out
    }
}

/// The lines' indices in groups of [`HOST_LANES`] that decode together: lines of similar
/// length share a group (its lanes run as long as its longest line), the longest
/// groups first, so that the threads, taking them in that order, finish together.
fn groups(lines: &[&str]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lines[i].chars().count()));
    order.chunks(HOST_LANES).map(<[usize]>::to_vec).collect()
}

/// Decodes `lines` on all threads, group by group ([`groups`]), line `i` after
/// `prefixes[i]` (the model's defaults past its end), the results in input order. Each
/// line is decoded on its own (the lanes of a group do not meet), so the results are
/// the same whatever the thread count and grouping.
fn decode_spread<'a, P: Precision>(
    runners: &Runners<'_, 'a, P>,
    lines: &[&str],
    prefixes: &[Prefix],
    keep: Keep,
) -> Vec<Result<Decoded, seq2seq::Error>>
where
    Net<'a, P>: Sync,
{
    use rayon::prelude::*;
    let groups = groups(lines);
    let done: Vec<Vec<Result<Decoded, seq2seq::Error>>> = groups
        .par_iter()
        .with_max_len(1)
        .map(|g| {
            let group: Vec<&str> = g.iter().map(|&i| lines[i]).collect();
            let prefixes: Vec<Prefix> = g
                .iter()
                .map(|&i| prefixes.get(i).copied().unwrap_or_default())
                .collect();
            runners.decode(&group, &prefixes, keep)
        })
        .collect();
    in_input_order(lines.len(), groups.into_iter().zip(done))
}

/// A group of lines decoded: their indices and their results.
type Group = (Vec<usize>, Vec<Result<Decoded, seq2seq::Error>>);

/// The results of groups of lines put back in input order.
fn in_input_order(
    n: usize,
    groups: impl IntoIterator<Item = Group>,
) -> Vec<Result<Decoded, seq2seq::Error>> {
    let mut back: Vec<Option<Result<Decoded, seq2seq::Error>>> = (0..n).map(|_| None).collect();
    for (g, results) in groups {
        for (i, r) in g.into_iter().zip(results) {
            back[i] = Some(r);
        }
    }
    back.into_iter()
        .map(|r| r.expect("every line decoded"))
        .collect()
}

/// Decodes every line with a model of any precision; stops at the first error, naming
/// the line (1-based).
pub fn decode_lines(model: &LoadedModel, lines: &[String], keep: Keep) -> Result<Vec<Decoded>> {
    decode_each(model, lines, &[], keep)?
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            d.map_err(|source| Error::Input {
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Decodes every line with a model of any precision, line `i` after `prefixes[i]` (the
/// model's defaults past its end: `&[]` for every line): one result per line (an error
/// binding the model is the whole call's).
pub fn decode_each(
    model: &LoadedModel,
    lines: &[String],
    prefixes: &[Prefix],
    keep: Keep,
) -> Result<Vec<Result<Decoded, seq2seq::Error>>> {
    greedy_only(model, &keep)?;
    let positions = model.positions();
    model.with_net(|any| {
        dispatch!(any, |net: P| {
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            Ok(decode_spread::<P>(
                &Runners::new(&net, positions),
                &refs,
                prefixes,
                keep,
            ))
        })
    })
}

/// Refuses a beam search of a model that decodes greedily only (monotonic attention)
/// once, naming the model, instead of on every line.
fn greedy_only(model: &LoadedModel, keep: &Keep) -> Result {
    let desc = *model.file().desc();
    match (keep.beam, desc.attention.ordering.greedy_only()) {
        (Some(_), true) => Err(Error::Model {
            path: model.path.clone(),
            place: crate::error::Place::File,
            source: seq2seq::Error::GreedyOnly,
            positions: None,
        }),
        _ => Ok(()),
    }
}

/// Lines decoded together by [`decode_stream`], per thread: what the input has
/// buffered, up to this many times the threads.
pub const STREAM_BATCH: usize = 4 * HOST_LANES;

/// A batch of input lines whose groups are being decoded by the thread pool.
struct InFlight {
    lines: Vec<crate::io::InputLine>,
    /// Each line's prefix, or why it has none.
    prefixes: Vec<std::result::Result<Prefix, seq2seq::Error>>,
    /// How many groups its decoded lines make (as many results to receive).
    groups: usize,
    /// Each group as it is decoded.
    results: std::sync::mpsc::Receiver<Group>,
    /// The lines decoded (those neither empty nor unreadable).
    decoded: usize,
}

/// Decodes the sources of the lines of `input` (each line's first tab-separated column,
/// [`crate::io::source_of`]) after their prefixes (`prefix`, checked first) as they come, in batches of at most [`STREAM_BATCH`] per
/// thread, and hands each to `each` in input order with its line number, its source and
/// its result: an empty source gives an empty output without running the model (for
/// every model alike), a line
/// that is not text or that the model refuses gives its error, naming `input`'s file
/// and line. Stops at a reading error (or a line beyond the length bound), after the
/// lines before it, or at `each`'s error.
///
/// The batches overlap: while the threads decode one (in groups of lines of similar
/// length, the longest first, each thread taking the next as it frees up), this
/// thread reads the next when the input has it at hand (a
/// file; an interactive input is answered before it is read further) and writes the
/// previous one, so that no thread waits for the others at the end of each batch.
pub fn decode_stream(
    model: &LoadedModel,
    input: &mut crate::io::LineReader,
    prefix: &PrefixArgs,
    keep: Keep,
    mut each: impl FnMut(usize, &str, Result<Decoded>) -> Result,
) -> Result {
    greedy_only(model, &keep)?;
    let positions = model.positions();
    let name = PathBuf::from(input.name());
    let file = model.file();
    let base = prefix.base(&file, &model.path)?;
    model.with_net(|any| {
        dispatch!(any, |net: P| {
            let runners = Runners::<P>::new(&net, positions);
            let batch_lines = STREAM_BATCH * rayon::current_num_threads().max(1);
            // Hands a decoded batch to `each`, line by line in input order.
            let mut finish = |f: InFlight| -> Result {
                let mut groups = Vec::with_capacity(f.groups);
                for _ in 0..f.groups {
                    groups.push(f.results.recv().expect("every group decoded"));
                }
                let mut done = in_input_order(f.decoded, groups).into_iter();
                for (line, prefix) in f.lines.into_iter().zip(f.prefixes) {
                    let in_line = |source| Error::Model {
                        path: name.clone(),
                        place: crate::error::Place::Line(line.number),
                        positions: positions_for(file.desc(), &source),
                        source,
                    };
                    let (text, result) = match (line.text, prefix) {
                        (Err(e), _) => (String::new(), Err(e)),
                        (Ok(t), _) if t.is_empty() => (t, Ok(Decoded::default())),
                        (Ok(t), Err(e)) => (t, Err(in_line(e))),
                        (Ok(t), Ok(_)) => {
                            let d = done.next().expect("one result per decoded line");
                            (t, d.map_err(in_line))
                        }
                    };
                    each(line.number, &text, result)?;
                }
                Ok(())
            };
            rayon::in_place_scope(|scope| {
                let mut flying = std::collections::VecDeque::new();
                loop {
                    // Two batches in flight at most; none while the input waits.
                    if flying.len() >= 2 || (!flying.is_empty() && !input.has_line_at_hand()) {
                        finish(flying.pop_front().expect("a batch in flight"))?;
                        continue;
                    }
                    let mut batch = match input.next_batch(batch_lines) {
                        Ok(b) if !b.is_empty() => b,
                        end => {
                            for f in flying.drain(..) {
                                finish(f)?;
                            }
                            return end.map(|_| ());
                        }
                    };
                    let mut prefixes = Vec::with_capacity(batch.len());
                    for line in &mut batch {
                        let t = line.text.as_mut().map_or("", |t| t.as_str());
                        prefixes.push(prefix.of_line(&file, base, t));
                        if let Ok(t) = &mut line.text {
                            t.truncate(crate::io::source_of(t).len());
                        }
                    }
                    let (todo, todo_prefixes): (Vec<String>, Vec<Prefix>) = batch
                        .iter()
                        .zip(&prefixes)
                        .filter_map(|(l, p)| Some((l.text.as_ref().ok()?, p.as_ref().ok()?)))
                        .filter(|(t, _)| !t.is_empty())
                        .map(|(t, p)| (t.clone(), *p))
                        .unzip();
                    let refs: Vec<&str> = todo.iter().map(String::as_str).collect();
                    let groups = groups(&refs);
                    let (send, results) = std::sync::mpsc::channel();
                    flying.push_back(InFlight {
                        lines: batch,
                        prefixes,
                        groups: groups.len(),
                        results,
                        decoded: todo.len(),
                    });
                    for g in groups {
                        let lines: Vec<String> = g.iter().map(|&i| todo[i].clone()).collect();
                        let ps: Vec<Prefix> = g.iter().map(|&i| todo_prefixes[i]).collect();
                        let (send, runners) = (send.clone(), &runners);
                        scope.spawn(move |_| {
                            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
                            // The receiver is gone only when `each` failed: nobody waits.
                            let _ = send.send((g, runners.decode(&refs, &ps, keep)));
                        });
                    }
                }
            })
        })
    })
}
