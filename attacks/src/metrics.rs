//! Scoring an attack: ROC curve, AUC with ties, TPR at fixed FPR, balanced accuracy,
//! Clopper-Pearson bounds (the epsilon lower bounds built on them live in `stats`).
use serde::{Deserialize, Serialize};

/// One ROC point: at some threshold t, the rates of positives and negatives scored >= t.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RocPoint {
    pub fpr: f64,
    pub tpr: f64,
    pub threshold: f64,
}

/// Confusion counts at every distinct threshold, from the strictest (nothing predicted positive)
/// to the loosest (everything positive). Ties share one point, so the AUC counts them as 1/2.
#[derive(Debug, Clone)]
pub struct Roc {
    pub n_pos: usize,
    pub n_neg: usize,
    /// (true positives, false positives, threshold) per point; first point is (0, 0, +inf).
    pub counts: Vec<(usize, usize, f64)>,
}

impl Roc {
    /// Higher scores mean "positive". NaN scores are treated as the lowest score.
    pub fn new(pos: &[f64], neg: &[f64]) -> Roc {
        let clean = |s: f64| if s.is_nan() { f64::NEG_INFINITY } else { s };
        let mut all: Vec<(f64, bool)> =
            pos.iter().map(|&s| (clean(s), true)).chain(neg.iter().map(|&s| (clean(s), false))).collect();
        all.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
        let mut counts = vec![(0, 0, f64::INFINITY)];
        let (mut tp, mut fp) = (0, 0);
        let mut i = 0;
        while i < all.len() {
            let t = all[i].0;
            while i < all.len() && all[i].0 == t {
                if all[i].1 {
                    tp += 1
                } else {
                    fp += 1
                }
                i += 1;
            }
            counts.push((tp, fp, t));
        }
        Roc { n_pos: pos.len(), n_neg: neg.len(), counts }
    }

    pub fn points(&self) -> Vec<RocPoint> {
        self.counts
            .iter()
            .map(|&(tp, fp, t)| RocPoint {
                fpr: fp as f64 / self.n_neg.max(1) as f64,
                tpr: tp as f64 / self.n_pos.max(1) as f64,
                threshold: t,
            })
            .collect()
    }

    /// Area under the ROC curve by the trapezoid rule (= P(score_pos > score_neg) + P(tie)/2).
    pub fn auc(&self) -> f64 {
        if self.n_pos == 0 || self.n_neg == 0 {
            return f64::NAN;
        }
        let mut area = 0.0;
        for w in self.counts.windows(2) {
            let (tp0, fp0, _) = w[0];
            let (tp1, fp1, _) = w[1];
            area += (fp1 - fp0) as f64 * (tp0 + tp1) as f64 / 2.0;
        }
        area / (self.n_pos as f64 * self.n_neg as f64)
    }

    /// TPR at the last ROC point whose FPR is <= `max_fpr` (the exact ROC, no interpolation).
    pub fn tpr_at_fpr(&self, max_fpr: f64) -> f64 {
        self.points().iter().filter(|p| p.fpr <= max_fpr + 1e-12).map(|p| p.tpr).fold(0.0, f64::max)
    }

    /// At most `max_points` points of the curve (always the first and last), for reports.
    pub fn thinned(&self, max_points: usize) -> Vec<RocPoint> {
        let pts = self.points();
        if pts.len() <= max_points || max_points < 2 {
            return pts;
        }
        let step = (pts.len() - 1) as f64 / (max_points - 1) as f64;
        (0..max_points).map(|i| pts[((i as f64 * step).round() as usize).min(pts.len() - 1)]).collect()
    }
}

/// Balanced accuracy of the decision "score >= threshold means positive".
pub fn balanced_accuracy(pos: &[f64], neg: &[f64], threshold: f64) -> f64 {
    let tpr = pos.iter().filter(|&&s| s >= threshold).count() as f64 / pos.len().max(1) as f64;
    let tnr = neg.iter().filter(|&&s| s < threshold).count() as f64 / neg.len().max(1) as f64;
    (tpr + tnr) / 2.0
}

/// The median of all scores: the natural threshold of a score-only attack in a balanced game.
pub fn median_threshold(pos: &[f64], neg: &[f64]) -> f64 {
    let mut all: Vec<f64> = pos.iter().chain(neg).copied().filter(|s| !s.is_nan()).collect();
    if all.is_empty() {
        return 0.0;
    }
    all.sort_by(|a, b| a.partial_cmp(b).unwrap());
    all[all.len() / 2]
}

/// The Clopper-Pearson bounds live with the exact binomial tails they invert.
pub use crate::binomial::{clopper_pearson_lower, clopper_pearson_upper};

