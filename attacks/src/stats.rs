//! The one place where a lower bound on epsilon is made from attack scores.
//!
//! An audit hands over the scores of its positives (the private unit present: a member, an
//! inserted canary) and negatives (absent), the claim (epsilon, delta) and an `AuditSpec`: which
//! bound, which threshold strategy, which confidence. Back comes a `Certificate` that names all of
//! them, the number of trials and the threshold used, the game's independence assumption, the
//! bound `eps_lb`, and the largest bound the test could have certified at all (a perfect attack
//! with the same numbers of trials), from which `verdict` tells `violated`, `holds` and
//! `inconclusive` apart.
//!
//! Every bound is a one-sided test at level alpha = 1 - confidence: if the mechanism is
//! (claim, delta)-DP, the probability that `eps_lb` exceeds the claim is at most alpha. That only
//! holds when the threshold (and direction) of the test is not chosen by looking at the data it
//! is certified on, which the strategies ensure:
//! - `split` (default): choose the test on a random part of the trials, certify it on the rest;
//! - `bonferroni`: try every threshold at level alpha / (number of tests);
//! - `explicit`: a threshold fixed in advance ("score >= t means positive").
//!
//! Repeated runs (seeds) are pooled by concatenating their scores into one test: never a maximum
//! over runs.
//!
//! Bounds (semantics of jax_privacy's `CanaryScoreAuditor`):
//! - `clopper-pearson` (Jagielski et al. 2020): one-sided Clopper-Pearson bounds on TPR and FPR,
//!   each at alpha / 2, give eps >= ln((TPR_lo - delta) / FPR_hi); valid for every mechanism.
//! - `gdp` (Nasr et al. 2023): the same two bounds give a lower bound on mu of the Gaussian
//!   trade-off curve, converted to epsilon at delta. It assumes the mechanism's trade-off curve
//!   is Gaussian (Gaussian noise, DP-SGD); for other mechanisms use `clopper-pearson`.
//! - `one-run` (Steinke, Nasr & Jagielski 2023): canaries with independent coins, the auditor
//!   guesses "included" above the threshold and abstains below.
//! - `one-run-fdp` (Mahloujifar, Melis & Chaudhuri 2025): the same guesses, judged against the
//!   Gaussian trade-off curve of (epsilon, delta), which gives tighter bounds for Gaussian noise.
use crate::error::{check, Result};
use crate::metrics::{clopper_pearson_lower, clopper_pearson_upper};
use crate::one_run::one_run_epsilon;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use std::fmt;

/// Which statistical test turns the scores into a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundKind {
    #[default]
    ClopperPearson,
    Gdp,
    OneRun,
    OneRunFdp,
}

impl BoundKind {
    pub const ALL: [BoundKind; 4] =
        [BoundKind::ClopperPearson, BoundKind::Gdp, BoundKind::OneRun, BoundKind::OneRunFdp];
    pub fn name(self) -> &'static str {
        match self {
            BoundKind::ClopperPearson => "clopper-pearson",
            BoundKind::Gdp => "gdp",
            BoundKind::OneRun => "one-run",
            BoundKind::OneRunFdp => "one-run-fdp",
        }
    }
    pub fn parse(s: &str) -> Option<BoundKind> {
        BoundKind::ALL.into_iter().find(|b| b.name() == s)
    }
    /// Two-hypothesis bounds test "high scores are positives" and "low scores are positives";
    /// the one-run bounds only guess "included" for high scores (as jax_privacy does).
    fn two_sided(self) -> bool {
        matches!(self, BoundKind::ClopperPearson | BoundKind::Gdp)
    }
    /// The paper the bound follows and what it assumes, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            BoundKind::ClopperPearson => {
                "Clopper-Pearson two-hypothesis bound (Jagielski et al. 2020): eps >= ln((TPR_lo - delta) / FPR_hi), \
                 valid for every mechanism"
            }
            BoundKind::Gdp => {
                "Gaussian-DP bound (Nasr et al. 2023): a lower confidence bound on mu from TPR/FPR, converted to eps at \
                 the claimed delta; assumes a Gaussian trade-off curve (Gaussian noise, DP-SGD)"
            }
            BoundKind::OneRun => {
                "one-run bound (Steinke, Nasr & Jagielski 2023): correct 'included' guesses among canaries with \
                 independent coins"
            }
            BoundKind::OneRunFdp => {
                "one-run f-DP bound (Mahloujifar, Melis & Chaudhuri 2025): the one-run guesses judged against the \
                 Gaussian trade-off curve of (eps, delta)"
            }
        }
    }
}

