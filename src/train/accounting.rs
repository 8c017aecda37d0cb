//! Each method's privacy expression (from `crate::privacy::accountant::methods`, which carries the
//! theorem each follows) paired with its privacy unit, so that training calibrates its noise and
//! reports its budget from one and the same expression:
//! - GAP-EDP: K Gaussian hops at sensitivity sqrt(2), one undirected edge (thesis Prop. 6 prices one
//!   entry of A at sensitivity 1).
//! - GAP-NDP: encoder DP-SGD + K hops at sensitivity sqrt(D) + classifier DP-SGD, one sigma (Prop. 7).
//! - ProGAP-EDP: K NAP queries at sqrt(2) (Theorem 4). ProGAP-NDP: K NAP at sqrt(D) + (K+1) DP-SGD (Theorem 5).
//! - DP-MLP: DP-SGD alone.
//!
//! The DP-SGD schedule is the one the training loop runs: q = B/n and `epochs * floor(n/B)` steps.
use crate::error::Result;
use crate::privacy::accountant::{self as acc, methods, Budget, Event, PrivacyUnit};
use std::cell::RefCell;
use std::collections::HashMap;

pub use crate::privacy::accountant::default_delta;
pub use crate::privacy::accountant::SgdSchedule;

/// A method's composed event as a function of its noise multiplier sigma.
pub struct Expression {
    pub unit: PrivacyUnit,
    pub event: Box<dyn Fn(f64) -> Event>,
}

/// How a caller wants its budgets computed, and the calibrations it has already paid for. The
/// caller owns one value and passes it to every run that should share it (the repeats of
/// `gnnaudit train`, an audit's dry run and its cells): no process-wide switch, no hidden cache.
#[derive(Debug)]
pub struct Accounting {
    pld_epsilon: bool,
    /// Calibrations done through this value: the PLD part of a budget costs seconds, the training
    /// it accounts for sometimes less.
    done: RefCell<HashMap<CalibrationKey, (f64, Budget)>>,
    /// Noise levels calibrated without a budget of their own (the first stage of DP-GNN's and
    /// DPAR's split targets).
    sigmas: RefCell<HashMap<CalibrationKey, f64>>,
}

/// What a calibration depends on: the expression (named by its event at sigma = 1, in canonical
/// JSON, whose shortest round-trip floats tell every two parameters apart), the unit, the target,
/// delta, the accountant calibrated by, and whether the budget carries the PLD epsilon.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CalibrationKey {
    event: String,
    unit: PrivacyUnit,
    target_bits: u64,
    delta_bits: u64,
    accountant: acc::Accountant,
    pld_epsilon: bool,
}

impl Default for Accounting {
    /// Budgets with the PLD epsilon (what `gnnaudit train` states unless `--no-pld`).
    fn default() -> Self {
        Accounting::new(true)
    }
}

impl Accounting {
    /// `pld_epsilon`: whether budgets also state the PLD epsilon (seconds each); without it they
    /// state the RDP epsilon only (`gnnaudit train --no-pld`, replay, the tests).
    pub fn new(pld_epsilon: bool) -> Self {
        Accounting { pld_epsilon, done: RefCell::new(HashMap::new()), sigmas: RefCell::new(HashMap::new()) }
    }
    /// Budgets by RDP only.
    pub fn rdp_only() -> Self {
        Accounting::new(false)
    }
    pub fn pld_epsilon(&self) -> bool {
        self.pld_epsilon
    }
    /// How many calibrations this value holds (a caller sharing it pays for each once).
    pub fn calibrations(&self) -> usize {
        self.done.borrow().len() + self.sigmas.borrow().len()
    }

    /// Calibrates the noise of `event_for` to (target, delta) by `accountant`, without a budget:
    /// for methods that split their target between mechanisms (DP-GNN's test-time release and
    /// DP-SGD, DPAR's DP-APPR and DP-SGD) and record one budget for the whole ([`Self::budget_of`]).
    pub fn calibrate_sigma(
        &self,
        unit: PrivacyUnit,
        accountant: acc::Accountant,
        target: f64,
        delta: f64,
        event_for: impl Fn(f64) -> Event,
    ) -> Result<f64> {
        let key = CalibrationKey {
            event: serde_json::to_string(&event_for(1.0))?,
            unit,
            target_bits: target.to_bits(),
            delta_bits: delta.to_bits(),
            accountant,
            pld_epsilon: false,
        };
        if let Some(hit) = self.sigmas.borrow().get(&key) {
            return Ok(*hit);
        }
        let sigma = acc::calibrate_by(accountant, target, delta, event_for)?;
        self.sigmas.borrow_mut().insert(key, sigma);
        Ok(sigma)
    }

    /// Calibrates sigma of `expr` to (target, delta) by `accountant` and returns sigma with the
    /// budget it spends. Under PLD the budget always carries the PLD epsilon (even for an
    /// RDP-only accounting): it is the claim.
    pub fn calibrate(
        &self,
        expr: &Expression,
        accountant: acc::Accountant,
        target: f64,
        delta: f64,
    ) -> Result<(f64, Budget)> {
        let key = CalibrationKey {
            event: serde_json::to_string(&(expr.event)(1.0))?,
            unit: expr.unit,
            target_bits: target.to_bits(),
            delta_bits: delta.to_bits(),
            accountant,
            pld_epsilon: self.pld_epsilon,
        };
        if let Some(hit) = self.done.borrow().get(&key) {
            return Ok(hit.clone());
        }
        let sigma = acc::calibrate_by(accountant, target, delta, |s| (expr.event)(s))?;
        let budget = match accountant {
            acc::Accountant::Rdp => self.budget(expr, sigma, Some(target), delta)?,
            acc::Accountant::Pld => {
                acc::budget(&(expr.event)(sigma), expr.unit, Some(target), delta, vec![("sigma".into(), sigma)])?
            }
        };
        self.done.borrow_mut().insert(key, (sigma, budget.clone()));
        Ok((sigma, budget))
    }

