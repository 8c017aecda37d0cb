//! The event algebra: each privacy mechanism a method runs is described as an [`Event`]; events
//! compose, and an accountant (RDP in [`super::rdp`], PLD in [`super::pld`]) turns the composed
//! event into (epsilon, delta). The sampling scheme and the neighbouring relation of every event
//! are explicit (as in dp_accounting's `DpEvent`), never implied by the accountant.
use crate::ensure;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A privacy mechanism or a composition of mechanisms.
///
/// Noise multipliers are always `std / L2 sensitivity` of the released quantity.
/// Unless stated otherwise the neighbouring relation is add/remove-one (of an edge for edge-level
/// events, of a node for node-level events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// Gaussian mechanism N(0, (noise_multiplier * Delta)^2) on a query of L2 sensitivity Delta.
    /// RDP alpha / (2 sigma^2) (Mironov 2017, Cor. 3).
    Gaussian { noise_multiplier: f64 },
    /// Poisson-subsampled Gaussian: every unit enters the batch independently with probability
    /// `sample_rate`; add/remove-one relation (Mironov, Talwar, Zhang 2019). DP-SGD's step.
    PoissonGaussian { sample_rate: f64, noise_multiplier: f64 },
    /// Gaussian on a fixed-size batch drawn uniformly *without replacement* (sample_rate = m/n),
    /// under the **replace-one** relation, so that `noise_multiplier` is std over the replace-one
    /// sensitivity (2C for a sum of gradients clipped to C). RDP by Wang, Balle & Kasiviswanathan
    /// 2019 (AISTATS), Theorem 9 at integer orders and the CGF interpolation of their Corollary 10
    /// in between.
    WithoutReplacementGaussian { sample_rate: f64, noise_multiplier: f64 },
    /// `count` independent runs of `event` (Mironov 2017, Prop. 1: RDP adds up).
    SelfComposed { event: Box<Event>, count: u64 },
    /// Heterogeneous adaptive composition.
    Composed(Vec<Event>),
    /// `event` run on a query whose L2 sensitivity is `sensitivity` times the unit the inner noise
    /// multiplier refers to: e.g. node-level aggregation over a degree-bounded graph has
    /// sensitivity sqrt(D) (GAP, Lemma 2), so its effective noise multiplier is sigma / sqrt(D).
    /// Applies to the Gaussian-family events only.
    ScaledSensitivity { sensitivity: f64, event: Box<Event> },
    /// A pure epsilon-DP (e.g. local DP) mechanism; pure parts compose additively with the rest:
    /// (eps_1, delta) and (eps_2, 0) give (eps_1 + eps_2, delta) (basic composition).
    PureDp { epsilon: f64 },
    /// Node-level DP-SGD on a graph whose in-degree is bounded by `max_degree` = K, with batches of
    /// `batch_size` nodes drawn uniformly without replacement out of `num_nodes` and `steps` steps
    /// (Daigavane et al. 2021, "Node-level differentially private graph neural networks", Thm. 1):
    /// one node occurs in up to K+1 gradient terms, so with rho ~ Hypergeometric(N, K+1, m),
    /// RDP(alpha) = steps/(alpha-1) * log E_rho[exp(alpha(alpha-1) rho^2 / (2 s^2 (K+1)^2))],
    /// where `noise_multiplier` s = std / (2(K+1)C) (the `noise_scale` of the reference code).
    Dpgnn { num_nodes: u64, max_degree: u64, batch_size: u64, noise_multiplier: f64, steps: u64 },
    /// A named part of a method's budget (shown in the budget breakdown).
    Labelled { label: String, event: Box<Event> },
    /// A rho-zCDP mechanism (Bun & Steinke 2016): RDP rho * alpha at every order. DPAR's Gumbel
    /// top-K picks (a 2 eps-bounded-range mechanism is eps^2/2-zCDP, Cesar & Rogers 2021).
    Zcdp { rho: f64 },
    /// `event` run on a Poisson sample of the units (each kept with probability `rate`), e.g.
    /// DPAR's node subsampling q'. Amplification is applied to the final (eps, delta) of `event`
    /// at delta / rate: (ln(1 + rate (e^eps - 1)), delta) (Balle, Barthe & Gaboardi 2018), so it
    /// is only allowed outermost (labels aside); inside RDP sums it counts as `event` itself
    /// (subsampling never increases a Renyi divergence).
    NodeSubsampled { rate: f64, event: Box<Event> },
}

