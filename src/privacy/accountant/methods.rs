//! Each method's privacy budget as one event expression, next to the theorem it follows. Training
//! code calibrates its noise by handing one of these to [`super::calibrate`]; the report states
//! the [`super::budget`] computed from the same expression.
//!
//! Noise-scale conventions: `sigma` is always std / sensitivity of the unit the event names. For
//! node-level aggregation over a graph with degree bound D the sensitivity is sqrt(D) (GAP,
//! Lemma 2 / thesis Lemma 8), which these functions express with
//! [`Event::ScaledSensitivity`]: the aggregation noise std is `sigma * sqrt(D)` and the event
//! records "Gaussian(sigma*sqrt(D)) at sensitivity sqrt(D)".
use super::event::Event;
use serde::{Deserialize, Serialize};

/// A DP-SGD/DP-Adam schedule: Poisson sampling rate q = B/N and the number of steps T.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SgdSchedule {
    pub sample_rate: f64,
    pub steps: u64,
}

impl SgdSchedule {
    pub fn new(sample_rate: f64, steps: u64) -> Self {
        SgdSchedule { sample_rate, steps }
    }
    /// q = batch/N and T = epochs * N // batch, as the GAP/ProGAP reference code computes them.
    pub fn from_epochs(num_units: usize, batch_size: usize, epochs: usize) -> Self {
        SgdSchedule {
            sample_rate: batch_size as f64 / num_units as f64,
            steps: (epochs * num_units / batch_size.max(1)) as u64,
        }
    }
}

/// DP-SGD (Abadi et al. 2016): T steps of the Poisson-subsampled Gaussian with rate q and noise
/// multiplier sigma (clip norm C, noise std sigma*C). Also the budget of DP-MLP.
pub fn dp_sgd(sample_rate: f64, steps: u64, sigma: f64) -> Event {
    Event::poisson_gaussian(sample_rate, sigma).times(steps).labelled("DP-SGD")
}

/// GAP, edge-level (thesis ch.4 Theorem 2 and Proposition 6; GAP paper Theorem 1): the PMA
/// mechanism is K Gaussian aggregations of edge-level sensitivity 1 (Lemma 6), i.e.
/// (alpha, K alpha/(2 sigma^2))-RDP; the encoder and classifier never touch the edges.
/// This is the papers' unit, one entry of A (one directed edge); gnnaudit's edge-level unit is
/// [`gap_undirected_edge`].
pub fn gap_edge(hops: u64, sigma: f64) -> Event {
    Event::gaussian(sigma).times(hops).labelled("PMA aggregation (edge sensitivity 1)")
}

/// The L2 sensitivity of one aggregation to one undirected edge {u, v}: the edge is two entries
/// of A, so removing it changes row v of A^T x by x_u and row u by x_v, two unit-norm rows.
pub const UNDIRECTED_EDGE_SENSITIVITY: f64 = std::f64::consts::SQRT_2;

/// [`gap_edge`] for gnnaudit's edge-level unit, one undirected edge: the same K Gaussian
/// aggregations with noise std `std`, at sensitivity sqrt(2) (the papers' sensitivity 1 covers
/// one direction only). On a directed graph sqrt(2) is an upper bound, so the claim stays sound.
pub fn gap_undirected_edge(hops: u64, std: f64) -> Event {
    Event::gaussian(std)
        .scaled(UNDIRECTED_EDGE_SENSITIVITY)
        .times(hops)
        .labelled("PMA aggregation (one undirected edge: sensitivity sqrt(2))")
}

/// The GAP paper's closed form for [`gap_edge`] (Proposition 6): the classic conversion minimised
/// over real alpha, eps = K/(2 sigma^2) + sqrt(2 K log(1/delta))/sigma at
/// alpha* = 1 + sigma sqrt(2 log(1/delta)/K). Returns (eps, alpha*).
pub fn gap_edge_closed_form(hops: u64, sigma: f64, delta: f64) -> (f64, f64) {
    let (k, l) = (hops as f64, (1.0 / delta).ln());
    (k / (2.0 * sigma * sigma) + (2.0 * k * l).sqrt() / sigma, 1.0 + sigma * (2.0 * l / k).sqrt())
}

