//! Content hashes of datasets: what a report and a checkpoint record to say which data they saw.
use super::dataset::{Dataset, Features};
use crate::error::{Error, Result};
use crate::fsutil::hex;
use sha2::{Digest, Sha256};

/// sha256 of a file's bytes.
pub fn file_sha256(path: &std::path::Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::bad_file(path, e))?;
    Ok(hex(&Sha256::digest(&bytes)))
}

/// sha256 of a dataset's content (graph, features, labels), for datasets without a file.
pub fn content_sha256(ds: &Dataset) -> String {
    let mut h = Sha256::new();
    let words = |h: &mut Sha256, xs: &[usize]| {
        h.update((xs.len() as u64).to_le_bytes());
        for &x in xs {
            h.update((x as u64).to_le_bytes());
        }
    };
    words(&mut h, ds.graph.indptr());
    words(&mut h, ds.graph.indices());
    words(&mut h, &ds.labels);
    h.update((ds.features.rows() as u64).to_le_bytes());
    h.update((ds.features.cols() as u64).to_le_bytes());
    if let Features::Sparse { indptr, indices, .. } = &ds.features {
        words(&mut h, indptr);
        words(&mut h, indices);
    }
    for v in ds.features.values() {
        h.update(v.to_le_bytes());
    }
    hex(&h.finalize())
}
