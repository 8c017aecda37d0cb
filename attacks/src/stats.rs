//! The one place where a lower bound on epsilon is made from attack scores.
//!
//! An audit hands over the scores of its positives (the private unit present: a member, an
//! inserted canary) and negatives (absent), the claim (epsilon, delta) and an `AuditSpec`: which
//! bound, which threshold strategy, which confidence. Back comes a `Certificate` that names all of
//! them, the number of trials and the threshold used, the game's independence assumption, the
//! bound `eps_lb`, and the largest bound the test could have certified at all (a perfect attack
//! with the same numbers of trials), from which `verdict` tells `violated`, `holds` and
//! `inconclusive` apart; when even that is 0, `cannot_certify` says why.
//!
//! Every bound is a one-sided test at level alpha = 1 - confidence: if the mechanism is
//! (claim, delta)-DP, the probability that `eps_lb` exceeds the claim is at most alpha. That only
//! holds when the threshold (and direction) of the test is not chosen by looking at the data it
//! is certified on, which the strategies ensure:
//! - `split` (default): choose the test on a random part of the trials, certify it on the rest;
//! - `bonferroni`: every test of a family at once, each at a share of alpha (below);
//! - `explicit`: a threshold fixed in advance ("score >= t means positive");
//! - `planned`: an attack's own threshold, fixed from the claim before its game, on every trial
//!   at 0.9 alpha, beside a split at the other 0.1 alpha; the larger bound is kept (Bonferroni
//!   over the two tests). All trials certify where the mechanism is near its claim (the split
//!   certifies on half), and the split keeps the power where it is far from it.
//!
//! Repeated runs (seeds) are pooled by concatenating their scores into one test: never a maximum
//! over runs.
//!
//! Bounds:
//! - `clopper-pearson` (Jagielski et al. 2020): one-sided Clopper-Pearson bounds TPR_lo and
//!   FPR_hi of a test refute every eps with TPR_lo > e^eps FPR_hi + delta and, the neighbouring
//!   datasets swapped, every eps with TNR_lo > e^eps FNR_hi + delta, where TNR_lo = 1 - FPR_hi and
//!   FNR_hi = 1 - TPR_lo are the same two intervals: the second hypothesis costs no alpha. The
//!   reversed test ("low scores are positives") gives the other two of the four hypotheses
//!   (FNR <= e^eps TNR + delta, FPR <= e^eps TPR + delta). Valid for every mechanism.
//! - `gdp` (Nasr et al. 2023): the same two intervals give a lower bound on mu of the Gaussian
//!   trade-off curve, converted to epsilon at delta (the curve is symmetric, so swapping the
//!   datasets gives the same mu). **Invalid for non-Gaussian mechanisms**: it assumes the
//!   mechanism's trade-off curve is Gaussian (Gaussian noise, DP-SGD); use `clopper-pearson`.
//! - `one-run` (Steinke, Nasr & Jagielski 2023): canaries with independent coins, the auditor
//!   guesses "included" for high scores and abstains on the rest.
//! - `one-run-fdp` (Mahloujifar, Melis & Chaudhuri 2025): the same guesses, judged against the
//!   Gaussian trade-off curve of (epsilon, delta), which gives tighter bounds for Gaussian noise.
//!   **Invalid for non-Gaussian mechanisms**, like `gdp`.
//!
//! The family `bonferroni` counts. For the two-interval bounds it is every threshold in both
//! directions, yet alpha is split over 2 (n_pos + n_neg) interval events, not over the tests,
//! because a Clopper-Pearson bound can fail only at an order statistic. Proof for the lower bound
//! on p(t) = P[X >= t] from the count K(t) of the n scores >= t (the other three bounds are the
//! same argument mirrored): let c_k be the bound for the count k, increasing in k. If it fails at
//! some t with K(t) = k >= 1, then t <= X_(k) (the k-th largest score), so c_k > p(t) >=
//! p(X_(k)): the event A_k = {p(X_(k)) < c_k}. The set {s : p(s) < c_k} is an upper set of
//! probability at most c_k, and X_(k) lies in it iff k scores do, so P[A_k] <= P[Bin(n, c_k) >= k]
//! = a, the interval's significance. Failures at every threshold thus lie in the union of A_1..A_n
//! (n events; the count 0 never fails), whatever the data; the TPR needs n_pos such events per
//! bound, the FPR n_neg, and the two directions need one lower and one upper bound on each:
//! a = alpha / (2 (n_pos + n_neg)) keeps the union within alpha. The count of distinct scores
//! does not enter (0/1 scores and continuous ones that separate alike certify alike).
//! For the one-run bounds the family is the rules "the r highest scores are included" for
//! r = 1, 2, 4, ... up to m, fixed by m alone: log2(m) + 1 tests, each at alpha over that count.
//! Counting one test per distinct score instead made the 2·m·delta term of the one-run p-value
//! exceed the significance for m beyond ~720 canaries at delta = 1e-5, even for a perfect attack.
//!
//! Where this module differs from jax_privacy's `CanaryScoreAuditor` (2.0.0), which it otherwise
//! agrees with on identical score sets:
//! - the family: jax's `Bonferroni` divides alpha by the number of (Pareto-frontier) thresholds
//!   and then by 2 per interval; here by the order-statistic events above (and the top-r rules
//!   for one-run), which does not depend on the number of distinct scores;
//! - the hypotheses: jax's two-sided Clopper-Pearson evaluates "TPR <= e^eps FPR + delta" and
//!   "TNR <= e^eps FNR + delta" for "score >= t" only; here every strategy evaluates both, and
//!   the reversed test ("score < t") adds the other two hypotheses, inside the counted family;
//! - the sign of mu: jax's GDP bound takes |mu|, which counts a test that worked in reverse
//!   without paying for it (it false-alarms on almost every null run); here mu must be positive,
//!   and a reversed test is a test of its own, in the family or chosen on the split;
//! - jax's GDP bound always corrects over every threshold; here it follows the strategy.
use crate::bisection::doubling_bisection;
use crate::error::{check, Result};
use crate::metrics::{clopper_pearson_lower, clopper_pearson_upper};
use crate::one_run::one_run_epsilon_above;
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
    /// The one-run bounds only guess "included" for high scores (as jax_privacy does); the
    /// others test both "high scores are positives" and "low scores are positives".
    fn one_run(self) -> bool {
        matches!(self, BoundKind::OneRun | BoundKind::OneRunFdp)
    }
    /// Whether the bound is valid only for mechanisms with a Gaussian trade-off curve.
    pub fn assumes_gaussian(self) -> bool {
        matches!(self, BoundKind::Gdp | BoundKind::OneRunFdp)
    }
    /// The paper the bound follows and what it assumes, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            BoundKind::ClopperPearson => {
                "Clopper-Pearson bound (Jagielski et al. 2020): eps >= ln((TPR_lo - delta) / FPR_hi) or, the \
                 neighbouring datasets swapped, ln((TNR_lo - delta) / FNR_hi); valid for every mechanism"
            }
            BoundKind::Gdp => {
                "Gaussian-DP bound (Nasr et al. 2023): a lower confidence bound on mu from TPR/FPR, converted to eps at \
                 the claimed delta; invalid for non-Gaussian mechanisms (it assumes a Gaussian trade-off curve: \
                 Gaussian noise, DP-SGD)"
            }
            BoundKind::OneRun => {
                "one-run bound (Steinke, Nasr & Jagielski 2023): correct 'included' guesses among canaries with \
                 independent coins"
            }
            BoundKind::OneRunFdp => {
                "one-run f-DP bound (Mahloujifar, Melis & Chaudhuri 2025): the one-run guesses judged against the \
                 Gaussian trade-off curve of (eps, delta); invalid for non-Gaussian mechanisms"
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
    /// An attack's own threshold, fixed from the claim before its game (gradient canaries:
    /// "the reads are likelier under inclusion", a log-likelihood ratio >= 0), certified on every
    /// trial at [`PLANNED_SHARE`] of alpha; a split at the rest of alpha stands beside it for a
    /// mechanism so far from its claim that the planned threshold misplaces its scores (DP-SGD
    /// without its noise), and the larger bound is kept (Bonferroni over the two tests).
    Planned { threshold: f64 },
}

