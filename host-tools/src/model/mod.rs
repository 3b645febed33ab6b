//! Loading model files on the host and running them through the same no_std core the
//! firmware runs.

pub mod beam;
mod delegate;
#[allow(unsafe_code)] // runtime-detected SIMD; see its SAFETY comments
pub mod hostf32;
#[allow(unsafe_code)] // runtime-detected SIMD; see its SAFETY comments
pub mod hostw8a16;
pub mod inspect;
pub mod run;
mod simd;

use std::path::{Path, PathBuf};

use s2s_kernels::{Precision, PrecisionKind, W8F32};

use crate::error::{Error, Result};
use crate::model::hostf32::HostF32;
use crate::model::hostw8a16::HostW8A16;
use std::collections::BTreeMap;

use seq2seq::run::{Observer, Probe, Step, Values};
use seq2seq::vocab::encode_source;
use seq2seq::{ModelFile, Net, Plan, Runner};

/// The largest model file the host tools read: 256 MiB (the largest model file a
/// microcontroller holds is a few MiB; g2p-en in f32 is 3.3 MB).
pub const MAX_MODEL_BYTES: u64 = 256 << 20;

/// Longest source (in positions, end token included) the host runner accepts.
pub const HOST_MAX_POSITIONS: usize = 512;

/// A model file read into 8-byte aligned memory.
pub struct LoadedModel {
    /// Where it came from.
    pub path: PathBuf,
    words: Vec<u64>,
    len: usize,
}

impl LoadedModel {
    /// Reads and checks a model file; errors name the file. The header is read first:
    /// a file that does not start with the magic and this build's version, or that is
    /// larger than [`MAX_MODEL_BYTES`], is refused before the rest is read.
    pub fn load(path: &Path) -> Result<Self> {
        use seq2seq::format::HEADER_LEN;
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(Error::io(path))?;
        let size = file.metadata().map_err(Error::io(path))?.len();
        let mut reader = file.take(MAX_MODEL_BYTES + 1);
        let mut bytes = Vec::new();
        (&mut reader)
            .take(HEADER_LEN as u64)
            .read_to_end(&mut bytes)
            .map_err(Error::io(path))?;
        match ModelFile::parse(&bytes) {
            Err(e @ (seq2seq::Error::BadMagic | seq2seq::Error::UnsupportedVersion { .. })) => {
                return Err(Error::model(path)(e))
            }
            _ if size > MAX_MODEL_BYTES => {
                return Err(Error::invalid(
                    path.display(),
                    crate::error::Place::File,
                    format!(
                        "{size} bytes: larger than the largest model file the host tools read ({MAX_MODEL_BYTES} bytes)"
                    ),
                ))
            }
            _ => {}
        }
        reader.read_to_end(&mut bytes).map_err(Error::io(path))?;
        Self::from_bytes(path, &bytes)
    }

    /// Checks model bytes (`path` only names them in errors).
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Self> {
        let m = LoadedModel {
            path: path.to_path_buf(),
            words: seq2seq::builder::aligned(bytes),
            len: bytes.len(),
        };
        // The host also refuses non-finite weights and scales (the firmware skips that
        // scan).
        ModelFile::parse(m.bytes())
            .and_then(|f| f.check_finite())
            .map_err(Error::model(path))?;
        m.with_net(|_| Ok(()))?;
        Ok(m)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// The parsed file (checked, CRC included, at load).
    pub fn file(&self) -> ModelFile<'_> {
        ModelFile::parse_verified(self.bytes()).expect("checked at load")
    }