/// Inverse of [`gap_edge_closed_form`]: sigma = sqrt(K/2) / (sqrt(log(1/delta) + eps) - sqrt(log(1/delta))).
pub fn gap_edge_closed_form_sigma(hops: u64, epsilon: f64, delta: f64) -> f64 {
    let l = (1.0 / delta).ln();
    (hops as f64 / 2.0).sqrt() / ((l + epsilon).sqrt() - l.sqrt())
}

/// GAP, node-level, with one shared noise scale `sigma` as the GAP paper and code use it (thesis
/// ch.4 Theorem 3, Lemma 8 and Proposition 7): K PMA aggregations with node-level sensitivity
/// sqrt(D) and noise std sigma*sqrt(D), i.e. (alpha, D K alpha/(2 (sigma sqrt D)^2))-RDP, plus
/// DP-SGD with noise multiplier sigma for the encoder (if pre-trained) and the classifier.
pub fn gap_node(
    hops: u64,
    max_degree: u64,
    sigma: f64,
    encoder: Option<SgdSchedule>,
    classifier: SgdSchedule,
) -> Event {
    gap_node_general(
        hops,
        max_degree,
        sigma * (max_degree as f64).sqrt(),
        encoder.map(|s| (s, sigma)),
        (classifier, sigma),
    )
}

/// [`gap_node`] with separate noise levels: aggregation std `sigma_agg` (sensitivity sqrt(D)), and
/// a (schedule, noise multiplier) per DP-SGD module (Proposition 7 with eps_1, eps_5 from DP-SGD).
pub fn gap_node_general(
    hops: u64,
    max_degree: u64,
    sigma_agg: f64,
    encoder: Option<(SgdSchedule, f64)>,
    classifier: (SgdSchedule, f64),
) -> Event {
    let mut parts = vec![];
    if let Some((s, sigma)) = encoder {
        if s.steps > 0 {
            parts.push(Event::poisson_gaussian(s.sample_rate, sigma).times(s.steps).labelled("encoder DP-SGD"));
        }
    }
    parts.push(
        Event::gaussian(sigma_agg)
            .scaled((max_degree as f64).sqrt())
            .times(hops)
            .labelled("PMA aggregation (node sensitivity sqrt(D))"),
    );
    let (s, sigma) = classifier;
    parts.push(Event::poisson_gaussian(s.sample_rate, sigma).times(s.steps).labelled("classifier DP-SGD"));
    Event::Composed(parts)
}

/// ProGAP, edge-level (thesis ch.5 Theorem 4): the NAP mechanism (edge sensitivity 1) is invoked
/// once per stage 1..K thanks to caching, so K Gaussians: (alpha, K alpha/(2 sigma^2))-RDP.
pub fn progap_edge(stages: u64, sigma: f64) -> Event {
    Event::gaussian(sigma).times(stages).labelled("NAP aggregation (edge sensitivity 1)")
}

/// [`progap_edge`] for one undirected edge (sensitivity sqrt(2), as [`gap_undirected_edge`]).
pub fn progap_undirected_edge(stages: u64, std: f64) -> Event {
    Event::gaussian(std)
        .scaled(UNDIRECTED_EDGE_SENSITIVITY)
        .times(stages)
        .labelled("NAP aggregation (one undirected edge: sensitivity sqrt(2))")
}

/// ProGAP, node-level with one shared noise scale (thesis ch.5 Theorem 5): K NAP aggregations of
/// node-level sensitivity sqrt(D) (noise std sigma*sqrt(D)) and K+1 DP-SGD runs (one per stage
/// 0..K) of T Poisson-subsampled Gaussian steps with noise multiplier sigma. Theorem 5 evaluates
/// the DP-SGD RDP with Zhu & Wang 2019's integer-order bound; we use the exact subsampled-Gaussian
/// RDP (Mironov et al. 2019), which coincides at integer orders and also covers fractional ones.
pub fn progap_node(stages: u64, max_degree: u64, sigma: f64, sgd: SgdSchedule) -> Event {
    progap_node_general(stages, max_degree, sigma * (max_degree as f64).sqrt(), sgd, sigma)
}

