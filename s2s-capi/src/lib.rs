//! The C API of the s2s runtime: a static library (`libs2s_capi.a`) for C firmware on
//! the Cortex-M targets, with the header `include/s2s.h` (cbindgen's output for this
//! crate, checked by `tests/header.rs`).
//!
//! ```c
//! S2sModel model;
//! size_t bytes;
//! static uint32_t workspace[WORDS];
//! char out[128];
//! size_t len;
//! if (s2s_model_parse(model_bytes, model_len, &model) != S2S_STATUS_OK) ...
//! if (s2s_workspace_bytes(&model, 0, &bytes) != S2S_STATUS_OK || bytes > sizeof workspace) ...
//! if (s2s_translate(&model, workspace, sizeof workspace, 0, (const uint8_t *)"hello", 5,
//!                   (uint8_t *)out, sizeof out, &len) != S2S_STATUS_OK) ...
//! ```
//!
//! A one-model library (built with `S2S_EMBED`, the module `s2s embed` wrote) holds its
//! model: `s2s_model_embedded` fills the `S2sModel`, and no model-file parser is
//! linked (`s2s_model_parse` answers `S2S_STATUS_NOT_COMPILED` there, as
//! `s2s_model_embedded` does in a library without a model).
//!
//! No heap and no global state: the model stays where the caller keeps it (8-byte
//! aligned, e.g. in flash), the workspace is the caller's (`s2s_workspace_bytes` says how
//! large), and each call binds the model anew (cheap: views into the file). Every call
//! checks its pointers and lengths and answers an [`S2sStatus`]. The stack holds the
//! bound model and the decoder's frames: netra w8a16 embedded peaks at 5,004 bytes on the
//! micro:bit and 5,136 on the AN386 (`examples/c`, `make STACK_REPORT=1`).
//!
//! Panics: none can cross the boundary. On the thumb targets (`target_os = "none"`) the
//! library's panic handler calls a symbol that nothing defines, so a program links only
//! if the optimiser removed every panic path (link with `-Wl,--gc-sections`, and build
//! the library with LTO, the workspace's `embed` profile); on the host, std's handler.

#![cfg_attr(target_os = "none", no_std)]

use core::ffi::c_char;

use seq2seq::{Error, ModelFile, ModelPrecision, Net, Plan, PrecisionKind, Runner};

/// The model embedded at build time in a one-model library: the module `s2s embed
/// MODEL --board BOARD -o FILE` wrote, FILE given as `S2S_EMBED` (build.rs).
#[cfg(s2s_embedded)]
#[allow(missing_docs, dead_code, clippy::all)] // written by `s2s embed`
mod embedded {
    include!(env!("S2S_EMBED_RS"));
}

/// Output tokens a decode can hold: models with more decoder steps are refused with
/// `S2S_STATUS_TOO_MANY_STEPS` (each step takes 2 bytes of stack in `s2s_translate`;
/// netra decodes at most 31, g2p-en 20).
pub const S2S_MAX_STEPS: usize = 64;

/// What a call did: `S2S_STATUS_OK` or why it failed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum S2sStatus {
    /// Success.
    Ok = 0,
    /// A pointer the call needs is null.
    NullPointer = 1,
    /// The model bytes are not 8-byte aligned, or the workspace is not 4-byte aligned.
    Misaligned = 2,
    /// The bytes are not a valid model file (magic, version, CRC, length, contents).
    BadModel = 3,
    /// The model needs a precision or a model part this library was built without.
    NotCompiled = 4,
    /// The workspace is smaller than `s2s_workspace_bytes` gives for these positions.
    WorkspaceTooSmall = 5,
    /// The input is not UTF-8, is empty, or holds a symbol the model does not know.
    BadInput = 6,
    /// The input has more source positions than the workspace was planned for.
    InputTooLong = 7,
    /// The output buffer cannot hold the output text and its terminating NUL.
    OutputTooSmall = 8,
    /// The model decodes more steps than `S2S_MAX_STEPS`.
    TooManySteps = 9,
    /// Another failure of running the model (an internal error; should not happen).
    Internal = 10,
}

