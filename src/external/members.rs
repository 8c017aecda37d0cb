//! The auditor's ground truth about membership: the ids of the nodes the deployment trained on,
//! as `.npy` (1-D integers), CSV/Parquet (a `node`, `node_id` or `id` column, or the only column)
//! or plain text (one id per line; blank lines and `#` comments skipped).
use crate::error::{Error, Result};
use std::path::Path;

/// Column names accepted for node ids in tables (members and posteriors).
pub const ID_COLUMNS: [&str; 3] = ["node", "node_id", "id"];

/// Member ids, checked against the dataset's node count: each in range, none twice, and at least
/// one node left over as a non-member.
pub fn load_members(path: &Path, num_nodes: usize) -> Result<Vec<usize>> {
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let raw: Vec<i64> = match ext.as_str() {
        "npy" => read_npy_ints(path)?,
        "csv" | "parquet" | "pq" => {
            let df = crate::data::table::read_table(path)?;
            let names = df.get_column_names_str();
            let name = ID_COLUMNS
                .iter()
                .find(|c| names.contains(c))
                .map(|c| c.to_string())
                .or_else(|| (names.len() == 1).then(|| names[0].to_string()))
                .ok_or_else(|| {
                    Error::bad_file(
                        path,
                        format!(
                            "no member id column: expected one of {ID_COLUMNS:?} or a single column, found {names:?}"
                        ),
                    )
                })?;
            table_ints(&df, path, &name)?
        }
        _ => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::bad_file(path, e))?;
            let mut ids = vec![];
            for (i, line) in text.lines().enumerate() {
                let t = line.split('#').next().unwrap_or("").trim();
                if t.is_empty() {
                    continue;
                }
                ids.push(t.parse::<i64>().map_err(|_| {
                    Error::bad_file(path, format!("line {}: '{t}' is not a node id (one integer per line)", i + 1))
                })?);
            }
            ids
        }
    };
    check_ids(path, raw, num_nodes)
}

fn check_ids(path: &Path, raw: Vec<i64>, num_nodes: usize) -> Result<Vec<usize>> {
    crate::ensure!(!raw.is_empty(), Error::bad_file(path, "lists no member"));
    let mut seen = vec![false; num_nodes];
    let mut ids = Vec::with_capacity(raw.len());
    for (i, &v) in raw.iter().enumerate() {
        crate::ensure!(
            v >= 0 && (v as usize) < num_nodes,
            Error::bad_file(path, format!("entry {}: node id {v} is outside the dataset's 0..{num_nodes}", i + 1))
        );
        let v = v as usize;
        crate::ensure!(!seen[v], Error::bad_file(path, format!("entry {}: node id {v} is listed twice", i + 1)));
        seen[v] = true;
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
    if let Ok(a) = Array1::<i64>::read_npy(open()?) {
        return Ok(a.to_vec());
    }
    if let Ok(a) = Array1::<i32>::read_npy(open()?) {
        return Ok(a.iter().map(|&x| x as i64).collect());
    }
    if let Ok(a) = Array1::<u32>::read_npy(open()?) {
        return Ok(a.iter().map(|&x| x as i64).collect());
    }
    Err(Error::bad_file(path, "expected a 1-D integer array (int64, int32 or uint32) of node ids"))
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

    #[test]
    fn text_members_are_checked_against_the_node_count() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.txt");
        std::fs::write(&p, "# members\n3\n1\n\n0\n").unwrap();
        assert_eq!(load_members(&p, 5).unwrap(), vec![0, 1, 3]);
        std::fs::write(&p, "3\n7\n").unwrap();
        let e = load_members(&p, 5).unwrap_err().to_string();
        assert!(e.contains("m.txt") && e.contains("entry 2") && e.contains("7"), "{e}");
        std::fs::write(&p, "1\n1\n").unwrap();
        assert!(load_members(&p, 5).unwrap_err().to_string().contains("twice"));
        std::fs::write(&p, "1\nx\n").unwrap();
        assert!(load_members(&p, 5).unwrap_err().to_string().contains("line 2"));
    }

    #[test]
    fn npy_and_csv_members_read_back() {
        use ndarray_npy::WriteNpyExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.npy");
        ndarray::arr1(&[4i64, 2]).write_npy(std::fs::File::create(&p).unwrap()).unwrap();
        assert_eq!(load_members(&p, 5).unwrap(), vec![2, 4]);
        let c = dir.path().join("m.csv");
        std::fs::write(&c, "node_id,score\n0,1\n4,2\n").unwrap();
        assert_eq!(load_members(&c, 5).unwrap(), vec![0, 4]);
    }
}