/// [`progap_node`] with separate aggregation std `sigma_agg` and gradient noise multiplier.
pub fn progap_node_general(stages: u64, max_degree: u64, sigma_agg: f64, sgd: SgdSchedule, sigma_sgd: f64) -> Event {
    let mut parts = vec![Event::poisson_gaussian(sgd.sample_rate, sigma_sgd)
        .times(sgd.steps * (stages + 1))
        .labelled("DP-SGD (K+1 stages)")];
    if stages > 0 {
        parts.push(
            Event::gaussian(sigma_agg)
                .scaled((max_degree as f64).sqrt())
                .times(stages)
                .labelled("NAP aggregation (node sensitivity sqrt(D))"),
        );
    }
    Event::Composed(parts)
}

/// DP-GNN (Daigavane et al. 2021, Theorem 1, as used for the SAGE-NDP baseline of thesis ch.4-5):
/// node-level DP-SGD on a graph with degree bound K, batches of m nodes sampled uniformly without
/// replacement, noise std = noise_scale * 2(K+1)C; see [`Event::Dpgnn`] for the hypergeometric
/// RDP bound. Inference-time noisy aggregation is a separate Gaussian event the caller composes.
pub fn dpgnn(num_nodes: u64, max_degree: u64, batch_size: u64, noise_scale: f64, steps: u64) -> Event {
    Event::Dpgnn { num_nodes, max_degree, batch_size, noise_multiplier: noise_scale, steps }
        .labelled("DP-GNN node-level DP-SGD (hypergeometric amplification)")
}

/// LPGNN (thesis ch.3, Corollary 2): the multi-bit feature mechanism is eps_x-LDP and label
/// randomized response eps_y-LDP, so the whole pipeline is (eps_x + eps_y)-LDP; KProp and Drop
/// only post-process. An infinite part (no perturbation) is left out and must be reported as
/// non-private by the caller.
pub fn lpgnn(eps_x: f64, eps_y: f64) -> Event {
    let mut parts = vec![];
    if eps_x.is_finite() {
        parts.push(Event::PureDp { epsilon: eps_x }.labelled("multi-bit features (eps_x)"));
    }
    if eps_y.is_finite() {
        parts.push(Event::PureDp { epsilon: eps_y }.labelled("label randomized response (eps_y)"));
    }
    Event::Composed(parts)
}

/// EdgeRand / SAGE-EDP: asymmetric randomized response on each adjacency bit (Imola, Murakami &
/// Chaudhuri 2022, "Communication-efficient triangle counting under local DP"; as used in thesis
/// ch.4-5): a released bit satisfies eps-edge-LDP, and adding/removing one edge flips one bit, so
/// the graph release is eps edge-level DP (pure).
pub fn edge_rand(epsilon: f64) -> Event {
    Event::PureDp { epsilon }.labelled("asymmetric randomized response on the adjacency")
}

/// A model that never reads the protected unit (the MLP at edge level reads no edge): no
/// mechanism, the empty composition, epsilon 0 at delta 0 ([`super::pure_budget`]).
pub fn no_mechanism() -> Event {
    Event::Composed(vec![])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::accountant::rdp::{rdp_curve, rdp_epsilon};

    #[test]
    fn gap_node_shared_scale_matches_the_gapstyle_expression() {
        // sigma_agg = s sqrt(D): the PMA part is K alpha/(2 s^2) regardless of D.
        let sched = SgdSchedule::new(0.0256, 3906);
        let e = gap_node(1, 100, 1.5, Some(sched), sched);
        let orders = [2.0, 8.0];
        let c = rdp_curve(&e, &orders);
        let sgm = rdp_curve(&Event::poisson_gaussian(0.0256, 1.5).times(3906 * 2), &orders);
        for i in 0..2 {
            assert!((c[i] - sgm[i] - orders[i] / (2.0 * 1.5 * 1.5)).abs() < 1e-9);
        }
        assert_eq!(e.components().len(), 3);
    }

    #[test]
    fn lpgnn_is_additive() {
        let r = rdp_epsilon(&lpgnn(1.0, 2.0), 1e-5).unwrap();
        assert_eq!(r.epsilon, 3.0);
        assert_eq!(r.order, None);
    }

    #[test]
    fn closed_form_matches_golden_case() {
        // gap_edge_K1_s1_d1e-06
        let (e, a) = gap_edge_closed_form(1, 1.0, 1e-6);
        assert!((e - 5.756521769756932).abs() < 1e-12 && (a - 6.256521769756932).abs() < 1e-12);
        let s = gap_edge_closed_form_sigma(1, e, 1e-6);
        assert!((s - 1.0).abs() < 1e-9);
    }
}
