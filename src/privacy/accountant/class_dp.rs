//! Class- and subclass-level DP-SGD accounting (Zhang thesis ch.4 §4.4, Algorithm 5, Theorem 5,
//! Remark 1, Corollary 2).
//!
//! Algorithm 5 samples each *unit* (a class, or a k-means subclass) independently with
//! probability q, averages the gradient over all of a sampled unit's records, clips that mean to
//! S, sums and adds N(0, sigma^2 S^2). Per step this is the Poisson-subsampled Gaussian over units:
//! - unbounded relation (add/remove one whole unit): sensitivity S, `poisson_gaussian(q, sigma)`;
//! - bounded relation (replace one unit, Defs. 7-8): the thesis's Lemma 3 pair compares
//!   (1-q)N(0) + qN(2) with N(0), i.e. sensitivity 2S: `poisson_gaussian(q, sigma).scaled(2)`.
//!   Strictly, replace-one under Poisson sampling compares two mixtures (1-q)N(0)+qN(a) and
//!   (1-q)N(0)+qN(b), ||a-b|| <= 2S; gnnaudit follows the thesis here and prefers the unbounded
//!   relation (its default), whose analysis is the standard one.
//!
//! Both compose over T steps and are converted by the numerical RDP/PLD accountants, not by the
//! thesis's loose closed form, which is kept as `paper_epsilon` ([`theorem5_epsilon`]).
//!
//! Delta policy: publishing one of U units, chosen uniformly at random, in the clear is
//! (0, 1/U)-DP at unit level, so a delta at or above 1/U lets a mechanism release a whole unit
//! outright and still meet the definition: the guarantee says nothing about a class. The thesis's Faces94 runs use
//! delta = 1e-2 with 153 classes (1/153 = 6.5e-3): [`check_unit_delta`] refuses that unless the
//! caller explicitly overrides, and then the run says so loudly.
use super::event::Event;
use crate::ensure;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The unit Algorithm 5 samples and clips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum GroupUnit {
    /// All records of one class (Defs. 7-8).
    Class,
    /// All records of one predefined subclass (k-means within a class; Defs. 9-10).
    Subclass,
}

impl GroupUnit {
    pub fn name(self) -> &'static str {
        match self {
            GroupUnit::Class => "class",
            GroupUnit::Subclass => "subclass",
        }
    }
}

/// The neighbouring relation of class-level DP (thesis Def. 7 bounded, Remark 1 unbounded).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, clap::ValueEnum, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Relation {
    /// Add or remove one whole unit (sensitivity S of the clipped sum).
    #[default]
    Unbounded,
    /// Replace one whole unit (sensitivity 2S, the thesis's Theorem 5).
    Bounded,
}

impl Relation {
    pub fn name(self) -> &'static str {
        match self {
            Relation::Unbounded => "unbounded",
            Relation::Bounded => "bounded",
        }
    }
    /// L2 sensitivity of the sum of clipped unit gradients, in units of the clip S.
    pub fn sensitivity(self) -> f64 {
        match self {
            Relation::Unbounded => 1.0,
            Relation::Bounded => 2.0,
        }
    }
}

/// Algorithm 5's composed event: T steps of the Poisson-subsampled Gaussian over units at rate q
/// and noise multiplier sigma (std sigma S), at the relation's sensitivity.
pub fn class_dp_sgd(unit: GroupUnit, relation: Relation, sample_rate: f64, steps: u64, sigma: f64) -> Event {
    let step = Event::poisson_gaussian(sample_rate, sigma);
    let step = match relation {
        Relation::Unbounded => step,
        Relation::Bounded => step.scaled(2.0),
    };
    step.times(steps).labelled(format!("{}-level DP-SGD ({} relation, Algorithm 5)", unit.name(), relation.name()))
}

