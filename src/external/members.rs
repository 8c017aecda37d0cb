//! The auditor's ground truth about membership: which nodes the deployment trained on. Read from
//!
//! - text or CSV: one id per line, or a CSV whose id column is `node`, `node_id`, `id` or the
//!   only one. A first line that is not a number is a header; every other line is an id (a
//!   headerless file keeps its first id). Blank lines and `#` comments are skipped.
//! - Parquet: the same columns.
//! - `.npy`: a 1-D integer array of ids, or a boolean or 0/1 mask over all N nodes (PyTorch
//!   Geometric's `train_mask`, saved with `numpy.save(mask.numpy())`).
//!
//! Every id is checked against the dataset: a duplicate, a negative or an out-of-range id is
//! refused naming the file and the first bad line (or array entry).
use crate::error::{Error, Result};
use std::path::Path;

/// Column names accepted for node ids in tables (members and posteriors).
pub const ID_COLUMNS: [&str; 3] = ["node", "node_id", "id"];

/// How to write a members file gnnaudit reads, for error messages.
const HOW_TO_SAVE: &str = "save the mask with numpy.save(\"members.npy\", data.train_mask.numpy()), or one node id \
                           per line";

/// An id and where it was read (a 1-based line of a text file, or `entry i` of an array).
type Located = (i64, String);

/// Member ids, checked against the dataset's node count: each in range, none twice, and at least
/// one node left over as a non-member.
pub fn load_members(path: &Path, num_nodes: usize) -> Result<Vec<usize>> {
    let bytes = std::fs::read(path).map_err(|e| Error::bad_file(path, e))?;
    if let Some(what) = saved_by_torch(&bytes) {
        return Err(Error::bad_file(path, format!("this is {what}; {HOW_TO_SAVE}")));
    }
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let raw: Vec<Located> = match ext.as_str() {
        "npy" => read_npy_members(path, num_nodes)?,
        "parquet" | "pq" => {
            let df = crate::data::table::read_table(path)?;
            let names = df.get_column_names_str();
            let name = id_column(path, &names.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
            table_ints(&df, path, &name)?.into_iter().enumerate().map(|(r, v)| (v, format!("row {r}"))).collect()
        }
        _ => read_text_members(path, &bytes)?,
    };
    check_ids(path, raw, num_nodes)
}

/// What a file saved by `torch.save` is, from its first bytes: a zip archive holding
/// `data.pkl` (PyTorch 1.6 and later) or a bare pickle (older PyTorch, `_use_new_zipfile_serialization=False`).
pub fn saved_by_torch(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"PK\x03\x04") {
        let holds_pickle = bytes.windows(8).any(|w| w == b"data.pkl");
        return holds_pickle.then_some("a torch.save pickle (a zip archive holding data.pkl)");
    }
    // Pickle protocol 2+ opens with PROTO (0x80) and the protocol number.
    (bytes.len() > 2 && bytes[0] == 0x80 && (2..=5).contains(&bytes[1])).then_some("a Python pickle (torch.save)")
}

/// The id column of a table with a header: one of `ID_COLUMNS`, or the only column.
fn id_column(path: &Path, names: &[String]) -> Result<String> {
    ID_COLUMNS
        .iter()
        .find(|c| names.iter().any(|n| n == *c))
        .map(|c| c.to_string())
        .or_else(|| (names.len() == 1).then(|| names[0].clone()))
        .ok_or_else(|| {
            Error::bad_file(
                path,
                format!(
                    "line 1: no member id column: expected one of {ID_COLUMNS:?} or a single column, found {names:?}"
                ),
            )
        })
}

