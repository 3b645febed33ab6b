//! The C API's checks, called as C calls them: null pointers, misaligned and invalid
//! model bytes are answered with their status, never a crash. (A real model decoded
//! through the API, on the boards: tests/tests/embed.rs.)

use std::ffi::CStr;
use std::ptr;

use s2s_capi::{
    s2s_model_embedded, s2s_model_parse, s2s_status_text, s2s_translate, s2s_workspace_bytes,
    S2sModel, S2sStatus,
};

/// 8-byte aligned bytes.
fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    for (w, c) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        *w = u64::from_le_bytes(b);
    }
    words
}

fn unparsed() -> S2sModel {
    // SAFETY: `S2sModel` is a pointer and a length, for which all zeros is valid (a
    // null model, which every call refuses).
    unsafe { std::mem::zeroed() }
}

#[test]
fn null_pointers_are_refused() {
    let words = aligned(&[0; 64]);
    let bytes = words.as_ptr().cast::<u8>();
    // SAFETY: every pointer is null or valid for its length.
    unsafe {
        assert_eq!(
            s2s_model_parse(ptr::null(), 64, &mut unparsed()),
            S2sStatus::NullPointer
        );
        assert_eq!(
            s2s_model_parse(bytes, 64, ptr::null_mut()),
            S2sStatus::NullPointer
        );
        let mut n = 0;
        assert_eq!(
            s2s_workspace_bytes(ptr::null(), 0, &mut n),
            S2sStatus::NullPointer
        );
        assert_eq!(
            s2s_workspace_bytes(&unparsed(), 0, &mut n),
            S2sStatus::NullPointer
        );
        assert_eq!(
            s2s_workspace_bytes(&unparsed(), 0, ptr::null_mut()),
            S2sStatus::NullPointer
        );
        let mut ws = [0u32; 16];
        let mut out = [0u8; 16];
        let mut len = 0;
        let input = b"abc";
        let translate = |model: *const S2sModel, ws: *mut u32, out: *mut u8, len: *mut usize| {
            s2s_translate(model, ws, 64, 0, input.as_ptr(), 3, out, 16, len)
        };
        let (w, o) = (ws.as_mut_ptr(), out.as_mut_ptr());
        assert_eq!(
            translate(&unparsed(), w, o, &mut len),
            S2sStatus::NullPointer
        );
        assert_eq!(
            translate(ptr::null(), w, o, &mut len),
            S2sStatus::NullPointer
        );
        assert_eq!(
            translate(&unparsed(), ptr::null_mut(), o, &mut len),
            S2sStatus::NullPointer
        );
        assert_eq!(
            translate(&unparsed(), w, ptr::null_mut(), &mut len),
            S2sStatus::NullPointer
        );
        assert_eq!(
            translate(&unparsed(), w, o, ptr::null_mut()),
            S2sStatus::NullPointer
        );
    }
}

#[test]
fn invalid_and_misaligned_models_are_refused() {
    let words = aligned(&[0x5a; 256]);
    let bytes = words.as_ptr().cast::<u8>();
    let mut model = unparsed();
    // SAFETY: the pointers are valid for the lengths given.
    unsafe {
        assert_eq!(s2s_model_parse(bytes, 256, &mut model), S2sStatus::BadModel);
        assert_eq!(s2s_model_parse(bytes, 0, &mut model), S2sStatus::BadModel);
        assert_eq!(
            s2s_model_parse(bytes.add(1), 255, &mut model),
            S2sStatus::Misaligned
        );
    }
    assert!(model.is_unparsed(), "a refused model is not filled in");
}

#[test]
fn every_status_has_its_text() {
    let text = |code| {
        // SAFETY: s2s_status_text returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(s2s_status_text(code)) }
            .to_str()
            .unwrap()
    };
    assert_eq!(text(0), "ok");
    assert_eq!(text(S2sStatus::BadModel as i32), "not a valid model file");
    assert_eq!(text(10), "internal error");
    assert_eq!(text(11), "unknown status");
    assert_eq!(text(-1), "unknown status");
}

/// A library built without `S2S_EMBED` holds no model: `s2s_model_embedded` says so and
/// leaves the handle as it was (tests/tests/embed.rs runs the C example on a library
/// with one).
#[test]
fn a_library_without_an_embedded_model_says_so() {
    let mut model = unparsed();
    // SAFETY: a valid, writable handle; then a null one, which is refused.
    unsafe {
        assert_eq!(s2s_model_embedded(&mut model), S2sStatus::NotCompiled);
        assert!(model.is_unparsed());
        assert_eq!(s2s_model_embedded(ptr::null_mut()), S2sStatus::NullPointer);
    }
}
