//! A model file for the explorer: read into 8-byte aligned memory, checked like the
//! host's (`ModelFile::parse` with its CRC, every weight finite, bound at its
//! precision), and bound again for each decode.

use seq2seq::ModelFile;

/// The largest model file the page reads: 256 MiB, as the host tools (the largest a
/// microcontroller holds is a few MiB). A larger file is refused before it is read.
pub const MAX_MODEL_BYTES: usize = 256 << 20;

/// A checked model file.
pub struct Model {
    /// The file's name, for messages.
    pub name: String,
    words: Vec<u64>,
    len: usize,
}

/// Runs `$body` with `$net` the file `$file` bound at its precision `$p`.
macro_rules! with_net {
    ($file:expr, |$net:ident: $p:ident| $body:expr) => {
        match $file.precision() {
            s2s_kernels::PrecisionKind::F32 => {
                type $p = s2s_kernels::F32;
                let $net = seq2seq::Net::<$p>::bind(&$file);
                $body
            }
            s2s_kernels::PrecisionKind::W8F32 => {
                type $p = s2s_kernels::W8F32;
                let $net = seq2seq::Net::<$p>::bind(&$file);
                $body
            }
            s2s_kernels::PrecisionKind::W8A16 => {
                type $p = s2s_kernels::W8A16;
                let $net = seq2seq::Net::<$p>::bind(&$file);
                $body
            }
        }
    };
}
pub(crate) use with_net;

impl Model {
    /// Reads and checks `bytes`; an error is one line naming `name`.
    pub fn load(name: &str, bytes: &[u8]) -> Result<Model, String> {
        if bytes.len() > MAX_MODEL_BYTES {
            return Err(too_large(name, bytes.len()));
        }
        let m = Model {
            name: name.to_string(),
            words: seq2seq::builder::aligned(bytes),
            len: bytes.len(),
        };
        let fail = |e: seq2seq::Error| format!("{name}: {e}");
        let file = ModelFile::parse(m.bytes())
            .and_then(|f| f.check_finite().map(|()| f))
            .map_err(fail)?;
        with_net!(file, |net: P| net.map(|_| ()).map_err(fail)?);
        Ok(m)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.words)[..self.len]
    }

    /// The parsed file (checked at load: the CRC is not computed again).
    pub fn file(&self) -> Result<ModelFile<'_>, String> {
        ModelFile::parse_verified(self.bytes()).map_err(|e| format!("{}: {e}", self.name))
    }
}

/// The error of a file of `bytes` bytes, over [`MAX_MODEL_BYTES`].
pub fn too_large(name: &str, bytes: usize) -> String {
    format!("{name}: {bytes} bytes: larger than the largest model file the page reads ({MAX_MODEL_BYTES} bytes)")
}