impl From<Error> for S2sStatus {
    fn from(e: Error) -> Self {
        match e {
            Error::Misaligned(_) => S2sStatus::Misaligned,
            Error::PrecisionMismatch { .. }
            | Error::UnsupportedPrecision(_)
            | Error::NotCompiled(_) => S2sStatus::NotCompiled,
            Error::ArenaTooSmall { .. } => S2sStatus::WorkspaceTooSmall,
            Error::EmptyInput | Error::UnknownSymbol { .. } => S2sStatus::BadInput,
            Error::InputTooLong { .. } => S2sStatus::InputTooLong,
            Error::OutputTooSmall { .. } => S2sStatus::TooManySteps,
            Error::BeamTooWide { .. }
            | Error::GreedyOnly
            | Error::Rnn(_)
            | Error::Attention(_)
            | Error::Shape(_) => S2sStatus::Internal,
            // The errors of reading and checking a model file.
            _ => S2sStatus::BadModel,
        }
    }
}

/// Every status, in code order.
const STATUSES: [S2sStatus; 11] = [
    S2sStatus::Ok,
    S2sStatus::NullPointer,
    S2sStatus::Misaligned,
    S2sStatus::BadModel,
    S2sStatus::NotCompiled,
    S2sStatus::WorkspaceTooSmall,
    S2sStatus::BadInput,
    S2sStatus::InputTooLong,
    S2sStatus::OutputTooSmall,
    S2sStatus::TooManySteps,
    S2sStatus::Internal,
];

impl S2sStatus {
    /// A fixed text for the status, NUL-terminated.
    pub fn text(self) -> &'static core::ffi::CStr {
        match self {
            S2sStatus::Ok => c"ok",
            S2sStatus::NullPointer => c"null pointer",
            S2sStatus::Misaligned => c"misaligned model or workspace",
            S2sStatus::BadModel => c"not a valid model file",
            S2sStatus::NotCompiled => c"model needs a precision or part this library leaves out",
            S2sStatus::WorkspaceTooSmall => c"workspace too small",
            S2sStatus::BadInput => c"input not UTF-8, empty or with an unknown symbol",
            S2sStatus::InputTooLong => c"input longer than the planned positions",
            S2sStatus::OutputTooSmall => c"output buffer too small",
            S2sStatus::TooManySteps => c"model decodes more steps than S2S_MAX_STEPS",
            S2sStatus::Internal => c"internal error",
        }
    }
}

/// A parsed model, filled by `s2s_model_parse`. Its fields are private: C code passes
/// its address to the other calls and keeps the model bytes unchanged meanwhile.
#[repr(C)]
#[derive(Debug)]
pub struct S2sModel {
    /// The model file (8-byte aligned).
    bytes: *const u8,
    /// Its length in bytes.
    len: usize,
}

/// The text of a status code, NUL-terminated and static; `"unknown status"` for a code
/// that is none.
#[no_mangle]
pub extern "C" fn s2s_status_text(status: i32) -> *const c_char {
    STATUSES
        .iter()
        .find(|s| **s as i32 == status)
        .map_or(c"unknown status", |s| s.text())
        .as_ptr()
}

/// Checks the model file at `bytes` (`len` bytes, 8-byte aligned: e.g. in flash) in full
/// (header, CRC, description, vocabularies, every tensor; that this library runs its
/// precision and parts) and fills `*model`. The bytes must stay unchanged while `model`
/// is used.
///
/// # Safety
///
/// `bytes` must be null or point to `len` readable bytes; `model` must be null or point
/// to writable memory for an `S2sModel`.
#[no_mangle]
pub unsafe extern "C" fn s2s_model_parse(
    bytes: *const u8,
    len: usize,
    model: *mut S2sModel,
) -> S2sStatus {
    // SAFETY: the caller passes null or a valid, writable `S2sModel` (this function's
    // contract); `as_mut` checks for null.
    let Some(model) = (unsafe { model.as_mut() }) else {
        return S2sStatus::NullPointer;
    };
    if cfg!(s2s_embedded) {
        return S2sStatus::NotCompiled;
    }
    let parsed = S2sModel { bytes, len };
    // SAFETY: `parsed` holds the caller's pointer and length, which the contract of this
    // function makes valid for reading.
    match unsafe { parsed.file(true) }.and_then(|file| dispatch(&file, Bind)) {
        Ok(()) => {
            *model = parsed;
            S2sStatus::Ok
        }
        Err(e) => e,
    }
}

