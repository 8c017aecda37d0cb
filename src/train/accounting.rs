//! Each method's privacy expression (from `crate::privacy::accountant::methods`, which carries the
//! theorem each follows) paired with its privacy unit, so that training calibrates its noise and
//! reports its budget from one and the same expression:
//! - GAP-EDP: K Gaussian hops at sensitivity 1 (thesis Prop. 6).
//! - GAP-NDP: encoder DP-SGD + K hops at sensitivity sqrt(D) + classifier DP-SGD, one sigma (Prop. 7).
//! - ProGAP-EDP: K NAP queries (Theorem 4). ProGAP-NDP: K NAP at sqrt(D) + (K+1) DP-SGD (Theorem 5).
//! - DP-MLP: DP-SGD alone.
//!
//! The DP-SGD schedule is the one the training loop runs: q = B/n and `epochs * floor(n/B)` steps.
use crate::error::Result;
use crate::privacy::accountant::{self as acc, methods, Budget, Event, PrivacyUnit};

pub use crate::privacy::accountant::default_delta;
pub use crate::privacy::accountant::SgdSchedule;

/// A method's composed event as a function of its noise multiplier sigma.
pub struct Expression {
    pub unit: PrivacyUnit,
    pub event: Box<dyn Fn(f64) -> Event>,
}

thread_local! {
    /// Calibrations already done in this process (repeats of a run share them): the PLD part of a
    /// budget costs seconds, the training it accounts for sometimes less.
    static DONE: std::cell::RefCell<Vec<(String, (f64, Budget))>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether budgets include the PLD epsilon (default on; `gnnaudit train --no-pld` turns it off).
static PLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

pub fn set_pld(on: bool) {
    PLD.store(on, std::sync::atomic::Ordering::Relaxed);
}

impl Expression {
    /// Calibrates sigma to (target, delta) and returns sigma with the budget it spends.
    pub fn calibrate(&self, target: f64, delta: f64) -> Result<(f64, Budget)> {
        self.calibrate_by(acc::Accountant::Rdp, target, delta)
    }
    /// [`Expression::calibrate`] by a chosen accountant. Under PLD the budget always carries the
    /// PLD epsilon (even with `--no-pld`): it is the claim.
    pub fn calibrate_by(&self, accountant: acc::Accountant, target: f64, delta: f64) -> Result<(f64, Budget)> {
        let key = format!(
            "{:?}|{target}|{delta}|{:?}|{}|{accountant:?}",
            (self.event)(1.0),
            self.unit,
            PLD.load(std::sync::atomic::Ordering::Relaxed)
        );
        if let Some(hit) = DONE.with(|d| d.borrow().iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())) {
            return Ok(hit);
        }
        let sigma = acc::calibrate_by(accountant, target, delta, |s| (self.event)(s))?;
        let budget = match accountant {
            acc::Accountant::Rdp => self.budget(sigma, Some(target), delta)?,
            acc::Accountant::Pld => {
                acc::budget(&(self.event)(sigma), self.unit, Some(target), delta, vec![("sigma".into(), sigma)])?
            }
        };
        let out = (sigma, budget);
        DONE.with(|d| d.borrow_mut().push((key, out.clone())));
        Ok(out)
    }
    /// The budget (RDP and PLD epsilon, per-component breakdown) spent at a given sigma.
    pub fn budget(&self, sigma: f64, target: Option<f64>, delta: f64) -> Result<Budget> {
        let event = (self.event)(sigma);
        let noise = vec![("sigma".into(), sigma)];
        if PLD.load(std::sync::atomic::Ordering::Relaxed) {
            return acc::budget(&event, self.unit, target, delta, noise);
        }
        let total = acc::rdp_epsilon(&event, delta)?;
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
            privacy_unit: self.unit,
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

pub fn gap_edge(hops: usize) -> Expression {
    Expression { unit: PrivacyUnit::Edge, event: Box::new(move |s| methods::gap_edge(hops as u64, s)) }
}

pub fn gap_node(hops: usize, max_degree: usize, encoder: SgdSchedule, classifier: SgdSchedule) -> Expression {
    Expression {
        unit: PrivacyUnit::Node,
        event: Box::new(move |s| methods::gap_node(hops as u64, max_degree as u64, s, Some(encoder), classifier)),
    }
}

pub fn progap_edge(depth: usize) -> Expression {
    Expression { unit: PrivacyUnit::Edge, event: Box::new(move |s| methods::progap_edge(depth as u64, s)) }
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
