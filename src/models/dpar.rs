//! DP-APPR, the private half of DPAR (Zhang thesis ch.5): each of the M training
//! rows' APPR vectors ([`super::ppr::appr_ista`]) is released by
//! - GM (Alg. 7): clip to L2 norm C1, Gaussian noise on all N entries, keep the top K;
//! - EM-v0 / EM-v1 (Alg. 8): clip every entry to C2, Gumbel(C2/eps) noise on all N entries (the
//!   one-shot form of K exponential-mechanism picks without replacement, Durfee & Rogers 2019),
//!   keep the top-K indices with weight 1/K (v0) or their clipped values plus Laplace(K C2/eps2)
//!   (v1).
//!
//! After DP-APPR come the post-processing steps DP-SGD needs (Alg. 9 step 1 and the sound
//! sound accounting): L1 column clipping to tau and the referenced-row cap D_Pi, so that
//! one node enters at most D_Pi + 1 per-row gradients. The noise's privacy is accounted in
//! `privacy::accountant::dpar`.
use super::ppr::{top_k, SparseRow};
use crate::ensure;
use crate::error::{Error, Result};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// The DP-APPR mechanism a DPAR variant releases its rows with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ApprMechanism {
    /// Gaussian with standard deviation `sigma` after L2 clipping to `c1`.
    Gaussian { c1: f64, sigma: f64 },
    /// Gumbel top-K with scale `c2 / epsilon` after entry clipping to `c2`, weights 1/K.
    ExponentialV0 { c2: f64, epsilon: f64 },
    /// As v0, weights = clipped values + Laplace(K c2 / epsilon2).
    ExponentialV1 { c2: f64, epsilon: f64, epsilon2: f64 },
}

impl ApprMechanism {
    pub fn validate(&self) -> Result<()> {
        let positive = |field: &str, v: f64| -> Result<()> {
            ensure!(v.is_finite() && v > 0.0, Error::invalid(field, format!("must be > 0 and finite, got {v}")));
            Ok(())
        };
        match *self {
            ApprMechanism::Gaussian { c1, sigma } => {
                positive("c1", c1)?;
                positive("sigma", sigma)
            }
            ApprMechanism::ExponentialV0 { c2, epsilon } => {
                positive("c2", c2)?;
                positive("epsilon", epsilon)
            }
            ApprMechanism::ExponentialV1 { c2, epsilon, epsilon2 } => {
                positive("c2", c2)?;
                positive("epsilon", epsilon)?;
                positive("epsilon2", epsilon2)
            }
        }
    }
}

/// `row` scaled to L2 norm at most `c`.
pub fn clip_l2(row: &[(usize, f64)], c: f64) -> SparseRow {
    let norm = row.iter().map(|&(_, v)| v * v).sum::<f64>().sqrt();
    let scale = 1.0 / (norm / c).max(1.0);
    row.iter().map(|&(i, v)| (i, v * scale)).collect()
}

/// Every entry of `row` capped at `c` (Alg. 8 line 6, whose printed form is garbled).
pub fn clip_entries(row: &[(usize, f64)], c: f64) -> SparseRow {
    row.iter().map(|&(i, v)| (i, v.min(c))).collect()
}

/// The change of one entry-clipped APPR score between neighbouring graphs that the exponential
/// mechanism's Gumbel scale (sensitivity / epsilon) assumes: every entry lies in [0, c2].
pub fn em_score_sensitivity(c2: f64) -> f64 {
    c2
}

/// Gumbel(0, beta) by inversion: -beta ln(-ln U).
fn gumbel<R: Rng>(rng: &mut R, beta: f64) -> f64 {
    let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
    -beta * (-u.ln()).ln()
}

/// Laplace(0, b) by inversion.
fn laplace<R: Rng>(rng: &mut R, b: f64) -> f64 {
    let u: f64 = rng.gen_range(-0.5..0.5);
    -b * u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln()
}

