//! Mechanism-level audits: run one privacy mechanism many times on its own
//! worst-case neighbouring pair and certify a lower bound on its epsilon.
//!
//! Every mechanism knows its sensitivity, so each builds its pair next to its own code (an
//! [`AuditPair`] implementation in its module). This module only drives them: it asks the pair
//! for its claim (from the accountant's event), for a decision rule fixed before any sample is
//! drawn, and for N draws of a scalar statistic on each input; then it certifies through
//! `gnnaudit_attacks::stats` (`certify`, `AuditSpec`, `Certificate`, `Verdict`).
//!
//! The decision rule is "statistic >= t means the positive input", where the statistic is
//! (monotone in) the likelihood ratio of the pair. Two thresholds are chosen before the N
//! certification draws: by a power analysis on the claimed (exact) output distribution, and on a
//! separate pilot run of N/10 draws per input (its own random stream, rates taken one standard
//! deviation pessimistic), each the one that would certify the largest bound with N trials. When
//! they differ each is certified at alpha/2 and the larger bound kept (Bonferroni). No threshold
//! looks at the data it is certified on, which is what makes the `explicit` strategy valid, and
//! all N trials certify (unlike a split, which spends half). The analytic choice is the most
//! powerful when the mechanism is what it claims; the pilot keeps the audit powerful when it is
//! not (a mis-calibrated noise level).
use crate::error::{Error, Result};
use crate::privacy::accountant::Event;
use gnnaudit_attacks::metrics::{clopper_pearson_lower, clopper_pearson_upper, ScoreSummary};
use gnnaudit_attacks::stats::{certify, gdp_bound, AuditSpec, BoundKind, Certificate, ThresholdStrategy, Verdict};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use std::time::Instant;

/// Fewest trials an audit accepts: below this no bound is meaningful.
pub const MIN_TRIALS: usize = 100;
/// Default number of runs of the mechanism on each input.
pub const DEFAULT_TRIALS: usize = 1_000_000;
/// Seed offset of the pilot's random stream.
const PILOT_STREAM: u64 = 0x9E37_79B9_7F4A_7C15;
/// One-sided tail of the pilot's pessimistic rates (one standard deviation).
const PILOT_SD: f64 = 0.16;
/// Default confidence of the bound.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// What a mechanism claims, as the accountant prices it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The accountant's epsilon of `event` at `delta` (pure parts: their sum).
    pub epsilon: f64,
    pub delta: f64,
    /// The event the claim was computed from (shown in reports).
    pub event: Event,
    /// A published claim that differs from the sound one (e.g. RGNN's Theorem 1).
    pub paper_epsilon: Option<f64>,
}

impl Claim {
    /// The claim of a pure-DP mechanism: its event's epsilon at delta 0.
    pub fn pure(event: Event) -> Claim {
        Claim { epsilon: event.pure_epsilon(), delta: 0.0, event, paper_epsilon: None }
    }
}

/// A candidate test "T >= threshold" with its rates under each input: (P[T >= t | positive],
/// P[T >= t | negative]), exact from the mechanism's distribution or observed on the pilot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub threshold: f64,
    pub tpr: f64,
    pub fpr: f64,
}

/// One mechanism on its worst-case neighbouring pair (positive input x, negative input x').
pub trait AuditPair {
    /// The CLI name (`gaussian`, `rr`, ...).
    fn name(&self) -> &'static str;
    /// The mechanism's parameters, for the report.
    fn params(&self) -> serde_json::Value;
    /// The claim of the mechanism as calibrated (from the accountant's event).
    fn claim(&self) -> Result<Claim>;
    /// The bound that is valid for this mechanism: Clopper-Pearson is for every one; `gdp` only
    /// for exactly Gaussian trade-offs, whose pairs say so.
    fn bound(&self) -> BoundKind {
        BoundKind::ClopperPearson
    }
    /// What the statistic is, in words.
    fn statistic(&self) -> String;
    /// Candidate thresholds with their exact rates (the pilot measures the rates it plans with).
    fn candidates(&self) -> Vec<Candidate>;
    /// `trials` draws of the statistic on the positive input and on the negative input.
    fn sample(&self, trials: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<f64>);
}

