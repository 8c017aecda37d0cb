//! What a gradient-canary audit decides before the training it observes: how many canaries and,
//! where they outnumber a DP-SGD stage's coordinates, whether they share them on sign codes or
//! the audit keeps only as many as fit one a coordinate.
//!
//! The decision needs every stage of the run at once. Deciding stage by stage, at each stage's
//! first step, caps the canaries at the first stage's coordinates and then codes them in a smaller
//! later stage anyway (GAP-NDP on Cornell5: encoder 5,974 coordinates, classifier 1,478): the cap
//! costs trials and buys nothing. So a method declares its DP-SGD stages ([`StagePlan`]: their
//! coordinates, rate, noise and steps, all fixed by the recipe) before its first stage runs, and
//! the audit decides once from that plan. The plan holds no score and no coin, so the choice is
//! one made before training: no selection among layouts or counts.
use super::canary::{CanaryLayout, CanarySites, CODED_DRAWS_PER_CYCLE};
use super::engine::DpSgd;
use tch::Tensor;

/// One DP-SGD stage as its method plans it before training.
#[derive(Debug, Clone, PartialEq)]
pub struct StagePlan {
    /// Coordinates of the stage's trainable parameters, laid end to end.
    pub coordinates: usize,
    /// Of those, the coordinates of one-dimensional parameters (biases, normalisation shifts).
    pub bias_coordinates: usize,
    /// Poisson rate q of each step.
    pub sample_rate: f64,
    /// Noise std over the clipping bound (sigma).
    pub noise_multiplier: f64,
    /// Examples a step draws on average (q n): with the coordinates, the per-example gradient
    /// entries a step computes, the training's own work that the canaries' cost is held to.
    pub expected_batch_size: f64,
    pub steps: usize,
}

impl StagePlan {
    /// The stage that trains `params` with `dp` for `steps` steps.
    pub fn new(params: &[Tensor], dp: &DpSgd, steps: usize) -> Self {
        let numel = |p: &&Tensor| p.numel();
        StagePlan {
            coordinates: params.iter().map(|p| numel(&p)).sum(),
            bias_coordinates: params.iter().filter(|p| p.dim() == 1).map(|p| numel(&p)).sum(),
            sample_rate: dp.sample_rate,
            noise_multiplier: dp.noise_multiplier,
            expected_batch_size: dp.expected_batch_size,
            steps,
        }
    }

    /// The coordinates canaries of `sites` may sit on.
    pub fn eligible(&self, sites: CanarySites) -> usize {
        match sites {
            CanarySites::All => self.coordinates,
            CanarySites::Biases => self.bias_coordinates,
        }
    }
}

/// How many of the plan's canaries the audit keeps, and why (printed with the result).
#[derive(Debug, Clone, PartialEq)]
pub struct CountDecision {
    pub canaries: usize,
    pub reason: String,
}

/// [`CanaryLayout::Auto`] on the whole run with `m` canaries requested: every stage with fewer
/// eligible coordinates than canaries codes its sharers, unless every such stage samples so
/// rarely that a sharer expects fewer than [`CODED_DRAWS_PER_CYCLE`] draws per code cycle and
/// capping the audit at the smallest stage's coordinates keeps at least half the canaries: then
/// that cap puts every canary on a coordinate of its own in every stage. A cap that leaves some
/// stage coded is never taken: it costs trials and the codes stay (GAP-NDP on Cornell5 at eps 4:
/// 0.25 of the claim with the encoder capped and the classifier coded, 0.54 all coded).
pub fn auto_layout(stages: &[StagePlan], sites: CanarySites, m: usize) -> CountDecision {
    let eligible: Vec<usize> = stages.iter().map(|s| s.eligible(sites)).collect();
    let fewest = eligible.iter().copied().min().unwrap_or(m);
    if fewest >= m || fewest == 0 {
        return CountDecision {
            canaries: m,
            reason: format!("every DP-SGD stage has a coordinate of its own for each of the {m} canaries"),
        };
    }
    let draws_per_cycle = |s: &StagePlan, d: usize| s.sample_rate * m.div_ceil(d) as f64;
    let sparse = stages
        .iter()
        .zip(&eligible)
        .filter(|(_, &d)| d < m)
        .all(|(s, &d)| draws_per_cycle(s, d) < CODED_DRAWS_PER_CYCLE);
    let most_draws =
        stages.iter().zip(&eligible).filter(|(_, &d)| d < m).map(|(s, &d)| draws_per_cycle(s, d)).fold(0.0, f64::max);
    if sparse && 2 * fewest >= m {
        CountDecision {
            canaries: fewest,
            reason: format!(
                "{fewest} of the {m} requested canaries, each on a coordinate of its own in every DP-SGD stage: \
                 sharers on sign codes would expect at most {most_draws:.2} draws per code cycle (below \
                 {CODED_DRAWS_PER_CYCLE}), and the smallest stage's {fewest} coordinates keep at least half the \
                 canaries"
            ),
        }
    } else {
        let why = if sparse {
            format!("a cap at the smallest stage's {fewest} coordinates would keep fewer than half of them")
        } else {
            format!("a sharer expects up to {most_draws:.2} draws per code cycle (at least {CODED_DRAWS_PER_CYCLE})")
        };
        CountDecision {
            canaries: m,
            reason: format!(
                "all {m} canaries, sharing the coordinates of the DP-SGD stages that have fewer (the smallest has \
                 {fewest}) on orthogonal sign codes: {why}"
            ),
        }
    }
}

