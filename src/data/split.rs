//! Train/validation/test node splits, drawn from a seed.
use super::dataset::{Dataset, Split};
use crate::error::{Error, Result};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Fractions of nodes for training, validation and test. They must be non-negative and sum to at
/// most 1; nodes beyond the three sets are left unused.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SplitRatios {
    pub train: f64,
    pub val: f64,
    pub test: f64,
}

impl SplitRatios {
    /// 75/10/15, as GAP and ProGAP use.
    pub const GAP: SplitRatios = SplitRatios { train: 0.75, val: 0.10, test: 0.15 };
    /// 50/25/25, as LPGNN (thesis Section 3.5.2) and RGNN use.
    pub const LPGNN: SplitRatios = SplitRatios { train: 0.5, val: 0.25, test: 0.25 };
}

impl Default for SplitRatios {
    fn default() -> Self {
        SplitRatios::GAP
    }
}

impl SplitRatios {
    pub fn new(train: f64, val: f64, test: f64) -> Result<Self> {
        let r = SplitRatios { train, val, test };
        r.validate()?;
        Ok(r)
    }
    pub fn validate(&self) -> Result<()> {
        for (name, x) in [("train", self.train), ("val", self.val), ("test", self.test)] {
            crate::ensure!(
                x.is_finite() && (0.0..=1.0).contains(&x),
                Error::invalid(format!("split.{name}"), format!("{x} is not a fraction in [0, 1]"))
            );
        }
        let sum = self.train + self.val + self.test;
        if sum > 1.0 + 1e-9 {
            return Err(Error::invalid("split", format!("ratios sum to {sum} > 1")));
        }
        Ok(())
    }
}

/// Random node split: a seeded permutation, validation first, then test, then train, with
/// `round(ratio * N)` nodes each (PyG's RandomNodeSplit as GAP uses it). When the ratios sum to 1
/// the training set takes all remaining nodes, so no node is lost to rounding.
pub fn random_split(ds: &Dataset, ratios: SplitRatios, seed: u64) -> Result<Dataset> {
    let mut out = ds.clone();
    out.split = Some(random_split_of(ds.num_nodes(), ratios, seed)?);
    Ok(out)
}

/// The split [`random_split`] gives `n` nodes, without copying a dataset.
pub fn random_split_of(n: usize, ratios: SplitRatios, seed: u64) -> Result<Split> {
    ratios.validate()?;
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let n_val = ((ratios.val * n as f64).round() as usize).min(n);
    let n_test = ((ratios.test * n as f64).round() as usize).min(n - n_val);
    let rest = n - n_val - n_test;
    let n_train = if (ratios.train + ratios.val + ratios.test - 1.0).abs() < 1e-9 {
        rest
    } else {
        ((ratios.train * n as f64).round() as usize).min(rest)
    };
    let sorted = |s: &[usize]| {
        let mut v = s.to_vec();
        v.sort_unstable();
        v
    };
    Ok(Split {
        val: sorted(&perm[..n_val]),
        test: sorted(&perm[n_val..n_val + n_test]),
        train: sorted(&perm[n_val + n_test..n_val + n_test + n_train]),
    })
}

/// Per-class split: in every class, a seeded shuffle gives `train_per_class` nodes to training,
/// the next `val_per_class` to validation and the rest to test. A class too small for both
/// quotas fills training first, then validation, and gets no test nodes.
pub fn split_per_class(ds: &Dataset, train_per_class: usize, val_per_class: usize, seed: u64) -> Result<Dataset> {
    crate::ensure!(train_per_class >= 1, Error::invalid("train_per_class", "must be at least 1"));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); ds.num_classes];
    for (v, &y) in ds.labels.iter().enumerate() {
        members[y].push(v);
    }
    let mut split = Split::default();
    for mut m in members {
        m.shuffle(&mut rng);
        let a = train_per_class.min(m.len());
        let b = (a + val_per_class).min(m.len());
        split.train.extend_from_slice(&m[..a]);
        split.val.extend_from_slice(&m[a..b]);
        split.test.extend_from_slice(&m[b..]);
    }
    split.train.sort_unstable();
    split.val.sort_unstable();
    split.test.sort_unstable();
    let mut out = ds.clone();
    out.split = Some(split);
    Ok(out)
}
