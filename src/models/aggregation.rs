//! Aggregation perturbation: GAP's Private Multi-hop Aggregation (thesis Algorithm 5) and
//! ProGAP's Normalize-Aggregate-Perturb (Eq. 5.8). Both use SUM aggregation `A^T X` as one sparse
//! matmul, whose edge-level sensitivity is 1 on row-normalised inputs (Lemma 6); at node level, on
//! graphs of out-degree <= D, a node changes at most D rows by a unit vector each (Lemma 8), so
//! node-level methods add noise with std sigma sqrt(D).
use crate::data::Graph;
use crate::models::row_normalize;
use tch::Tensor;

/// The sparse aggregation operator `A^T` (row v sums v's in-neighbours), in CSR for fast spmm.
/// The graph is already this CSR (rows sorted, no duplicates), so its arrays go to libtorch as
/// they are: building a COO and converting it held three more copies of the edges and sorted
/// them (about 40 bytes per edge at the peak, 3.7 GB on a Reddit-sized graph).
pub fn aggregation_operator(g: &Graph) -> Tensor {
    let n = g.num_nodes() as i64;
    let cpu = (tch::Kind::Float, tch::Device::Cpu);
    let crow = Tensor::from_slice(&g.indptr().iter().map(|&p| p as i64).collect::<Vec<_>>());
    let col = Tensor::from_slice(&g.indices().iter().map(|&u| u as i64).collect::<Vec<_>>());
    let values = Tensor::ones([g.num_directed_edges() as i64], cpu);
    Tensor::sparse_csr_tensor_crow_col_value_size(&crow, &col, &values, [n, n], cpu).to_device(crate::device::current())
}

/// `A^T x` plus N(0, std^2) on every entry (no noise when std = 0).
pub fn perturbed_sum(adj: &Tensor, x: &Tensor, std: f64) -> Tensor {
    // A white box differentiates through the sum: then libtorch's product, which autograd knows.
    let s = if x.requires_grad() || adj.requires_grad() { adj.mm(x) } else { super::sparse::mm(adj, x) };
    if std > 0.0 {
        &s + s.randn_like() * std
    } else {
        s
    }
}

/// PMA (Algorithm 5): from row-normalised `x0`, K times aggregate, perturb, row-normalise.
/// Returns [x0, x1, ..., xK], each row of unit norm.
pub fn pma(adj: &Tensor, x0: &Tensor, hops: usize, std: f64) -> Vec<Tensor> {
    let releases = pma_releases(adj, x0, hops, std);
    let mut out: Vec<Tensor> = releases.iter().map(|(input, _)| input.shallow_clone()).collect();
    out.push(match releases.last() {
        Some((_, sum)) => row_normalize(sum),
        None => row_normalize(x0),
    });
    out
}

/// PMA as the edge-level guarantee sees it: per hop, the unit-norm rows it aggregates and the
/// noisy sums it releases (the Gaussian mechanism's outputs; later steps only post-process them).
/// The in-pipeline canary audit reads these; `pma` is built on them so both run the same code.
pub fn pma_releases(adj: &Tensor, x0: &Tensor, hops: usize, std: f64) -> Vec<(Tensor, Tensor)> {
    tch::no_grad(|| {
        let mut input = row_normalize(x0);
        let mut out = Vec::with_capacity(hops);
        for _ in 0..hops {
            let sum = perturbed_sum(adj, &input, std);
            let next = row_normalize(&sum);
            out.push((input, sum));
            input = next;
        }
        out
    })
}

/// NAP (ProGAP Eq. 5.8): row-normalise, aggregate, perturb (the output is not normalised).
pub fn nap(adj: &Tensor, x: &Tensor, std: f64) -> Tensor {
    nap_release(adj, x, std).1
}

/// NAP with the unit-norm rows it aggregated, for the in-pipeline canary audit.
pub fn nap_release(adj: &Tensor, x: &Tensor, std: f64) -> (Tensor, Tensor) {
    tch::no_grad(|| {
        let input = row_normalize(x);
        let sum = perturbed_sum(adj, &input, std);
        (input, sum)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Kind, Tensor};

    fn ring(n: usize) -> Graph {
        let e: Vec<(usize, usize)> = (0..n).flat_map(|i| [(i, (i + 1) % n), ((i + 1) % n, i)]).collect();
        Graph::from_edges(n, e).unwrap()
    }

    #[test]
    fn operator_is_the_csr_of_the_coo_tensor() {
        let g = Graph::from_edges(5, [(0, 1), (1, 0), (2, 1), (4, 1), (3, 3), (1, 4)]).unwrap();
        let a = aggregation_operator(&g);
        let b = g.aggregation_tensor().to_sparse_csr(None::<i64>);
        assert!(a.crow_indices().equal(&b.crow_indices()) && a.col_indices().equal(&b.col_indices()));
        assert!(a.values().equal(&b.values()) && a.size() == b.size());
        let x = Tensor::randn([5, 3], (Kind::Float, tch::Device::Cpu));
        assert!(a.mm(&x).equal(&b.mm(&x)));
    }

    #[test]
    fn pma_rows_are_unit_norm_and_hop_zero_is_the_normalised_input() {
        tch::manual_seed(0);
        let g = ring(50);
        let x = Tensor::randn([50, 8], (Kind::Float, tch::Device::Cpu)) * 5.0;
        let out = pma(&aggregation_operator(&g), &x, 3, 0.7);
        assert_eq!(out.len(), 4);
        for t in &out {
            let norms = t.square().sum_dim_intlist([1i64].as_slice(), false, Kind::Float).sqrt();
            assert!((norms - 1.0).abs().max().double_value(&[]) < 1e-5);
        }
        assert!((&out[0] - row_normalize(&x)).abs().max().double_value(&[]) < 1e-6);
    }

    #[test]
    fn aggregation_is_the_sum_over_in_neighbours() {
        let g = Graph::from_edges(3, [(0, 2), (1, 2), (2, 0)]).unwrap();
        let x = Tensor::from_slice(&[1f32, 0., 0., 1., 3., 4.]).reshape([3, 2]);
        let s = perturbed_sum(&aggregation_operator(&g), &x, 0.0);
        let want = Tensor::from_slice(&[3f32, 4., 0., 0., 1., 1.]).reshape([3, 2]);
        assert!((s - want).abs().max().double_value(&[]) < 1e-6);
    }

    #[test]
    fn perturbation_noise_has_variance_sigma_squared() {
        tch::manual_seed(1);
        let g = ring(2000);
        let x = row_normalize(&Tensor::randn([2000, 16], (Kind::Float, tch::Device::Cpu)));
        let adj = aggregation_operator(&g);
        let sigma = 1.7;
        let noise = perturbed_sum(&adj, &x, sigma) - perturbed_sum(&adj, &x, 0.0);
        let var = noise.var(true).double_value(&[]);
        // 32,000 draws: the sample variance has relative s.e. sqrt(2/n) = 0.8%.
        assert!((var / (sigma * sigma) - 1.0).abs() < 0.04, "variance {var}");
        assert!(noise.mean(Kind::Float).double_value(&[]).abs() < 0.05);
        // NAP does not renormalise its output: on a ring a row is the sum of two unit vectors.
        let y = nap(&adj, &(&x * 3.0), 0.0);
        let norms = y.square().sum_dim_intlist([1i64].as_slice(), false, Kind::Float).sqrt();
        assert!(norms.max().double_value(&[]) > 1.2 && norms.max().double_value(&[]) <= 2.0 + 1e-5);
    }
}