/// How the threshold (and direction) of the test is chosen without biasing the bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum ThresholdStrategy {
    /// Choose on a random `fraction` of the positives and of the negatives, certify on the rest.
    Split { fraction: f64 },
    /// Every threshold and direction, each at alpha / (number of tests).
    Bonferroni,
    /// "score >= threshold means positive", fixed before the scores were seen.
    Explicit { threshold: f64 },
}

impl Default for ThresholdStrategy {
    fn default() -> Self {
        ThresholdStrategy::Split { fraction: 0.5 }
    }
}

impl ThresholdStrategy {
    pub fn name(&self) -> &'static str {
        match self {
            ThresholdStrategy::Split { .. } => "split",
            ThresholdStrategy::Bonferroni => "bonferroni",
            ThresholdStrategy::Explicit { .. } => "explicit",
        }
    }
    /// `split`, `split:0.3`, `bonferroni`, `explicit:1.5`.
    pub fn parse(s: &str) -> Option<ThresholdStrategy> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a.parse::<f64>().ok()?)),
            None => (s, None),
        };
        match (name, arg) {
            ("split", None) => Some(ThresholdStrategy::default()),
            ("split", Some(f)) => Some(ThresholdStrategy::Split { fraction: f }),
            ("bonferroni", None) => Some(ThresholdStrategy::Bonferroni),
            ("explicit", Some(t)) => Some(ThresholdStrategy::Explicit { threshold: t }),
            _ => None,
        }
    }
}

impl fmt::Display for ThresholdStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdStrategy::Split { fraction } => {
                write!(f, "split (threshold chosen on {:.0}% of the trials)", fraction * 100.0)
            }
            ThresholdStrategy::Bonferroni => f.write_str("bonferroni (over every threshold)"),
            ThresholdStrategy::Explicit { threshold } => write!(f, "explicit (threshold {threshold})"),
        }
    }
}

/// What to certify, and how.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AuditSpec {
    pub bound: BoundKind,
    pub strategy: ThresholdStrategy,
    /// 1 - alpha: the probability that the bound does not exceed the true epsilon.
    pub confidence: f64,
    /// The claim's delta, at which the bound is computed.
    pub delta: f64,
    /// Seeds the random split (the `split` strategy).
    pub seed: u64,
}

impl AuditSpec {
    pub fn new(bound: BoundKind, delta: f64) -> Self {
        AuditSpec { bound, strategy: ThresholdStrategy::default(), confidence: 0.95, delta, seed: 0 }
    }
    pub fn validate(&self) -> Result<()> {
        check!(self.confidence > 0.0 && self.confidence < 1.0, "confidence", "{} is outside (0, 1)", self.confidence);
        check!((0.0..1.0).contains(&self.delta), "delta", "{} is outside [0, 1)", self.delta);
        if matches!(self.bound, BoundKind::Gdp | BoundKind::OneRunFdp) {
            check!(self.delta > 0.0, "delta", "the {} bound needs delta > 0", self.bound.name());
        }
        match self.strategy {
            ThresholdStrategy::Split { fraction } => {
                check!(fraction > 0.0 && fraction < 1.0, "strategy", "split fraction {fraction} is outside (0, 1)")
            }
            ThresholdStrategy::Explicit { threshold } => {
                check!(threshold.is_finite(), "strategy", "explicit threshold {threshold} is not finite")
            }
            ThresholdStrategy::Bonferroni => {}
        }
        Ok(())
    }
}

