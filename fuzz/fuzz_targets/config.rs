//! A model configuration (TOML) from untrusted text: parsed and turned into a checked
//! model description. Anything may fail; nothing may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) =
        host_tools::import::config::Config::parse(text, std::path::Path::new("fuzz.toml"))
    {
        let _ = config.desc();
    }
});
