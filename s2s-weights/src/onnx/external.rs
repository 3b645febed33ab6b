//! External data of ONNX tensors (`data_location = EXTERNAL`): the bytes of a tensor
//! read from a file beside the model, confined to the model's folder: a regular file,
//! whose size is checked against the tensor's place in it before anything is read.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use super::proto::{dtype_name, TensorProto};
use crate::error::Problem;

/// `size` bytes at `offset` of the external data file `location`, which must lie
/// inside `folder`.
pub(crate) fn read_external(
    folder: &Path,
    location: &str,
    offset: u64,
    size: usize,
    t: &TensorProto,
) -> Result<Vec<u8>, Problem> {
    let relative = Path::new(location);
    let confined = !location.is_empty()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !confined {
        return Err(Problem(format!(
            "external data location {location:?} is not a relative path inside the model's folder"
        )));
    }
    let path: PathBuf = folder.join(relative);
    let shown = path.display();
    let real = path
        .canonicalize()
        .map_err(|e| format!("external data file {shown}: {e}"))?;
    let root = folder
        .canonicalize()
        .map_err(|e| format!("model folder {}: {e}", folder.display()))?;
    if !real.starts_with(&root) {
        return Err(Problem(format!(
            "external data file {shown} leads out of the model's folder (to {})",
            real.display()
        )));
    }
    if let Some(length) = t.external_data.iter().find(|e| e.key == "length") {
        let length: u64 = length
            .value
            .parse()
            .map_err(|_| format!("external data length {:?} is not a number", length.value))?;
        if length != size as u64 {
            return Err(Problem(format!(
                "external data length {length} bytes, shape {:?} of {} needs {size}",
                t.dims,
                dtype_name(t.data_type)
            )));
        }
    }
    // The file's type and size before it is opened: a FIFO would block the open and
    // feed endless bytes, a device too, and a directory cannot be read.
    let meta = std::fs::metadata(&real).map_err(|e| format!("external data file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(Problem(format!(
            "external data file {shown} is not a regular file ({})",
            crate::read::file_kind(&meta.file_type())
        )));
    }
    let file_len = meta.len();
    let end = offset.checked_add(size as u64);
    if end.is_none_or(|end| end > file_len) {
        return Err(Problem(format!(
            "external data file {shown} has {file_len} bytes, the tensor needs {size} at offset {offset}"
        )));
    }
    let mut file =
        std::fs::File::open(&real).map_err(|e| format!("external data file {shown}: {e}"))?;
    let mut raw = Vec::with_capacity(size);
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.take(size as u64).read_to_end(&mut raw))
        .map_err(|e| format!("external data file {shown}: {e}"))?;
    if raw.len() != size {
        return Err(Problem(format!(
            "external data file {shown} ended after {} of the tensor's {size} bytes at offset {offset}",
            raw.len()
        )));
    }
    Ok(raw)
}