    /// Binds the model at its precision and hands it to `f`.
    pub fn with_net<R>(&self, f: impl FnOnce(AnyNet<'_>) -> Result<R>) -> Result<R> {
        let file = self.file();
        let ctx = Error::model(&self.path);
        let net = match file.precision() {
            PrecisionKind::F32 => AnyNet::F32(Net::bind(&file).map_err(ctx)?),
            PrecisionKind::W8F32 => {
                AnyNet::W8F32(Net::bind(&file).map_err(Error::model(&self.path))?)
            }
            PrecisionKind::W8A16 => {
                AnyNet::W8A16(Net::bind(&file).map_err(Error::model(&self.path))?)
            }
        };
        f(net)
    }

    /// Source positions the host plans for: the model's fixed length, or the largest.
    pub fn positions(&self) -> usize {
        let d = self.file();
        match d.desc().src_pad_to {
            0 => HOST_MAX_POSITIONS,
            n => n,
        }
    }
}

/// A bound model of any precision.
pub enum AnyNet<'a> {
    /// f32 (computed by the host's fast batched layers, bit for bit as the core's F32).
    F32(Net<'a, HostF32>),
    /// int8 weights, f32 math.
    W8F32(Net<'a, W8F32>),
    /// int8 weights, int16 activations (computed by the host's fast batched layers, to
    /// the same integers as the core's W8A16).
    W8A16(Net<'a, HostW8A16>),
}

/// Runs `$body` with `$net` bound to the concrete `Net<P>` (and `$p` to `P`).
#[macro_export]
macro_rules! dispatch {
    ($any:expr, |$net:ident: $p:ident| $body:expr) => {
        match $any {
            $crate::model::AnyNet::F32($net) => {
                type $p = $crate::model::hostf32::HostF32;
                $body
            }
            $crate::model::AnyNet::W8F32($net) => {
                type $p = s2s_kernels::W8F32;
                $body
            }
            $crate::model::AnyNet::W8A16($net) => {
                type $p = $crate::model::hostw8a16::HostW8A16;
                $body
            }
        }
    };
}

/// One decoded source, with what the observer saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decoded {
    /// The source tokens as the model saw them (after tokenization and padding).
    pub source: Vec<String>,
    /// Output ids (end token excluded).
    pub ids: Vec<u16>,
    /// Output tokens as text.
    pub tokens: Vec<String>,
    /// Output text (tokens joined by the model's separator).
    pub text: String,
    /// Attention weights of every step (the end token's step included), as f32.
    pub weights: Vec<Vec<f32>>,
    /// The same weights as stored, zero-extended to `i64`: f32 bit patterns, or the
    /// Q0.15 `i16` values of w8a16 (kept with `weights`).
    pub raw_weights: Vec<Vec<i64>>,
    /// Logits of every step, as f32 (kept when asked).
    pub logits: Vec<Vec<f32>>,
    /// Logits of every step in their stored integer or float bits (kept when asked).
    pub raw_logits: Vec<Vec<i64>>,
    /// Intermediate tensors as f32, every occurrence in order (kept when asked).
    pub probes: BTreeMap<Probe, Vec<Vec<f32>>>,
    /// Every result of a beam search, best first (empty for greedy decoding).
    pub nbest: Vec<Ranked>,
}

/// One ranked result of a beam search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ranked {
    /// Output ids (end token excluded).
    pub ids: Vec<u16>,
    /// Output text.
    pub text: String,
    /// Sum of the natural-log probabilities of its tokens (end token included).
    pub score: f64,
    /// Tokens the decoder produced for it, end token included.
    pub len: usize,
    /// Whether it ended with the end token.
    pub ended: bool,
}

/// How to decode, and what to keep of each step.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Attention weights (greedy decoding only).
    pub weights: bool,
    /// Logits (greedy decoding only).
    pub logits: bool,
    /// Intermediate tensors.
    pub probes: bool,
    /// A beam search instead of greedy decoding.
    pub beam: Option<beam::BeamOptions>,
}

struct Recorder<'d> {
    keep: Keep,
    out: &'d mut Decoded,
}

impl<P: Precision> Observer<P> for Recorder<'_> {
    fn probe(&mut self, probe: Probe, values: Values<'_, P>) {
        if self.keep.probes {
            let v = match values {
                Values::Act(a, f) => a.iter().map(|&x| P::act_to_f32(x, f)).collect(),
                Values::Wide(w) => w.iter().map(|&x| P::wide_to_f32(x)).collect(),
            };
            self.out.probes.entry(probe).or_default().push(v);
        }
    }

    fn step(&mut self, s: &Step<'_, P>) {
        if self.keep.weights {
            if let Some(w) = s.weights {
                self.out
                    .weights
                    .push(w.iter().map(|&v| P::unit_to_f32(v)).collect());
                self.out.raw_weights.push(raw_bits(w));
            }
        }
        if self.keep.logits {
            self.out
                .logits
                .push(s.logits.iter().map(|&v| P::wide_to_f32(v)).collect());
            self.out.raw_logits.push(raw_bits(s.logits));
        }
    }
}

/// Sources decoded together by the host runner.
pub const HOST_LANES: usize = crate::model::hostf32::LANES;