/// The share of alpha the `planned` strategy spends on its planned test.
pub const PLANNED_SHARE: f64 = 0.9;

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
            ThresholdStrategy::Planned { .. } => "planned",
        }
    }
    /// This strategy for an attack that planned `threshold` before its game: the default split
    /// gives way to the planned test, a strategy set otherwise is kept.
    pub fn with_planned(self, threshold: Option<f64>) -> Self {
        match threshold {
            Some(threshold) if self == ThresholdStrategy::default() => ThresholdStrategy::Planned { threshold },
            _ => self,
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
            ("planned", Some(t)) => Some(ThresholdStrategy::Planned { threshold: t }),
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
            ThresholdStrategy::Planned { threshold } => write!(
                f,
                "planned (threshold {threshold} on every trial at {PLANNED_SHARE} alpha, a split at the rest)"
            ),
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
            ThresholdStrategy::Explicit { threshold } | ThresholdStrategy::Planned { threshold } => {
                check!(
                    threshold.is_finite(),
                    "strategy",
                    "{} threshold {threshold} is not finite",
                    self.strategy.name()
                )
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
    /// One-run bounds under `bonferroni`: the rule certified guessed "included" for this many
    /// highest scores (`threshold` is then the lowest of them).
    #[serde(default)]
    pub top_guesses: Option<usize>,
    pub eps_lb: f64,
    /// The bound a perfect attack would certify with the same trials and strategy: claims above
    /// it cannot be refuted by this test, however strong the attack.
    pub max_certifiable: f64,
    /// When `max_certifiable` is 0: why this bound and strategy cannot certify anything here,
    /// and what would.
    #[serde(default)]
    pub cannot_certify: Option<String>,
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
    certify_with_cost(pos, neg, spec, assumption).map(|(c, _)| c)
}

/// `certify`, with the work its threshold scan did.
fn certify_with_cost(pos: &[f64], neg: &[f64], spec: &AuditSpec, assumption: &str) -> Result<(Certificate, ScanCost)> {
    spec.validate()?;
    check!(!pos.is_empty(), "scores", "no positive trials");
    check!(!neg.is_empty(), "scores", "no negative trials");
    check!(pos.iter().chain(neg).all(|s| s.is_finite()), "scores", "a score is not finite (NaN or infinite)");
    if let ThresholdStrategy::Planned { threshold } = spec.strategy {
        return certify_planned(pos, neg, spec, threshold, assumption);
    }
    let alpha = 1.0 - spec.confidence;
    let one_run = spec.bound.one_run();
    let mut cost = ScanCost::default();
    let (rule, cert_pos, cert_neg, significance, top_family) = match spec.strategy {
        ThresholdStrategy::Explicit { threshold } => {
            let rule = Rule::Threshold(Test { threshold, reversed: false });
            (Some(rule), pos.to_vec(), neg.to_vec(), single_test_significance(spec.bound, alpha), None)
        }
        ThresholdStrategy::Bonferroni if one_run => {
            let family = top_guess_family(pos.len() + neg.len());
            let beta = alpha / family.len() as f64;
            let best = best_top_guesses(pos, neg, &family, spec, beta, &mut cost);
            (best.map(Rule::Top), pos.to_vec(), neg.to_vec(), beta, Some(family))
        }
        ThresholdStrategy::Bonferroni => {
            let significance = alpha / order_statistic_events(pos.len(), neg.len());
            let tests = candidate_tests(pos, neg);
            let best = best_test(pos, neg, &tests, spec, significance, None);
            (best.map(Rule::Threshold), pos.to_vec(), neg.to_vec(), significance, None)
        }
        ThresholdStrategy::Planned { .. } => unreachable!("certified by certify_planned"),
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
            let significance = single_test_significance(spec.bound, alpha);
            let project_to = Some((cert_pos.len(), cert_neg.len()));
            let best = if one_run {
                best_one_run_threshold(&sel_pos, &sel_neg, spec, significance, project_to, &mut cost)
            } else {
                best_test(&sel_pos, &sel_neg, &candidate_tests(&sel_pos, &sel_neg), spec, significance, project_to)
            };
            (best.map(Rule::Threshold), cert_pos, cert_neg, significance, None)
        }
    };
    let (np, nn) = (cert_pos.len(), cert_neg.len());
    let eps_lb = match rule {
        None => 0.0,
        Some(Rule::Threshold(t)) => {
            let (tp, fp) = t.counts(&cert_pos, &cert_neg);
            bound_at(spec.bound, tp, fp, np, nn, significance, spec.delta)
        }
        Some(Rule::Top(r)) => {
            let (_, correct) = top_guess_counts(&cert_pos, &cert_neg, r);
            one_run_at(spec.bound, np + nn, r, correct, spec.delta, significance, 0.0)
        }
    };
    let max_certifiable = match (&top_family, one_run) {
        // A perfect attack ranks every positive first: rule r then makes min(r, np) correct guesses.
        (Some(family), _) => perfect_one_run(spec.bound, np, nn, family, spec.delta, significance),
        (None, true) => {
            let ladder = top_guess_family(np).into_iter().chain([np]).collect::<Vec<_>>();
            perfect_one_run(spec.bound, np, nn, &ladder, spec.delta, significance)
        }
        (None, false) => bound_at(spec.bound, np, 0, np, nn, significance, spec.delta),
    };
    let (threshold, reversed, top_guesses) = match rule {
        None => (None, false, None),
        Some(Rule::Threshold(t)) => (Some(t.threshold), t.reversed, None),
        Some(Rule::Top(r)) => (top_guess_threshold(&cert_pos, &cert_neg, r), false, Some(r)),
    };
    let cannot_certify = (max_certifiable <= 0.0).then(|| cannot_certify_message(spec, np, nn, significance));
    let certificate = Certificate {
        bound: spec.bound,
        strategy: spec.strategy.name().to_string(),
        confidence: spec.confidence,
        delta: spec.delta,
        positives: pos.len(),
        negatives: neg.len(),
        certified_positives: np,
        certified_negatives: nn,
        threshold,
        reversed,
        top_guesses,
        eps_lb,
        max_certifiable,
        cannot_certify,
        assumption: assumption.to_string(),
    };
    Ok((certificate, cost))
}

/// The `planned` strategy: the planned test on every trial and the default split, each certified
/// at its share of alpha; the larger bound is kept, and the certificate names both tests.
fn certify_planned(
    pos: &[f64],
    neg: &[f64],
    spec: &AuditSpec,
    threshold: f64,
    assumption: &str,
) -> Result<(Certificate, ScanCost)> {
    let alpha = 1.0 - spec.confidence;
    let at = |strategy, share: f64| AuditSpec { strategy, confidence: 1.0 - share * alpha, ..*spec };
    let explicit = ThresholdStrategy::Explicit { threshold };
    let (planned, _) = certify_with_cost(pos, neg, &at(explicit, PLANNED_SHARE), assumption)?;
    let (split, cost) =
        certify_with_cost(pos, neg, &at(ThresholdStrategy::default(), 1.0 - PLANNED_SHARE), assumption)?;
    let described = format!(
        "{assumption}; Bonferroni over two tests, the larger bound kept: the planned threshold {threshold} on all \
         {} + {} trials at {PLANNED_SHARE} alpha (eps_lb {:.4}), and a split at {:.1} alpha (eps_lb {:.4})",
        planned.certified_positives,
        planned.certified_negatives,
        planned.eps_lb,
        1.0 - PLANNED_SHARE,
        split.eps_lb,
    );
    let max_certifiable = planned.max_certifiable.max(split.max_certifiable);
    let mut c = if split.eps_lb > planned.eps_lb { split } else { planned };
    c.strategy = spec.strategy.name().to_string();
    c.confidence = spec.confidence;
    c.max_certifiable = max_certifiable;
    if max_certifiable > 0.0 {
        c.cannot_certify = None;
    }
    c.assumption = described;
    Ok((c, cost))
}

/// The bound `certify` gives a test fixed in advance that called `tp` of `np` positives and `fp`
/// of `nn` negatives positive, at level `alpha`: for planning a test on expected counts.
pub fn fixed_test_bound(bound: BoundKind, tp: usize, fp: usize, np: usize, nn: usize, alpha: f64, delta: f64) -> f64 {
    bound_at(bound, tp, fp, np, nn, single_test_significance(bound, alpha), delta)
}

/// Why no attack, however strong, can make this test certify a bound above 0.
fn cannot_certify_message(spec: &AuditSpec, np: usize, nn: usize, significance: f64) -> String {
    let why = if spec.bound.one_run() && spec.delta > 0.0 {
        format!(
            "the 2·m·delta term of the one-run p-value (m = {}, delta = {:e}) stays above its significance {:.3e}; \
             fewer canaries, a smaller delta or the split strategy can certify",
            np + nn,
            spec.delta,
            significance
        )
    } else {
        format!(
            "{np} + {nn} trials are too few for confidence {} at delta {:e}; more trials can certify",
            spec.confidence, spec.delta
        )
    };
    format!(
        "even a perfect attack certifies 0 with the {} bound and the {} strategy: {why}",
        spec.bound.name(),
        spec.strategy.name()
    )
}

/// The significance of each Clopper-Pearson interval (two-interval bounds) or of the one p-value
/// (one-run bounds) when a single test, fixed in advance, is certified at level alpha.
fn single_test_significance(bound: BoundKind, alpha: f64) -> f64 {
    if bound.one_run() {
        alpha
    } else {
        alpha / 2.0
    }
}

/// The number of events `bonferroni` splits alpha over for the two-interval bounds: a
/// Clopper-Pearson bound can fail only at an order statistic (module doc), so the lower and the
/// upper bound on the TPR over every threshold are `np` events each, and those on the FPR `nn`.
fn order_statistic_events(np: usize, nn: usize) -> f64 {
    2.0 * (np + nn) as f64
}

/// The one-run rules `bonferroni` certifies: "the r highest scores are included" for r = 1, 2,
/// 4, ... up to m. Fixed by m alone, before any score is seen, so that the correction counts
/// log2(m) + 1 tests instead of one per distinct score (whose 2·m·delta term would otherwise
/// forbid any bound beyond a few hundred canaries).
fn top_guess_family(m: usize) -> Vec<usize> {
    std::iter::successors(Some(1usize), |r| r.checked_mul(2)).take_while(|&r| r <= m).collect()
}

/// The rule chosen by a strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    /// A threshold on the score.
    Threshold(Test),
    /// One-run: guess "included" for the r highest scores (abstaining on a tie across the r-th).
    Top(usize),
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

/// The scores sorted from the highest, each with whether it is a positive.
fn ranked(pos: &[f64], neg: &[f64]) -> Vec<(f64, bool)> {
    let mut all: Vec<(f64, bool)> = pos.iter().map(|&s| (s, true)).chain(neg.iter().map(|&s| (s, false))).collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    all
}

/// The guesses the top-`r` rule makes: the r highest scores, less those tied with the r-th when
/// the tie crosses it (a tie is broken by abstaining, never by the labels).
fn top_guesses_made(all: &[(f64, bool)], r: usize) -> usize {
    let r = r.min(all.len());
    if r == 0 || r == all.len() || all[r].0 != all[r - 1].0 {
        return r;
    }
    let boundary = all[r - 1].0;
    all.partition_point(|&(s, _)| s > boundary)
}

/// (guesses made, correct guesses) of the top-`r` rule.
fn top_guess_counts(pos: &[f64], neg: &[f64], r: usize) -> (usize, usize) {
    let all = ranked(pos, neg);
    let made = top_guesses_made(&all, r);
    (made, all[..made].iter().filter(|(_, p)| *p).count())
}

/// The lowest score the top-`r` rule guessed "included" for (None when it guessed nothing).
fn top_guess_threshold(pos: &[f64], neg: &[f64], r: usize) -> Option<f64> {
    let all = ranked(pos, neg);
    let made = top_guesses_made(&all, r);
    (made > 0).then(|| all[made - 1].0)
}

/// Every distinct score as a threshold (plus +inf, which calls nothing positive), in both
/// directions.
fn candidate_tests(pos: &[f64], neg: &[f64]) -> Vec<Test> {
    let mut thresholds: Vec<f64> = pos.iter().chain(neg).copied().collect();
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    thresholds.push(f64::INFINITY);
    let mut tests: Vec<Test> = thresholds.iter().map(|&t| Test { threshold: t, reversed: false }).collect();
    tests.extend(thresholds.iter().map(|&t| Test { threshold: t, reversed: true }));
    tests
}

/// Counts on `n` trials rescaled to `to` trials (the split's certification part).
fn projected(k: usize, n: usize, to: usize) -> usize {
    ((k as f64 * to as f64 / n as f64).round() as usize).min(to)
}

/// How many standard errors a rate of the split's choosing half is moved against the test
/// before it is projected onto the certifying half ([`shrunk_projection`]).
const SELECTION_SHRINK: f64 = 0.5;

/// `k` of `n` trials of the choosing half as a count of `to` trials, the rate moved by
/// [`SELECTION_SHRINK`] standard errors in the direction `sign` (-1 for a rate the bound grows
/// with, the TPR; +1 for the FPR). The choice maximises over every threshold, so it favours the
/// one whose rates the choosing half overstated most, and those are the extreme ones, estimated
/// from few scores, which then certify little on the other half: on the gradient canaries, 7 of
/// 45 runs (cora, cora-ml, twitch-ES, Amherst41; DP-MLP and GAP-NDP at eps 1 and 4; seeds 0-4)
/// certified under half of what their seed neighbours did, 0.00 to 0.40 of the claim. Moved by
/// half a standard error (Agresti-Coull's centre, so that counts of 0 move too), 4 of them
/// certify 0.71-0.84, 2 rise from 0.19-0.20 to 0.27-0.29, one stays at 0.40, and no run loses
/// more than 0.02 of the claim. A whole standard error did as well there but took from small
/// audits (400 canaries) the extreme thresholds that alone certify anything on a hundred trials.
/// Any choice made on the choosing half alone keeps the bound sound.
fn shrunk_projection(k: usize, n: usize, to: usize, sign: f64) -> usize {
    let p = (k as f64 + 0.5) / (n as f64 + 1.0);
    let moved = (p + sign * SELECTION_SHRINK * (p * (1.0 - p) / (n as f64 + 1.0)).sqrt()).clamp(0.0, 1.0);
    ((moved * to as f64).round() as usize).min(to)
}

/// The two-interval test with the largest bound, from counts swept in one pass over sorted
/// scores. With `project_to` (the split's certification sizes), each test is judged by the bound
/// its rates would give on that many trials, each rate first moved half a standard error against
/// the test ([`shrunk_projection`]): the maximum of the selection part's own bounds favours extreme
/// thresholds that a few lucky scores pass, which then certify little.
fn best_test(
    pos: &[f64],
    neg: &[f64],
    tests: &[Test],
    spec: &AuditSpec,
    significance: f64,
    project_to: Option<(usize, usize)>,
) -> Option<Test> {
    let (np, nn) = (pos.len(), neg.len());
    let (p, q) = (sorted(pos), sorted(neg));
    let counts = |t: &Test| {
        let (tp, fp) = (at_least(&p, t.threshold), at_least(&q, t.threshold));
        let (tp, fp) = if t.reversed { (np - tp, nn - fp) } else { (tp, fp) };
        match project_to {
            Some((cp, cn)) => (shrunk_projection(tp, np, cp, -1.0), shrunk_projection(fp, nn, cn, 1.0), cp, cn),
            None => (tp, fp, np, nn),
        }
    };
    // Branch and bound: the key at the point estimates is an upper bound on the key (each
    // interval end lies beyond its estimate) that costs no Beta quantile. Tests are tried from
    // the highest ceiling down, and the scan stops at the first ceiling that cannot beat the best
    // key: only the few tests near the top pay for their intervals.
    let mut order: Vec<(f64, usize)> = tests
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (tp, fp, np, nn) = counts(t);
            (key_ceiling(spec.bound, tp, fp, np, nn, spec.delta).unwrap_or(f64::INFINITY), i)
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    // (bound, key, index): the chosen test is the first in `tests` with the largest bound (the
    // first of all when none bounds anything), as a scan in the given order would choose.
    let mut best: Option<(f64, f64, usize)> = None;
    let (size_p, size_n) = project_to.unwrap_or((np, nn));
    let mut grid = (IntervalGrid::new(size_p, significance), IntervalGrid::new(size_n, significance));
    for (ceiling, i) in order {
        if best.is_some_and(|(_, k, _)| ceiling < k) {
            break;
        }
        let (tp, fp, np, nn) = counts(&tests[i]);
        // A second, tighter ceiling from the intervals at the nearest counts on a grid.
        if let Some(k) = best.map(|(_, k, _)| k) {
            if graded_key_ceiling(spec.bound, tp, fp, &mut grid, spec.delta).is_some_and(|c| c < k) {
                continue;
            }
        }
        let key = test_key(spec.bound, tp, fp, np, nn, significance, spec.delta);
        if best.is_some_and(|(_, k, _)| key < k) {
            continue;
        }
        let eps = bound_of_key(spec.bound, key, spec.delta);
        if best.is_none_or(|(b, _, j)| eps > b || (eps == b && i < j)) {
            best = Some((eps, key, i));
        }
    }
    match best {
        Some((b, _, i)) if b > 0.0 => Some(tests[i]),
        _ => tests.first().copied(),
    }
}

/// What [`best_test`] ranks tests by: a quantity the test's bound is nondecreasing in. For gdp it
/// is mu (at tens of thousands of scores, the bisection from mu to epsilon on every threshold was
/// most of a canary audit's certification time); for the other bounds, the bound itself.
fn test_key(bound: BoundKind, tp: usize, fp: usize, np: usize, nn: usize, significance: f64, delta: f64) -> f64 {
    match bound {
        BoundKind::Gdp => gdp_test_mu(
            clopper_pearson_upper(fp, nn, significance),
            clopper_pearson_upper(np - tp, np, significance),
            delta,
        ),
        _ => bound_at(bound, tp, fp, np, nn, significance, delta),
    }
}

/// An upper bound on [`test_key`] from the point estimates tp/np and fp/nn in place of the
/// Clopper-Pearson interval ends (the lower end of the TPR lies below its estimate, the upper
/// ends of the FPR and FNR above theirs, and the key grows with the first and falls with the
/// others), or None (the one-run bounds).
fn key_ceiling(bound: BoundKind, tp: usize, fp: usize, np: usize, nn: usize, delta: f64) -> Option<f64> {
    let (tpr, fpr) = (tp as f64 / np as f64, fp as f64 / nn as f64);
    match bound {
        BoundKind::Gdp => {
            let n = std_normal();
            Some(n.inverse_cdf(1.0 - fpr) - n.inverse_cdf(1.0 - tpr))
        }
        BoundKind::ClopperPearson => {
            // ln((hit - delta) / miss) at the estimates; a miss of 0 leaves no ceiling.
            let refuted = |hit: f64, miss: f64| match (hit > delta, miss > 0.0) {
                (false, _) => 0.0,
                (true, true) => ((hit - delta) / miss).ln().max(0.0),
                (true, false) => f64::INFINITY,
            };
            Some(refuted(tpr, fpr).max(refuted(1.0 - fpr, 1.0 - tpr)))
        }
        BoundKind::OneRun | BoundKind::OneRunFdp => None,
    }
}

/// Clopper-Pearson interval ends at every `step`-th count out of `n`, computed when first asked
/// for: both ends are nondecreasing in the count, so the ends at the grid counts around a count
/// bound its own ends from the side a ceiling on [`test_key`] needs, at a fraction of the solves.
struct IntervalGrid {
    n: usize,
    significance: f64,
    step: usize,
    upper: Vec<Option<f64>>,
    lower: Vec<Option<f64>>,
}

impl IntervalGrid {
    fn new(n: usize, significance: f64) -> Self {
        // About 8 counts per standard deviation of a rate near 1/2 (sqrt(n) / 2 counts).
        let step = ((n as f64).sqrt() / 16.0).round().max(1.0) as usize;
        let points = n / step + 2;
        IntervalGrid { n, significance, step, upper: vec![None; points], lower: vec![None; points] }
    }

    /// At most the Clopper-Pearson upper end at `k`: the end at the grid count at or below it.
    fn upper_at_most(&mut self, k: usize) -> f64 {
        let j = k / self.step;
        let (n, s, count) = (self.n, self.significance, j * self.step);
        *self.upper[j].get_or_insert_with(|| clopper_pearson_upper(count, n, s))
    }

    /// At least the Clopper-Pearson lower end at `k`: the end at the grid count at or above it.
    fn lower_at_least(&mut self, k: usize) -> f64 {
        let j = k.div_ceil(self.step);
        let (n, s, count) = (self.n, self.significance, (j * self.step).min(self.n));
        *self.lower[j].get_or_insert_with(|| clopper_pearson_lower(count, n, s))
    }
}

/// An upper bound on [`test_key`] from the grid's interval ends around the test's counts (the
/// key grows with the TPR's lower end and falls with the FPR's and FNR's upper ends), or None
/// (the one-run bounds). `grid` holds the positives' and the negatives' grids.
fn graded_key_ceiling(
    bound: BoundKind,
    tp: usize,
    fp: usize,
    (pos, neg): &mut (IntervalGrid, IntervalGrid),
    delta: f64,
) -> Option<f64> {
    let fpr_hi = neg.upper_at_most(fp);
    match bound {
        BoundKind::Gdp => Some(gdp_test_mu(fpr_hi, pos.upper_at_most(pos.n - tp), delta)),
        BoundKind::ClopperPearson => {
            let tpr_lo = pos.lower_at_least(tp);
            Some(clopper_pearson_epsilon(tpr_lo, fpr_hi, delta))
        }
        BoundKind::OneRun | BoundKind::OneRunFdp => None,
    }
}

/// The bound of a test from its [`test_key`].
fn bound_of_key(bound: BoundKind, key: f64, delta: f64) -> f64 {
    match bound {
        BoundKind::Gdp if key > 0.0 => gdp_epsilon(key, delta),
        BoundKind::Gdp => 0.0,
        _ => key,
    }
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Number of scores >= t in an ascending slice.
fn at_least(v: &[f64], t: f64) -> usize {
    v.len() - v.partition_point(|&s| s < t)
}

/// The work of a one-run scan: the candidates whose bound was evaluated at all (the rest were
/// pruned by their precision) and those that raised the best bound (a full bisection each).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ScanCost {
    evaluated: usize,
    improved: usize,
}

/// One-run scan over candidates (guesses, correct, canaries, rule): in order of decreasing
/// precision, it stops at the first candidate whose precision is no better than e^eps / (1 +
/// e^eps) of the best eps so far (neither it nor any later one can refute a larger eps); each
/// other is evaluated first at the best eps (one p-value), bisecting only when it beats it.
/// Returns the best rule.
fn scan_one_run<R: Copy>(
    candidates: Vec<(usize, usize, usize, R)>,
    spec: &AuditSpec,
    beta: f64,
    cost: &mut ScanCost,
) -> Option<R> {
    // Branch and bound on the precision: no eps at or above logit(correct / guesses) is refuted
    // (there q >= correct / guesses, so P[Bin(guesses, q) >= correct] >= 1/2 > beta), so the
    // candidates are tried from the most precise down and the scan stops at the first whose
    // precision cannot beat the best bound. Ties keep the input order.
    let precision = |&(g, c, _, _): &(usize, usize, usize, R)| if g == 0 { -1.0 } else { c as f64 / g as f64 };
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| precision(&candidates[b]).total_cmp(&precision(&candidates[a])).then(a.cmp(&b)));
    let mut best: Option<(f64, R)> = None;
    for &i in &order {
        let (guesses, correct, canaries, rule) = candidates[i];
        let floor = best.map_or(0.0, |(b, _)| b);
        let q = 1.0 / (1.0 + (-floor).exp());
        if guesses == 0 || (correct as f64) <= q * guesses as f64 {
            break;
        }
        cost.evaluated += 1;
        let eps = one_run_at(spec.bound, canaries, guesses, correct, spec.delta, beta, floor);
        if eps > floor {
            cost.improved += 1;
            best = Some((eps, rule));
        }
    }
    if best.is_some() {
        return best.map(|(_, r)| r);
    }
    // Nothing refuted: the candidate with the highest Clopper-Pearson lower bound on its
    // precision (the first such), the rule the scan reports then.
    let precision_lo = |&(g, c, _, _): &(usize, usize, usize, R)| {
        if g == 0 {
            -1.0
        } else {
            clopper_pearson_lower(c, g, beta.min(0.5))
        }
    };
    let mut first: Option<(f64, R)> = None;
    for c in &candidates {
        let lo = precision_lo(c);
        if first.is_none_or(|(b, _)| lo > b) {
            first = Some((lo, c.3));
        }
    }
    first.map(|(_, r)| r)
}

