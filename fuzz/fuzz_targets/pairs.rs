//! The training data reader (`source<TAB>target` lines, as `s2s train` and `s2s eval`
//! read them) on untrusted bytes: every pair comes from one line and every error names
//! `fuzz.tsv:LINE`. Anything may fail; nothing may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = host_tools::io::LineReader::new(
        "fuzz.tsv".into(),
        Box::new(std::io::Cursor::new(data.to_vec())),
    );
    let Ok((pairs, errors)) = host_tools::data::pairs_of(input) else {
        return;
    };
    let lines = data.split(|&b| b == b'\n').count();
    for p in &pairs {
        assert!((1..=lines).contains(&p.line), "line {} of {lines}", p.line);
        assert!(!p.source.contains('\n') && !p.target.contains('\n'));
    }
    for e in &errors {
        assert!(e.to_string().starts_with("fuzz.tsv:"), "{e}");
    }
});