impl Event {
    pub fn gaussian(noise_multiplier: f64) -> Event {
        Event::Gaussian { noise_multiplier }
    }
    pub fn poisson_gaussian(sample_rate: f64, noise_multiplier: f64) -> Event {
        Event::PoissonGaussian { sample_rate, noise_multiplier }
    }
    /// `self` repeated `count` times.
    pub fn times(self, count: u64) -> Event {
        Event::SelfComposed { event: Box::new(self), count }
    }
    /// `self` with a name for the budget breakdown.
    pub fn labelled(self, label: impl Into<String>) -> Event {
        Event::Labelled { label: label.into(), event: Box::new(self) }
    }
    /// `self` applied to a query of the given sensitivity.
    pub fn scaled(self, sensitivity: f64) -> Event {
        Event::ScaledSensitivity { sensitivity, event: Box::new(self) }
    }

    /// Checks every parameter once, before any accounting work; names the offending parameter.
    pub fn validate(&self) -> Result<()> {
        fn sigma_ok(s: f64) -> Result<()> {
            ensure!(
                s.is_finite() && s > 0.0,
                Error::invalid("sigma", format!("noise multiplier must be > 0 and finite, got {s}"))
            );
            Ok(())
        }
        fn rate_ok(q: f64) -> Result<()> {
            ensure!(
                q > 0.0 && q <= 1.0,
                Error::invalid("sample-rate", format!("sampling rate must be in (0, 1], got {q}"))
            );
            Ok(())
        }
        match self {
            Event::Gaussian { noise_multiplier } => sigma_ok(*noise_multiplier),
            Event::PoissonGaussian { sample_rate, noise_multiplier }
            | Event::WithoutReplacementGaussian { sample_rate, noise_multiplier } => {
                rate_ok(*sample_rate)?;
                sigma_ok(*noise_multiplier)
            }
            Event::SelfComposed { event, count } => {
                ensure!(*count >= 1, Error::invalid("steps", "the number of compositions must be at least 1"));
                event.validate()
            }
            Event::Composed(events) => events.iter().try_for_each(Event::validate),
            Event::ScaledSensitivity { sensitivity, event } => {
                ensure!(
                    sensitivity.is_finite() && *sensitivity > 0.0,
                    Error::invalid("sensitivity", format!("must be > 0 and finite, got {sensitivity}"))
                );
                ensure!(
                    event.is_gaussian_family(),
                    Error::invalid("sensitivity", "sensitivity scaling applies to Gaussian-family events only")
                );
                event.validate()
            }
            Event::PureDp { epsilon } => {
                ensure!(
                    epsilon.is_finite() && *epsilon > 0.0,
                    Error::invalid("epsilon", format!("a pure-DP mechanism needs 0 < epsilon < inf, got {epsilon}"))
                );
                Ok(())
            }
            Event::Dpgnn { num_nodes, max_degree, batch_size, noise_multiplier, steps } => {
                ensure!(*num_nodes >= 1, Error::invalid("num-nodes", "must be at least 1"));
                ensure!(*max_degree >= 1, Error::invalid("degree", "the degree bound must be at least 1"));
                ensure!(
                    *batch_size >= 1 && batch_size <= num_nodes,
                    Error::invalid("batch-size", format!("must be in [1, {num_nodes}], got {batch_size}"))
                );
                ensure!(*steps >= 1, Error::invalid("steps", "must be at least 1"));
                sigma_ok(*noise_multiplier)
            }
            Event::Labelled { event, .. } => event.validate(),
            Event::Zcdp { rho } => {
                ensure!(
                    rho.is_finite() && *rho > 0.0,
                    Error::invalid("rho", format!("must be > 0 and finite, got {rho}"))
                );
                Ok(())
            }
            Event::NodeSubsampled { rate, event } => {
                ensure!(
                    *rate > 0.0 && *rate <= 1.0,
                    Error::invalid("q_prime", format!("node sampling rate must be in (0, 1], got {rate}"))
                );
                ensure!(
                    !event.has_node_subsampling(),
                    Error::invalid("q_prime", "node subsampling may wrap a whole mechanism only once")
                );
                event.validate()
            }
        }
    }

    /// Whether a `NodeSubsampled` occurs anywhere in the event.
    pub fn has_node_subsampling(&self) -> bool {
        match self {
            Event::NodeSubsampled { .. } => true,
            Event::SelfComposed { event, .. }
            | Event::ScaledSensitivity { event, .. }
            | Event::Labelled { event, .. } => event.has_node_subsampling(),
            Event::Composed(events) => events.iter().any(Event::has_node_subsampling),
            _ => false,
        }
    }

    /// The outermost node subsampling (labels skipped): (rate, inner event).
    pub fn outer_node_subsampling(&self) -> Option<(f64, &Event)> {
        match self {
            Event::NodeSubsampled { rate, event } => Some((*rate, event)),
            Event::Labelled { event, .. } => event.outer_node_subsampling(),
            _ => None,
        }
    }

