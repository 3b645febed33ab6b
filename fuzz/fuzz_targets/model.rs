//! A model file from untrusted bytes: parse, the host's value scan, bind at its
//! precision, and one short greedy decode, as a device would (fixed arena, 64 output
//! tokens, a workspace for 32 source positions). Anything may fail; nothing may panic.
//!
//! The CRC is recomputed over the stated length before parsing (when that fits the
//! input), so the mutations reach the structural checks behind it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use s2s_kernels::{PrecisionKind, F32, W8A16, W8F32};
use seq2seq::format::{crc32, HEADER_LEN};
use seq2seq::{Error, ModelFile, ModelPrecision, Net, Runner};

fuzz_target!(|data: &[u8]| {
    let mut words = seq2seq::builder::aligned(data);
    let bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..data.len()];
    if bytes.len() >= HEADER_LEN + 4 {
        let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        if (HEADER_LEN + 4..=bytes.len()).contains(&len) {
            let crc = crc32(&bytes[..len - 4]);
            bytes[len - 4..len].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let Ok(file) = ModelFile::parse(bytes) else {
        return;
    };
    let _ = file.check_finite();
    let _ = match file.precision() {
        PrecisionKind::F32 => decode::<F32>(&file),
        PrecisionKind::W8F32 => decode::<W8F32>(&file),
        PrecisionKind::W8A16 => decode::<W8A16>(&file),
    };
});

fn decode<P: ModelPrecision>(file: &ModelFile<'_>) -> Result<usize, Error> {
    let net = Net::<P>::bind(file)?;
    let mut arena = vec![0u32; 1 << 16];
    let mut runner = Runner::new(&net, &mut arena, 32)?;
    // A line of the model's own source tokens (ids 3, 4, 5: past the usual specials).
    let vocab = file.src_vocab();
    let mut line = String::new();
    for id in 3..6 {
        if let Some(t) = vocab.get(id) {
            if file.desc().split == seq2seq::Split::Whitespace && !line.is_empty() {
                line.push(' ');
            }
            line.push_str(t);
        }
    }
    let mut out = [0u16; 64];
    runner.translate_line::<Error>(&line, &seq2seq::Prefix::NONE, &mut out, &mut (), |_| Ok(()))
}