/// Fills `*model` with the model embedded in this library at build time (a library
/// built with `S2S_EMBED`, the module `s2s embed` wrote); `S2S_STATUS_NOT_COMPILED` in
/// a library without one.
///
/// # Safety
///
/// `model` must be null or point to writable memory for an `S2sModel`.
#[no_mangle]
pub unsafe extern "C" fn s2s_model_embedded(model: *mut S2sModel) -> S2sStatus {
    // SAFETY: the caller passes null or a valid, writable `S2sModel` (this function's
    // contract); `as_mut` checks for null.
    let Some(model) = (unsafe { model.as_mut() }) else {
        return S2sStatus::NullPointer;
    };
    if cfg!(s2s_embedded) {
        *model = S2sModel {
            bytes: core::ptr::null(),
            len: 0,
        };
        S2sStatus::Ok
    } else {
        S2sStatus::NotCompiled
    }
}

/// Writes to `*bytes` the workspace that `s2s_translate` needs for sources of up to
/// `positions` tokens (at least the model's fixed source length, if it has one: 0 asks
/// for just that).
///
/// # Safety
///
/// `model` must be null or point to an `S2sModel` filled by `s2s_model_parse`, whose
/// bytes are unchanged since; `bytes` must be null or point to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn s2s_workspace_bytes(
    model: *const S2sModel,
    positions: usize,
    bytes: *mut usize,
) -> S2sStatus {
    // SAFETY: null or a valid writable `size_t` (this function's contract).
    let Some(bytes) = (unsafe { bytes.as_mut() }) else {
        return S2sStatus::NullPointer;
    };
    // SAFETY: null or a model filled by `s2s_model_parse` (this function's contract).
    match unsafe { S2sModel::run(model, Size(positions)) } {
        Ok(n) => {
            *bytes = n;
            S2sStatus::Ok
        }
        Err(e) => e,
    }
}

