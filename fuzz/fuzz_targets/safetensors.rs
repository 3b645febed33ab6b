//! A safetensors file from untrusted bytes, read by `s2s import`'s safetensors reader
//! whatever its first bytes. Anything may fail; nothing may panic.

#![no_main]

use host_tools::formats::{read_bytes_as, Reader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_bytes_as(Reader::Safetensors, data, "fuzz.safetensors");
});