/// [`auto_layout`] for `layout` (the explicit layouts keep every canary).
pub fn decide(stages: &[StagePlan], sites: CanarySites, m: usize, layout: CanaryLayout) -> CountDecision {
    match layout {
        CanaryLayout::Auto => auto_layout(stages, sites, m),
        CanaryLayout::Coded | CanaryLayout::Phases => {
            CountDecision { canaries: m, reason: format!("all {m} canaries (the layout is set explicitly)") }
        }
    }
}

/// The claim a chosen canary count is planned against, and the bound it is planned for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountPlanning {
    /// The DP-SGD component's claimed epsilon at `delta`.
    pub epsilon: f64,
    pub delta: f64,
    /// The confidence of the planned `gdp` bound (its planned test on every trial).
    pub confidence: f64,
}

/// The predicted bound at one canary count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub canaries: usize,
    /// The mu an ideal Gaussian canary of this layout faces: the claim's, less what sharing costs.
    pub mu: f64,
    /// The `gdp` bound's value on the expected counts of that canary set (see [`expected_gdp_bound`]).
    pub eps_lb: f64,
}

/// Candidate counts within 1% of the best predicted bound are as good: the fewest is taken, as
/// each canary costs work in every step and in the certification.
const AS_GOOD: f64 = 0.99;

/// The fewest canaries a chosen count considers.
const FEWEST: usize = 1_000;

/// A chosen count reads at most one canary per this many per-example gradient entries the
/// training computes (steps x expected batch x coordinates, over all stages): each canary costs
/// a read in every step and, where drawn, a draw, some 9 ns a step, so the audit stays near the
/// training's own cost (measured: GAP-NDP on Cornell5 at eps 1, 880 steps, took about 1.3 times
/// the untouched training with the 29,808 canaries this allows and 1.45 times with 40,000).
pub const GRADIENT_ENTRIES_PER_CANARY: f64 = 32.0;

/// The most canaries a chosen count may take on `stages`: `max`, or fewer where the training's
/// own per-step work is small ([`GRADIENT_ENTRIES_PER_CANARY`]).
pub fn cost_cap(stages: &[StagePlan], max: usize) -> usize {
    let steps: f64 = stages.iter().map(|s| s.steps as f64).sum();
    let work: f64 = stages.iter().map(|s| s.steps as f64 * s.expected_batch_size * s.coordinates as f64).sum();
    let cap = work / (steps.max(1.0) * GRADIENT_ENTRIES_PER_CANARY);
    if cap.is_finite() {
        (cap as usize).clamp(FEWEST.min(max), max)
    } else {
        max
    }
}