/// The one-run threshold with the largest bound on the selection part (projected to the
/// certification part's size).
fn best_one_run_threshold(
    pos: &[f64],
    neg: &[f64],
    spec: &AuditSpec,
    beta: f64,
    project_to: Option<(usize, usize)>,
    cost: &mut ScanCost,
) -> Option<Test> {
    let (np, nn) = (pos.len(), neg.len());
    let (p, q) = (sorted(pos), sorted(neg));
    let mut thresholds: Vec<f64> = p.iter().chain(&q).copied().collect();
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    thresholds.push(f64::INFINITY);
    let candidates = thresholds
        .into_iter()
        .map(|t| {
            let (tp, fp) = (at_least(&p, t), at_least(&q, t));
            let (tp, fp, canaries) = match project_to {
                Some((cp, cn)) => (projected(tp, np, cp), projected(fp, nn, cn), cp + cn),
                None => (tp, fp, np + nn),
            };
            (tp + fp, tp, canaries, Test { threshold: t, reversed: false })
        })
        .collect();
    scan_one_run(candidates, spec, beta, cost)
}

/// The top-r rule of `family` with the largest bound at `beta` on all the trials.
fn best_top_guesses(
    pos: &[f64],
    neg: &[f64],
    family: &[usize],
    spec: &AuditSpec,
    beta: f64,
    cost: &mut ScanCost,
) -> Option<usize> {
    let all = ranked(pos, neg);
    let m = all.len();
    let candidates = family
        .iter()
        .map(|&r| {
            let made = top_guesses_made(&all, r);
            let correct = all[..made].iter().filter(|(_, p)| *p).count();
            // The p-value counts the rule's budget r: abstentions only make it conservative.
            (r, correct, m, r)
        })
        .collect();
    scan_one_run(candidates, spec, beta, cost)
}

