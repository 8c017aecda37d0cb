//! `--shard I/N`: which slice of an audit's cells one process computes, so that any scheduler
//! (a Slurm array, Kubernetes indexed jobs, GNU parallel, a shell loop) can split an audit.
//! Cell `k` of the plan (0-based) belongs to shard `k mod N + 1`: interleaving spreads the
//! expensive methods and datasets over the shards instead of giving one shard all of them.
use crate::error::{Error, Result};

/// Shard `index` of `count`, 1-based (`--shard 1/4` .. `--shard 4/4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` with 1 <= I <= N; errors name the flag.
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = |why: &str| Error::invalid("--shard", format!("'{text}': {why}"));
        let (i, n) = text.split_once('/').ok_or_else(|| bad("expected I/N, e.g. 2/4"))?;
        let i: usize = i.trim().parse().map_err(|_| bad("I is not a whole number"))?;
        let n: usize = n.trim().parse().map_err(|_| bad("N is not a whole number"))?;
        if n == 0 {
            return Err(bad("N must be at least 1"));
        }
        if i == 0 || i > n {
            return Err(bad(&format!("I must be between 1 and N = {n}")));
        }
        Ok(Shard { index: i, count: n })
    }

    /// Whether the `k`-th cell of the plan (0-based) is in this shard.
    pub fn contains(&self, k: usize) -> bool {
        k % self.count + 1 == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The cells of `cells` (in plan order) that belong to `shard` (all of them without a shard).
pub fn slice<T: Clone>(cells: &[T], shard: Option<Shard>) -> Vec<T> {
    cells.iter().enumerate().filter(|(k, _)| shard.is_none_or(|s| s.contains(*k))).map(|(_, c)| c.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_plan() {
        let cells: Vec<usize> = (0..11).collect();
        let mut seen = vec![];
        for i in 1..=4 {
            seen.extend(slice(&cells, Some(Shard::parse(&format!("{i}/4")).unwrap())));
        }
        seen.sort();
        assert_eq!(seen, cells);
        assert_eq!(slice(&cells, Some(Shard { index: 2, count: 4 })), vec![1, 5, 9]);
        assert_eq!(slice(&cells, None), cells);
    }

    #[test]
    fn bad_shards_name_the_flag() {
        for bad in ["3/2", "0/2", "1/0", "2", "a/2", "1/b", "-1/2"] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains("--shard") && e.contains(bad), "{bad}: {e}");
        }
    }
}