    fn is_gaussian_family(&self) -> bool {
        match self {
            Event::Gaussian { .. } | Event::PoissonGaussian { .. } | Event::WithoutReplacementGaussian { .. } => true,
            Event::SelfComposed { event, .. }
            | Event::ScaledSensitivity { event, .. }
            | Event::Labelled { event, .. } => event.is_gaussian_family(),
            Event::Composed(events) => events.iter().all(Event::is_gaussian_family),
            Event::PureDp { .. } | Event::Dpgnn { .. } | Event::Zcdp { .. } | Event::NodeSubsampled { .. } => false,
        }
    }

    /// The same event with every `ScaledSensitivity` pushed into the noise multipliers and every
    /// label removed: the canonical form the accountants work on.
    pub fn normalized(&self) -> Event {
        fn go(e: &Event, scale: f64) -> Event {
            match e {
                Event::Gaussian { noise_multiplier } => Event::Gaussian { noise_multiplier: noise_multiplier / scale },
                Event::PoissonGaussian { sample_rate, noise_multiplier } => {
                    Event::PoissonGaussian { sample_rate: *sample_rate, noise_multiplier: noise_multiplier / scale }
                }
                Event::WithoutReplacementGaussian { sample_rate, noise_multiplier } => {
                    Event::WithoutReplacementGaussian {
                        sample_rate: *sample_rate,
                        noise_multiplier: noise_multiplier / scale,
                    }
                }
                Event::SelfComposed { event, count } => {
                    Event::SelfComposed { event: Box::new(go(event, scale)), count: *count }
                }
                Event::Composed(events) => Event::Composed(events.iter().map(|e| go(e, scale)).collect()),
                Event::ScaledSensitivity { sensitivity, event } => go(event, scale * sensitivity),
                Event::Labelled { event, .. } => go(event, scale),
                Event::PureDp { .. } | Event::Dpgnn { .. } | Event::Zcdp { .. } => e.clone(),
                Event::NodeSubsampled { rate, event } => {
                    Event::NodeSubsampled { rate: *rate, event: Box::new(go(event, scale)) }
                }
            }
        }
        go(self, 1.0)
    }

    /// Sum of the pure-DP epsilons in the event (each counted as many times as it is composed).
    pub fn pure_epsilon(&self) -> f64 {
        match self {
            Event::PureDp { epsilon } => *epsilon,
            Event::SelfComposed { event, count } => event.pure_epsilon() * (*count as f64),
            Event::Composed(events) => events.iter().map(Event::pure_epsilon).sum(),
            Event::ScaledSensitivity { event, .. } | Event::Labelled { event, .. } => event.pure_epsilon(),
            Event::NodeSubsampled { rate, event } => (rate * event.pure_epsilon().exp_m1()).ln_1p(),
            _ => 0.0,
        }
    }

    /// The DP-SGD steps of this event alone (Poisson- or uniformly-sampled Gaussian steps and
    /// DP-GNN's), with their multiplicities, sensitivities and labels: the mechanism a canary
    /// gradient planted in those steps faces. A node subsampling around them is dropped (a
    /// canary enters the steps directly, unamplified). None where no DP-SGD runs.
    pub fn dp_sgd_part(&self) -> Option<Event> {
        match self {
            Event::PoissonGaussian { .. } | Event::WithoutReplacementGaussian { .. } | Event::Dpgnn { .. } => {
                Some(self.clone())
            }
            Event::SelfComposed { event, count } => event.dp_sgd_part().map(|e| e.times(*count)),
            Event::Composed(events) => {
                let mut parts: Vec<Event> = events.iter().filter_map(Event::dp_sgd_part).collect();
                match parts.len() {
                    0 => None,
                    1 => parts.pop(),
                    _ => Some(Event::Composed(parts)),
                }
            }
            Event::ScaledSensitivity { sensitivity, event } => event.dp_sgd_part().map(|e| e.scaled(*sensitivity)),
            Event::Labelled { label, event } => event.dp_sgd_part().map(|e| e.labelled(label.clone())),
            Event::NodeSubsampled { event, .. } => event.dp_sgd_part(),
            Event::Gaussian { .. } | Event::PureDp { .. } | Event::Zcdp { .. } => None,
        }
    }

    /// Where every DP-SGD step of this event is node-level DP-SGD (DP-GNN's event, also DPAR's
    /// rows): (population N, terms K+1 a node enters, batch B), the step a gradient canary must
    /// enter as a node does. None for per-example DP-SGD, or DP-SGD parts that differ.
    pub fn node_level_step(&self) -> Option<(u64, u64, u64)> {
        match self {
            Event::Dpgnn { num_nodes, max_degree, batch_size, .. } => {
                Some((*num_nodes, (max_degree + 1).min(*num_nodes), *batch_size))
            }
            Event::SelfComposed { event, .. } | Event::Labelled { event, .. } | Event::NodeSubsampled { event, .. } => {
                event.node_level_step()
            }
            Event::Composed(events) => {
                let steps: Vec<_> = events.iter().filter_map(Event::dp_sgd_part).map(|e| e.node_level_step()).collect();
                steps.first().copied().flatten().filter(|first| steps.iter().all(|s| s == &Some(*first)))
            }
            _ => None,
        }
    }

