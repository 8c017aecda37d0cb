//! The one accuracy every method reports: the fraction of a node set whose argmax score (logits or
//! posteriors) is the label, and the train/val/test [`Accuracy`] of a split.
//!
//! An empty node set has no accuracy: the answer is NaN, never 0 (which would read as "every
//! prediction wrong"). The report prints NaN as "-" and report.json as `null`, which reads back as
//! NaN.
use crate::data::{Dataset, Split};
use crate::models::{Fwd, NodeClassifier};
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

/// Utility of one trained model, in [0, 1]: accuracy, or ROC-AUC for link prediction (see
/// [`crate::methods::Method::utility_metric`]). NaN where the set is empty (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    #[serde(deserialize_with = "nan_if_null")]
    pub train: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub val: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub test: f64,
}

/// serde_json writes NaN as `null`; read it back as the NaN it was.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Fraction of rows of `scores` [n, C] whose argmax equals `labels` [n]; NaN for n = 0.
/// (The mean is taken in single precision, as torch does, so figures match earlier releases.)
pub fn row_accuracy(scores: &Tensor, labels: &Tensor) -> f64 {
    if scores.size()[0] == 0 {
        return f64::NAN;
    }
    let labels = labels.to_device(scores.device());
    tch::no_grad(|| {
        scores.argmax(-1, false).eq_tensor(&labels).to_kind(Kind::Float).mean(Kind::Float).double_value(&[])
    })
}

/// Accuracy on the nodes `idx` of scores over all nodes (`scores` [N, C], `labels` [N]).
pub fn accuracy(scores: &Tensor, labels: &Tensor, idx: &Tensor) -> f64 {
    if idx.numel() == 0 {
        return f64::NAN;
    }
    row_accuracy(&scores.index_select(0, idx), &labels.index_select(0, idx))
}

/// Accuracy of a model that scores only the rows it is asked for (evaluation mode, no grad).
pub fn model_accuracy(model: &dyn NodeClassifier, labels: &Tensor, idx: &Tensor) -> f64 {
    if idx.numel() == 0 {
        return f64::NAN;
    }
    tch::no_grad(|| row_accuracy(&model.logits(idx, &mut Fwd::eval()), &labels.index_select(0, idx)))
}

/// Labels and a split's train, validation and test nodes as tensors.
pub struct Labels {
    pub y: Tensor,
    pub train: Tensor,
    pub val: Tensor,
    pub test: Tensor,
}

impl Labels {
    pub fn from_dataset(d: &Dataset) -> crate::Result<Self> {
        let s = d.split()?;
        let idx = Split::index_tensor;
        Ok(Labels { y: d.label_tensor(), train: idx(&s.train), val: idx(&s.val), test: idx(&s.test) })
    }
    /// Train/val/test accuracy of `scores` [N, C] over all nodes.
    pub fn accuracy(&self, scores: &Tensor) -> Accuracy {
        Accuracy {
            train: accuracy(scores, &self.y, &self.train),
            val: accuracy(scores, &self.y, &self.val),
            test: accuracy(scores, &self.y, &self.test),
        }
    }
    /// Train/val/test accuracy of a row-scoring model.
    pub fn model_accuracy(&self, model: &dyn NodeClassifier) -> Accuracy {
        if let Some(scores) = tch::no_grad(|| model.all_logits(&mut Fwd::eval())) {
            return self.accuracy(&scores);
        }
        Accuracy {
            train: model_accuracy(model, &self.y, &self.train),
            val: model_accuracy(model, &self.y, &self.val),
            test: model_accuracy(model, &self.y, &self.test),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one documented answer for an empty node set is NaN, on every path, and it survives
    /// the report's JSON (written as null, read back as NaN).
    #[test]
    fn empty_set_has_no_accuracy_and_survives_json() {
        let scores = Tensor::from_slice(&[0.9f32, 0.1, 0.2, 0.8, 0.6, 0.4]).view([3, 2]);
        let labels = Tensor::from_slice(&[0i64, 0, 0]);
        let none = Tensor::from_slice::<i64>(&[]);
        assert!(accuracy(&scores, &labels, &none).is_nan());
        assert!(row_accuracy(&scores.narrow(0, 0, 0), &labels.narrow(0, 0, 0)).is_nan());
        let all = Tensor::from_slice(&[0i64, 1, 2]);
        assert!((accuracy(&scores, &labels, &all) - 2.0 / 3.0).abs() < 1e-7);
        assert_eq!(accuracy(&scores, &labels, &Tensor::from_slice(&[1i64])), 0.0);
        let split = Labels { y: labels, train: all, val: none.shallow_clone(), test: Tensor::from_slice(&[0i64]) };
        let acc = split.accuracy(&scores);
        assert!(acc.val.is_nan());
        assert_eq!(acc.test, 1.0);
        let json = serde_json::to_string(&acc).unwrap();
        assert!(json.contains("\"val\":null"), "{json}");
        let back: Accuracy = serde_json::from_str(&json).unwrap();
        assert!(back.val.is_nan() && back.test == 1.0 && (back.train - acc.train).abs() == 0.0);
    }
}
