//! An ONNX model (`.onnx`) from untrusted bytes: decoded, its tensors read and listed
//! (`s2s import`'s and `s2s tensors`' paths). Anything may fail; nothing may panic,
//! and external data is never looked for (the bytes have no folder).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = host_tools::formats::read_onnx_bytes(data, "fuzz.onnx");
});
