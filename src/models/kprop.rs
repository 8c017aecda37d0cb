//! KProp (thesis ch.3, Algorithm 3): K rounds of a linear aggregation with no non-linearity in
//! between, over N(v) - {v} (no self loops), so that each node averages noisy inputs from up to K
//! hops away. LPGNN uses the GCN aggregator (eq. 3.40) for both features and labels.
use super::gcn::gcn_normalized;
use crate::data::Graph;
use crate::error::{Error, Result};
use tch::Tensor;

/// The KProp operator of a graph: the GCN-normalised adjacency without self loops.
#[derive(Debug)]
pub struct KProp {
    adj: Tensor,
    steps: usize,
}

impl KProp {
    pub fn new(graph: &Graph, steps: i64) -> Result<Self> {
        if steps < 0 {
            return Err(Error::invalid("K", format!("the KProp step count must be >= 0, got {steps}")));
        }
        Ok(KProp { adj: gcn_normalized(graph, false), steps: steps as usize })
    }
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// h = agg^K(x); K = 0 is the identity. Differentiable in x.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let mut h = x.shallow_clone();
        for _ in 0..self.steps {
            h = self.adj.mm(&h);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[test]
    fn zero_steps_is_identity_and_steps_compose() {
        let g = Graph::from_edges(4, [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)]).unwrap();
        let x = Tensor::rand([4, 3], (Kind::Float, tch::Device::Cpu));
        assert!(KProp::new(&g, 0).unwrap().forward(&x).equal(&x));
        let one = KProp::new(&g, 1).unwrap();
        let two = KProp::new(&g, 2).unwrap().forward(&x);
        assert!(two.allclose(&one.forward(&one.forward(&x)), 1e-6, 1e-6, false));
        // No self loop: node 0's only neighbour is 1 (degrees 1 and 2).
        let e = Tensor::eye(4, (Kind::Float, tch::Device::Cpu));
        let h = one.forward(&e);
        assert_eq!(h.double_value(&[0, 0]), 0.0);
        assert!((h.double_value(&[0, 1]) - 1.0 / 2f64.sqrt()).abs() < 1e-6);
        assert!(KProp::new(&g, -1).is_err());
    }
}