/// A bound on epsilon with everything a reviewer needs to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certificate {
    pub bound: BoundKind,
    /// The threshold strategy, e.g. "split".
    pub strategy: String,
    pub confidence: f64,
    pub delta: f64,
    /// Trials in the whole test (positives and negatives, before any split).
    pub positives: usize,
    pub negatives: usize,
    /// Trials the bound was certified on (after the split).
    pub certified_positives: usize,
    pub certified_negatives: usize,
    /// The test certified: "score >= threshold" (or "<" when `reversed`) means positive; None when
    /// no test was chosen (e.g. all scores equal under `split`).
    pub threshold: Option<f64>,
    pub reversed: bool,
    pub eps_lb: f64,
    /// The bound a perfect attack would certify with the same trials and strategy: claims above
    /// it cannot be refuted by this test, however strong the attack.
    pub max_certifiable: f64,
    /// The independence assumption of the game that makes the trials a valid sample.
    pub assumption: String,
}

/// The audit's conclusion about one claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The bound exceeds the claim: the claim is refuted at the stated confidence.
    Violated,
    /// The bound does not exceed the claim, and the same audit at the same settings refuted the
    /// claim on a positive control (the target with its noise switched off): the audit had the
    /// power to catch a violation and found none. An audit never shows that a claim holds.
    NotRefuted,
    /// The bound does not exceed the claim, and no positive control showed that this audit could
    /// have exceeded it: the audit says nothing about the claim.
    Inconclusive,
    /// The game's unit does not match the claim's (or the game is practical).
    NotComparable,
    /// The target claims no privacy (epsilon = infinity); the bound measures its leakage.
    NoClaim,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Violated => "violated",
            Verdict::NotRefuted => "not refuted",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotComparable => "not comparable",
            Verdict::NoClaim => "no claim",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Certificate {
    /// The verdict against a claimed epsilon (None: the target claims no privacy) before any
    /// positive control: violated, or inconclusive (never `NotRefuted`, which needs a control).
    pub fn verdict(&self, claimed: Option<f64>) -> Verdict {
        self.verdict_with_control(claimed, None)
    }

    /// The verdict given the eps_lb the same audit reached on a positive control (None: no
    /// control ran): `NotRefuted` only when the control's bound exceeds the claim.
    pub fn verdict_with_control(&self, claimed: Option<f64>, control_eps_lb: Option<f64>) -> Verdict {
        match claimed {
            None => Verdict::NoClaim,
            Some(c) if !c.is_finite() => Verdict::NoClaim,
            Some(c) if self.eps_lb > c => Verdict::Violated,
            Some(c) if control_eps_lb.is_some_and(|x| x > c) => Verdict::NotRefuted,
            Some(_) => Verdict::Inconclusive,
        }
    }

    /// The eps_lb of this audit on the noise-free mechanism: its two outputs are deterministic and
    /// distinct, so the best test separates every certified trial and reaches `max_certifiable`.
    /// The positive control of a mechanism-level audit, whose statistic is the optimal one.
    pub fn noise_free_control(&self) -> f64 {
        self.max_certifiable
    }
    /// eps_lb / claim (None without a positive finite claim).
    pub fn tightness(&self, claimed: Option<f64>) -> Option<f64> {
        claimed.filter(|c| c.is_finite() && *c > 0.0).map(|c| self.eps_lb / c)
    }
}

