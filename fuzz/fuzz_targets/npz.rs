//! A NumPy `.npz` (a zip of `.npy` arrays) from untrusted bytes, read by the zip reader,
//! and the same bytes as a lone `.npy`. Anything may fail; nothing may panic or
//! allocate beyond the readers' bounds (libFuzzer's `-rss_limit_mb` catches that).

#![no_main]

use host_tools::formats::{read_bytes_as, Reader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_bytes_as(Reader::Zip, data, "fuzz.npz");
    let _ = read_bytes_as(Reader::Npy, data, "fuzz.npy");
});
