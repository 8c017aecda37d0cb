//! GAP's and ProGAP's private aggregations re-run on an auditor's crafted graph, through the same
//! code that trains them (`pma_releases`, `nap_release`), for the in-pipeline canary audit
//! (`gnnaudit_attacks::aggregation_canary`).
use super::decoupled::{GapModel, ProgapModel};
use crate::data::Graph;
use crate::models::aggregation::{aggregation_operator, nap_release, pma_releases};
use gnnaudit_attacks::aggregation_canary::AggregationRelease;
use gnnaudit_attacks::Result;
use tch::{Kind, Tensor};

fn crafted_operator(n: usize, edges: &[(usize, usize)]) -> Result<Tensor> {
    let g = Graph::from_edges(n, edges.iter().copied())
        .map_err(|e| gnnaudit_attacks::Error::Invalid { field: "canaries".into(), message: e.to_string() })?;
    Ok(aggregation_operator(&g))
}

impl AggregationRelease for GapModel {
    fn hops(&self) -> usize {
        self.hops
    }
    fn release(&self, features: &Tensor, edges: &[(usize, usize)], seed: u64) -> Result<Vec<(Tensor, Tensor)>> {
        let adj = crafted_operator(features.size()[0] as usize, edges)?;
        let x0 = self.encoder.embed(&features.to_kind(Kind::Float));
        tch::manual_seed(seed as i64);
        Ok(pma_releases(&adj, &x0, self.hops, self.noise_std))
    }
}

impl AggregationRelease for ProgapModel {
    fn hops(&self) -> usize {
        self.net.depth()
    }
    fn release(&self, features: &Tensor, edges: &[(usize, usize)], seed: u64) -> Result<Vec<(Tensor, Tensor)>> {
        let adj = crafted_operator(features.size()[0] as usize, edges)?;
        tch::manual_seed(seed as i64);
        let mut inputs = vec![features.to_kind(Kind::Float)];
        let mut out = Vec::with_capacity(self.net.depth());
        for s in 0..self.net.depth() {
            let (input, sum) = nap_release(&adj, &self.net.embedding(&inputs, s), self.noise_std);
            inputs.push(sum.shallow_clone());
            out.push((input, sum));
        }
        Ok(out)
    }
}