/// Certifies a bound from the scores of positives and negatives (higher = "positive").
/// `assumption` states why the trials are independent (e.g. "independent coins per canary").
pub fn certify(pos: &[f64], neg: &[f64], spec: &AuditSpec, assumption: &str) -> Result<Certificate> {
    spec.validate()?;
    check!(!pos.is_empty(), "scores", "no positive trials");
    check!(!neg.is_empty(), "scores", "no negative trials");
    check!(pos.iter().chain(neg).all(|s| s.is_finite()), "scores", "a score is not finite (NaN or infinite)");
    let alpha = 1.0 - spec.confidence;
    let (test, cert_pos, cert_neg, level) = match spec.strategy {
        ThresholdStrategy::Explicit { threshold } => {
            (Some(Test { threshold, reversed: false }), pos.to_vec(), neg.to_vec(), alpha)
        }
        ThresholdStrategy::Bonferroni => {
            let tests = candidate_tests(pos, neg, spec.bound);
            let level = alpha / tests.len() as f64;
            let best = best_test(pos, neg, &tests, spec, level, None);
            (best, pos.to_vec(), neg.to_vec(), level)
        }
        ThresholdStrategy::Split { fraction } => {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(spec.seed);
            let (sel_pos, cert_pos) = random_partition(pos, fraction, &mut rng);
            let (sel_neg, cert_neg) = random_partition(neg, fraction, &mut rng);
            check!(
                !sel_pos.is_empty() && !sel_neg.is_empty() && !cert_pos.is_empty() && !cert_neg.is_empty(),
                "scores",
                "{} positives and {} negatives are too few to split",
                pos.len(),
                neg.len()
            );
            let tests = candidate_tests(&sel_pos, &sel_neg, spec.bound);
            let best = best_test(&sel_pos, &sel_neg, &tests, spec, alpha, Some((cert_pos.len(), cert_neg.len())));
            (best, cert_pos, cert_neg, alpha)
        }
    };
    let eps_lb = test.map_or(0.0, |t| {
        let (tp, fp) = t.counts(&cert_pos, &cert_neg);
        bound_at(spec.bound, tp, fp, cert_pos.len(), cert_neg.len(), level, spec.delta)
    });
    let max_certifiable = bound_at(spec.bound, cert_pos.len(), 0, cert_pos.len(), cert_neg.len(), level, spec.delta);
    Ok(Certificate {
        bound: spec.bound,
        strategy: spec.strategy.name().to_string(),
        confidence: spec.confidence,
        delta: spec.delta,
        positives: pos.len(),
        negatives: neg.len(),
        certified_positives: cert_pos.len(),
        certified_negatives: cert_neg.len(),
        threshold: test.map(|t| t.threshold),
        reversed: test.is_some_and(|t| t.reversed),
        eps_lb,
        max_certifiable,
        assumption: assumption.to_string(),
    })
}

/// One decision rule: "score >= threshold" means positive, or "score < threshold" when reversed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Test {
    threshold: f64,
    reversed: bool,
}

impl Test {
    /// (positives called positive, negatives called positive).
    fn counts(&self, pos: &[f64], neg: &[f64]) -> (usize, usize) {
        let hit = |s: &f64| (*s >= self.threshold) != self.reversed;
        (pos.iter().filter(|s| hit(s)).count(), neg.iter().filter(|s| hit(s)).count())
    }
}

/// Every distinct score as a threshold (plus +inf, which calls nothing positive), in both
/// directions for two-sided bounds.
fn candidate_tests(pos: &[f64], neg: &[f64], bound: BoundKind) -> Vec<Test> {
    let mut thresholds: Vec<f64> = pos.iter().chain(neg).copied().collect();
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    thresholds.push(f64::INFINITY);
    let mut tests: Vec<Test> = thresholds.iter().map(|&t| Test { threshold: t, reversed: false }).collect();
    if bound.two_sided() {
        tests.extend(thresholds.iter().map(|&t| Test { threshold: t, reversed: true }));
    }
    tests
}

/// The test with the largest bound at `level`, from counts swept in one pass over sorted scores.
/// With `project_to` (the split's certification sizes), each test is judged by the bound its
/// observed rates would give on that many trials: the maximum of the selection part's own bounds
/// favours extreme thresholds that a few lucky scores pass, which then certify little.
fn best_test(
    pos: &[f64],
    neg: &[f64],
    tests: &[Test],
    spec: &AuditSpec,
    level: f64,
    project_to: Option<(usize, usize)>,
) -> Option<Test> {
    let (np, nn) = (pos.len(), neg.len());
    let mut p = pos.to_vec();
    let mut q = neg.to_vec();
    p.sort_by(f64::total_cmp);
    q.sort_by(f64::total_cmp);
    // Number of scores >= t in a sorted slice.
    let at_least = |v: &[f64], t: f64| v.len() - v.partition_point(|&s| s < t);
    let mut best: Option<(f64, Test)> = None;
    let one_run = matches!(spec.bound, BoundKind::OneRun | BoundKind::OneRunFdp);
    for &t in tests {
        let (tp, fp) = (at_least(&p, t.threshold), at_least(&q, t.threshold));
        let (tp, fp) = if t.reversed { (np - tp, nn - fp) } else { (tp, fp) };
        if one_run {
            // Guesses no more precise than e^eps / (1 + e^eps) of the best so far cannot refute a
            // larger eps (their bisection is the costly part).
            let best_q = best.map_or(0.5, |(b, _)| 1.0 / (1.0 + (-b).exp()));
            if tp + fp == 0 || (tp as f64) / ((tp + fp) as f64) <= best_q {
                if best.is_none() {
                    best = Some((0.0, t));
                }
                continue;
            }
        }
        let eps = match project_to {
            Some((cp, cn)) => {
                let scale =
                    |k: usize, n: usize, to: usize| ((k as f64 * to as f64 / n as f64).round() as usize).min(to);
                bound_at(spec.bound, scale(tp, np, cp), scale(fp, nn, cn), cp, cn, level, spec.delta)
            }
            None => bound_at(spec.bound, tp, fp, np, nn, level, spec.delta),
        };
        if best.is_none_or(|(b, _)| eps > b) {
            best = Some((eps, t));
        }
    }
    best.map(|(_, t)| t)
}