/// The thesis's closed form (Theorem 5 bounded, Remark 1 unbounded): sigma^2 = c q^2 T ln(1/delta)
/// / eps^2 with c = 16 (bounded) or 4 (unbounded), read as eps = sqrt(c) q sqrt(T ln(1/delta)) /
/// sigma. Recorded as `paper_epsilon`; it holds only under [`theorem5_rate_bound`].
pub fn theorem5_epsilon(relation: Relation, sample_rate: f64, steps: u64, sigma: f64, delta: f64) -> f64 {
    let c: f64 = match relation {
        Relation::Bounded => 16.0,
        Relation::Unbounded => 4.0,
    };
    c.sqrt() * sample_rate * (steps as f64 * (1.0 / delta).ln()).sqrt() / sigma
}

/// The sigma Theorem 5 / Remark 1 prescribe for a target (eps, delta).
pub fn theorem5_sigma(relation: Relation, sample_rate: f64, steps: u64, epsilon: f64, delta: f64) -> f64 {
    theorem5_epsilon(relation, sample_rate, steps, 1.0, delta) / epsilon
}

/// The largest sampling rate for which Theorem 5 (q < sqrt(eps / (64 sqrt(T ln(1/delta))))) or
/// Remark 1 (32 in place of 64) is stated.
pub fn theorem5_rate_bound(relation: Relation, steps: u64, epsilon: f64, delta: f64) -> f64 {
    let c = match relation {
        Relation::Bounded => 64.0,
        Relation::Unbounded => 32.0,
    };
    (epsilon / (c * (steps as f64 * (1.0 / delta).ln()).sqrt())).sqrt()
}

/// Refuses delta >= 1/units (such a delta lets a mechanism publish one whole unit, e.g. a class,
/// and still meet the definition) unless `allow_large_delta`; then returns the loud warning the run
/// must print and record.
pub fn check_unit_delta(delta: f64, units: usize, unit: GroupUnit, allow_large_delta: bool) -> Result<Option<String>> {
    ensure!(units >= 1, Error::invalid("units", format!("no {} with training records", unit.name())));
    let limit = 1.0 / units as f64;
    if delta < limit {
        return Ok(None);
    }
    let what = format!(
        "delta {} is at or above 1/(number of {} units) = 1/{units} = {}: publishing one {} chosen at random, \
         in the clear, is (0, 1/{units})-DP, so at this delta the guarantee protects no {}",
        crate::error::num(delta),
        unit.name(),
        crate::error::num(limit),
        unit.name(),
        unit.name()
    );
    if allow_large_delta {
        let warning = format!("WARNING: {what} (accepted because of --allow-large-delta)");
        tracing::warn!("{warning}");
        eprintln!("{warning}");
        Ok(Some(warning))
    } else {
        Err(Error::invalid("delta", format!("{what}; use a smaller --delta (or --allow-large-delta to run anyway)")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::accountant::rdp_epsilon;

    /// Bounded replacement is the unbounded event at twice the sensitivity: exactly the unbounded
    /// event at sigma / 2.
    #[test]
    fn bounded_is_unbounded_at_half_sigma() {
        let b = rdp_epsilon(&class_dp_sgd(GroupUnit::Class, Relation::Bounded, 0.33, 300, 2.0), 1e-4).unwrap();
        let u = rdp_epsilon(&class_dp_sgd(GroupUnit::Class, Relation::Unbounded, 0.33, 300, 1.0), 1e-4).unwrap();
        assert!((b.epsilon - u.epsilon).abs() < 1e-9 * u.epsilon, "{} vs {}", b.epsilon, u.epsilon);
    }

    #[test]
    fn thesis_delta_is_refused_and_overridable() {
        // Faces94: 153 classes at delta = 1e-2 (thesis l.894).
        let e = check_unit_delta(1e-2, 153, GroupUnit::Class, false).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("delta") && m.contains("1/153"), "{m}");
        assert_eq!(e.exit_code(), 2);
        let w = check_unit_delta(1e-2, 153, GroupUnit::Class, true).unwrap().unwrap();
        assert!(w.starts_with("WARNING"), "{w}");
        assert_eq!(check_unit_delta(1e-3, 153, GroupUnit::Class, false).unwrap(), None);
    }
}