/// Each value's stored bits (an integer, or a float's bit pattern), widened to `i64`.
fn raw_bits<T: bytemuck::Pod>(values: &[T]) -> Vec<i64> {
    values
        .iter()
        .map(|v| {
            let b = bytemuck::bytes_of(v);
            let mut x = [0u8; 8];
            x[..b.len()].copy_from_slice(b);
            i64::from_le_bytes(x)
        })
        .collect()
}

/// A runner for one model with its workspace, for decoding many sources: lines go
/// through the core [`HOST_LANES`] at a time, sharing every matrix product.
pub struct HostRunner<'n, 'a, P: Precision> {
    net: &'n Net<'a, P>,
    arena: Vec<u32>,
    positions: usize,
}

impl<'n, 'a, P: Precision> HostRunner<'n, 'a, P> {
    /// A workspace for sources of up to `positions` positions.
    pub fn new(net: &'n Net<'a, P>, positions: usize) -> Self {
        forget_layers();
        Self::keeping_cache(net, positions)
    }

    /// [`HostRunner::new`] without forgetting this thread's cached layers: for a net
    /// whose layers the cache was cleared for when its decoding began.
    fn keeping_cache(net: &'n Net<'a, P>, positions: usize) -> Self {
        let bytes = Plan::new::<P>(&net.desc, positions).bytes();
        HostRunner {
            net,
            arena: vec![0u32; HOST_LANES * bytes.div_ceil(4)],
            positions,
        }
    }

    /// Decodes one source line.
    pub fn decode(&mut self, line: &str, keep: Keep) -> Result<Decoded, seq2seq::Error> {
        self.decode_all(&[line], keep).remove(0)
    }

    /// Decodes source lines, [`HOST_LANES`] at a time.
    pub fn decode_all(
        &mut self,
        lines: &[&str],
        keep: Keep,
    ) -> Vec<Result<Decoded, seq2seq::Error>> {
        let net = self.net;
        if let Some(b) = &keep.beam {
            return beam::beam_all(net, self.positions, lines, b);
        }
        let runner = Runner::<P, HOST_LANES>::with_lanes(net, &mut self.arena, self.positions);
        let mut runner = match runner {
            Ok(r) => r,
            Err(e) => return lines.iter().map(|_| Err(e)).collect(),
        };
        // Lines of similar length share batches best: run them in order of length and
        // put the results back in input order.
        let mut order: Vec<usize> = (0..lines.len()).collect();
        order.sort_by_key(|&i| lines[i].chars().count());
        let sorted: Vec<&str> = order.iter().map(|&i| lines[i]).collect();
        let mut results = Vec::with_capacity(lines.len());
        for chunk in sorted.chunks(HOST_LANES) {
            let mut decoded: Vec<Decoded> = chunk.iter().map(|_| Decoded::default()).collect();
            let mut ids = vec![vec![0u16; net.desc.max_steps]; chunk.len()];
            let counts = {
                let mut outs: Vec<&mut [u16]> = ids.iter_mut().map(|v| &mut v[..]).collect();
                let mut recs: Vec<Recorder<'_>> = decoded
                    .iter_mut()
                    .map(|out| Recorder { keep, out })
                    .collect();
                runner.translate_batch(chunk, &mut outs, &mut recs)
            };
            for (((line, mut out), ids), count) in chunk.iter().zip(decoded).zip(&ids).zip(counts) {
                results.push(count.map(|count| {
                    let mut src = vec![0u16; self.positions];
                    if let Ok((n, _)) = encode_source(&net.desc, &net.src_vocab, line, &mut src) {
                        out.source = src[..n]
                            .iter()
                            .map(|&i| net.src_vocab.get(i).unwrap_or("?").to_string())
                            .collect();
                    }
                    out.ids = ids[..count].to_vec();
                    out.tokens = out
                        .ids
                        .iter()
                        .map(|&i| net.tgt_vocab.get(i).unwrap_or("?").to_string())
                        .collect();
                    out.text = out.tokens.join(net.separator);
                    out
                }));
            }
        }
        let mut back: Vec<Option<Result<Decoded, seq2seq::Error>>> =
            (0..lines.len()).map(|_| None).collect();
        for (r, &i) in results.into_iter().zip(&order) {
            back[i] = Some(r);
        }
        back.into_iter()
            .map(|r| r.expect("every line decoded"))
            .collect()
    }
}