/// The bound of one test: `tp` of `np` positives and `fp` of `nn` negatives called positive.
fn bound_at(bound: BoundKind, tp: usize, fp: usize, np: usize, nn: usize, level: f64, delta: f64) -> f64 {
    match bound {
        BoundKind::ClopperPearson => {
            let tpr_lo = clopper_pearson_lower(tp, np, level / 2.0);
            let fpr_hi = clopper_pearson_upper(fp, nn, level / 2.0);
            if tpr_lo > delta && fpr_hi > 0.0 {
                ((tpr_lo - delta) / fpr_hi).ln().max(0.0)
            } else {
                0.0
            }
        }
        BoundKind::Gdp => {
            let fpr_hi = clopper_pearson_upper(fp, nn, level / 2.0);
            let fnr_hi = clopper_pearson_upper(np - tp, np, level / 2.0);
            if fpr_hi.max(fnr_hi) >= 1.0 - delta {
                return 0.0;
            }
            let n = std_normal();
            let mu = n.inverse_cdf(1.0 - fpr_hi) - n.inverse_cdf(fnr_hi);
            if mu > 0.0 {
                gdp_epsilon(mu, delta)
            } else {
                0.0
            }
        }
        BoundKind::OneRun => one_run_epsilon(np + nn, tp + fp, tp, delta, level),
        BoundKind::OneRunFdp => one_run_fdp_epsilon(np + nn, tp + fp, tp, delta, level),
    }
}

fn std_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("standard normal")
}

/// delta(eps) of mu-GDP (Dong, Roth & Su 2019, Cor. 2.13):
/// Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
pub fn gdp_delta(mu: f64, eps: f64) -> f64 {
    let n = std_normal();
    let a = n.cdf(-eps / mu + mu / 2.0);
    let b = n.cdf(-eps / mu - mu / 2.0);
    let tail = if b > 0.0 { (eps + b.ln()).exp() } else { 0.0 };
    (a - tail).max(0.0)
}

/// The epsilon of mu-GDP at `delta` (0 when delta already covers it), by bisection: delta(eps)
/// decreases in eps.
pub fn gdp_epsilon(mu: f64, delta: f64) -> f64 {
    if mu <= 0.0 || gdp_delta(mu, 0.0) <= delta {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while gdp_delta(mu, hi) > delta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e4 {
            return hi;
        }
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if gdp_delta(mu, mid) > delta {
            lo = mid
        } else {
            hi = mid
        }
    }
    lo
}

/// The mu of the Gaussian mechanism that is exactly (eps, delta)-DP (analytic Gaussian, Balle &
/// Wang 2018, with sensitivity / sigma = mu); delta(eps) grows with mu.
pub fn gdp_mu(eps: f64, delta: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while gdp_delta(hi, eps) < delta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e4 {
            return f64::INFINITY;
        }
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if gdp_delta(mid, eps) < delta {
            lo = mid
        } else {
            hi = mid
        }
    }
    hi
}