/// All the numbers every attack reports about its scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreSummary {
    pub auc: f64,
    /// TPR at 0.1% and 1% FPR, serialised as {"0.001": .., "0.01": ..}.
    pub tpr_at_fpr: TprAtFpr,
    pub balanced_accuracy: f64,
    /// The decision threshold the balanced accuracy was taken at.
    pub threshold: f64,
    pub num_positives: usize,
    pub num_negatives: usize,
    /// The ROC curve, thinned to at most 200 points.
    pub roc: Vec<RocPoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TprAtFpr {
    #[serde(rename = "0.001")]
    pub at_0_001: f64,
    #[serde(rename = "0.01")]
    pub at_0_01: f64,
}

impl ScoreSummary {
    /// `threshold` is the attack's own decision threshold; None uses the median score.
    pub fn new(pos: &[f64], neg: &[f64], threshold: Option<f64>) -> ScoreSummary {
        let roc = Roc::new(pos, neg);
        let threshold = threshold.unwrap_or_else(|| median_threshold(pos, neg));
        ScoreSummary {
            auc: roc.auc(),
            tpr_at_fpr: TprAtFpr { at_0_001: roc.tpr_at_fpr(0.001), at_0_01: roc.tpr_at_fpr(0.01) },
            balanced_accuracy: balanced_accuracy(pos, neg, threshold),
            threshold,
            num_positives: pos.len(),
            num_negatives: neg.len(),
            roc: roc.thinned(200),
        }
    }
}

/// Splits scores into positives and negatives by a membership mask.
pub fn partition(scores: &[f64], positive: &[bool]) -> (Vec<f64>, Vec<f64>) {
    let mut pos = Vec::new();
    let mut neg = Vec::new();
    for (&s, &p) in scores.iter().zip(positive) {
        if p {
            pos.push(s)
        } else {
            neg.push(s)
        }
    }
    (pos, neg)
}

/// Mean and population standard deviation (0, 0 for an empty slice).
pub fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len().max(1) as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
    (m, v.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_hand_computed_with_ties() {
        // Pairs (pos, neg): 3 > 1, 3 > 2, 3 > 2; 2 vs 1 win, 2 vs 2 tie, 2 vs 2 tie; 1 vs 1 tie,
        // 1 < 2, 1 < 2. Wins 4 + ties 3 * 0.5 = 5.5 of 9.
        let auc = Roc::new(&[3.0, 2.0, 1.0], &[1.0, 2.0, 2.0]).auc();
        assert!((auc - 5.5 / 9.0).abs() < 1e-12, "{auc}");
        assert_eq!(Roc::new(&[2.0, 3.0], &[0.0, 1.0]).auc(), 1.0);
        assert_eq!(Roc::new(&[0.0, 1.0], &[2.0, 3.0]).auc(), 0.0);
        assert_eq!(Roc::new(&[1.0; 5], &[1.0; 7]).auc(), 0.5);
    }

    #[test]
    fn tpr_at_fixed_fpr_uses_exact_roc() {
        // 100 negatives at 0..99, positives at 99.5 and 150 and 50.5: at FPR 0 two positives pass.
        let neg: Vec<f64> = (0..100).map(|i| i as f64).collect();
        let roc = Roc::new(&[150.0, 99.5, 50.5, -1.0], &neg);
        assert_eq!(roc.tpr_at_fpr(0.001), 0.5);
        assert_eq!(roc.tpr_at_fpr(0.01), 0.5);
        assert_eq!(roc.tpr_at_fpr(0.5), 0.75);
    }

    #[test]
    fn clopper_pearson_known_values() {
        // 0 successes of n: upper bound 1 - alpha^(1/n).
        for n in [1usize, 10, 100, 1000] {
            let u = clopper_pearson_upper(0, n, 0.05);
            assert!((u - (1.0 - 0.05f64.powf(1.0 / n as f64))).abs() < 1e-9, "n={n}: {u}");
            // n successes of n: lower bound alpha^(1/n).
            let l = clopper_pearson_lower(n, n, 0.05);
            assert!((l - 0.05f64.powf(1.0 / n as f64)).abs() < 1e-9, "n={n}: {l}");
        }
        // scipy.stats.beta.ppf(0.05, 5, 6) = 0.2224411 (lower bound for 5 of 10) and
        // beta.ppf(0.95, 6, 5) = 0.7775589 by symmetry; checked through the incomplete beta:
        let l = clopper_pearson_lower(5, 10, 0.05);
        let u = clopper_pearson_upper(5, 10, 0.05);
        assert!((l - 0.2224411).abs() < 1e-6, "{l}");
        assert!((u - 0.7775589).abs() < 1e-6, "{u}");
        assert!((statrs::function::beta::beta_reg(5.0, 6.0, l) - 0.05).abs() < 1e-9);
        // 1 of 20: beta.ppf(0.95, 2, 19) = 0.2161 (textbook one-sided 95% upper bound).
        assert!((clopper_pearson_upper(1, 20, 0.05) - 0.21611).abs() < 1e-4);
    }
}