/// Drops this thread's cached layers (`hostf32`, `hostw8a16`): a net's decoding
/// begins.
fn forget_layers() {
    crate::model::hostf32::forget_layers();
    crate::model::hostw8a16::forget_layers();
}

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

    /// Decodes one group of lines (at most [`HOST_LANES`]) on a free runner.
    fn decode(&self, lines: &[&str], keep: Keep) -> Vec<Result<Decoded, seq2seq::Error>> {
        let taken = self.free.lock().map(|mut f| f.pop()).ok().flatten();
        let mut runner =
            taken.unwrap_or_else(|| HostRunner::keeping_cache(self.net, self.positions));
        let out = runner.decode_all(lines, keep);
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

/// Decodes `lines` on all threads, group by group ([`groups`]), the results in input
/// order. Each line is decoded on its own (the lanes of a group do not meet), so the
/// results are the same whatever the thread count and grouping.
fn decode_spread<'a, P: Precision>(
    runners: &Runners<'_, 'a, P>,
    lines: &[&str],
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
            runners.decode(&group, keep)
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
    decode_each(model, lines, keep)?
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

/// Decodes every line with a model of any precision: one result per line (an error
/// binding the model is the whole call's).
pub fn decode_each(
    model: &LoadedModel,
    lines: &[String],
    keep: Keep,
) -> Result<Vec<Result<Decoded, seq2seq::Error>>> {
    let positions = model.positions();
    model.with_net(|any| {
        dispatch!(any, |net: P| {
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            Ok(decode_spread::<P>(
                &Runners::new(&net, positions),
                &refs,
                keep,
            ))
        })
    })
}

/// Lines decoded together by [`decode_stream`], per thread: what the input has
/// buffered, up to this many times the threads.
pub const STREAM_BATCH: usize = 4 * HOST_LANES;

/// A batch of input lines whose groups are being decoded by the thread pool.
struct InFlight {
    lines: Vec<crate::io::InputLine>,
    /// How many groups its decoded lines make (as many results to receive).
    groups: usize,
    /// Each group as it is decoded.
    results: std::sync::mpsc::Receiver<Group>,
    /// The lines decoded (those neither empty nor unreadable).
    decoded: usize,
}

/// Decodes the lines of `input` as they come, in batches of at most [`STREAM_BATCH`]
/// per thread, and hands each to `each` in input order with its result: an empty line
/// gives an empty output without running the model (for every model alike), a line
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
    keep: Keep,
    mut each: impl FnMut(usize, &str, Result<Decoded>) -> Result,
) -> Result {
    let positions = model.positions();
    let name = PathBuf::from(input.name());
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
                for line in f.lines {
                    let (text, result) = match line.text {
                        Err(e) => (String::new(), Err(e)),
                        Ok(t) if t.is_empty() => (t, Ok(Decoded::default())),
                        Ok(t) => {
                            let d = done.next().expect("one result per decoded line");
                            let d = d.map_err(|source| Error::Model {
                                path: name.clone(),
                                place: crate::error::Place::Line(line.number),
                                source,
                            });
                            (t, d)
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
                    let batch = match input.next_batch(batch_lines) {
                        Ok(b) if !b.is_empty() => b,
                        end => {
                            for f in flying.drain(..) {
                                finish(f)?;
                            }
                            return end.map(|_| ());
                        }
                    };
                    let todo: Vec<String> = batch
                        .iter()
                        .filter_map(|l| l.text.as_ref().ok())
                        .filter(|t| !t.is_empty())
                        .cloned()
                        .collect();
                    let refs: Vec<&str> = todo.iter().map(String::as_str).collect();
                    let groups = groups(&refs);
                    let (send, results) = std::sync::mpsc::channel();
                    flying.push_back(InFlight {
                        lines: batch,
                        groups: groups.len(),
                        results,
                        decoded: todo.len(),
                    });
                    for g in groups {
                        let lines: Vec<String> = g.iter().map(|&i| todo[i].clone()).collect();
                        let (send, runners) = (send.clone(), &runners);
                        scope.spawn(move |_| {
                            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
                            // The receiver is gone only when `each` failed: nobody waits.
                            let _ = send.send((g, runners.decode(&refs, keep)));
                        });
                    }
                }
            })
        })
    })
}