/// Chooses how many of at most `max` canaries to audit, from the declared stages and the claim
/// alone (never from a score): for each candidate count m, the layout `layout` gives each stage
/// (own coordinates where it has at least m, else coded or phases), the power an ideal Gaussian
/// canary keeps there ([`stage_mu`]), and the `gdp` bound expected of m such canaries at the
/// claim's mu ([`expected_gdp_bound`]); the fewest canaries within 1% of the best prediction win.
/// More canaries tighten the bound's confidence intervals; beyond a stage's coordinates they share
/// them, and a coded sharer's linear statistic and unscored last cycle cost it power.
pub fn choose_count(
    stages: &[StagePlan],
    sites: CanarySites,
    max: usize,
    layout: CanaryLayout,
    planning: CountPlanning,
) -> (CountDecision, Vec<Prediction>) {
    let eligible: Vec<usize> = stages.iter().map(|s| s.eligible(sites)).collect();
    let allowed = max;
    let max = cost_cap(stages, allowed);
    let mut candidates = vec![max];
    let mut m = max as f64;
    while m / std::f64::consts::SQRT_2 >= FEWEST as f64 {
        m /= std::f64::consts::SQRT_2;
        candidates.push(m.round() as usize);
    }
    // Where a stage's code length doubles: the most canaries with each code length.
    for &d in eligible.iter().filter(|&&d| d > 0) {
        let mut at = d;
        while at <= max {
            if at >= FEWEST.min(max) {
                candidates.push(at);
            }
            at *= 2;
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mu_claim = gnnaudit_attacks::stats::gdp_mu(planning.epsilon, planning.delta);
    let all_own = composed_mu(stages, &eligible, 1, layout);
    let predictions: Vec<Prediction> = candidates
        .iter()
        .map(|&m| {
            let kept = composed_mu(stages, &eligible, m, layout) / all_own;
            let mu = if kept.is_finite() { mu_claim * kept } else { mu_claim };
            Prediction { canaries: m, mu, eps_lb: expected_gdp_bound(m, mu, planning) }
        })
        .collect();
    let best = predictions.iter().map(|p| p.eps_lb).fold(0.0, f64::max);
    let chosen = predictions.iter().find(|p| p.eps_lb >= AS_GOOD * best).copied().unwrap_or(predictions[0]);
    let at_max = predictions.last().copied().unwrap_or(chosen);
    let reason = format!(
        "{} canaries, chosen before training from the DP-SGD stages' sizes, rates, noise and steps and the claim \
         (eps {:.3} at delta {:e}, mu {:.3}): the gdp bound predicted for ideal Gaussian canaries in this layout \
         (planned test, {:.0}%) is {:.3} with them (mu {:.3}), {:.3} with the most allowed ({}: at most {} requested, and \
         one canary per {} per-example gradient entries the training computes), and no candidate count from {} \
         to {} is predicted above {:.3}",
        chosen.canaries,
        planning.epsilon,
        planning.delta,
        mu_claim,
        planning.confidence * 100.0,
        chosen.eps_lb,
        chosen.mu,
        at_max.eps_lb,
        at_max.canaries,
        allowed,
        GRADIENT_ENTRIES_PER_CANARY,
        candidates[0],
        max,
        best
    );
    (CountDecision { canaries: chosen.canaries, reason }, predictions)
}

/// The mu of the whole run for a canary of m laid out by `layout`: the stages' [`stage_mu`]
/// composed as Gaussian trade-offs compose (`sqrt(sum mu_s^2)`, Dong, Roth & Su 2019).
fn composed_mu(stages: &[StagePlan], eligible: &[usize], m: usize, layout: CanaryLayout) -> f64 {
    stages
        .iter()
        .zip(eligible)
        .map(|(s, &d)| {
            let sharers = m.div_ceil(d.max(1));
            let read = match (sharers, layout) {
                (1, _) => Read::Own,
                (_, CanaryLayout::Phases) => Read::Phases(sharers),
                _ => Read::Coded(sharers.next_power_of_two()),
            };
            stage_mu(s, read).powi(2)
        })
        .sum::<f64>()
        .sqrt()
}

/// How a canary reads a stage's steps.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Read {
    /// Every step, on a coordinate of its own, scored step by step.
    Own,
    /// Every step of complete code cycles of this length, scored by their sum.
    Coded(usize),
    /// One phase of this many.
    Phases(usize),
}

/// The power of one stage's reads, as the mu of a Gaussian trade-off. Read step by step, T
/// Poisson-subsampled Gaussian steps of rate q and noise sigma are about
/// `q sqrt(T (e^{1/sigma^2} - 1))`-GDP (the central limit theorem of Bu, Dong, Long & Su 2020),
/// which the per-step ratio attains. A code cycle's sum of T' reads is a Gaussian of std
/// `sqrt(T') sigma C` shifted by C per draw, a Binomial(T', q) count: its mean shift over its
/// spread gives `q sqrt(T') / sqrt(sigma^2 + q (1 - q))`, which falls behind the per-step ratio
/// where draws are rare against the noise. Only the ratios between layouts are used (the claim's
/// mu sets the scale).
fn stage_mu(s: &StagePlan, read: Read) -> f64 {
    let (q, sigma, t) = (s.sample_rate, s.noise_multiplier, s.steps as f64);
    let per_step = |steps: f64| {
        let gain = if sigma > 0.0 { (1.0 / (sigma * sigma)).exp_m1() } else { f64::INFINITY };
        q * (steps * gain).sqrt()
    };
    match read {
        Read::Own => per_step(t),
        Read::Phases(p) => per_step((t / p as f64).floor()),
        Read::Coded(l) => {
            let scored = (s.steps / l * l) as f64;
            q * scored.sqrt() / (sigma * sigma + q * (1.0 - q)).sqrt()
        }
    }
}

/// The `gdp` bound of m canaries (half included) whose scores are N(0, 1) when left out and
/// N(mu, 1) when included, evaluated on the expected counts of the test the audit plans: the
/// midpoint threshold mu / 2 (a log-likelihood ratio of 0) on every trial at
/// [`PLANNED_SHARE`] of alpha, as `certify` does under `ThresholdStrategy::Planned`.
/// A planning figure, not a certificate.
pub fn expected_gdp_bound(m: usize, mu: f64, planning: CountPlanning) -> f64 {
    use gnnaudit_attacks::stats::{fixed_test_bound, BoundKind, PLANNED_SHARE};
    let n = m / 2;
    if n == 0 || mu.is_nan() || mu <= 0.0 {
        return 0.0;
    }
    let alpha = PLANNED_SHARE * (1.0 - planning.confidence);
    let tail = |x: f64| 0.5 * libm::erfc(x / std::f64::consts::SQRT_2);
    let mu = mu.min(40.0);
    let tp = (n as f64 * tail(-mu / 2.0)).round() as usize;
    let fp = (n as f64 * tail(mu / 2.0)).round() as usize;
    fixed_test_bound(BoundKind::Gdp, tp.min(n), fp.min(n), n, n, alpha, planning.delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(coordinates: usize, q: f64) -> StagePlan {
        StagePlan {
            coordinates,
            bias_coordinates: coordinates / 10,
            sample_rate: q,
            noise_multiplier: 1.0,
            expected_batch_size: 1e4 * q,
            steps: 100,
        }
    }

    /// The rule on whole-run plans: the stage sizes and rates of DP-MLP and GAP-NDP on cora and
    /// Cornell5 (10,000 canaries requested).
    #[test]
    fn auto_caps_only_when_the_cap_puts_every_stage_on_own_coordinates() {
        let m = 10_000;
        let auto = |stages: &[StagePlan]| auto_layout(stages, CanarySites::All, m).canaries;
        // DP-MLP on cora: more coordinates than canaries, nothing to decide.
        assert_eq!(auto(&[stage(95_000, 0.13)]), m);
        // DP-MLP on Cornell5: 2 sharers at q = 0.02, 0.04 draws a cycle; the cap keeps 57%.
        assert_eq!(auto(&[stage(5_702, 0.02)]), 5_702);
        // GAP-NDP on Cornell5: the encoder alone would cap at 5,974, but the classifier (1,478)
        // would stay coded, and capping at 1,478 keeps 15%: all coded.
        let d = auto_layout(&[stage(5_974, 0.02), stage(1_478, 0.02)], CanarySites::All, m);
        assert_eq!(d.canaries, m, "{d:?}");
        assert!(d.reason.contains("fewer than half"), "{}", d.reason);
        // Two sparse stages that both fit at least half the canaries: capped at the smaller.
        assert_eq!(auto(&[stage(7_000, 0.02), stage(6_000, 0.02)]), 6_000);
        // A stage drawn often enough per code cycle keeps the codes, however small the cap.
        assert_eq!(auto(&[stage(9_000, 0.02), stage(6_000, 0.3)]), m);
        // GAP-NDP on cora: classifier of 1,543 coordinates at q = 0.13 (7 sharers): coded.
        assert_eq!(auto(&[stage(95_000, 0.13), stage(1_543, 0.13)]), m);
        // Canaries on biases count the bias coordinates: 600 of them for 1,000 canaries, capped.
        let biases = auto_layout(&[stage(6_000, 0.02)], CanarySites::Biases, 1_000);
        assert_eq!(biases.canaries, 600, "{biases:?}");
        // The explicit layouts keep every canary.
        assert_eq!(decide(&[stage(5_702, 0.02)], CanarySites::All, m, CanaryLayout::Coded).canaries, m);
    }

    const PLANNING: CountPlanning = CountPlanning { epsilon: 1.0, delta: 1e-5, confidence: 0.95 };

    /// The planned bound never exceeds the epsilon of the mu it is planned at, grows with the
    /// canaries, and comes close to that epsilon with very many.
    #[test]
    fn the_expected_gdp_bound_grows_with_canaries_towards_the_true_epsilon() {
        for mu in [0.2, 1.0, 3.0] {
            let truth = gnnaudit_attacks::stats::gdp_epsilon(mu, PLANNING.delta);
            let at = |m: usize| expected_gdp_bound(m, mu, PLANNING);
            let (few, some, many) = (at(1_000), at(10_000), at(1_000_000));
            assert!(few <= some && some <= many && many <= truth, "mu {mu}: {few} {some} {many} (truth {truth})");
            assert!(many >= 0.75 * truth, "mu {mu}: {many} vs {truth}");
        }
        assert_eq!(expected_gdp_bound(3, 1.0, PLANNING), 0.0);
        assert_eq!(expected_gdp_bound(10_000, 0.0, PLANNING), 0.0);
    }

    /// Sharing costs a coded canary power only where draws are rare against the noise, and a
    /// code's unscored last cycle; turns cost it the steps it does not read.
    #[test]
    fn a_canary_keeps_its_stage_s_power_on_its_own_coordinate_and_loses_some_shared() {
        let s = StagePlan {
            coordinates: 100,
            bias_coordinates: 10,
            sample_rate: 0.1,
            noise_multiplier: 5.0,
            expected_batch_size: 100.0,
            steps: 64,
        };
        let own = stage_mu(&s, Read::Own);
        let coded = stage_mu(&s, Read::Coded(8));
        assert!(coded < own && coded > 0.97 * own, "high noise: coded {coded} vs own {own}");
        let low_noise = StagePlan { noise_multiplier: 0.8, sample_rate: 0.02, ..s.clone() };
        assert!(stage_mu(&low_noise, Read::Coded(2)) < 0.7 * stage_mu(&low_noise, Read::Own));
        // 64 steps in cycles of 32: all scored; in cycles of 128: none.
        assert_eq!(stage_mu(&s, Read::Coded(128)), 0.0);
        let phases = stage_mu(&s, Read::Phases(4));
        assert!((phases - own / 2.0).abs() < 1e-12, "a quarter of the steps: half the mu");
    }

    /// The cost cap is the training's per-example gradient entries per step over 64, within
    /// [1,000, the most requested].
    #[test]
    fn the_cost_cap_follows_the_training_s_own_work_per_step() {
        // 1,000 examples a step (q = 0.1) of 1,000 coordinates: 10^6 entries, 31,250 canaries.
        assert_eq!(cost_cap(&[stage(1_000, 0.1)], 40_000), 31_250);
        assert_eq!(cost_cap(&[stage(1_000, 0.1)], 10_000), 10_000);
        assert_eq!(cost_cap(&[stage(10, 0.01)], 40_000), 1_000);
        // Two stages of equal steps: the mean of their work.
        assert_eq!(cost_cap(&[stage(1_000, 0.1), stage(3_000, 0.1)], 1_000_000), 62_500);
    }

    /// The chosen count is the fewest whose prediction is within 1% of the best candidate's, and
    /// the reason names it and the prediction.
    #[test]
    fn the_chosen_count_is_the_fewest_predicted_as_good_as_the_best() {
        let plans = [
            vec![stage(95_000, 0.13)],
            vec![stage(5_702, 0.02)],
            vec![stage(5_974, 0.02), stage(1_478, 0.02)],
            vec![stage(95_000, 0.13), stage(1_543, 0.13)],
        ];
        for stages in &plans {
            let (d, predictions) = choose_count(stages, CanarySites::All, 40_000, CanaryLayout::Auto, PLANNING);
            let best = predictions.iter().map(|p| p.eps_lb).fold(0.0, f64::max);
            let chosen = predictions.iter().find(|p| p.canaries == d.canaries).unwrap();
            assert!(chosen.eps_lb >= AS_GOOD * best, "{stages:?}: {d:?}");
            assert!(predictions.iter().filter(|p| p.canaries < d.canaries).all(|p| p.eps_lb < AS_GOOD * best));
            let cap = cost_cap(stages, 40_000);
            assert!(predictions.iter().all(|p| p.canaries <= cap && p.canaries >= FEWEST.min(cap)));
            assert!(d.reason.starts_with(&format!("{} canaries", d.canaries)), "{}", d.reason);
            // An ideal canary on coordinates of its own faces the claim's mu.
            let own = predictions.iter().find(|p| stages.iter().all(|s| s.coordinates >= p.canaries)).unwrap();
            assert!((own.mu - gnnaudit_attacks::stats::gdp_mu(1.0, 1e-5)).abs() < 1e-9);
        }
    }
}