/// The largest one-run bound a perfect attack (every positive ranked first) reaches with one of
/// the guess counts `rules`.
fn perfect_one_run(bound: BoundKind, np: usize, nn: usize, rules: &[usize], delta: f64, beta: f64) -> f64 {
    let mut best = 0.0f64;
    for &r in rules.iter().rev() {
        best = best.max(one_run_at(bound, np + nn, r, r.min(np), delta, beta, best));
    }
    best
}

/// The one-run bound of `correct` of `guesses` among `canaries`, or `floor` when it does not
/// refute any eps above `floor`.
fn one_run_at(
    bound: BoundKind,
    canaries: usize,
    guesses: usize,
    correct: usize,
    delta: f64,
    beta: f64,
    floor: f64,
) -> f64 {
    match bound {
        BoundKind::OneRunFdp => one_run_fdp_epsilon_above(floor, canaries, guesses, correct, delta, beta),
        _ => one_run_epsilon_above(floor, canaries, guesses, correct, delta, beta),
    }
}

/// The bound of one test: `tp` of `np` positives and `fp` of `nn` negatives called positive.
/// `significance` is that of each Clopper-Pearson interval (two-interval bounds) or of the
/// p-value (one-run bounds, whose guesses are the tp + fp trials called positive).
fn bound_at(bound: BoundKind, tp: usize, fp: usize, np: usize, nn: usize, significance: f64, delta: f64) -> f64 {
    match bound {
        BoundKind::ClopperPearson => {
            let tpr_lo = clopper_pearson_lower(tp, np, significance);
            let fpr_hi = clopper_pearson_upper(fp, nn, significance);
            clopper_pearson_epsilon(tpr_lo, fpr_hi, delta)
        }
        BoundKind::Gdp => {
            // The Gaussian trade-off curve is symmetric: swapping the datasets gives the same mu.
            let fpr_hi = clopper_pearson_upper(fp, nn, significance);
            gdp_bound(fpr_hi, clopper_pearson_upper(np - tp, np, significance), delta)
        }
        BoundKind::OneRun | BoundKind::OneRunFdp => one_run_at(bound, np + nn, tp + fp, tp, delta, significance, 0.0),
    }
}