/// Mahloujifar, Melis & Chaudhuri (2025), the capped recursion of their Algorithm ("audit_rh_with
/// cap"): positive when `correct` of `guesses` (of `canaries`) refutes the Gaussian trade-off
/// curve of (eps, delta) at significance `beta`.
fn fdp_objective(canaries: usize, guesses: usize, correct: usize, eps: f64, delta: f64, beta: f64) -> f64 {
    let mu = gdp_mu(eps, delta);
    let n = std_normal();
    // The inverse of the trade-off blow-up: x -> Phi(Phi^-1(x) - mu).
    let blow_up_inv = |x: f64| if mu.is_infinite() { (x >= 1.0) as u8 as f64 } else { n.cdf(n.inverse_cdf(x) - mu) };
    let m = canaries as f64;
    let mut r = beta * correct as f64 / m;
    let mut h = beta * (guesses - correct) as f64 / m;
    for i in (0..correct).rev() {
        let h_new = h.max(blow_up_inv(r));
        if h_new == h {
            break;
        }
        r = (r + (i as f64 / (guesses - i) as f64) * (h_new - h)).min(1.0);
        h = h_new;
    }
    r + h - guesses as f64 / m
}

/// The largest eps whose Gaussian trade-off curve `correct` of `guesses` refutes (0 if none).
pub fn one_run_fdp_epsilon(canaries: usize, guesses: usize, correct: usize, delta: f64, beta: f64) -> f64 {
    if guesses == 0 || correct == 0 || fdp_objective(canaries, guesses, correct, 0.0, delta, beta) <= 0.0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while fdp_objective(canaries, guesses, correct, hi, delta, beta) > 0.0 {
        lo = hi;
        hi *= 2.0;
        if hi > 1e3 {
            return lo;
        }
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if fdp_objective(canaries, guesses, correct, mid, delta, beta) > 0.0 {
            lo = mid
        } else {
            hi = mid
        }
    }
    lo
}

/// Splits `scores` at random into (the first `fraction`, the rest).
fn random_partition(scores: &[f64], fraction: f64, rng: &mut rand_chacha::ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
    let mut v = scores.to_vec();
    v.shuffle(rng);
    let k = (fraction * v.len() as f64).floor() as usize;
    let rest = v.split_off(k);
    (v, rest)
}

/// The independence assumption of canary games.
pub const COIN_ASSUMPTION: &str =
    "each canary is included by its own fair coin, independent of the others and of the training randomness";
/// The independence assumption of membership games.
pub const SPLIT_ASSUMPTION: &str = "members and non-members are a random split of nodes drawn from one population";