/// Ids of a text or CSV file, with their line numbers.
fn read_text_members(path: &Path, bytes: &[u8]) -> Result<Vec<Located>> {
    let text = std::str::from_utf8(bytes).map_err(|_| {
        Error::bad_file(path, format!("is not text (nor a .npy or .parquet file by its extension); {HOW_TO_SAVE}"))
    })?;
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty())
        .peekable();
    let split = |l: &str| -> Vec<String> { l.split(',').map(|f| f.trim().trim_matches('"').to_string()).collect() };
    // A header is a first line that is not a number; it names the id column.
    let mut column = 0;
    if let Some(&(_, first)) = lines.peek() {
        let fields = split(first);
        if fields.iter().any(|f| f.parse::<f64>().is_err()) {
            let name = id_column(path, &fields)?;
            column = fields.iter().position(|f| *f == name).unwrap_or(0);
            lines.next();
        } else if fields.len() > 1 {
            return Err(Error::bad_file(
                path,
                format!(
                    "line {}: {} columns and no header line saying which holds the node ids; add a header naming it \
                     one of {ID_COLUMNS:?}",
                    lines.peek().map_or(1, |l| l.0),
                    fields.len()
                ),
            ));
        }
    }
    let mut ids = vec![];
    for (line, l) in lines {
        let fields = split(l);
        let t = fields.get(column).map(String::as_str).unwrap_or("");
        let v = t.parse::<i64>().map_err(|_| {
            Error::bad_file(path, format!("line {line}: '{t}' is not a node id (an integer; {HOW_TO_SAVE})"))
        })?;
        ids.push((v, format!("line {line}")));
    }
    Ok(ids)
}

/// A `.npy` array: integer ids, or a boolean / 0-1 mask of length N (PyG's `train_mask`).
fn read_npy_members(path: &Path, num_nodes: usize) -> Result<Vec<Located>> {
    use ndarray::Array1;
    use ndarray_npy::ReadNpyExt;
    let open = || std::fs::File::open(path).map_err(|e| Error::bad_file(path, e));
    let mask = |m: Vec<bool>| -> Result<Vec<Located>> {
        crate::ensure!(
            m.len() == num_nodes,
            Error::bad_file(
                path,
                format!("a boolean mask of {} entries, the dataset has {num_nodes} nodes: one entry per node", m.len())
            )
        );
        Ok(m.iter().enumerate().filter(|(_, &b)| b).map(|(i, _)| (i as i64, format!("entry {i}"))).collect())
    };
    if let Ok(a) = Array1::<bool>::read_npy(open()?) {
        return mask(a.to_vec());
    }
    let ints = read_npy_ints(path)?;
    // A 0/1 array over every node is a mask: as ids it would list node 0 or 1 again and again.
    if ints.len() == num_nodes && num_nodes > 2 && ints.iter().all(|&v| v == 0 || v == 1) {
        return mask(ints.iter().map(|&v| v == 1).collect());
    }
    Ok(ints.into_iter().enumerate().map(|(i, v)| (v, format!("entry {i}"))).collect())
}

fn check_ids(path: &Path, raw: Vec<Located>, num_nodes: usize) -> Result<Vec<usize>> {
    crate::ensure!(!raw.is_empty(), Error::bad_file(path, "lists no member"));
    let mut seen: Vec<Option<usize>> = vec![None; num_nodes];
    let mut ids = Vec::with_capacity(raw.len());
    for (i, (v, at)) in raw.iter().enumerate() {
        crate::ensure!(
            *v >= 0 && (*v as usize) < num_nodes,
            Error::bad_file(path, format!("{at}: node id {v} is outside the dataset's 0..{num_nodes}"))
        );
        let v = *v as usize;
        if let Some(first) = seen[v] {
            return Err(Error::bad_file(
                path,
                format!("{at}: node id {v} is listed twice (first at {}); list each member once", raw[first].1),
            ));
        }
        seen[v] = Some(i);
        ids.push(v);
    }
    crate::ensure!(
        ids.len() < num_nodes,
        Error::bad_file(path, "lists every node as a member: no non-member is left to compare with")
    );
    ids.sort_unstable();
    Ok(ids)
}

/// A 1-D integer .npy array as i64.
pub fn read_npy_ints(path: &Path) -> Result<Vec<i64>> {
    use ndarray::Array1;
    use ndarray_npy::ReadNpyExt;
    let open = || std::fs::File::open(path).map_err(|e| Error::bad_file(path, e));
    macro_rules! try_as {
        ($($t:ty),*) => {$(
            if let Ok(a) = Array1::<$t>::read_npy(open()?) {
                return Ok(a.iter().map(|&x| x as i64).collect());
            }
        )*};
    }
    try_as!(i64, i32, i16, i8, u64, u32, u16, u8);
    Err(Error::bad_file(
        path,
        "expected a 1-D integer array of node ids or a 1-D boolean mask over the nodes (numpy.save of an int or bool \
         array)",
    ))
}