/// Decodes the UTF-8 source `input` (`input_len` bytes, no NUL needed) greedily and
/// writes the output text (the output tokens joined by the model's separator) to `out`,
/// NUL-terminated, and its length without the NUL to `*out_len`. The workspace
/// (`workspace_bytes` bytes, 4-byte aligned) is planned for `positions` source positions
/// as in `s2s_workspace_bytes`. A model's prefix slots take their defaults (the C API
/// does not choose them: a slot without a default refuses every source).
///
/// # Safety
///
/// `model` must be null or point to an `S2sModel` filled by `s2s_model_parse`, whose
/// bytes are unchanged since; `workspace`, `input` and `out` must be null or point to
/// that many writable, readable and writable bytes, not overlapping; `out_len` must be
/// null or point to a writable `size_t`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // a C signature: pointers with their lengths
pub unsafe extern "C" fn s2s_translate(
    model: *const S2sModel,
    workspace: *mut u32,
    workspace_bytes: usize,
    positions: usize,
    input: *const u8,
    input_len: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> S2sStatus {
    // SAFETY: null or a valid writable `size_t` (this function's contract).
    let Some(out_len) = (unsafe { out_len.as_mut() }) else {
        return S2sStatus::NullPointer;
    };
    if workspace.is_null() || input.is_null() || out.is_null() {
        return S2sStatus::NullPointer;
    }
    if !workspace.is_aligned() {
        return S2sStatus::Misaligned;
    }
    if [workspace_bytes, input_len, out_cap]
        .iter()
        .any(|&n| n > isize::MAX as usize)
    {
        return S2sStatus::BadInput;
    }
    // SAFETY: non-null and aligned (checked above), `workspace_bytes` writable bytes not
    // overlapping the others (this function's contract); whole words only.
    let arena = unsafe { core::slice::from_raw_parts_mut(workspace, workspace_bytes / 4) };
    // SAFETY: non-null (checked above), `input_len` readable bytes (the contract).
    let input = unsafe { core::slice::from_raw_parts(input, input_len) };
    // SAFETY: non-null (checked above), `out_cap` writable bytes (the contract).
    let out = unsafe { core::slice::from_raw_parts_mut(out, out_cap) };
    let Ok(line) = core::str::from_utf8(input) else {
        return S2sStatus::BadInput;
    };
    let task = Translate {
        arena,
        positions,
        line,
        out,
    };
    // SAFETY: null or a model filled by `s2s_model_parse` (this function's contract).
    match unsafe { S2sModel::run(model, task) } {
        Ok(n) => {
            *out_len = n;
            S2sStatus::Ok
        }
        Err(e) => e,
    }
}

impl S2sModel {
    /// True for a model that `s2s_model_parse` did not fill (null bytes).
    pub fn is_unparsed(&self) -> bool {
        self.bytes.is_null()
    }

    /// Runs `task` on the model: the file, parsed again from the checked bytes (without
    /// the CRC, which `s2s_model_parse` checked); in a one-model library, the model
    /// embedded in it.
    ///
    /// # Safety
    ///
    /// `model` is null or points to an `S2sModel` that `s2s_model_parse` (or
    /// `s2s_model_embedded`) filled, whose bytes are unchanged since.
    unsafe fn run<T: Task>(model: *const S2sModel, task: T) -> Result<T::Out, S2sStatus> {
        // SAFETY: null or a valid `S2sModel` (this function's contract).
        let model = unsafe { model.as_ref() }.ok_or(S2sStatus::NullPointer)?;
        #[cfg(s2s_embedded)]
        {
            let _ = model;
            let mut bound = Err(Error::EmptyInput);
            Net::<embedded::P>::embedded_into(&embedded::MODEL, &mut bound);
            task.run(bound.as_ref().map_err(|e| S2sStatus::from(*e))?)
        }
        #[cfg(not(s2s_embedded))]
        {
            // SAFETY: `s2s_model_parse` filled it from bytes valid for reading, unchanged
            // since (this function's contract).
            let file = unsafe { model.file(false) }?;
            dispatch(&file, task)
        }
    }

    /// Parses the bytes (with the CRC or without).
    ///
    /// # Safety
    ///
    /// `bytes` is null or points to `len` bytes valid for reading for `'a`.
    unsafe fn file<'a>(&self, crc: bool) -> Result<ModelFile<'a>, S2sStatus> {
        if self.bytes.is_null() {
            return Err(S2sStatus::NullPointer);
        }
        if self.bytes.align_offset(8) != 0 {
            return Err(S2sStatus::Misaligned);
        }
        if self.len > isize::MAX as usize {
            return Err(S2sStatus::BadModel);
        }
        // SAFETY: non-null (checked above), `len` readable bytes (this function's
        // contract), `len` at most `isize::MAX`.
        let bytes = unsafe { core::slice::from_raw_parts(self.bytes, self.len) };
        let file = if crc {
            ModelFile::parse(bytes)
        } else {
            ModelFile::parse_verified(bytes)
        };
        Ok(file?)
    }
}

/// Work on a bound model.
trait Task {
    /// What the work gives.
    type Out;
    /// Does the work on `net` (at its precision `P`).
    fn run<P: ModelPrecision>(self, net: &Net<'_, P>) -> Result<Self::Out, S2sStatus>;
}

/// Binds the model file at its precision, if this library compiles it, and runs `task`
/// on it.
fn dispatch<T: Task>(file: &ModelFile<'_>, task: T) -> Result<T::Out, S2sStatus> {
    match file.precision() {
        #[cfg(feature = "f32")]
        PrecisionKind::F32 => bound::<s2s_kernels::F32, T>(file, task),
        #[cfg(feature = "w8f32")]
        PrecisionKind::W8F32 => bound::<s2s_kernels::W8F32, T>(file, task),
        #[cfg(feature = "w8a16")]
        PrecisionKind::W8A16 => bound::<s2s_kernels::W8A16, T>(file, task),
        #[allow(unreachable_patterns)] // when every precision is compiled
        _ => Err(S2sStatus::NotCompiled),
    }
}

/// Binds the model file at precision `P` and runs `task` on it.
fn bound<P: ModelPrecision, T: Task>(file: &ModelFile<'_>, task: T) -> Result<T::Out, S2sStatus> {
    let mut bound = Err(Error::EmptyInput);
    bind::<P>(file, &mut bound);
    task.run(bound.as_ref().map_err(|e| S2sStatus::from(*e))?)
}

/// `Net::bind_into`, out of line: binding's temporaries leave the stack before decoding
/// starts, and the `Net` (kilobytes; a small board's stack is a few) is held once.
#[inline(never)]
fn bind<'a, P: ModelPrecision>(file: &ModelFile<'a>, slot: &mut Result<Net<'a, P>, Error>) {
    Net::<P>::bind_into(file, slot)
}

/// Source positions to plan for: `positions`, at least the model's fixed length.
fn planned<P: ModelPrecision>(net: &Net<'_, P>, positions: usize) -> usize {
    positions.max(net.desc.src_pad_to)
}

/// Nothing: binding the model checks that this library runs it.
struct Bind;

impl Task for Bind {
    type Out = ();
    fn run<P: ModelPrecision>(self, _: &Net<'_, P>) -> Result<(), S2sStatus> {
        Ok(())
    }
}

/// The workspace bytes for up to `.0` positions.
struct Size(usize);

impl Task for Size {
    type Out = usize;
    fn run<P: ModelPrecision>(self, net: &Net<'_, P>) -> Result<usize, S2sStatus> {
        Ok(Plan::new::<P>(&net.desc, planned(net, self.0)).bytes())
    }
}

/// Decodes `line` into `out`.
struct Translate<'w, 'l, 'o> {
    arena: &'w mut [u32],
    positions: usize,
    line: &'l str,
    out: &'o mut [u8],
}

