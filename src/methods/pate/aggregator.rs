//! Confident-GNMax (thesis Alg. 2, seed 004 l.451-466; Papernot et al. 2018 Alg. 1): a query is
//! answered only when the noisy top vote count passes the threshold, then with the noisy argmax.
//! Its accounting lives in `privacy::accountant::pate`.
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// The aggregator's parameters: threshold T in votes, check noise sigma1, answer noise sigma2
/// (both 0 for the noiseless eps = inf variant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfidentGnmax {
    pub threshold: f64,
    pub sigma1: f64,
    pub sigma2: f64,
}

/// Vote counts of `teachers` predictions per query: `predictions[t][q]` is teacher t's class for
/// query q; returns counts[q][class].
pub fn vote_counts(predictions: &[Vec<usize>], classes: usize) -> Vec<Vec<f64>> {
    let queries = predictions.first().map_or(0, Vec::len);
    let mut counts = vec![vec![0.0; classes]; queries];
    for teacher in predictions {
        for (q, &c) in teacher.iter().enumerate() {
            counts[q][c] += 1.0;
        }
    }
    counts
}

fn gaussian(sigma: f64) -> Option<Normal<f64>> {
    (sigma > 0.0).then(|| Normal::new(0.0, sigma).expect("sigma is finite and positive"))
}

impl ConfidentGnmax {
    /// One label per query, None where the check failed (the thesis's bottom symbol). Noise drawn
    /// from a stream seeded by `seed`; without noise, ties go to the lowest class.
    pub fn label(&self, counts: &[Vec<f64>], seed: u64) -> Vec<Option<usize>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (check, answer) = (gaussian(self.sigma1), gaussian(self.sigma2));
        counts
            .iter()
            .map(|c| {
                let top = c.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let noisy_top = top + check.map_or(0.0, |n| n.sample(&mut rng));
                if noisy_top < self.threshold {
                    return None;
                }
                let mut best = (0, f64::NEG_INFINITY);
                for (j, &n) in c.iter().enumerate() {
                    let v = n + answer.map_or(0.0, |d| d.sample(&mut rng));
                    if v > best.1 {
                        best = (j, v);
                    }
                }
                Some(best.0)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noiseless_check_and_argmax() {
        let counts = vote_counts(&[vec![0, 1, 2], vec![0, 1, 1], vec![0, 2, 1]], 3);
        assert_eq!(counts[0], vec![3.0, 0.0, 0.0]);
        let agg = ConfidentGnmax { threshold: 2.0, sigma1: 0.0, sigma2: 0.0 };
        // Queries 1 and 2 have votes [0, 2, 1]: they pass T = 2; T = 3 keeps only query 0.
        assert_eq!(agg.label(&counts, 0), vec![Some(0), Some(1), Some(1)]);
        let strict = ConfidentGnmax { threshold: 3.0, ..agg };
        assert_eq!(strict.label(&counts, 0), vec![Some(0), None, None]);
    }

    /// With noise, a clear consensus passes and is answered right almost always; a split vote
    /// below the threshold is almost never answered (sigma small against the margins).
    #[test]
    fn noisy_answers_follow_the_consensus() {
        let counts = vec![vec![18.0, 1.0, 1.0]; 500];
        let agg = ConfidentGnmax { threshold: 12.0, sigma1: 2.0, sigma2: 2.0 };
        let out = agg.label(&counts, 7);
        assert!(out.iter().filter(|l| **l == Some(0)).count() >= 495);
        let split = vec![vec![7.0, 7.0, 6.0]; 500];
        assert!(agg.label(&split, 7).iter().filter(|l| l.is_some()).count() <= 5);
    }
}
