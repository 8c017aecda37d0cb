//! Bringing an upstream gnn-benchmark `.npz` (directed, with self loops, int32 indices) into
//! gnnaudit's layout (docs/datasets.md: symmetric, binary, loop-free CSR, int64 indices) and
//! proving the result is the catalog's dataset: its content hash must equal the one recorded for
//! the published file, or nothing is installed.
use super::catalog::{Entry, Upstream};
use super::dataset::{Dataset, Features};
use super::download::Verified;
use super::{content_sha256, npz, transforms};
use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Loads the verified upstream download, normalises it, checks its content hash and installs it
/// at `dest` in gnnaudit's layout.
pub fn install_normalised(entry: &Entry, upstream: Verified, dest: &Path) -> Result<()> {
    let Upstream::Npz { url, content_sha256: want, .. } = entry.upstream else {
        return Err(Error::invalid("upstream", format!("{}: upstream is not a gnn-benchmark .npz", entry.name)));
    };
    let raw = npz::load(upstream.file.path()).map_err(|e| Error::invalid("upstream", format!("{url}: {e}")))?;
    let ds = normalise(&raw);
    let got = content_sha256(&ds);
    if got != want {
        return Err(Error::invalid(
            "upstream",
            format!(
                "{url}: normalised content hash {got} is not the catalog's {want} for {}; nothing was installed",
                entry.name
            ),
        ));
    }
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut out = tempfile::Builder::new()
        .prefix(".normalise-")
        .suffix(".npz")
        .tempfile_in(dir)
        .map_err(|e| Error::bad_file(dir, format!("cannot create a temporary file: {e}")))?;
    write(&ds, out.as_file_mut()).map_err(|e| Error::bad_file(out.path(), format!("cannot write: {e}")))?;
    // Read back what was written: the installed file must load to the same content.
    let back = npz::load(out.path())?;
    if content_sha256(&back) != want {
        return Err(Error::bad_file(out.path(), "the written file does not read back to the same dataset"));
    }
    let bytes = out.as_file().metadata().map_err(|e| Error::bad_file(out.path(), e))?.len();
    super::download::install(Verified { file: out, bytes }, dest)
}

/// The layout's conventions: undirected (stored symmetric), binary, no self loops.
pub fn normalise(ds: &Dataset) -> Dataset {
    transforms::remove_self_loops(&transforms::to_undirected(ds))
}

/// True when `path` loads to the catalog entry's content (for files installed from upstream,
/// whose bytes differ from the mirror's but whose arrays do not).
pub fn holds_content(entry: &Entry, path: &Path) -> bool {
    match entry.upstream {
        Upstream::Npz { content_sha256: want, .. } => {
            npz::load(path).map(|ds| content_sha256(&ds) == want).unwrap_or(false)
        }
        Upstream::Convert { .. } => false,
    }
}

/// Writes `ds` as a compressed `.npz` in gnnaudit's layout (CSR adjacency and features, int64
/// labels, class names as a NumPy unicode array).
fn write(ds: &Dataset, file: &mut std::fs::File) -> std::io::Result<()> {
    let mut zip = zip::ZipWriter::new(file);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut member = |name: &str, descr: &str, len: usize, body: &[u8]| -> std::io::Result<()> {
        zip.start_file(format!("{name}.npy"), opts).map_err(std::io::Error::other)?;
        zip.write_all(&npy_header(descr, len))?;
        zip.write_all(body)
    };
    let n = ds.num_nodes();
    let g = &ds.graph;
    let nnz = g.indices().len();
    member("adj_data", "<f4", nnz, &f32s(&vec![1.0; nnz]))?;
    member("adj_indices", "<i8", nnz, &i64s(g.indices()))?;
    member("adj_indptr", "<i8", n + 1, &i64s(g.indptr()))?;
    member("adj_shape", "<i8", 2, &i64s(&[n, n]))?;
    let (indptr, indices, data) = match &ds.features {
        Features::Sparse { indptr, indices, data, .. } => (indptr.clone(), indices.clone(), data.clone()),
        Features::Dense { rows, cols, data } => {
            let (mut p, mut i, mut d) = (vec![0], vec![], vec![]);
            for r in 0..*rows {
                for (c, &v) in data[r * cols..(r + 1) * cols].iter().enumerate() {
                    if v != 0.0 {
                        i.push(c);
                        d.push(v);
                    }
                }
                p.push(i.len());
            }
            (p, i, d)
        }
    };
    member("attr_data", "<f4", data.len(), &f32s(&data))?;
    member("attr_indices", "<i8", indices.len(), &i64s(&indices))?;
    member("attr_indptr", "<i8", n + 1, &i64s(&indptr))?;
    member("attr_shape", "<i8", 2, &i64s(&[n, ds.num_features()]))?;
    member("labels", "<i8", n, &i64s(&ds.labels))?;
    if let Some(names) = &ds.class_names {
        let (descr, body) = unicode(names);
        member("class_names", &descr, names.len(), &body)?;
    }
    zip.finish().map_err(std::io::Error::other)?;
    Ok(())
}