/// `trials` draws of the statistic on the positive input (`draw(true, ..)`), then `trials` on the
/// negative input: [`AuditPair::sample`] for a pair that draws one statistic at a time.
pub fn paired_draws(
    trials: usize,
    rng: &mut ChaCha8Rng,
    mut draw: impl FnMut(bool, &mut ChaCha8Rng) -> f64,
) -> (Vec<f64>, Vec<f64>) {
    let pos = (0..trials).map(|_| draw(true, rng)).collect();
    let neg = (0..trials).map(|_| draw(false, rng)).collect();
    (pos, neg)
}

/// The result of one mechanism audit (the JSON of `gnnaudit mechanism audit --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MechanismAudit {
    pub mechanism: String,
    pub params: serde_json::Value,
    /// The sound claim, from the accountant.
    pub claimed_epsilon: f64,
    pub delta: f64,
    /// The published claim where it differs from the sound one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_epsilon: Option<f64>,
    /// The accountant's event behind `claimed_epsilon`.
    pub event: String,
    pub eps_lb: f64,
    pub bound: BoundKind,
    /// Runs of the mechanism on each input that the bound is certified on.
    pub trials: usize,
    /// Extra runs per input of the pilot that chose the threshold.
    pub pilot_trials: usize,
    /// eps_lb / claimed_epsilon.
    pub tightness: f64,
    /// `not refuted` only when the positive control (`control_eps_lb`) exceeds the claim.
    pub verdict: Verdict,
    /// The bound the same audit (trials, threshold strategy, bound, confidence) reaches on the
    /// mechanism with its noise switched off: its two outputs are then fixed and distinct, so
    /// every trial is told apart and the bound is the largest these trials can certify.
    #[serde(default)]
    pub control_eps_lb: f64,
    /// The verdict against `paper_epsilon`, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_verdict: Option<Verdict>,
    pub statistic: String,
    pub certificate: Certificate,
    /// Wall time of sampling and certification (not deterministic; kept out of comparisons).
    pub seconds: f64,
    /// AUC, TPR at low FPR and ROC of the statistic (for audit reports; not in the JSON).
    #[serde(skip)]
    pub summary: Option<ScoreSummary>,
}