/// Integers of one table column (any integer type), with its row on error.
pub fn table_ints(df: &polars::prelude::DataFrame, path: &Path, name: &str) -> Result<Vec<i64>> {
    use polars::prelude::DataType;
    let col = df.column(name).map_err(|e| Error::bad_file(path, e))?;
    crate::ensure!(
        col.dtype().is_integer(),
        Error::bad_file(path, format!("column '{name}' holds {}, expected integer node ids", col.dtype()))
    );
    let c = col.cast(&DataType::Int64).map_err(|e| Error::bad_file(path, e))?;
    let ca = c.i64().map_err(|e| Error::bad_file(path, e))?;
    ca.into_iter()
        .enumerate()
        .map(|(r, x)| x.ok_or_else(|| Error::bad_file(path, format!("column '{name}': missing value in row {r}"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` written to `path`, then read as the members of a 5-node graph: the ids, or the
    /// error's message.
    fn read_back(path: &Path, text: &str) -> std::result::Result<Vec<usize>, String> {
        std::fs::write(path, text).unwrap();
        load_members(path, 5).map_err(|e| e.to_string())
    }

    /// [`read_back`] of `array` saved with `numpy.save`'s layout.
    fn read_back_npy<T: ndarray_npy::WritableElement>(
        path: &Path,
        array: &[T],
    ) -> std::result::Result<Vec<usize>, String> {
        use ndarray_npy::WriteNpyExt;
        ndarray::ArrayView1::from(array).write_npy(std::fs::File::create(path).unwrap()).unwrap();
        load_members(path, 5).map_err(|e| e.to_string())
    }

    #[test]
    fn text_members_are_checked_against_the_node_count() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.txt");
        assert_eq!(read_back(&p, "# members\n3\n1\n\n0\n").unwrap(), vec![0, 1, 3]);
        let e = read_back(&p, "3\n7\n").unwrap_err();
        assert!(e.contains("m.txt") && e.contains("line 2") && e.contains("7"), "{e}");
        let e = read_back(&p, "1\n\n1\n").unwrap_err();
        assert!(e.contains("line 3") && e.contains("twice") && e.contains("first at line 1"), "{e}");
        assert!(read_back(&p, "1\n-2\n").unwrap_err().contains("line 2: node id -2"));
        assert!(read_back(&p, "1\nx\n").unwrap_err().contains("line 2"));
    }

    #[test]
    fn a_header_is_only_a_non_numeric_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("m.csv");
        assert_eq!(read_back(&c, "4\n0\n2\n").unwrap(), vec![0, 2, 4], "a headerless CSV keeps its first id");
        assert_eq!(read_back(&c, "node\n4\n0\n").unwrap(), vec![0, 4]);
        assert_eq!(read_back(&c, "score,node_id\n0.5,3\n0.1,1\n").unwrap(), vec![1, 3]);
        let e = read_back(&c, "3,1\n1,0\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("header"), "{e}");
    }

    #[test]
    fn npy_ids_and_masks_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.npy");
        assert_eq!(read_back_npy(&p, &[4i64, 2]).unwrap(), vec![2, 4]);
        assert_eq!(read_back_npy(&p, &[true, false, true, true, false]).unwrap(), vec![0, 2, 3]);
        assert_eq!(read_back_npy(&p, &[0u8, 1, 1, 0, 0]).unwrap(), vec![1, 2], "a 0/1 array over every node is a mask");
        let e = read_back_npy(&p, &[true, false]).unwrap_err();
        assert!(e.contains("2 entries") && e.contains("5 nodes"), "{e}");
        let e = read_back_npy(&p, &[1i32, 3, 1]).unwrap_err();
        assert!(e.contains("entry 2") && e.contains("twice"), "{e}");
    }

    #[test]
    fn torch_save_files_are_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("members.pt");
        let mut zip = b"PK\x03\x04".to_vec();
        zip.extend_from_slice(b"\0\0\0\0archive/data.pkl");
        std::fs::write(&p, zip).unwrap();
        let e = load_members(&p, 5).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(m.contains("members.pt") && m.contains("torch.save") && m.contains("numpy.save"), "{m}");
    }
}