/// NumPy format 1.0 header of a 1-D C-order array, padded so the data starts 64-byte aligned.
fn npy_header(descr: &str, len: usize) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h
}

fn i64s(xs: &[usize]) -> Vec<u8> {
    xs.iter().flat_map(|&x| (x as i64).to_le_bytes()).collect()
}

fn f32s(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A fixed-width `<U{w}` array: UTF-32LE code points, zero padded.
fn unicode(strings: &[String]) -> (String, Vec<u8>) {
    let w = strings.iter().map(|s| s.chars().count()).max().unwrap_or(0).max(1);
    let mut body = Vec::with_capacity(strings.len() * w * 4);
    for s in strings {
        let mut k = 0;
        for c in s.chars() {
            body.extend_from_slice(&(c as u32).to_le_bytes());
            k += 1;
        }
        body.extend(std::iter::repeat_n(0u8, (w - k) * 4));
    }
    (format!("<U{w}"), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_parsable() {
        let h = npy_header("<i8", 12345);
        assert_eq!(h.len() % 64, 0);
        assert!(h.starts_with(b"\x93NUMPY\x01\x00"));
        assert_eq!(*h.last().unwrap(), b'\n');
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.contains("'shape': (12345,)"), "{text}");
    }

    /// The upstream shape of cora (one direction of each edge, plus self loops) normalises to the
    /// catalog's content hash, and what `write` writes reads back to it, class names included.
    #[test]
    fn a_directed_cora_with_loops_normalises_to_the_catalog_content() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cora.npz");
        let cora = npz::load(&fixture).unwrap();
        let entry = crate::data::catalog::find("cora").unwrap();
        let Upstream::Npz { content_sha256: want, .. } = entry.upstream else { panic!() };
        let n = cora.num_nodes();
        let directed: Vec<_> =
            cora.graph.edges().filter(|(u, v)| u < v).chain((0..n).step_by(7).map(|v| (v, v))).collect();
        let raw = Dataset { graph: crate::data::Graph::from_edges(n, directed).unwrap(), ..cora.clone() };
        assert_ne!(content_sha256(&raw), want);
        let ds = normalise(&raw);
        assert_eq!(content_sha256(&ds), want);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cora.npz");
        write(&ds, &mut std::fs::File::create(&path).unwrap()).unwrap();
        let back = npz::load(&path).unwrap();
        assert_eq!(content_sha256(&back), want);
        assert_eq!(back.class_names, cora.class_names);
        assert!(holds_content(entry, &path));
    }

    #[test]
    fn unicode_pads_to_the_longest_string() {
        let (descr, body) = unicode(&["ab".into(), "é".into()]);
        assert_eq!(descr, "<U2");
        assert_eq!(body, [97, 0, 0, 0, 98, 0, 0, 0, 0xe9, 0, 0, 0, 0, 0, 0, 0]);
    }
}