    /// The outermost labelled sub-events (label, event, multiplicity), in order; used for the
    /// per-component budget breakdown. A labelled event inside a `SelfComposed` is reported with
    /// its composition count folded in.
    pub fn components(&self) -> Vec<(String, Event)> {
        fn go(e: &Event, count: u64, scale: f64, out: &mut Vec<(String, Event)>) {
            match e {
                Event::Labelled { label, event } => {
                    let mut inner = (**event).clone();
                    if scale != 1.0 {
                        inner = inner.scaled(scale);
                    }
                    if count > 1 {
                        inner = inner.times(count);
                    }
                    out.push((label.clone(), inner));
                }
                Event::SelfComposed { event, count: c } => go(event, count * c, scale, out),
                Event::Composed(events) => events.iter().for_each(|x| go(x, count, scale, out)),
                Event::ScaledSensitivity { sensitivity, event } => go(event, count, scale * sensitivity, out),
                _ => {}
            }
        }
        let mut out = vec![];
        if let Some((rate, inner)) = self.outer_node_subsampling() {
            // Each part alone, subsampled as the whole is.
            go(inner, 1, 1.0, &mut out);
            return out.into_iter().map(|(l, e)| (l, Event::NodeSubsampled { rate, event: Box::new(e) })).collect();
        }
        go(self, 1, 1.0, &mut out);
        out
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Gaussian { noise_multiplier } => write!(f, "Gaussian(sigma={noise_multiplier:.4})"),
            Event::PoissonGaussian { sample_rate, noise_multiplier } => {
                write!(f, "PoissonGaussian(q={sample_rate:.4e}, sigma={noise_multiplier:.4})")
            }
            Event::WithoutReplacementGaussian { sample_rate, noise_multiplier } => {
                write!(f, "WorGaussian(m/n={sample_rate:.4e}, sigma={noise_multiplier:.4}, replace-one)")
            }
            Event::SelfComposed { event, count } => write!(f, "{event} x {count}"),
            Event::Composed(events) => {
                write!(f, "[")?;
                for (i, e) in events.iter().enumerate() {
                    if i > 0 {
                        write!(f, " + ")?;
                    }
                    write!(f, "{e}")?;
                }
                write!(f, "]")
            }
            Event::ScaledSensitivity { sensitivity, event } => write!(f, "{event} at sensitivity {sensitivity:.4}"),
            Event::PureDp { epsilon } => write!(f, "PureDP(eps={epsilon})"),
            Event::Dpgnn { num_nodes, max_degree, batch_size, noise_multiplier, steps } => write!(
                f,
                "DP-GNN(N={num_nodes}, K={max_degree}, m={batch_size}, noise_scale={noise_multiplier:.4}) x {steps}"
            ),
            Event::Labelled { label, event } => write!(f, "{label}: {event}"),
            Event::Zcdp { rho } => write!(f, "zCDP(rho={rho:.4e})"),
            Event::NodeSubsampled { rate, event } => write!(f, "node-subsampled(q'={rate}) {{{event}}}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_pushes_sensitivity_into_sigma_and_drops_labels() {
        let e = Event::gaussian(6.0).labelled("pma").scaled(3.0).times(2);
        assert_eq!(e.normalized(), Event::gaussian(2.0).times(2));
    }

    #[test]
    fn components_fold_counts_and_scales() {
        let e = Event::Composed(vec![
            Event::gaussian(4.0).labelled("agg").scaled(2.0).times(3),
            Event::PureDp { epsilon: 1.0 }.labelled("labels"),
        ]);
        let c = e.components();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].0, "agg");
        assert_eq!(c[0].1.normalized(), Event::gaussian(2.0).times(3));
        assert_eq!(e.pure_epsilon(), 1.0);
    }

    #[test]
    fn validation_names_the_parameter() {
        let err = Event::poisson_gaussian(1.5, 1.0).validate().unwrap_err().to_string();
        assert!(err.contains("sample-rate"), "{err}");
        let err = Event::gaussian(0.0).times(3).validate().unwrap_err().to_string();
        assert!(err.contains("sigma"), "{err}");
        let err = Event::gaussian(1.0).times(0).validate().unwrap_err().to_string();
        assert!(err.contains("steps"), "{err}");
    }
}
