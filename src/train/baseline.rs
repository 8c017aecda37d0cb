//! What a model must beat to have learned anything: chance (1 / classes), the majority class
//! (the train split's most frequent class, scored on the test split) and, for link prediction,
//! a ROC-AUC of 0.5. A private model whose test accuracy cannot be told apart from the majority
//! class has learned nothing worth its epsilon; [`at_chance`] says so with a named test.
use crate::data::Dataset;
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// The test that decides `at chance`, as reports name it.
pub const CHANCE_TEST: &str = "one-sided Clopper-Pearson lower bound on the test accuracy";

/// The confidence of the `at chance` test unless a caller states another.
pub const DEFAULT_CHANCE_CONFIDENCE: f64 = 0.95;

/// The trivial predictors' utility on one split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Uniform guessing: 1 / classes for accuracy, 0.5 for ROC-AUC.
    pub chance: f64,
    /// The train split's most frequent class (None for link prediction).
    pub majority_class: Option<usize>,
    /// Test accuracy of always predicting `majority_class` (None for link prediction).
    pub majority_accuracy: Option<f64>,
    /// Test nodes the accuracies are measured on (0 for link prediction).
    pub test_nodes: usize,
}

impl Baseline {
    /// The node-classification baselines of `ds`'s split. Ties between classes go to the
    /// smallest class index, so the answer does not depend on iteration order.
    pub fn of_classes(ds: &Dataset) -> Result<Baseline> {
        let split = ds.split()?;
        Ok(Baseline::of_labels(&ds.labels, ds.num_classes, &split.train, &split.test))
    }

    /// The same from labels and the train / test node sets.
    pub fn of_labels(labels: &[usize], classes: usize, train: &[usize], test: &[usize]) -> Baseline {
        let classes = labels.iter().map(|&y| y + 1).max().unwrap_or(0).max(classes).max(1);
        let mut counts = vec![0usize; classes];
        for &v in train {
            counts[labels[v]] += 1;
        }
        let majority = (0..classes).max_by(|&a, &b| counts[a].cmp(&counts[b]).then(b.cmp(&a))).unwrap_or(0);
        let hits = test.iter().filter(|&&v| labels[v] == majority).count();
        let n = test.len();
        Baseline {
            chance: 1.0 / classes as f64,
            majority_class: Some(majority),
            majority_accuracy: Some(if n == 0 { f64::NAN } else { hits as f64 / n as f64 }),
            test_nodes: n,
        }
    }

    /// Link prediction: a ROC-AUC of 0.5 is what random scores get.
    pub fn link_prediction() -> Baseline {
        Baseline { chance: 0.5, majority_class: None, majority_accuracy: None, test_nodes: 0 }
    }
}

/// Whether one test accuracy clears the majority class, with the test behind the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChanceVerdict {
    /// True when the accuracy's lower confidence bound does not exceed the majority class.
    pub at_chance: bool,
    /// The lower bound on the test accuracy at `confidence`.
    pub accuracy_lower: f64,
    /// The majority class's test accuracy it is compared with.
    pub majority_accuracy: f64,
    pub confidence: f64,
    /// Correct test predictions (the accuracy times `test_nodes`, rounded) and the trials.
    pub correct: usize,
    pub test_nodes: usize,
    /// The test, by name ([`CHANCE_TEST`]).
    pub test: String,
}

/// Tests a test accuracy against the majority class: the model is at chance when the one-sided
/// Clopper-Pearson lower bound of its accuracy (at `confidence`, the test nodes as Bernoulli
/// trials) does not exceed the majority class's accuracy on the same nodes. None when there is
/// nothing to test (link prediction, no test node, an unmeasured accuracy).
pub fn at_chance(test_accuracy: f64, baseline: &Baseline, confidence: f64) -> Option<ChanceVerdict> {
    let majority = baseline.majority_accuracy.filter(|m| m.is_finite())?;
    let n = baseline.test_nodes;
    if n == 0 || !test_accuracy.is_finite() || !(0.0..=1.0).contains(&test_accuracy) {
        return None;
    }
    let correct = ((test_accuracy * n as f64).round() as usize).min(n);
    let lower = gnnaudit_attacks::binomial::clopper_pearson_lower(correct, n, 1.0 - confidence);
    Some(ChanceVerdict {
        at_chance: lower <= majority,
        accuracy_lower: lower,
        majority_accuracy: majority,
        confidence,
        correct,
        test_nodes: n,
        test: CHANCE_TEST.into(),
    })
}