/// Canary audits: scores of canaries and their coins (true = included) as positives and negatives.
pub fn partition_by_coin(scores: &[f64], included: &[bool]) -> (Vec<f64>, Vec<f64>) {
    let mut pos = Vec::new();
    let mut neg = Vec::new();
    for (&s, &inc) in scores.iter().zip(included) {
        if inc {
            pos.push(s)
        } else {
            neg.push(s)
        }
    }
    (pos, neg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use rand_distr::{Distribution, StandardNormal};

    fn gaussian_scores(n: usize, mu: f64, rng: &mut rand_chacha::ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
        let pos = (0..n).map(|_| mu + <StandardNormal as Distribution<f64>>::sample(&StandardNormal, rng)).collect();
        let neg = (0..n).map(|_| <StandardNormal as Distribution<f64>>::sample(&StandardNormal, rng)).collect();
        (pos, neg)
    }

    fn specs(delta: f64) -> Vec<AuditSpec> {
        let mut v = Vec::new();
        for bound in BoundKind::ALL {
            for strategy in [
                ThresholdStrategy::default(),
                ThresholdStrategy::Bonferroni,
                ThresholdStrategy::Explicit { threshold: 0.5 },
            ] {
                v.push(AuditSpec { bound, strategy, confidence: 0.95, delta, seed: 0 });
            }
        }
        v
    }

    /// Null calibration: with identical score distributions no mechanism leaks, so a bound above
    /// 0 is a false alarm. For every bound and strategy, 2,000 null audits (fixed seeds) raise at
    /// most alpha + 3 binomial standard deviations of them.
    #[test]
    fn null_audits_false_alarm_within_alpha() {
        let trials = 2000usize;
        let alpha: f64 = 0.05;
        let limit = alpha + 3.0 * (alpha * (1.0 - alpha) / trials as f64).sqrt();
        for spec in specs(1e-5) {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
            let mut alarms = 0;
            for i in 0..trials {
                let n = [50, 100, 200][i % 3];
                let (pos, neg) = gaussian_scores(n, 0.0, &mut rng);
                let s = AuditSpec { seed: i as u64, ..spec };
                if certify(&pos, &neg, &s, "test").unwrap().eps_lb > 0.0 {
                    alarms += 1;
                }
            }
            let rate = alarms as f64 / trials as f64;
            assert!(
                rate <= limit,
                "{} / {}: false-alarm rate {rate} > {limit}",
                spec.bound.name(),
                spec.strategy.name()
            );
        }
    }

    /// Ties everywhere (discrete scores, as posteriors of a model that ignores the unit) are null
    /// data too.
    #[test]
    fn null_audits_with_ties_false_alarm_within_alpha() {
        let trials = 2000usize;
        let limit = 0.05 + 3.0 * (0.05f64 * 0.95 / trials as f64).sqrt();
        for spec in specs(0.0).into_iter().filter(|s| !matches!(s.bound, BoundKind::Gdp | BoundKind::OneRunFdp)) {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
            let mut alarms = 0;
            for i in 0..trials {
                let pos: Vec<f64> = (0..100).map(|_| rng.gen_range(0..4) as f64).collect();
                let neg: Vec<f64> = (0..100).map(|_| rng.gen_range(0..4) as f64).collect();
                let s = AuditSpec { seed: i as u64, ..spec };
                alarms += (certify(&pos, &neg, &s, "test").unwrap().eps_lb > 0.0) as usize;
            }
            let rate = alarms as f64 / trials as f64;
            assert!(rate <= limit, "{} / {}: {rate}", spec.bound.name(), spec.strategy.name());
        }
    }

    /// The true epsilon of mu-GDP scores (pos ~ N(mu, 1), neg ~ N(0, 1)) at delta.
    fn true_epsilon(mu: f64, delta: f64) -> f64 {
        gdp_epsilon(mu, delta)
    }

    /// Validity: on a Gaussian mechanism with known mu, the bound exceeds the true epsilon in at
    /// most alpha (+ 3 sd) of the audits, for every bound and strategy.
    #[test]
    fn bounds_stay_below_the_true_epsilon() {
        let delta = 1e-5;
        let trials = 200usize;
        let limit = 0.05 + 3.0 * (0.05f64 * 0.95 / trials as f64).sqrt();
        for mu in [0.5, 2.0] {
            let truth = true_epsilon(mu, delta);
            for spec in specs(delta) {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
                let mut above = 0;
                for i in 0..trials {
                    let (pos, neg) = gaussian_scores(200, mu, &mut rng);
                    let s = AuditSpec { seed: i as u64, ..spec };
                    above += (certify(&pos, &neg, &s, "test").unwrap().eps_lb > truth) as usize;
                }
                let rate = above as f64 / trials as f64;
                assert!(rate <= limit, "mu {mu} {} / {}: {rate}", spec.bound.name(), spec.strategy.name());
            }
        }
    }

    /// Power: with 10^5 trials per side the GDP bound with a split reaches at least 0.6 of the
    /// true epsilon at eps = 1 and eps = 4 (delta 1e-5), and never exceeds it.
    #[test]
    fn gdp_bound_reaches_most_of_the_true_epsilon() {
        let delta = 1e-5;
        for eps in [1.0, 4.0] {
            let mu = gdp_mu(eps, delta);
            assert!((gdp_epsilon(mu, delta) - eps).abs() < 1e-6);
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(eps as u64);
            let (pos, neg) = gaussian_scores(100_000, mu, &mut rng);
            let spec = AuditSpec::new(BoundKind::Gdp, delta);
            let c = certify(&pos, &neg, &spec, "test").unwrap();
            assert!(c.eps_lb >= 0.6 * eps && c.eps_lb <= eps, "eps {eps}: eps_lb {}", c.eps_lb);
            assert_eq!(c.verdict(Some(eps)), Verdict::Inconclusive, "no control: no power shown");
            assert_eq!(c.verdict_with_control(Some(eps), Some(c.noise_free_control())), Verdict::NotRefuted);
            assert_eq!(c.verdict(Some(0.5 * eps)), Verdict::Violated);
        }
    }

    #[test]
    fn gdp_conversion_matches_the_analytic_gaussian() {
        // sigma = 1 (mu = 1) at eps = 1: delta = Phi(-0.5) - e Phi(-1.5) = 0.126936.
        assert!((gdp_delta(1.0, 1.0) - 0.12693673750664397).abs() < 1e-9);
        assert!((gdp_epsilon(1.0, gdp_delta(1.0, 1.0)) - 1.0).abs() < 1e-9);
        assert!((gdp_mu(1.0, gdp_delta(1.0, 1.0)) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn perfect_separation_certifies_the_maximum_and_verdicts_follow() {
        let pos = vec![1.0; 1000];
        let neg = vec![0.0; 1000];
        let spec = AuditSpec::new(BoundKind::ClopperPearson, 0.0);
        let c = certify(&pos, &neg, &spec, "test").unwrap();
        assert_eq!(c.certified_positives + c.certified_negatives, 1000);
        assert!((c.eps_lb - c.max_certifiable).abs() < 1e-12 && c.eps_lb > 4.0, "{c:?}");
        assert_eq!(c.verdict(Some(1.0)), Verdict::Violated);
        assert_eq!(c.verdict(Some(100.0)), Verdict::Inconclusive);
        assert_eq!(c.verdict(None), Verdict::NoClaim);
        let blind = certify(&[0.0; 100], &[0.0; 100], &spec, "test").unwrap();
        assert_eq!(blind.eps_lb, 0.0);
        // A blind attack upholds nothing: without a control it is inconclusive; with a caught
        // control it is not refuted; a control below the claim shows no power.
        assert_eq!(blind.verdict(Some(0.5)), Verdict::Inconclusive);
        assert_eq!(blind.verdict_with_control(Some(0.5), Some(blind.noise_free_control())), Verdict::NotRefuted);
        assert_eq!(blind.verdict_with_control(Some(0.5), Some(0.5)), Verdict::Inconclusive);
        assert_eq!(blind.verdict_with_control(Some(50.0), Some(blind.noise_free_control())), Verdict::Inconclusive);
        assert_eq!(blind.verdict_with_control(None, Some(9.0)), Verdict::NoClaim);
    }

    #[test]
    fn bad_input_names_the_field() {
        let spec = AuditSpec::new(BoundKind::ClopperPearson, 1e-5);
        let err = |r: Result<Certificate>| r.unwrap_err().to_string();
        assert!(err(certify(&[], &[1.0], &spec, "")).contains("scores"));
        assert!(err(certify(&[f64::NAN], &[1.0], &spec, "")).contains("not finite"));
        let bad = AuditSpec { confidence: 1.5, ..spec };
        assert!(err(certify(&[1.0; 4], &[0.0; 4], &bad, "")).contains("confidence"));
        let bad = AuditSpec { strategy: ThresholdStrategy::Split { fraction: 1.0 }, ..spec };
        assert!(err(certify(&[1.0; 4], &[0.0; 4], &bad, "")).contains("strategy"));
        let bad = AuditSpec { delta: 0.0, bound: BoundKind::Gdp, ..spec };
        assert!(err(certify(&[1.0; 4], &[0.0; 4], &bad, "")).contains("delta"));
        assert_eq!(ThresholdStrategy::parse("split:0.3"), Some(ThresholdStrategy::Split { fraction: 0.3 }));
        assert_eq!(ThresholdStrategy::parse("explicit:2"), Some(ThresholdStrategy::Explicit { threshold: 2.0 }));
        assert_eq!(ThresholdStrategy::parse("max"), None);
        assert_eq!(BoundKind::parse("gdp"), Some(BoundKind::Gdp));
    }

    /// The one-run f-DP bound is at least as tight as the one-run bound for the same guesses when
    /// the scores are Gaussian (its purpose), and both vanish for chance-level guessing.
    #[test]
    fn one_run_fdp_is_tighter_on_gaussian_canaries() {
        let delta = 1e-5;
        let a = crate::one_run::one_run_epsilon(1000, 100, 95, delta, 0.05);
        let b = one_run_fdp_epsilon(1000, 100, 95, delta, 0.05);
        assert!(b >= a && a > 1.0, "one-run {a}, f-DP {b}");
        assert_eq!(one_run_fdp_epsilon(1000, 100, 50, delta, 0.05), 0.0);
    }
}