    /// The budget (RDP and, if asked for, PLD epsilon, per-component breakdown) `expr` spends at
    /// a given sigma.
    pub fn budget(&self, expr: &Expression, sigma: f64, target: Option<f64>, delta: f64) -> Result<Budget> {
        self.budget_of(&(expr.event)(sigma), expr.unit, target, delta, vec![("sigma".into(), sigma)])
    }

    /// The budget `event` spends (RDP and, if asked for, PLD epsilon, per-component breakdown),
    /// with the run's noise levels and figures in `noise`.
    pub fn budget_of(
        &self,
        event: &Event,
        unit: PrivacyUnit,
        target: Option<f64>,
        delta: f64,
        noise: Vec<(String, f64)>,
    ) -> Result<Budget> {
        if self.pld_epsilon {
            return acc::budget(event, unit, target, delta, noise);
        }
        let total = acc::rdp_epsilon(event, delta)?;
        let components = event
            .components()
            .into_iter()
            .map(|(name, e)| {
                Ok(acc::BudgetComponent {
                    mechanism: e.normalized().to_string(),
                    epsilon: acc::rdp_epsilon(&e, delta)?.epsilon,
                    name,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Budget {
            privacy_unit: unit,
            target_epsilon: target,
            delta,
            epsilon_rdp: total.epsilon,
            rdp_order: total.order,
            epsilon_pld: None,
            pld_fallback: None,
            event: Some(event.clone()),
            noise,
            components,
        })
    }
}

/// GAP's edge-level expression for one undirected edge (sigma is the aggregation noise std).
pub fn gap_edge(hops: usize) -> Expression {
    Expression { unit: PrivacyUnit::Edge, event: Box::new(move |s| methods::gap_undirected_edge(hops as u64, s)) }
}

pub fn gap_node(hops: usize, max_degree: usize, encoder: SgdSchedule, classifier: SgdSchedule) -> Expression {
    Expression {
        unit: PrivacyUnit::Node,
        event: Box::new(move |s| methods::gap_node(hops as u64, max_degree as u64, s, Some(encoder), classifier)),
    }
}

/// ProGAP's edge-level expression for one undirected edge (sigma is the aggregation noise std).
pub fn progap_edge(depth: usize) -> Expression {
    Expression { unit: PrivacyUnit::Edge, event: Box::new(move |s| methods::progap_undirected_edge(depth as u64, s)) }
}

pub fn progap_node(depth: usize, max_degree: usize, per_stage: SgdSchedule) -> Expression {
    Expression {
        unit: PrivacyUnit::Node,
        event: Box::new(move |s| methods::progap_node(depth as u64, max_degree as u64, s, per_stage)),
    }
}

pub fn dp_sgd(schedule: SgdSchedule) -> Expression {
    Expression {
        unit: PrivacyUnit::Node,
        event: Box::new(move |s| methods::dp_sgd(schedule.sample_rate, schedule.steps, s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache is keyed on the event: two expressions that differ in one parameter never share
    /// a calibration, a repeat is served from the cache, and an RDP-only accounting neither
    /// states the PLD epsilon nor reuses a calibration made with it.
    #[test]
    fn calibrations_are_cached_per_event_and_per_accounting() {
        let acct = Accounting::default();
        let (two, b2) = acct.calibrate(&gap_edge(2), acc::Accountant::Rdp, 1.0, 1e-5).unwrap();
        let (three, _) = acct.calibrate(&gap_edge(3), acc::Accountant::Rdp, 1.0, 1e-5).unwrap();
        assert!(three > two, "3 hops need more noise than 2: {three} vs {two}");
        assert_eq!(acct.done.borrow().len(), 2);
        assert_eq!(acct.calibrate(&gap_edge(2), acc::Accountant::Rdp, 1.0, 1e-5).unwrap(), (two, b2.clone()));
        assert_eq!(acct.done.borrow().len(), 2, "a repeat is a cache hit");
        assert!(b2.epsilon_pld.is_some());

        let rdp = Accounting::rdp_only();
        let (sigma, b) = rdp.calibrate(&gap_edge(2), acc::Accountant::Rdp, 1.0, 1e-5).unwrap();
        assert_eq!(sigma, two);
        assert_eq!(b.epsilon_pld, None);
        assert_eq!(b.epsilon_rdp, b2.epsilon_rdp);
        assert_eq!(rdp.budget(&gap_edge(2), sigma, Some(1.0), 1e-5).unwrap(), b);
    }

    /// One undirected edge is two entries of A: the calibrated aggregation noise is sqrt(2) times
    /// what the papers' one-entry unit needs (a Gaussian's privacy depends on std / sensitivity).
    #[test]
    fn one_undirected_edge_needs_sqrt2_times_the_noise_of_one_entry() {
        let acct = Accounting::rdp_only();
        let entry = Expression { unit: PrivacyUnit::Edge, event: Box::new(|s| methods::gap_edge(2, s)) };
        let (undirected, _) = acct.calibrate(&gap_edge(2), acc::Accountant::Rdp, 1.0, 1e-5).unwrap();
        let (one_entry, _) = acct.calibrate(&entry, acc::Accountant::Rdp, 1.0, 1e-5).unwrap();
        let ratio = undirected / one_entry;
        assert!((ratio - std::f64::consts::SQRT_2).abs() < 1e-4, "std ratio {ratio}, not sqrt(2)");
    }
}