/// Runs the mechanism `trials` times on each input of its pair and certifies the bound.
/// `with_summary` also computes the statistic's ROC summary (a sort of all the draws).
pub fn run(
    pair: &dyn AuditPair,
    trials: usize,
    seed: u64,
    confidence: f64,
    with_summary: bool,
) -> Result<MechanismAudit> {
    if trials < MIN_TRIALS {
        return Err(Error::invalid("--trials", format!("must be at least {MIN_TRIALS}, got {trials}")));
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(Error::invalid("--confidence", format!("must be in (0, 1), got {confidence}")));
    }
    let clock = Instant::now();
    let claim = pair.claim()?;
    let bound = pair.bound();
    let alpha = 1.0 - confidence;
    // The pilot: its own stream, never reused for certification.
    let pilot_trials = (trials / 10).max(MIN_TRIALS);
    let mut pilot_rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed ^ PILOT_STREAM);
    let (mut pp, mut pn) = pair.sample(pilot_trials, &mut pilot_rng);
    pp.sort_by(f64::total_cmp);
    pn.sort_by(f64::total_cmp);
    // Pilot rates one standard deviation on the pessimistic side (Clopper-Pearson at 16%): a
    // threshold passed by a few lucky pilot draws (or none) must not look better than it is.
    let count = |v: &[f64], t: f64| v.len() - v.partition_point(|&s| s < t);
    let observed: Vec<Candidate> = pair
        .candidates()
        .iter()
        .map(|c| Candidate {
            threshold: c.threshold,
            tpr: clopper_pearson_lower(count(&pp, c.threshold), pilot_trials, PILOT_SD),
            fpr: clopper_pearson_upper(count(&pn, c.threshold), pilot_trials, PILOT_SD),
        })
        .collect();
    let no_test = || Error::Other(format!("{}: no candidate test", pair.name()));
    let piloted = plan(&observed, bound, trials, alpha, claim.delta).ok_or_else(no_test)?;
    let analytic = plan(&pair.candidates(), bound, trials, alpha, claim.delta).ok_or_else(no_test)?;
    // Both thresholds are fixed before the certification draws; when they differ, each is
    // certified at alpha/2 and the larger bound kept (Bonferroni over the two tests).
    let thresholds = if piloted == analytic { vec![analytic] } else { vec![analytic, piloted] };
    let level_confidence = 1.0 - alpha / thresholds.len() as f64;
    let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    let (pos, neg) = pair.sample(trials, &mut rng);
    let assumption = format!(
        "{trials} independent runs of the mechanism on each input of its worst-case pair; the threshold{} ({}) \
         fixed before them: by a power analysis on the claimed output distribution{}",
        if thresholds.len() > 1 { "s were" } else { " was" },
        thresholds.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "),
        if thresholds.len() > 1 {
            format!(
                " and on a separate pilot of {pilot_trials} runs per input, each certified at alpha/2 (Bonferroni), \
                 the larger bound kept"
            )
        } else {
            format!(", confirmed by a separate pilot of {pilot_trials} runs per input")
        }
    );
    let mut certificate: Option<Certificate> = None;
    for &threshold in &thresholds {
        let spec = AuditSpec {
            bound,
            strategy: ThresholdStrategy::Explicit { threshold },
            confidence: level_confidence,
            delta: claim.delta,
            seed,
        };
        let c = certify(&pos, &neg, &spec, &assumption).map_err(|e| Error::Other(e.to_string()))?;
        if certificate.as_ref().is_none_or(|best| c.eps_lb > best.eps_lb) {
            certificate = Some(c);
        }
    }
    let mut certificate = certificate.ok_or_else(no_test)?;
    // The statement's confidence is the family's (each test ran at level_confidence).
    certificate.confidence = confidence;
    let threshold = certificate.threshold.unwrap_or(analytic);
    let control_eps_lb = certificate.noise_free_control();
    let verdict = certificate.verdict_with_control(Some(claim.epsilon), Some(control_eps_lb));
    let summary = with_summary.then(|| ScoreSummary::new(&pos, &neg, Some(threshold)));
    Ok(MechanismAudit {
        mechanism: pair.name().to_string(),
        params: pair.params(),
        claimed_epsilon: claim.epsilon,
        delta: claim.delta,
        paper_epsilon: claim.paper_epsilon,
        event: claim.event.to_string(),
        eps_lb: certificate.eps_lb,
        bound,
        trials,
        pilot_trials,
        tightness: certificate.tightness(Some(claim.epsilon)).unwrap_or(0.0),
        verdict,
        control_eps_lb,
        paper_verdict: claim.paper_epsilon.map(|p| certificate.verdict_with_control(Some(p), Some(control_eps_lb))),
        statistic: pair.statistic(),
        certificate,
        seconds: clock.elapsed().as_secs_f64(),
        summary,
    })
}

/// The threshold whose expected counts with `n` trials per input give the largest bound.
/// (The same bounds as `stats::certify` computes, evaluated on expected rather than observed
/// counts; `certify` then evaluates the chosen test on the samples.)
pub fn plan(candidates: &[Candidate], bound: BoundKind, n: usize, alpha: f64, delta: f64) -> Option<f64> {
    let count = |r: f64| ((r * n as f64).round() as usize).min(n);
    candidates
        .iter()
        .map(|c| (expected_bound(bound, count(c.tpr), count(c.fpr), n, alpha, delta), c.threshold))
        .fold(None, |best: Option<(f64, f64)>, (b, t)| match best {
            Some((bb, _)) if bb >= b => best,
            _ => Some((b, t)),
        })
        .map(|(_, t)| t)
}

/// The bound of one test with `tp` of `n` positives and `fp` of `n` negatives called positive.
fn expected_bound(bound: BoundKind, tp: usize, fp: usize, n: usize, alpha: f64, delta: f64) -> f64 {
    match bound {
        BoundKind::Gdp => {
            gdp_bound(clopper_pearson_upper(fp, n, alpha / 2.0), clopper_pearson_upper(n - tp, n, alpha / 2.0), delta)
        }
        _ => {
            let tpr_lo = clopper_pearson_lower(tp, n, alpha / 2.0);
            let fpr_hi = clopper_pearson_upper(fp, n, alpha / 2.0);
            if tpr_lo > delta && fpr_hi > 0.0 {
                ((tpr_lo - delta) / fpr_hi).ln().max(0.0)
            } else {
                0.0
            }
        }
    }
}

