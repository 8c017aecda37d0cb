//! Training without a method in mind: the shared fit loop (full batch, mini-batch, DP-Adam with
//! Poisson sampling, best-validation selection), the utility record, and the pairing of a method's
//! privacy expression with its calibration. `crate::methods` builds every method on these.
use serde::{Deserialize, Serialize};

pub mod accounting;
pub mod fit;

/// Utility of one trained model, in [0, 1]: accuracy, or ROC-AUC for link prediction (see
/// [`crate::methods::Method::utility_metric`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    pub train: f64,
    pub val: f64,
    pub test: f64,
}