/// One private row over `n` columns: `appr` is the source's APPR vector (sparse, non-negative).
/// Noise covers all n entries, as the mechanisms require: a top-K over the support alone would
/// reveal the support.
pub fn private_row<R: Rng>(
    appr: &[(usize, f64)],
    n: usize,
    k: usize,
    mech: &ApprMechanism,
    rng: &mut R,
) -> Result<SparseRow> {
    mech.validate()?;
    ensure!(k >= 1 && k <= n, Error::invalid("k", format!("top-K must be in [1, {n}], got {k}")));
    ensure!(
        appr.iter().all(|&(i, v)| i < n && v >= 0.0 && v.is_finite()),
        Error::invalid("appr", "APPR entries must be non-negative and inside the graph")
    );
    let mut dense = vec![0.0; n];
    match *mech {
        ApprMechanism::Gaussian { c1, sigma } => {
            for (i, v) in clip_l2(appr, c1) {
                dense[i] = v;
            }
            for x in dense.iter_mut() {
                let z: f64 = StandardNormal.sample(rng);
                *x += sigma * z;
            }
            let all: SparseRow = dense.into_iter().enumerate().collect();
            Ok(top_k(&all, k))
        }
        ApprMechanism::ExponentialV0 { c2, epsilon } | ApprMechanism::ExponentialV1 { c2, epsilon, .. } => {
            let clipped = clip_entries(appr, c2);
            for &(i, v) in &clipped {
                dense[i] = v;
            }
            let beta = em_score_sensitivity(c2) / epsilon;
            let noisy: SparseRow = dense.iter().enumerate().map(|(i, &v)| (i, v + gumbel(rng, beta))).collect();
            let picked = top_k(&noisy, k);
            Ok(match *mech {
                ApprMechanism::ExponentialV1 { epsilon2, .. } => {
                    let b = k as f64 * c2 / epsilon2;
                    picked.into_iter().map(|(i, _)| (i, dense[i] + laplace(rng, b))).collect()
                }
                _ => picked.into_iter().map(|(i, _)| (i, 1.0 / k as f64)).collect(),
            })
        }
    }
}

/// Alg. 9 step 1: every column j of the row set scaled so that sum_i |Pi_ij| <= tau.
pub fn clip_columns_l1(rows: &mut [SparseRow], n: usize, tau: f64) {
    let mut mass = vec![0.0; n];
    for row in rows.iter() {
        for &(j, v) in row {
            mass[j] += v.abs();
        }
    }
    for row in rows.iter_mut() {
        for (j, v) in row.iter_mut() {
            *v /= (mass[*j] / tau).max(1.0);
        }
    }
}

/// The referenced-row cap (sound accounting): a column that is non-zero in more than
/// `cap` rows keeps only its `cap` largest-magnitude entries (ties: the earlier row). Post-
/// processing of the private rows, so it costs no budget; afterwards a node influences at most
/// `cap` rows besides its own. Returns how many entries were dropped.
pub fn cap_referenced_rows(rows: &mut [SparseRow], n: usize, cap: usize) -> usize {
    let mut by_col: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (r, row) in rows.iter().enumerate() {
        for &(j, v) in row {
            by_col[j].push((r, v.abs()));
        }
    }
    let mut drop: Vec<(usize, usize)> = Vec::new();
    for (j, refs) in by_col.iter_mut().enumerate() {
        if refs.len() > cap {
            refs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            drop.extend(refs[cap..].iter().map(|&(r, _)| (r, j)));
        }
    }
    for &(r, j) in &drop {
        rows[r].retain(|&(c, _)| c != j);
    }
    drop.len()
}

/// The largest number of rows any column is non-zero in (the D_Pi the accountant needs).
pub fn max_column_count(rows: &[SparseRow], n: usize) -> usize {
    let mut count = vec![0usize; n];
    for row in rows {
        for &(j, v) in row {
            if v != 0.0 {
                count[j] += 1;
            }
        }
    }
    count.into_iter().max().unwrap_or(0)
}