pub fn std_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("standard normal")
}

/// P[T >= t] for every t of a discrete statistic on 0..=K with probabilities `pmf`.
pub fn upper_tails(pmf: &[f64]) -> Vec<f64> {
    let mut tails = vec![0.0; pmf.len()];
    let mut acc = 0.0;
    for (k, p) in pmf.iter().enumerate().rev() {
        acc += p;
        tails[k] = acc.min(1.0);
    }
    tails
}

/// Candidates "T >= k" for k = 1..=K of a discrete statistic with the two pmfs.
pub fn discrete_candidates(pos_pmf: &[f64], neg_pmf: &[f64]) -> Vec<Candidate> {
    let (tp, tn) = (upper_tails(pos_pmf), upper_tails(neg_pmf));
    (1..tp.len()).map(|k| Candidate { threshold: k as f64, tpr: tp[k], fpr: tn[k] }).collect()
}

/// The pmf of Binomial(n, p), by the recurrence on log terms (exact to rounding for n <= 10^4).
pub fn binomial_pmf(n: usize, p: f64) -> Vec<f64> {
    if p <= 0.0 || p >= 1.0 {
        let mut v = vec![0.0; n + 1];
        v[if p <= 0.0 { 0 } else { n }] = 1.0;
        return v;
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let mut log_c = 0.0f64;
    (0..=n)
        .map(|k| {
            if k > 0 {
                log_c += ((n - k + 1) as f64).ln() - (k as f64).ln();
            }
            (log_c + k as f64 * lp + (n - k) as f64 * lq).exp()
        })
        .collect()
}

/// The pmf of the sum of two independent discrete variables.
pub fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// Candidates "score >= t" for a score that is N(mu, 1) on the positive input and N(0, 1) on
/// the negative one (Gaussian mechanisms, projected and standardised), on a grid of t.
pub fn gaussian_candidates(mu: f64) -> Vec<Candidate> {
    let z = std_normal();
    (0..=1200)
        .map(|i| {
            let t = (i as f64 - 200.0) / 100.0;
            Candidate { threshold: t, tpr: z.sf(t - mu), fpr: z.sf(t) }
        })
        .collect()
}

/// Checks a mechanism parameter, naming its flag.
pub fn require(ok: bool, flag: &str, message: impl std::fmt::Display) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(flag, message))
    }
}

/// Checks the range [low, high] a feature mechanism clips its values into.
pub fn require_range(low: f64, high: f64) -> Result<()> {
    require(low.is_finite() && high.is_finite() && low < high, "range", format!("need a < b, got [{low}, {high}]"))
}

/// Checks the delta of a Gaussian mechanism's claim (`--delta`).
pub fn require_delta(delta: f64) -> Result<()> {
    require(delta > 0.0 && delta < 1.0, "--delta", format!("must be in (0, 1), got {delta}"))
}