impl Task for Translate<'_, '_, '_> {
    type Out = usize;
    fn run<P: ModelPrecision>(self, net: &Net<'_, P>) -> Result<usize, S2sStatus> {
        if net.desc.max_steps > S2S_MAX_STEPS {
            return Err(S2sStatus::TooManySteps);
        }
        let mut runner = Runner::new(net, self.arena, planned(net, self.positions))?;
        let mut ids = [0u16; S2S_MAX_STEPS];
        let mut written = 0usize;
        let out = self.out;
        runner.translate_line::<S2sStatus>(
            self.line,
            &seq2seq::Prefix::NONE,
            &mut ids,
            &mut (),
            |s| {
                let end = written
                    .checked_add(s.len())
                    .filter(|&end| end < out.len())
                    .ok_or(S2sStatus::OutputTooSmall)?;
                out.get_mut(written..end)
                    .ok_or(S2sStatus::OutputTooSmall)?
                    .copy_from_slice(s.as_bytes());
                written = end;
                Ok(())
            },
        )?;
        *out.get_mut(written).ok_or(S2sStatus::OutputTooSmall)? = 0;
        Ok(written)
    }
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    extern "C" {
        /// Defined nowhere: a program that links the library names it when a panic is
        /// reachable (a bug of the library).
        fn s2s_capi_panic_is_reachable() -> !;
    }
    // SAFETY: never executed: a program in which this call is reachable does not link.
    unsafe { s2s_capi_panic_is_reachable() }
}