/// The epsilon a test's interval ends refute: "TPR <= e^eps FPR + delta", and with the
/// neighbouring datasets swapped "TNR <= e^eps FNR + delta"; the same two intervals bound both.
fn clopper_pearson_epsilon(tpr_lo: f64, fpr_hi: f64, delta: f64) -> f64 {
    let refuted = |hit_lo: f64, miss_hi: f64| {
        if hit_lo > delta && miss_hi > 0.0 {
            ((hit_lo - delta) / miss_hi).ln().max(0.0)
        } else {
            0.0
        }
    };
    refuted(tpr_lo, fpr_hi).max(refuted(1.0 - fpr_hi, 1.0 - tpr_lo))
}

fn std_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("standard normal")
}

/// The epsilon at `delta` of the Gaussian trade-off curve through upper bounds on a test's FPR
/// and FNR: mu = Phi^-1(1 - FPR) - Phi^-1(FNR), 0 when the bounds leave no room for a mu > 0.
pub fn gdp_bound(fpr_hi: f64, fnr_hi: f64, delta: f64) -> f64 {
    bound_of_key(BoundKind::Gdp, gdp_test_mu(fpr_hi, fnr_hi, delta), delta)
}

/// The mu behind [`gdp_bound`] (-inf when the bounds leave no room for one); the bound is
/// nondecreasing in it.
fn gdp_test_mu(fpr_hi: f64, fnr_hi: f64, delta: f64) -> f64 {
    if fpr_hi.max(fnr_hi) >= 1.0 - delta {
        return f64::NEG_INFINITY;
    }
    let n = std_normal();
    n.inverse_cdf(1.0 - fpr_hi) - n.inverse_cdf(fnr_hi)
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
    match doubling_bisection(|eps| gdp_delta(mu, eps) > delta, 0.0, 1.0, 1e4, 100) {
        Ok((lo, _)) => lo,
        Err((_, hi)) => hi,
    }
}