/// Checks a fault injection's factor on the calibrated noise (`--noise-factor`).
pub fn require_noise_factor(factor: f64) -> Result<()> {
    require(factor.is_finite() && factor > 0.0, "--noise-factor", format!("must be > 0, got {factor}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_and_convolution_are_distributions() {
        let b = binomial_pmf(10, 0.3);
        assert!((b.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((b[3] - 120.0 * 0.3f64.powi(3) * 0.7f64.powi(7)).abs() < 1e-12);
        let c = convolve(&b, &binomial_pmf(48, 0.5));
        assert_eq!(c.len(), 59);
        assert!((c.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let mean: f64 = c.iter().enumerate().map(|(k, p)| k as f64 * p).sum();
        assert!((mean - 27.0).abs() < 1e-9);
        assert_eq!(upper_tails(&[0.25, 0.25, 0.5]), vec![1.0, 0.75, 0.5]);
    }

    /// The planner prefers the test with the larger expected bound: for randomized response the
    /// only informative test is "reported the positive value".
    #[test]
    fn plan_picks_the_most_powerful_test() {
        let e = 1f64.exp();
        let pos = [1.0 / (1.0 + e), e / (1.0 + e)];
        let neg = [e / (1.0 + e), 1.0 / (1.0 + e)];
        let c = discrete_candidates(&pos, &neg);
        assert_eq!(plan(&c, BoundKind::ClopperPearson, 1_000_000, 0.05, 0.0), Some(1.0));
        let t = plan(&gaussian_candidates(2.0), BoundKind::Gdp, 1_000_000, 0.05, 1e-5).unwrap();
        assert!(t > 0.0 && t < 6.0, "{t}");
    }

    /// The planner at the scale of the refuted-theorem audit and beyond: its Clopper-Pearson
    /// bounds of rare counts out of 10^7-10^9 trials (which never returned from statrs's Beta
    /// inverse) return, and more trials afford a rarer, more extreme threshold.
    #[test]
    fn plan_scales_to_a_billion_trials() {
        let c = discrete_candidates(&binomial_pmf(58, 0.55), &binomial_pmf(58, 0.5));
        let at = |n: usize| plan(&c, BoundKind::ClopperPearson, n, 0.05, 0.0).unwrap();
        let (small, mid, large) = (at(1_000_000), at(10_000_000), at(1_000_000_000));
        eprintln!("thresholds: {small} at 1e6, {mid} at 1e7, {large} at 1e9 trials");
        assert!(small <= mid && mid <= large && small < large, "{small} {mid} {large}");
        let count = |r: f64, n: usize| (r * n as f64).round() as usize;
        let best = c.iter().find(|x| x.threshold == large).unwrap();
        let n = 1_000_000_000;
        let eps = expected_bound(BoundKind::ClopperPearson, count(best.tpr, n), count(best.fpr, n), n, 0.05, 0.0);
        let truth = (best.tpr / best.fpr).ln();
        assert!(eps > 0.9 * truth && eps < truth, "{eps} vs ln(tpr/fpr) = {truth}");
    }

    /// A mechanism that ignores its input: both sides Bin(10, 1/2).
    struct Blind;
    impl AuditPair for Blind {
        fn name(&self) -> &'static str {
            "blind"
        }
        fn params(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
        fn claim(&self) -> Result<Claim> {
            Ok(Claim::pure(Event::PureDp { epsilon: 0.01 }))
        }
        fn statistic(&self) -> String {
            "Bin(10, 1/2)".into()
        }
        fn candidates(&self) -> Vec<Candidate> {
            let pmf = binomial_pmf(10, 0.5);
            discrete_candidates(&pmf, &pmf)
        }
        fn sample(&self, trials: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
            use rand::Rng;
            let mut draw = || (0..trials).map(|_| (0..10).filter(|_| rng.gen::<bool>()).count() as f64).collect();
            let pos = draw();
            let neg = draw();
            (pos, neg)
        }
    }

    /// Validity of the driver (pilot, planned threshold, Bonferroni over the two): on a mechanism
    /// that leaks nothing, and on randomized response against its true eps = 1, the bound exceeds
    /// the truth in at most alpha (+ 3 sd) of 400 audits with fixed seeds.
    #[test]
    fn false_alarms_stay_within_alpha() {
        let runs = 400usize;
        let limit = 0.05 + 3.0 * (0.05f64 * 0.95 / runs as f64).sqrt();
        let blind = (0..runs).filter(|&s| run(&Blind, 2000, s as u64, 0.95, false).unwrap().eps_lb > 0.0).count();
        assert!(blind as f64 / runs as f64 <= limit, "blind: {blind} of {runs}");
        let rr = crate::privacy::mechanisms::randomized_response::RrPair::new(1.0, 2).unwrap();
        let above = (0..runs).filter(|&s| run(&rr, 2000, s as u64, 0.95, false).unwrap().eps_lb > 1.0).count();
        eprintln!("false alarms: blind {blind} of {runs}, rr above its true eps {above} of {runs}");
        assert!(above as f64 / runs as f64 <= limit, "rr: {above} of {runs}");
    }
}
