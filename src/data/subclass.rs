//! Subclasses for subclass-level DP (Zhang thesis ch.4 §4.4.3, l.831): k-means on the node
//! features within each class, k clusters per class (k = 1 gives class-level DP; k = class size
//! gives record-level DP, l.829).
//!
//! Caveat: k-means runs on private records, so the partition itself depends on the
//! data, which the guarantee (neighbouring datasets for a *fixed* partition) does not cover. The
//! partition is computed once from the training records and reported as an assumption.
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

/// Lloyd iterations at most (k-means usually settles in far fewer on these features).
const MAX_ITERATIONS: usize = 100;

/// k-means with k-means++ seeding (Arthur & Vassilvitskii 2007) on the rows of `x` [n, d]:
/// returns each row's cluster in 0..k' (k' <= k: empty clusters are dropped and renumbered).
pub fn kmeans(x: &Tensor, k: usize, seed: u64) -> Vec<usize> {
    let n = x.size()[0] as usize;
    let k = k.clamp(1, n.max(1));
    if n == 0 {
        return Vec::new();
    }
    if k == 1 {
        return vec![0; n];
    }
    let x = x.to_kind(Kind::Double);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut chosen = vec![rng.gen_range(0..n)];
    let mut d2 = sq_dist(&x, &x.get(chosen[0] as i64).unsqueeze(0)).squeeze_dim(1);
    while chosen.len() < k {
        let w: Vec<f64> = Vec::<f64>::try_from(&d2).expect("distances");
        let total: f64 = w.iter().sum();
        let next = if total <= 0.0 {
            // Fewer distinct rows than k: the remaining centres would be duplicates.
            break;
        } else {
            let mut r = rng.gen::<f64>() * total;
            let mut i = 0;
            while i + 1 < n && r >= w[i] {
                r -= w[i];
                i += 1;
            }
            i
        };
        chosen.push(next);
        d2 = d2.minimum(&sq_dist(&x, &x.get(next as i64).unsqueeze(0)).squeeze_dim(1));
    }
    let idx = crate::device::place(Tensor::from_slice(&chosen.iter().map(|&i| i as i64).collect::<Vec<_>>()));
    let mut centres = x.index_select(0, &idx);
    let mut assign = sq_dist(&x, &centres).argmin(1, false);
    for _ in 0..MAX_ITERATIONS {
        let kk = centres.size()[0];
        let one_hot = assign.one_hot(kk).to_kind(Kind::Double); // [n, k]
        let counts = one_hot.sum_dim_intlist([0i64].as_slice(), false, Kind::Double);
        let sums = one_hot.tr().mm(&x);
        // An empty cluster keeps its old centre.
        let safe = counts.clamp_min(1.0).unsqueeze(1);
        let empty = counts.eq(0.0).unsqueeze(1);
        centres = (sums / safe).where_self(&empty.logical_not(), &centres);
        let next = sq_dist(&x, &centres).argmin(1, false);
        let changed = next.ne_tensor(&assign).any().int64_value(&[]) != 0;
        assign = next;
        if !changed {
            break;
        }
    }
    let raw: Vec<i64> = Vec::<i64>::try_from(&assign).expect("assignments");
    let mut renumber = std::collections::HashMap::new();
    raw.iter()
        .map(|&c| {
            let next = renumber.len();
            *renumber.entry(c).or_insert(next)
        })
        .collect()
}

fn sq_dist(x: &Tensor, c: &Tensor) -> Tensor {
    let xx = x.square().sum_dim_intlist([1i64].as_slice(), true, Kind::Double);
    let cc = c.square().sum_dim_intlist([1i64].as_slice(), true, Kind::Double).tr();
    (xx + cc - x.mm(&c.tr()) * 2.0).clamp_min(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmeans_separates_well_separated_blobs() {
        tch::manual_seed(0);
        let a = Tensor::randn([20, 3], (Kind::Float, tch::Device::Cpu)) * 0.1;
        let b = Tensor::randn([20, 3], (Kind::Float, tch::Device::Cpu)) * 0.1 + 5.0;
        let x = Tensor::cat(&[a, b], 0);
        let c = kmeans(&x, 2, 1);
        assert!(c[..20].iter().all(|&v| v == c[0]) && c[20..].iter().all(|&v| v == c[20]) && c[0] != c[20], "{c:?}");
        assert_eq!(kmeans(&x, 1, 1), vec![0; 40]);
        // k = n: every row its own cluster.
        let mut all = kmeans(&x.narrow(0, 0, 5), 5, 2);
        all.sort();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
    }
}