/// The mu of the Gaussian mechanism that is exactly (eps, delta)-DP (analytic Gaussian, Balle &
/// Wang 2018, with sensitivity / sigma = mu); delta(eps) grows with mu.
pub fn gdp_mu(eps: f64, delta: f64) -> f64 {
    match doubling_bisection(|mu| gdp_delta(mu, eps) < delta, 0.0, 1.0, 1e4, 100) {
        Ok((_, hi)) => hi,
        Err(_) => f64::INFINITY,
    }
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
    one_run_fdp_epsilon_above(0.0, canaries, guesses, correct, delta, beta)
}

/// The largest eps above `floor` whose Gaussian trade-off curve `correct` of `guesses` refutes,
/// or `floor` when none is: one evaluation at `floor` decides, the bisection runs only above it.
pub fn one_run_fdp_epsilon_above(
    floor: f64,
    canaries: usize,
    guesses: usize,
    correct: usize,
    delta: f64,
    beta: f64,
) -> f64 {
    if guesses == 0 || correct == 0 || fdp_objective(canaries, guesses, correct, floor, delta, beta) <= 0.0 {
        return floor;
    }
    let refuted = |eps: f64| fdp_objective(canaries, guesses, correct, eps, delta, beta) > 0.0;
    match doubling_bisection(refuted, floor, (2.0 * floor).max(1.0), 1e3, 60) {
        Ok((lo, _)) | Err((lo, _)) => lo,
    }
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
    crate::metrics::partition(scores, included)
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
                ThresholdStrategy::Planned { threshold: 0.5 },
            ] {
                v.push(AuditSpec { bound, strategy, confidence: 0.95, delta, seed: 0 });
            }
        }
        v
    }

    /// Null calibration: with identical score distributions no mechanism leaks, so a bound above
    /// 0 is a false alarm. For every bound, strategy and delta (0 where the bound allows it),
    /// 2,000 null audits (fixed seeds) raise at most alpha + 3 binomial standard deviations of
    /// them: 24 combinations, with the order-statistic family, the swapped hypothesis, the
    /// one-run top-r family and the planned test beside its split among them.
    #[test]
    fn null_audits_false_alarm_within_alpha() {
        let trials = 2000usize;
        let alpha: f64 = 0.05;
        let limit = alpha + 3.0 * (alpha * (1.0 - alpha) / trials as f64).sqrt();
        let zero_delta = specs(0.0).into_iter().filter(|s| !s.bound.assumes_gaussian());
        let all: Vec<AuditSpec> = specs(1e-5).into_iter().chain(zero_delta).collect();
        assert_eq!(all.len(), 24);
        for spec in all {
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
                "{} / {} / delta {}: false-alarm rate {rate} > {limit}",
                spec.bound.name(),
                spec.strategy.name(),
                spec.delta
            );
        }
    }

    /// The planned test certifies on every trial: on Gaussian scores of mu = 0.15 (5,000 + 5,000
    /// trials, the threshold at mu / 2) its gdp bound beats the split's in at least 25 of 30 seeds
    /// and doubles it at the median (measured: 28 of 30, median 0.26 against 0.08). With its
    /// threshold misplaced (every score below it, positives and negatives apart, as for DP-SGD
    /// without its noise) the split beside it still certifies.
    #[test]
    fn planned_test_certifies_more_than_a_split_and_keeps_the_split_for_a_misplaced_threshold() {
        let mu = 0.15;
        let spec = |strategy| AuditSpec { strategy, ..AuditSpec::new(BoundKind::Gdp, 1e-5) };
        let (mut planned, mut split, mut wins) = (Vec::new(), Vec::new(), 0);
        for seed in 0..30 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let (pos, neg) = gaussian_scores(5_000, mu, &mut rng);
            let p = certify(&pos, &neg, &spec(ThresholdStrategy::Planned { threshold: mu / 2.0 }), "test").unwrap();
            let s = certify(&pos, &neg, &AuditSpec { seed, ..spec(ThresholdStrategy::default()) }, "test").unwrap();
            assert_eq!(p.strategy, "planned");
            wins += (p.eps_lb > s.eps_lb) as usize;
            planned.push(p.eps_lb);
            split.push(s.eps_lb);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (p, s) = (median(&mut planned), median(&mut split));
        assert!(wins >= 25 && p > 2.0 * s, "planned won {wins} of 30, medians {p} vs {s}");
        let pos: Vec<f64> = (0..1000).map(|i| -1.0 - i as f64 * 1e-3).collect();
        let neg: Vec<f64> = (0..1000).map(|i| -5.0 - i as f64 * 1e-3).collect();
        let c = certify(&pos, &neg, &spec(ThresholdStrategy::Planned { threshold: 0.0 }), "test").unwrap();
        assert!(c.eps_lb > 2.0 && c.certified_positives < 1000, "{c:?}");
        assert!(c.assumption.contains("planned threshold 0 on all 1000 + 1000 trials"), "{}", c.assumption);
    }

    /// The one-run top-r family on many canaries: null audits of 2,000 canaries false-alarm
    /// within alpha, and a perfect attack on them certifies a bound (it certified 0 when the
    /// family counted one test per distinct score).
    #[test]
    fn one_run_bonferroni_is_calibrated_and_certifies_on_many_canaries() {
        let trials = 400usize;
        let limit = 0.05 + 3.0 * (0.05f64 * 0.95 / trials as f64).sqrt();
        for bound in [BoundKind::OneRun, BoundKind::OneRunFdp] {
            let spec = AuditSpec { strategy: ThresholdStrategy::Bonferroni, ..AuditSpec::new(bound, 1e-5) };
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
            let mut alarms = 0;
            for _ in 0..trials {
                let (pos, neg) = gaussian_scores(1000, 0.0, &mut rng);
                alarms += (certify(&pos, &neg, &spec, "test").unwrap().eps_lb > 0.0) as usize;
            }
            let rate = alarms as f64 / trials as f64;
            assert!(rate <= limit, "{}: false-alarm rate {rate} > {limit}", bound.name());
            let pos: Vec<f64> = (0..1000).map(|i| 1.0 + i as f64).collect();
            let neg: Vec<f64> = (0..1000).map(|i| -(i as f64)).collect();
            let c = certify(&pos, &neg, &spec, "test").unwrap();
            assert!(c.eps_lb > 1.0 && c.cannot_certify.is_none(), "{}: {c:?}", bound.name());
            // The chosen rule guessed a power of two of the highest scores, all of them included.
            let r = c.top_guesses.unwrap();
            assert!(r.is_power_of_two() && r <= 1000 && c.threshold.unwrap() >= 1.0, "{c:?}");
            assert!((c.eps_lb - c.max_certifiable).abs() < 1e-9, "{c:?}");
        }
    }

    /// A rule "the r highest scores" never breaks a tie by the labels: it abstains on the tie.
    #[test]
    fn top_r_rules_abstain_on_a_tie_across_the_boundary() {
        let pos = [3.0, 2.0, 2.0];
        let neg = [2.0, 1.0];
        assert_eq!(top_guess_counts(&pos, &neg, 1), (1, 1));
        assert_eq!(top_guess_counts(&pos, &neg, 2), (1, 1)); // 3 of the 2s tie across rank 2
        assert_eq!(top_guess_counts(&pos, &neg, 4), (4, 3));
        assert_eq!(top_guess_counts(&pos, &neg, 5), (5, 3));
        assert_eq!(top_guess_threshold(&pos, &neg, 2), Some(3.0));
        assert_eq!(top_guess_family(1000), vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
    }

    /// When no attack could certify, the certificate says so and why: one-run at delta = 0.01 on
    /// 2,000 canaries (2·m·delta = 40), and clopper-pearson on 3 + 3 trials.
    #[test]
    fn a_test_that_cannot_certify_says_so() {
        let pos: Vec<f64> = (0..1000).map(|i| 1.0 + i as f64).collect();
        let neg: Vec<f64> = (0..1000).map(|i| -(i as f64)).collect();
        for strategy in [ThresholdStrategy::Bonferroni, ThresholdStrategy::default()] {
            let spec = AuditSpec { strategy, ..AuditSpec::new(BoundKind::OneRun, 0.01) };
            let c = certify(&pos, &neg, &spec, "test").unwrap();
            assert_eq!((c.eps_lb, c.max_certifiable), (0.0, 0.0));
            let why = c.cannot_certify.unwrap();
            assert!(why.contains("perfect attack") && why.contains("2·m·delta"), "{why}");
        }
        let spec =
            AuditSpec { strategy: ThresholdStrategy::Bonferroni, ..AuditSpec::new(BoundKind::ClopperPearson, 0.0) };
        let c = certify(&[1.0; 3], &[0.0; 3], &spec, "test").unwrap();
        assert!(c.max_certifiable == 0.0 && c.cannot_certify.unwrap().contains("3 + 3 trials are too few"));
        let c = certify(&[1.0; 100], &[0.0; 100], &spec, "test").unwrap();
        assert!(c.max_certifiable > 0.0 && c.cannot_certify.is_none());
    }

    /// At m = 20,000 canaries the one-run scans stay cheap: in decreasing order of precision,
    /// most of the ~10,000 thresholds are pruned without evaluating their bound (at most 15% are
    /// evaluated, mostly one p-value at the best eps so far) and few need a bisection.
    #[test]
    fn one_run_scans_prune_at_twenty_thousand_canaries() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (pos, neg) = gaussian_scores(10_000, 2.0, &mut rng);
        for bound in [BoundKind::OneRun, BoundKind::OneRunFdp] {
            for strategy in [ThresholdStrategy::default(), ThresholdStrategy::Bonferroni] {
                let spec = AuditSpec { strategy, ..AuditSpec::new(bound, 1e-5) };
                let (c, cost) = certify_with_cost(&pos, &neg, &spec, "test").unwrap();
                assert!(c.eps_lb > 0.5, "{} / {}: {c:?}", bound.name(), strategy.name());
                assert!(
                    cost.evaluated <= 1_500 && cost.improved <= 10,
                    "{} / {}: {cost:?} of ~10,000 thresholds",
                    bound.name(),
                    strategy.name()
                );
            }
        }
    }

    /// The pruned scans choose what a plain scan of every test in order chooses: the first test
    /// with the largest bound (the first of all when none bounds anything), with and without the
    /// split's projection, on separable, weak and null scores, rounded so that counts tie.
    #[test]
    fn pruned_scans_choose_what_a_plain_scan_chooses() {
        let plain =
            |pos: &[f64], neg: &[f64], tests: &[Test], spec: &AuditSpec, sig: f64, to: Option<(usize, usize)>| {
                let (np, nn) = (pos.len(), neg.len());
                let mut best: Option<(f64, Test)> = None;
                for &t in tests {
                    let (tp, fp) = t.counts(pos, neg);
                    let (tp, fp, np, nn) = match to {
                        Some((cp, cn)) => {
                            (shrunk_projection(tp, np, cp, -1.0), shrunk_projection(fp, nn, cn, 1.0), cp, cn)
                        }
                        None => (tp, fp, np, nn),
                    };
                    let eps = bound_at(spec.bound, tp, fp, np, nn, sig, spec.delta);
                    if best.is_none_or(|(b, _)| eps > b) {
                        best = Some((eps, t));
                    }
                }
                best.map(|(_, t)| t)
            };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for (n, mu) in [(3_000, 1.0), (3_000, 0.2), (2_000, 0.0), (400, 3.0)] {
            let (pos, neg) = gaussian_scores(n, mu, &mut rng);
            let round = |v: Vec<f64>| v.into_iter().map(|x| (x * 20.0).round() / 20.0).collect::<Vec<_>>();
            for (pos, neg) in [(pos.clone(), neg.clone()), (round(pos), round(neg))] {
                let tests = candidate_tests(&pos, &neg);
                // (gdp at delta 0 claims infinity; its numerical epsilon is not monotone in mu.)
                for (bound, delta) in
                    [(BoundKind::Gdp, 1e-5), (BoundKind::ClopperPearson, 0.0), (BoundKind::ClopperPearson, 1e-5)]
                {
                    let spec = AuditSpec::new(bound, delta);
                    for to in [None, Some((n / 2, n / 2 + 7))] {
                        let sig = 0.05 / 4.0;
                        let want = plain(&pos, &neg, &tests, &spec, sig, to);
                        let got = best_test(&pos, &neg, &tests, &spec, sig, to);
                        assert_eq!(got, want, "n {n}, mu {mu}, {}, delta {delta}, {to:?}", bound.name());
                    }
                }
            }
        }
    }

    /// The one-run scan, tried from the most precise candidate down, chooses the rule a full
    /// evaluation of every candidate in decreasing order of its precision's Clopper-Pearson lower
    /// bound (the order it used to scan in) chooses.
    #[test]
    fn the_pruned_one_run_scan_chooses_what_a_full_scan_chooses() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        for (n, mu) in [(3_000, 1.0), (3_000, 0.3), (2_000, 0.0)] {
            let (pos, neg) = gaussian_scores(n, mu, &mut rng);
            for bound in [BoundKind::OneRun, BoundKind::OneRunFdp] {
                let spec = AuditSpec::new(bound, 1e-5);
                let beta = 0.05;
                let mut keyed: Vec<(f64, usize, usize, f64)> = candidate_tests(&pos, &neg)
                    .into_iter()
                    .filter(|t| !t.reversed)
                    .map(|t| {
                        let (tp, fp) = t.counts(&pos, &neg);
                        let lo = if tp + fp == 0 { -1.0 } else { clopper_pearson_lower(tp, tp + fp, beta) };
                        (lo, tp + fp, tp, t.threshold)
                    })
                    .collect();
                keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
                let mut want: Option<(f64, f64)> = None;
                for &(_, g, c, t) in &keyed {
                    let eps = one_run_at(bound, 2 * n, g, c, spec.delta, beta, 0.0);
                    if want.is_none_or(|(b, _)| eps > b) {
                        want = Some((eps, t));
                    }
                }
                let got = best_one_run_threshold(&pos, &neg, &spec, beta, None, &mut ScanCost::default());
                assert_eq!(got.map(|t| t.threshold), want.map(|(_, t)| t), "n {n}, mu {mu}, {}", bound.name());
            }
        }
    }

    /// The bonferroni family counts order-statistic events, not distinct scores: perfect
    /// separation certifies the same with 0/1 scores and with continuous ones, the closed form
    /// of the all-correct counts at a = alpha / (2 (n_pos + n_neg)).
    #[test]
    fn bonferroni_does_not_depend_on_the_number_of_distinct_scores() {
        let n = 1000usize;
        let spec =
            AuditSpec { strategy: ThresholdStrategy::Bonferroni, ..AuditSpec::new(BoundKind::ClopperPearson, 0.0) };
        let binary = certify(&vec![1.0; n], &vec![0.0; n], &spec, "test").unwrap();
        let pos: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / n as f64).collect();
        let neg: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
        let continuous = certify(&pos, &neg, &spec, "test").unwrap();
        let a: f64 = 0.05 / (2.0 * 2.0 * n as f64);
        let tpr_lo = (a.ln() / n as f64).exp();
        let fpr_hi = -(a.ln() / n as f64).exp_m1();
        let want = (tpr_lo / fpr_hi).ln();
        assert!((binary.eps_lb - want).abs() < 1e-9, "{} vs {want}", binary.eps_lb);
        assert!((continuous.eps_lb - want).abs() < 1e-9, "{} vs {want}", continuous.eps_lb);
        assert!((binary.max_certifiable - want).abs() < 1e-9);
    }

    /// The swapped hypothesis "TNR <= e^eps FNR + delta" comes from the same two intervals: a
    /// test that calls every positive and half the negatives positive refutes little as
    /// "TPR <= e^eps FPR + delta" and much as its twin, and certifies the larger.
    #[test]
    fn the_swapped_hypothesis_is_certified_from_the_same_intervals() {
        let pos = vec![1.0; 100];
        let neg: Vec<f64> = (0..100).map(|i| (i % 2) as f64).collect();
        let delta = 1e-5;
        let spec = AuditSpec {
            strategy: ThresholdStrategy::Explicit { threshold: 0.5 },
            ..AuditSpec::new(BoundKind::ClopperPearson, delta)
        };
        let c = certify(&pos, &neg, &spec, "test").unwrap();
        let tpr_lo = clopper_pearson_lower(100, 100, 0.025);
        let fpr_hi = clopper_pearson_upper(50, 100, 0.025);
        let direct = ((tpr_lo - delta) / fpr_hi).ln();
        let swapped = ((1.0 - fpr_hi - delta) / (1.0 - tpr_lo)).ln();
        assert!(swapped > 3.0 * direct && direct > 0.0, "{direct} {swapped}");
        assert!((c.eps_lb - swapped).abs() < 1e-12, "{} vs {swapped}", c.eps_lb);
        // The GDP bound is symmetric in the swap: its value is unchanged by it.
        let gdp = AuditSpec { bound: BoundKind::Gdp, ..spec };
        let g = certify(&pos, &neg, &gdp, "test").unwrap();
        let z = std_normal();
        let mu = z.inverse_cdf(1.0 - fpr_hi) - z.inverse_cdf(1.0 - tpr_lo);
        assert!((g.eps_lb - gdp_epsilon(mu, delta)).abs() < 1e-9);
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
