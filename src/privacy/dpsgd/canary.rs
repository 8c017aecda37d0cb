//! In-pipeline gradient canaries: the white-box audit of the DP-SGD step a trainer actually runs
//! (Nasr et al. 2023: Dirac canary gradients, every intermediate update observed; Steinke et al.
//! 2023: many independent canaries in one training run).
//!
//! While [`observe`] runs a training, every DP-SGD step that reaches [`super::DpSgd::noisy_flat`]
//! (all of gnnaudit's trainers do) gets extra per-example gradients: canary i is a Dirac gradient
//! on its own coordinate, of raw norm `raw_norm * C`, included in the run by the plan's fair coin,
//! and in each step it is eligible for, sampled with the step's Poisson rate q. A sampled canary is
//! clipped by the trainer's own rule ([`super::DpSgd::clip_dirac`]) and added to the clipped sum,
//! and the step's noise is added to that: the step's release. The observer reads the release at
//! every canary's coordinate, less the real examples' clipped sum there. The optimiser steps on
//! the release less the canaries' clipped contributions, i.e. on the real examples' clipped sum
//! plus the same noise draw, so the audited model is bit-identical to an untouched training's
//! and its utility is the target's.
//!
//! Why that is sound. Each step's release is the DP-SGD mechanism applied to the dataset plus the
//! canaries: the same Poisson sampling, clipping and noise as a real example's, so the
//! accountant's guarantee for a canary holds for it step by step. The releases compose
//! adaptively in DP-SGD, each step's input depending on the earlier releases through the model;
//! here the later steps' inputs (the model, the real examples' draws) no longer depend on the
//! releases' canary parts at all, a non-adaptive special case of the adaptive composition the
//! accountant already covers. The auditor's score is post-processing of the releases. The
//! planted bugs act on the release itself (its noise, its clipping), so they stay visible.
//!
//! A canary's score is the Neyman-Pearson statistic of its reads under the mechanism the
//! accountant claims (Nasr et al. 2023 score canaries by the likelihood ratio of the claimed
//! mechanism; by the Neyman-Pearson lemma no test of one canary is more powerful). Step t of a
//! correct trainer releases a left-out canary's read as `x_t ~ N(0, s_t^2)` and an included one's
//! as the Poisson mixture `(1 - q_t) N(0, s_t^2) + q_t N(C_t, s_t^2)`, with `s_t = sigma_t C_t`;
//! the steps compose adaptively, so the log-likelihood ratio of the whole run is
//! `sum_t ln(1 - q_t + q_t exp((C_t x_t - C_t^2 / 2) / s_t^2))`, evaluated here as a log-sum-exp.
//! It weighs every step and every stage by its own rate and noise: a plain sum of the reads is the
//! same test only when all steps share q and sigma, and with q = 1; over stages of unequal noise
//! (GAP's encoder and classifier) the noisiest stage swamps the others. A step without noise
//! (sigma 0) adds `x_t / C_t`, the number of draws, the limit of the ratio's ordering. Any score
//! keeps the certified bound sound (the bounds assume only the canaries' independence); the
//! statistic buys power.
//!
//! Taking away the real examples' share is sound: given the history (the iterates, which this
//! white-box auditor observes, Nasr et al. 2023) and the real examples' own Poisson draws, which
//! are independent of every canary's coin, it is a known constant, and DP-SGD's add/remove
//! guarantee for the canary holds for any fixed rest of the data. Left in, it is a nuisance that
//! differs from coordinate to coordinate and costs the test most of its power (DP-MLP on cora at
//! eps 4: AUC 0.65 with it, the bound 0.14 of the claim).
//!
//! More canaries than a stage has coordinates share coordinates ([`CanaryLayout::Coded`], the
//! default). The canaries on one coordinate enter signed: canary i adds `h_i(t) v_i` at step t,
//! with `h_i` its own row of a Walsh-Hadamard matrix of order L (a power of two at least the
//! number of sharers), so every canary reads every step. Its read is `h_i(t)` times the release
//! at its coordinate less the real examples' sum and the other sharers' draws there (each a known
//! constant given the history, as the real examples' share is), i.e. its own draw plus `h_i(t) z_t`
//! for the step's noise z_t. A sharing canary's statistic for the stage is the sum of its reads
//! over complete code cycles of L steps; over a cycle the rows are orthogonal, so the sums of
//! two sharers are uncorrelated Gaussians given the draws, hence independent: the independence
//! the split bounds need holds exactly, as it does for canaries on coordinates of their own. The
//! steps of a last, incomplete cycle are left out of the score (any score is sound). That sum is
//! scored by its own Neyman-Pearson statistic under the claimed stage, `ln sum_k Bin(k; T, q)
//! exp((C k L - C^2 k^2 / 2) / (T s^2))`: a Gaussian of variance `T s^2` shifted by C per draw.
//! A stage with fewer steps than L adds nothing. The linear sum loses little against the
//! per-step ratio where steps sample often and each draw is small against the noise (GAP-NDP on
//! cora, q = 0.13: the codes lift its bound from 0.47 to 0.70 of the claim at eps 4); at low rates
//! (q = 0.02 on Cornell5) a canary's rare draws are single spikes that the per-step ratio sees and
//! the sum dilutes, and coordinates of their own or turns certify more. Andrew et al. 2024 score
//! random-direction canaries by such projections; unlike fixed random directions, the codes leave
//! no correlation between canaries.
//! [`CanaryLayout::Auto`], the default, decides from what the recipe fixes before training: the
//! DP-SGD stages a method declares ([`declare`], [`super::canary_plan`]), each with its
//! coordinates d, rate q and steps. It codes the sharers, unless every stage with sharers expects
//! fewer than [`CODED_DRAWS_PER_CYCLE`] draws per code cycle (`q ceil(m / d)`) and the smallest
//! stage has coordinates for at least half the m canaries: then only that many stay in the audit,
//! each on a coordinate of its own in every stage. A method that declares nothing gets the same
//! rule stage by stage, at each stage's first step. Never from the scores, which would be a
//! maximum over layouts without correction.
//! [`CanaryLayout::Phases`] keeps the older layout: canaries on one coordinate take turns
//! (`period` phases of the steps), each reading only its share.
//!
//! Each distinct parameter list (a GAP encoder, its classifier, a ProGAP stage) is a stage with
//! its own coordinates; a canary's score adds its reads over all stages, so the audit measures the
//! composition of every DP-SGD stage the method runs, the claim it is compared with.
//!
//! Node-level DP-SGD (DP-GNN, DPAR's rows) claims more than one example: a node enters up to K+1
//! per-sample gradient terms, batches are drawn uniformly without replacement, and the noise is
//! scaled to the replace-one sensitivity 2(K+1)C. A canary of one per-example gradient exercises
//! 1/(2(K+1)) of that, and certified nothing (DP-GNN at eps 4 on cora: 0.00 of the claim). Under
//! such a claim ([`NodeGroup`], read from the accountant's own event) a canary is a node: each
//! step draws how many of its K+1 terms the batch holds, rho ~ Hypergeometric(N, K+1, B), as the
//! claim does, and every drawn term adds its clipped Dirac gradient, +C if the coin included the
//! canary and -C if not (the node it replaced). The read is then `N(+-C rho, s^2)` with rho
//! unobserved, the very pair whose divergence the accountant bounds by joint convexity
//! (Daigavane et al. 2021, Thm. 1), and it is scored by its own likelihood ratio
//! `ln sum_rho H(rho) exp((C rho x - C^2 rho^2 / 2) / s^2) - ln sum_rho H(rho) exp((-C rho x -
//! C^2 rho^2 / 2) / s^2)`. Node canaries that share a coordinate score a code cycle's sum the same
//! way, over the sum of their terms in the cycle's steps.
//!
//! The positive control of this audit ([`CanaryPlan::noise_off`]) reads every step's release
//! without the DP-SGD noise and keeps the statistic of the claimed mechanism: the version of the
//! mechanism that leaks, judged by the same test.
//!
//! The hook touches neither the gradients the optimiser sees nor torch's generator (the canaries
//! draw from their own ChaCha stream): training is bit-identical whether an audit runs or not.
use super::canary_plan::{choose_count, decide, CountPlanning, Prediction, StagePlan};
use super::engine::{steps_per_epoch, DpSgd, PlantedFlaw};
use crate::error::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;
use tch::{Kind, Tensor};

/// Which coordinates canaries may sit on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CanarySites {
    /// Any coordinate of the model.
    #[default]
    All,
    /// Coordinates of one-dimensional parameters only (biases, normalisation shifts): the
    /// parameter group a per-group clipping bug would leave out.
    Biases,
}

/// How canaries are laid out when they outnumber a stage's coordinates (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CanaryLayout {
    /// From the declared stages' coordinates, sampling rates and steps, all fixed by the recipe
    /// ([`super::canary_plan::auto_layout`]): [`Self::Coded`], unless a cap at the smallest
    /// stage's coordinates puts every canary on a coordinate of its own, keeps at least half of
    /// them, and every stage with sharers would expect them drawn fewer than
    /// [`CODED_DRAWS_PER_CYCLE`] times per code cycle.
    #[default]
    Auto,
    /// Sharers of a coordinate enter under orthogonal sign codes and all read every step.
    Coded,
    /// Sharers of a coordinate take turns: each reads one phase of the steps.
    Phases,
}

/// The expected draws of one sharing canary per code cycle below which [`CanaryLayout::Auto`]
/// gives up sharing, when that keeps at least half the canaries. A cycle's sum is only as good as
/// the draws in it: with 7 sharers at q = 0.13 (0.9 draws a cycle, GAP-NDP's classifier on cora)
/// the codes lifted the bound from 0.47 to 0.70 of the claim at eps 4 against turns; with 2
/// sharers at q = 0.02 (0.04, DP-MLP on Cornell5) a canary's rare draws are single spikes the sum
/// dilutes, and 5,702 canaries on coordinates of their own certified 0.57 of the claim at eps 4
/// where 10,000 coded ones certified 0.34. Keeping fewer than half costs more trials than the
/// codes cost signal: GAP-NDP on Cornell5 (7 sharers at q = 0.02 on its classifier, every canary
/// on its own coordinate in the encoder) certified 0 at eps 4 with 1,478 canaries and 0.54 of the
/// claim with 10,000 coded ones (medians of seeds 0-2).
pub const CODED_DRAWS_PER_CYCLE: f64 = 0.5;

/// The node-level DP-SGD step an accountant claims (DP-GNN's event, module doc): batches of
/// `batch` out of `population` uniformly without replacement, one node in up to `terms` (K+1) of
/// them, replace-one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeGroup {
    pub population: u64,
    pub terms: u64,
    pub batch: u64,
}

impl NodeGroup {
    /// `ln P(rho)` for rho = 0..=terms drawn terms: Hypergeometric(population, terms, batch).
    fn ln_pmf(self) -> Vec<f64> {
        use crate::privacy::accountant::special::ln_choose;
        let NodeGroup { population: n, terms: k, batch: b } = self;
        let total = ln_choose(n, b);
        (0..=k)
            .map(|r| if b < r { f64::NEG_INFINITY } else { ln_choose(k, r) + ln_choose(n - k, b - r) - total })
            .collect()
    }

    /// `ln P(sum = k)` for the sum of a node's terms over `steps` independent steps, k = 0..=
    /// steps * terms (a convolution power of [`Self::ln_pmf`]; impossible counts skipped).
    fn ln_pmf_of_sum(self, steps: usize) -> Vec<f64> {
        let step: Vec<(usize, f64)> =
            self.ln_pmf().into_iter().enumerate().filter(|(_, l)| l.is_finite()).map(|(r, l)| (r, l.exp())).collect();
        let mut sum = vec![1.0];
        for _ in 0..steps {
            let mut next = vec![0.0; sum.len() + self.terms as usize];
            for (k, &p) in sum.iter().enumerate().filter(|(_, &p)| p > 0.0) {
                for &(r, pr) in &step {
                    next[k + r] += p * pr;
                }
            }
            sum = next;
        }
        sum.into_iter().map(f64::ln).collect()
    }

    /// `P(rho <= r)` for r = 0..=terms, for drawing rho by one uniform.
    fn cumulative(self) -> Vec<f64> {
        let mut acc = 0.0;
        self.ln_pmf()
            .into_iter()
            .map(|l| {
                acc += l.exp();
                acc
            })
            .collect()
    }
}

/// What to plant: one fair coin per canary and the canaries' shape.
#[derive(Debug, Clone, PartialEq)]
pub struct CanaryPlan {
    /// `included[i]`: canary i enters the training (fair coin, drawn by the auditor).
    pub included: Vec<bool>,
    pub sites: CanarySites,
    /// A canary's raw gradient norm over the clipping bound C (at least 1): above 1 a correct
    /// clip brings it to exactly C, and a missing clip shows.
    pub raw_norm: f64,
    /// Seed of the canaries' own stream (coordinates and Poisson draws).
    pub seed: u64,
    /// The positive control: every observed DP-SGD step's release is read without noise.
    pub noise_off: bool,
    pub layout: CanaryLayout,
    /// Some: the audit chooses how many of `included` to keep, before training, from the stages
    /// the method declares and this claim ([`super::canary_plan::choose_count`]); a method that
    /// declares none keeps [`UNPLANNED_CANARIES`]. None: all of them (less what `Auto` caps).
    pub planning: Option<CountPlanning>,
    /// Some: the claim is node-level DP-SGD, and each canary enters as a node does (module doc).
    pub node_group: Option<NodeGroup>,
}

/// The canaries kept under a chosen count when the method declares no DP-SGD stage plan.
pub const UNPLANNED_CANARIES: usize = 10_000;

/// What the observer read during one training run.
#[derive(Debug, Clone, PartialEq)]
pub struct CanaryReadings {
    /// Canary i's score: the log-likelihood ratio of its reads, included against left out,
    /// under the claimed mechanism (module doc).
    pub scores: Vec<f64>,
    /// DP-SGD parameter lists the trainer ran (stages).
    pub stages: usize,
    /// DP-SGD steps observed over all stages.
    pub steps: usize,
    /// Largest number of phases a stage dealt its steps into (1: every canary reads every step).
    pub period: usize,
    /// Most canaries on one coordinate of a stage (1: each has coordinates of its own).
    pub sharing: usize,
    /// Steps of coded stages after their last complete code cycle, left out of the scores.
    pub unscored_steps: usize,
    /// Eligible coordinates of the smallest stage: with at most this many canaries, every
    /// canary reads every step of every stage.
    pub fewest_coordinates: usize,
    /// Canaries audited: all of the plan's, or under [`CanaryLayout::Auto`] the first ones as
    /// many as a stage without enough draws for codes has coordinates. `scores` has this length.
    pub canaries: usize,
    /// The layout the stages ran: `own coordinates`, `coded` or `phases` (the last two when some
    /// stage had sharers).
    pub layout: &'static str,
    /// Included canaries' draws into a batch, over all steps.
    pub sampled: usize,
    /// Why the audit kept `canaries` canaries: decided from the stages the method declared
    /// before training ([`declare`]), or stage by stage for a method that declares none.
    pub count_reason: String,
    /// Under a chosen count, the bound predicted at each candidate count (the choice's evidence).
    pub predictions: Vec<Prediction>,
}

/// One stage's canaries: where each sits, its sign code and, when canaries share coordinates,
/// their running sums.
struct Stage {
    key: Vec<(usize, i64)>,
    /// `coordinate[i]`: canary i's index into the stage's flat gradient.
    coordinate: Vec<i64>,
    /// `slot[i]`: which of the stage's picked coordinates canary i sits on.
    slot: Vec<usize>,
    slots: usize,
    /// `code[i]`: canary i's row of the Walsh-Hadamard matrix of order `code_length`.
    code: Vec<usize>,
    /// 1 when every canary has a coordinate of its own (its reads are scored step by step).
    code_length: usize,
    /// Whether that coordinate belongs to a one-dimensional parameter.
    in_bias: Vec<bool>,
    period: usize,
    step: usize,
    eligible: usize,
    sharing: usize,
    /// The stage's step as claimed (its first step's; a coded stage must keep it).
    claimed: Option<ClaimedStep>,
    /// Coded stages with sharers: each canary's signed reads summed over the current cycle and
    /// over the completed ones.
    pending: Vec<f64>,
    sums: Vec<f64>,
    summed_steps: usize,
    /// Per phase, built at its first step: what every step of that phase reads.
    phases: Vec<Option<PhaseReads>>,
    /// Under shuffled batches (a planted bug): each canary's batch in the current epoch.
    epoch_batch: Vec<usize>,
}

/// The reads shared by every step of one phase of a stage: which canaries, where they sit, and
/// which of them the plan included (the only ones a step can draw). Built once, so that a step
/// costs a pass over its draws and one over its reads, without a tensor allocated per read.
struct PhaseReads {
    /// The canaries read, in order.
    canaries: Vec<usize>,
    canaries_t: Tensor,
    /// Their coordinates in the stage's flat gradient, and their slots.
    coordinates: Vec<usize>,
    slots: Vec<usize>,
    /// (position among the reads, canary) of the ones a step can draw: the included ones, or
    /// every one under a node-level claim (a left-out node canary enters with the opposite sign).
    drawable: Vec<(usize, usize)>,
}

impl Stage {
    fn shared(&self) -> bool {
        self.code_length > 1
    }

    /// Builds the reads of `phase` for the first `m` canaries, unless built already (a later
    /// stage's first step may lower the count the audit keeps).
    fn prepare(&mut self, phase: usize, m: usize, included: Option<&[bool]>) {
        if self.phases[phase].as_ref().is_none_or(|p| p.canaries.len() != (phase..m).step_by(self.period).len()) {
            self.phases[phase] = Some(self.phase_reads(phase, m, included));
        }
    }

    /// `included`: None when every canary draws (node canaries).
    fn phase_reads(&self, phase: usize, m: usize, included: Option<&[bool]>) -> PhaseReads {
        let canaries: Vec<usize> = (phase..m).step_by(self.period).collect();
        let ids: Vec<i64> = canaries.iter().map(|&i| i as i64).collect();
        PhaseReads {
            drawable: canaries
                .iter()
                .enumerate()
                .filter(|(_, &i)| included.is_none_or(|inc| inc[i]))
                .map(|(k, &i)| (k, i))
                .collect(),
            canaries_t: Tensor::from_slice(&ids),
            coordinates: canaries.iter().map(|&i| self.coordinate[i] as usize).collect(),
            slots: canaries.iter().map(|&i| self.slot[i]).collect(),
            canaries,
        }
    }
}

/// The positions among `n` canaries that one Poisson draw at rate `q` takes, in order: the gaps
/// between them are geometric (`P(gap >= g) = (1 - q)^g`), so a step costs its draws rather than
/// a coin per canary.
fn poisson_draws(rng: &mut ChaCha8Rng, q: f64, n: usize) -> impl Iterator<Item = usize> + '_ {
    let ln_miss = (-q).ln_1p();
    let mut at = 0usize;
    std::iter::from_fn(move || {
        if q <= 0.0 {
            return None;
        }
        let u: f64 = rng.gen();
        let gap = ((1.0 - u).ln() / ln_miss).floor();
        // A gap of -0 (q = 1) takes the next canary; a NaN gap ends the draws.
        if gap.is_nan() || gap >= (n - at) as f64 {
            return None;
        }
        at += gap as usize;
        at += 1;
        Some(at - 1)
    })
}

/// Entry (row, column) of the Sylvester-Hadamard matrix: its rows are orthogonal over any
/// aligned block of its order's columns.
fn walsh_sign(row: usize, column: usize) -> f64 {
    if (row & column).count_ones().is_multiple_of(2) {
        1.0
    } else {
        -1.0
    }
}

struct Run {
    plan: CanaryPlan,
    /// Canaries still audited (`plan.included[..active]`): only ever lowered, by
    /// [`CanaryLayout::Auto`], when the method declares its stages or (declaring none) at a
    /// stage's first step.
    active: usize,
    rng: ChaCha8Rng,
    /// Under a node-level claim, `P(rho <= r)` of a node canary's terms in a batch.
    node_terms_cdf: Option<Vec<f64>>,
    stages: Vec<Stage>,
    /// The DP-SGD stages the method declared before its first step ([`declare`]).
    declared: Option<Vec<StagePlan>>,
    count_reason: Option<String>,
    predictions: Vec<Prediction>,
    /// Per canary, the ratios of its own-coordinate reads so far (doubles, on the CPU).
    scores: Tensor,
    /// A step's flat gradient or release, as read (reused from step to step).
    values: Vec<f32>,
    /// Per slot of the current stage: the signed draws added there this step (reused).
    drawn: Vec<f64>,
    steps: usize,
    sampled: usize,
    error: Option<Error>,
}

thread_local! {
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
}

/// Runs `train` with the canaries of `plan` planted in every DP-SGD step it takes on this thread,
/// and returns its result with the readings. Errors: a run that takes no DP-SGD step (the method
/// has none), an audit already running on this thread, or a stage with no eligible coordinate.
pub fn observe<T>(plan: CanaryPlan, train: impl FnOnce() -> Result<T>) -> Result<(T, CanaryReadings)> {
    crate::ensure!(
        plan.raw_norm.is_finite() && plan.raw_norm >= 1.0,
        Error::invalid("raw_norm", format!("must be finite and at least 1 (times C), got {}", plan.raw_norm))
    );
    crate::ensure!(!plan.included.is_empty(), Error::invalid("canaries", "at least one canary is needed"));
    let busy = RUN.with(|r| r.borrow().is_some());
    crate::ensure!(!busy, Error::Other("a gradient-canary audit is already running on this thread".into()));
    let m = plan.included.len();
    let active = if plan.planning.is_some() { m.min(UNPLANNED_CANARIES) } else { m };
    let rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let node_terms_cdf = plan.node_group.map(NodeGroup::cumulative);
    RUN.with(|r| {
        *r.borrow_mut() = Some(Run {
            plan,
            active,
            rng,
            node_terms_cdf,
            stages: Vec::new(),
            declared: None,
            count_reason: None,
            predictions: Vec::new(),
            scores: Tensor::zeros([m as i64], (Kind::Double, tch::Device::Cpu)),
            values: Vec::new(),
            drawn: Vec::new(),
            steps: 0,
            sampled: 0,
            error: None,
        })
    });
    // Cleared on every exit, a panic included, so that a later training is never observed.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            RUN.with(|r| r.borrow_mut().take());
        }
    }
    let clear = Clear;
    let out = train();
    let run = RUN.with(|r| r.borrow_mut().take()).expect("the run is set until cleared");
    drop(clear);
    let out = out?;
    if let Some(e) = run.error {
        return Err(e);
    }
    crate::ensure!(
        run.steps > 0,
        Error::invalid("attack", "the training took no DP-SGD step: there is nothing for gradient canaries to enter")
    );
    let mut scores = doubles(&run.scores);
    scores.truncate(run.active);
    let mut unscored_steps = 0;
    for st in run.stages.iter().filter(|s| s.shared()) {
        unscored_steps += st.step - st.summed_steps;
        if let Some(claimed) = st.claimed.filter(|_| st.summed_steps > 0) {
            for (score, ratio) in scores.iter_mut().zip(claimed.summed_log_likelihood_ratios(&st.sums, st.summed_steps))
            {
                *score += ratio;
            }
        }
    }
    let period = run.stages.iter().map(|s| s.period).max().unwrap_or(1);
    let sharing = run.stages.iter().map(|s| s.sharing).max().unwrap_or(1);
    let layout = match (sharing > 1, period > 1) {
        (false, _) => "own coordinates",
        (true, false) => "coded",
        (true, true) => "phases",
    };
    let fewest_coordinates = run.stages.iter().map(|s| s.eligible).min().unwrap_or(0);
    Ok((
        out,
        CanaryReadings {
            scores,
            stages: run.stages.len(),
            steps: run.steps,
            period,
            sharing,
            unscored_steps,
            fewest_coordinates,
            canaries: run.active,
            layout,
            sampled: run.sampled,
            count_reason: run.count_reason.unwrap_or_else(|| match (run.plan.planning, run.plan.node_group) {
                (_, Some(g)) => format!(
                    "{} node canaries (up to {} terms each, in batches of {} out of {}): the method declares no \
                     DP-SGD stage plan to choose a count on, so the audit keeps {} (fewer where layout = \"auto\" \
                     gave a stage's sharers coordinates of their own)",
                    run.active,
                    g.terms,
                    g.batch,
                    g.population,
                    UNPLANNED_CANARIES.min(run.plan.included.len())
                ),
                (Some(_), None) => format!(
                    "{} canaries: the method declares no DP-SGD stage plan to choose a count on, so the audit keeps \
                     {UNPLANNED_CANARIES} (fewer where layout = \"auto\" gave a stage's sharers coordinates of \
                     their own)",
                    run.active
                ),
                (None, None) => format!("{} canaries", run.active),
            }),
            predictions: run.predictions,
        },
    ))
}

/// The canaries read in one step (those of one phase of a stage), and what is known at their
/// coordinates before the noise: the real examples' clipped sum and the other sharers' draws.
pub(super) struct StepReads {
    stage: usize,
    phase: usize,
    /// Per read: the real examples' sum plus the other sharers' signed draws at its coordinate.
    known: Vec<f64>,
    /// The step's column of the code cycle (each read's sign is its code row's entry there).
    code_step: usize,
    /// This step closes a code cycle of its (coded, shared) stage.
    closes_cycle: bool,
    /// The step as the accountant models it: Poisson rate, clipping bound, noise std.
    claimed: ClaimedStep,
    noise_off: bool,
    /// The sampled canaries' clipped, signed values and their coordinates (None: none drawn).
    added: Option<(Tensor, Tensor)>,
}

impl StepReads {
    /// The step's release: the clipped sum `flat` with this step's sampled canaries added, plus
    /// the step's `noise` (left out by the positive control). `flat` itself is untouched.
    pub(super) fn release(&self, flat: &Tensor, noise: Option<&Tensor>) -> Tensor {
        let mut release = flat.copy();
        if let Some((at, values)) = &self.added {
            let _ = release.index_add_(0, at, &values.to_kind(flat.kind()));
        }
        match noise {
            Some(noise) if !self.noise_off => release + noise,
            _ => release,
        }
    }
}

/// One DP-SGD step as the accountant models it: Poisson rate q, clipping bound C and the
/// std `sigma C` of the noise on the sum; or, under a node-level claim, the node's terms drawn
/// without replacement.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ClaimedStep {
    q: f64,
    clip: f64,
    std: f64,
    node_group: Option<NodeGroup>,
}

impl ClaimedStep {
    /// `ln(p_in(x) / p_out(x))` for one read x: `ln(1 - q + q exp((C x - C^2 / 2) / s^2))`,
    /// by log-sum-exp so that a large exponent neither overflows nor loses the `1 - q` term;
    /// `x / C` without noise (the ratio is then infinite or `ln(1 - q)`, ordered by the draw).
    /// The reference the vector form [`Self::log_likelihood_ratios`] is checked against.
    #[cfg(test)]
    fn log_likelihood_ratio(self, x: f64) -> f64 {
        let ClaimedStep { q, clip, std, node_group } = self;
        if !(std > 0.0 && std.is_finite()) {
            return x / clip;
        }
        if let Some(g) = node_group {
            // The two mixtures' densities, summed directly (no common factor taken out).
            let density = |sign: f64| -> f64 {
                let pmf = g.ln_pmf();
                (0..pmf.len())
                    .map(|r| pmf[r].exp() * (-(x - sign * clip * r as f64).powi(2) / (2.0 * std * std)).exp())
                    .sum()
            };
            return (density(1.0) / density(-1.0)).ln();
        }
        let z = (clip * x - clip * clip / 2.0) / (std * std);
        if q >= 1.0 {
            return z;
        }
        let (a, b) = ((1.0 - q).ln(), q.ln() + z);
        let hi = a.max(b);
        hi + (-(a - b).abs()).exp().ln_1p()
    }

    /// [`Self::log_likelihood_ratio`] of every read in `x` (doubles), in a few vector ops: the
    /// per-read scalar form costs most of an audited Cornell5 training's extra time.
    fn log_likelihood_ratios(self, x: &Tensor) -> Tensor {
        let ClaimedStep { q, clip, std, node_group } = self;
        if !(std > 0.0 && std.is_finite()) {
            return x / clip;
        }
        if let Some(g) = node_group {
            return node_log_likelihood_ratios(g, clip, std, x);
        }
        let z = (x * clip - clip * clip / 2.0) / (std * std);
        if q >= 1.0 {
            return z;
        }
        (z + q.ln()).logaddexp(&Tensor::from((1.0 - q).ln()).to_kind(Kind::Double))
    }

    /// `ln(p_in(L) / p_out(L))` for the sum L of one canary's reads over `steps` such steps:
    /// out, `N(0, steps s^2)`; in, that shifted by C times a Binomial(steps, q) count of draws,
    /// so `ln sum_k Bin(k; steps, q) exp((C k L - C^2 k^2 / 2) / (steps s^2))`, summed in log
    /// space over the counts of non-negligible probability. Without noise, `L / C`.
    #[cfg(test)]
    fn summed_log_likelihood_ratio(self, sum: f64, steps: usize) -> f64 {
        self.summed_log_likelihood_ratios(&[sum], steps)[0]
    }

    /// [`Self::summed_log_likelihood_ratio`] of each sum in `sums`. A node canary's sum is
    /// `+-C K + N(0, steps s^2)` with K the sum of its terms over the steps, so the ratio of the
    /// two mixtures over K (its distribution computed once for all the sums).
    fn summed_log_likelihood_ratios(self, sums: &[f64], steps: usize) -> Vec<f64> {
        let ClaimedStep { clip, std, node_group, .. } = self;
        if !(std > 0.0 && std.is_finite()) {
            return sums.iter().map(|s| s / clip).collect();
        }
        let Some(g) = node_group else {
            return self.summed_poisson_ratios(sums, steps);
        };
        let var = steps as f64 * std * std;
        let counts: Vec<(f64, f64)> = g
            .ln_pmf_of_sum(steps)
            .into_iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .map(|(k, l)| (k as f64, l - clip * clip * (k * k) as f64 / (2.0 * var)))
            .collect();
        let lse = |sign: f64, sum: f64| {
            let terms: Vec<f64> = counts.iter().map(|&(k, c)| c + sign * clip * k * sum / var).collect();
            let hi = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            hi + terms.iter().map(|t| (t - hi).exp()).sum::<f64>().ln()
        };
        sums.iter().map(|&sum| lse(1.0, sum) - lse(-1.0, sum)).collect()
    }

    /// The per-example (Poisson) case of [`Self::summed_log_likelihood_ratios`]: the counts'
    /// binomial log-weights are computed once for all the sums.
    fn summed_poisson_ratios(self, sums: &[f64], steps: usize) -> Vec<f64> {
        let ClaimedStep { q, clip, std, .. } = self;
        let n = steps as f64;
        let var = n * std * std;
        let term = |k: f64, sum: f64| (clip * k * sum - clip * clip * k * k / 2.0) / var;
        if q >= 1.0 {
            return sums.iter().map(|&sum| term(n, sum)).collect();
        }
        // Counts beyond the mean plus 40 standard deviations (and 50) weigh below e^-700.
        let top = (n * q + 40.0 * (n * q * (1.0 - q)).sqrt() + 50.0).min(n) as usize;
        let (ln_q, ln_p) = (q.ln(), (1.0 - q).ln());
        let mut ln_pmf = n * ln_p;
        let mut ln_pmfs = Vec::with_capacity(top + 1);
        for k in 0..=top {
            let kf = k as f64;
            ln_pmfs.push(ln_pmf);
            ln_pmf += ((n - kf) / (kf + 1.0)).ln() + ln_q - ln_p;
        }
        let mut terms = vec![0.0; top + 1];
        sums.iter()
            .map(|&sum| {
                for (k, (t, ln_pmf)) in terms.iter_mut().zip(&ln_pmfs).enumerate() {
                    *t = ln_pmf + term(k as f64, sum);
                }
                let hi = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                hi + terms.iter().map(|t| (t - hi).exp()).sum::<f64>().ln()
            })
            .collect()
    }
}

/// A node canary's `ln(p_in(x) / p_out(x))` for every read in `x` (doubles): `x ~ N(+-C rho, s^2)`
/// with rho ~ `g`'s hypergeometric, the common `exp(-x^2 / 2 s^2)` taken out of both mixtures.
fn node_log_likelihood_ratios(g: NodeGroup, clip: f64, std: f64, x: &Tensor) -> Tensor {
    let var = std * std;
    let shift = x * (clip / var);
    let (mut plus, mut minus) = (Vec::new(), Vec::new());
    for (rho, ln_p) in g.ln_pmf().into_iter().enumerate().filter(|(_, l)| l.is_finite()) {
        let r = rho as f64;
        let common = ln_p - clip * clip * r * r / (2.0 * var);
        plus.push(&shift * r + common);
        minus.push(&shift * (-r) + common);
    }
    Tensor::stack(&plus, 0).logsumexp([0], false) - Tensor::stack(&minus, 0).logsumexp([0], false)
}

/// Declares the DP-SGD stages the training about to run takes, in order, so that the audit decides
/// its canary count and layout for the whole run before the first step (a no-op when no audit
/// observes this thread, and for an empty plan). A method calls it once, before its first stage.
pub fn declare(stages: Vec<StagePlan>) {
    if stages.is_empty() {
        return;
    }
    RUN.with(|r| {
        let mut guard = r.borrow_mut();
        let Some(run) = guard.as_mut() else { return };
        if run.error.is_some() {
            return;
        }
        if run.declared.is_some() || !run.stages.is_empty() {
            run.error = Some(Error::Other(
                "the method declared its DP-SGD stages twice, or after its first DP-SGD step".into(),
            ));
            return;
        }
        let (sites, layout, all) = (run.plan.sites, run.plan.layout, run.plan.included.len());
        let d = match run.plan.planning {
            Some(planning) => {
                let started = std::time::Instant::now();
                let (d, predictions) = choose_count(&stages, sites, all, layout, planning);
                tracing::debug!("chose {} canaries in {:.3} s", d.canaries, started.elapsed().as_secs_f64());
                run.predictions = predictions;
                d
            }
            None => decide(&stages, sites, run.active, layout),
        };
        run.active = d.canaries;
        run.count_reason = Some(d.reason);
        run.declared = Some(stages);
    })
}

/// Whether an audit is observing this thread (one flag read: the cost of the hook when off).
pub(super) fn active() -> bool {
    RUN.with(|r| r.borrow().is_some())
}

/// Draws this step's sampled, clipped canaries for the clipped sum `flat` (the stage's
/// parameters `params`, laid end to end; left untouched) and says which coordinates of the
/// release ([`StepReads::release`]) to read.
pub(super) fn plant(flat: &Tensor, params: &[(usize, Tensor)], dp: &DpSgd) -> Option<StepReads> {
    RUN.with(|r| {
        let mut guard = r.borrow_mut();
        let run = guard.as_mut()?;
        if run.error.is_some() {
            return None;
        }
        match run.plant(flat, params, dp) {
            Ok(reads) => Some(reads),
            Err(e) => {
                run.error = Some(e);
                None
            }
        }
    })
}

/// Adds each read canary's share of the released noisy sum `released` to its score (step by
/// step), or to its stage's running sum (canaries sharing coordinates).
pub(super) fn read(reads: StepReads, released: &Tensor) {
    RUN.with(|r| {
        let mut guard = r.borrow_mut();
        let Some(run) = guard.as_mut() else { return };
        values_into(released, &mut run.values);
        let st = &mut run.stages[reads.stage];
        let phase = st.phases[reads.phase].as_ref().expect("built by plant");
        let x = phase.coordinates.iter().zip(&reads.known).map(|(&c, known)| f64::from(run.values[c]) - known);
        if st.code_length > 1 {
            for (&i, x) in phase.canaries.iter().zip(x) {
                st.pending[i] += x * walsh_sign(st.code[i], reads.code_step);
            }
        } else {
            let x = Tensor::from_slice(&x.collect::<Vec<f64>>());
            let _ = run.scores.index_add_(0, &phase.canaries_t, &reads.claimed.log_likelihood_ratios(&x));
        }
        if reads.closes_cycle {
            for (sum, pending) in st.sums.iter_mut().zip(st.pending.iter_mut()) {
                *sum += std::mem::take(pending);
            }
            st.summed_steps += st.code_length;
        }
    })
}

/// `t`'s values (a flat gradient, f32 as the trainers keep it) into `buf`, reusing its memory:
/// a step then reads its canaries' coordinates without a tensor allocated per read.
fn values_into(t: &Tensor, buf: &mut Vec<f32>) {
    let t = t.to_device(tch::Device::Cpu).to_kind(Kind::Float).contiguous();
    let n = t.numel();
    buf.resize(n, 0.0);
    t.copy_data(buf, n);
}

/// A CPU tensor's values as doubles.
fn doubles(t: &Tensor) -> Vec<f64> {
    Vec::try_from(&t.to_kind(Kind::Double).to_device(tch::Device::Cpu)).unwrap_or_default()
}

impl Run {
    fn plant(&mut self, flat: &Tensor, params: &[(usize, Tensor)], dp: &DpSgd) -> Result<StepReads> {
        crate::ensure!(
            dp.max_grad_norm.is_finite() && dp.sample_rate > 0.0 && dp.sample_rate <= 1.0,
            Error::invalid(
                "method",
                format!(
                    "its DP-SGD step has no finite clipping bound or sampling rate in (0, 1] (C = {}, q = {}): \
                     gradient canaries need both",
                    dp.max_grad_norm, dp.sample_rate
                )
            )
        );
        let key: Vec<(usize, i64)> = params.iter().map(|(id, p)| (*id, p.numel() as i64)).collect();
        let s = match self.stages.iter().position(|s| s.key == key) {
            Some(s) => s,
            None => {
                let stage = self.new_stage(key, params, dp.sample_rate)?;
                self.stages.push(stage);
                self.stages.len() - 1
            }
        };
        if let Some(g) = self.plan.node_group {
            // A claim that takes no amplification from the batch draw (rate 1: a node in every
            // step) covers whatever the trainer draws; an amplified one must be the trainer's.
            let rate = g.batch as f64 / g.population as f64;
            crate::ensure!(
                rate == 1.0 || (dp.sample_rate - rate).abs() <= 1e-9 * rate,
                Error::Other(format!(
                    "the DP-SGD step samples at rate {} but its node-level claim draws batches of {} out of {}",
                    dp.sample_rate, g.batch, g.population
                ))
            );
        }
        let claimed = ClaimedStep {
            q: dp.sample_rate,
            clip: dp.max_grad_norm,
            std: dp.noise_multiplier * dp.max_grad_norm,
            node_group: self.plan.node_group,
        };
        let m = self.active;
        let st = &mut self.stages[s];
        let first = *st.claimed.get_or_insert(claimed);
        crate::ensure!(
            !st.shared() || first == claimed,
            Error::invalid(
                "layout",
                "a DP-SGD stage changed its sampling rate, clipping bound or noise between steps, which coded canaries \
                 sharing its coordinates cannot score; use layout = \"phases\""
            )
        );
        let (phase, code_step, step) = (st.step % st.period, st.step % st.code_length, st.step);
        st.step += 1;
        let closes_cycle = st.shared() && code_step + 1 == st.code_length;
        self.steps += 1;
        let raw = self.plan.raw_norm * dp.max_grad_norm;
        let device = flat.device();
        let (included, rng, terms_cdf) = (&self.plan.included, &mut self.rng, self.node_terms_cdf.as_deref());
        let drawers = if terms_cdf.is_some() { None } else { Some(&included[..]) };
        self.stages[s].prepare(phase, m, drawers);
        // A trainer that walks shuffled batches (a planted bug) takes each canary as it takes an
        // example: once an epoch, in the batch its uniform rank in the permutation falls in.
        let shuffled = (dp.flaw == PlantedFlaw::ShuffledAsPoisson).then(|| {
            let b = dp.expected_batch_size.round().max(1.0) as usize;
            let n = (dp.expected_batch_size / dp.sample_rate).round() as usize;
            let per_epoch = steps_per_epoch(n, b);
            if step % per_epoch == 0 {
                self.stages[s].epoch_batch = (0..m).map(|_| rng.gen_range(0..n.max(1)) / b).collect();
            }
            step % per_epoch
        });
        let st = &self.stages[s];
        let reads = st.phases[phase].as_ref().expect("built by prepare");
        let (mut add_at, mut add_value) = (Vec::new(), Vec::new());
        // Per slot: the signed draws added there this step; a read later takes its own out.
        let drawn = &mut self.drawn;
        drawn.clear();
        drawn.resize(st.slots, 0.0);
        let mut own = Vec::new();
        // This step's draws: (position among the drawable, signed count of clipped Dirac
        // gradients the canary adds).
        let draws: Vec<(usize, f32)> = match (terms_cdf, shuffled) {
            // A node canary: rho of its terms in the batch; a left-out one is the node it replaced.
            (Some(cdf), _) => reads
                .drawable
                .iter()
                .enumerate()
                .filter_map(|(d, &(_, i))| {
                    let u: f64 = rng.gen();
                    let rho = cdf.iter().position(|&c| u < c).unwrap_or(cdf.len() - 1) as f32;
                    (rho > 0.0).then_some((d, if included[i] { rho } else { -rho }))
                })
                .collect(),
            (None, Some(batch)) => {
                let in_batch = |&(_, &(_, i)): &(usize, &(usize, usize))| st.epoch_batch[i] == batch;
                reads.drawable.iter().enumerate().filter(in_batch).map(|(d, _)| (d, 1.0)).collect()
            }
            (None, None) => poisson_draws(rng, dp.sample_rate, reads.drawable.len()).map(|d| (d, 1.0)).collect(),
        };
        let mut included_draws = 0;
        for (d, terms) in draws {
            let (k, i) = reads.drawable[d];
            // A node canary's included terms; a per-example canary's one draw (only included ones draw).
            included_draws += if terms_cdf.is_some() { terms.max(0.0) as usize } else { 1 };
            let h = walsh_sign(st.code[i], code_step);
            // The value the trainer's clips leave, rounded as the f32 sum holds it.
            let v = f64::from((h * dp.clip_dirac(raw, st.in_bias[i])) as f32 * terms);
            add_at.push(st.coordinate[i]);
            add_value.push(v as f32);
            drawn[st.slot[i]] += v;
            own.push((k, v));
        }
        self.sampled += included_draws;
        values_into(flat, &mut self.values);
        let mut known: Vec<f64> =
            reads.coordinates.iter().zip(&reads.slots).map(|(&c, &j)| f64::from(self.values[c]) + drawn[j]).collect();
        for (k, v) in own {
            known[k] += -v;
        }
        let added = (!add_at.is_empty())
            .then(|| (Tensor::from_slice(&add_at).to_device(device), Tensor::from_slice(&add_value).to_device(device)));
        Ok(StepReads {
            stage: s,
            phase,
            known,
            code_step,
            closes_cycle,
            claimed,
            noise_off: self.plan.noise_off,
            added,
        })
    }

    /// Deals the stage's eligible coordinates to the canaries: distinct coordinates while they
    /// last; then, coded, up to `ceil(m / coordinates)` sharers a coordinate on orthogonal sign
    /// codes, or, in phases, turns (`period`) so that no two canaries read one (coordinate, step).
    ///
    /// A method that declared its stages ([`declare`]) had the count decided for the whole run
    /// (`super::canary_plan`); its stages must run as declared. For one that declared none,
    /// [`CanaryLayout::Auto`] decides here, stage by stage: a stage whose sharers would expect
    /// fewer than [`CODED_DRAWS_PER_CYCLE`] draws per cycle at its rate `q`, and which has
    /// coordinates for at least half the canaries, drops every canary beyond its coordinate count
    /// from the audit. Either choice depends on the recipe alone (the stages' sizes and rates, the
    /// requested count), never on a coin or a score, and the training does not depend on the
    /// canaries, so it is the choice one would make before training: no selection.
    fn new_stage(&mut self, key: Vec<(usize, i64)>, params: &[(usize, Tensor)], q: f64) -> Result<Stage> {
        let mut eligible = Vec::new();
        let mut bias = Vec::new();
        let mut offset = 0i64;
        for (_, p) in params {
            let n = p.numel() as i64;
            let is_bias = p.dim() == 1;
            if self.plan.sites == CanarySites::All || is_bias {
                eligible.extend(offset..offset + n);
                bias.extend(std::iter::repeat_n(is_bias, n as usize));
            }
            offset += n;
        }
        crate::ensure!(
            !eligible.is_empty(),
            Error::invalid("sites", "a DP-SGD stage of this method has no coordinate of the chosen kind")
        );
        if let Some(declared) = &self.declared {
            let k = self.stages.len();
            let planned = declared.get(k);
            crate::ensure!(
                planned.is_some_and(|p| p.eligible(self.plan.sites) == eligible.len() && p.sample_rate == q),
                Error::Other(format!(
                    "DP-SGD stage {k} ran {} eligible coordinates at rate {q}, but the method declared {:?}",
                    eligible.len(),
                    planned
                ))
            );
        } else if self.plan.layout == CanaryLayout::Auto {
            let sharing = self.active.div_ceil(eligible.len());
            let keeps_most = 2 * eligible.len() >= self.active;
            // A node canary is drawn as often as its terms are: K+1 times the rate, in expectation.
            let draws = self.plan.node_group.map_or(q, |g| (g.terms * g.batch) as f64 / g.population as f64);
            if sharing > 1 && draws * (sharing as f64) < CODED_DRAWS_PER_CYCLE && keeps_most {
                self.active = eligible.len();
            }
        }
        let m = self.active;
        let sharing = m.div_ceil(eligible.len());
        let slots = m.div_ceil(sharing);
        let picked = rand::seq::index::sample(&mut self.rng, eligible.len(), slots).into_vec();
        let (slot, code, period, code_length): (Vec<usize>, Vec<usize>, _, _) = match self.plan.layout {
            // Canary i sits on slot i mod slots with code row i / slots.
            CanaryLayout::Coded | CanaryLayout::Auto => (
                (0..m).map(|i| i % slots).collect(),
                (0..m).map(|i| i / slots).collect(),
                1,
                sharing.next_power_of_two(),
            ),
            // Canary i sits on slot i / period and reads the steps of phase i % period.
            CanaryLayout::Phases => ((0..m).map(|i| i / sharing).collect(), vec![0; m], sharing, 1),
        };
        let coordinate = slot.iter().map(|&j| eligible[picked[j]]).collect();
        let in_bias = slot.iter().map(|&j| bias[picked[j]]).collect();
        let shared = code_length > 1;
        Ok(Stage {
            key,
            coordinate,
            slot,
            slots,
            code,
            code_length,
            in_bias,
            period,
            step: 0,
            eligible: eligible.len(),
            sharing,
            claimed: None,
            pending: vec![0.0; if shared { m } else { 0 }],
            sums: vec![0.0; if shared { m } else { 0 }],
            summed_steps: 0,
            phases: (0..period).map(|_| None).collect(),
            epoch_batch: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{poisson_draws, walsh_sign, ClaimedStep};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// The summed statistic is the density ratio of the sum: a Gaussian mixture over the
    /// binomial count of draws, against the count zero.
    #[test]
    fn summed_ratio_is_the_density_ratio_of_the_sum() {
        let gauss = |x: f64, mean: f64, s: f64| (-(x - mean).powi(2) / (2.0 * s * s)).exp();
        let binom = |n: u64, k: u64, q: f64| {
            let c = (0..k).fold(1.0, |c, j| c * (n - j) as f64 / (j + 1) as f64);
            c * q.powi(k as i32) * (1.0 - q).powi((n - k) as i32)
        };
        for (q, clip, std, steps) in [(0.1, 1.0, 1.5, 12u64), (0.5, 2.0, 0.7, 5), (0.02, 0.5, 3.0, 40)] {
            let step = ClaimedStep { q, clip, std, node_group: None };
            let s = std * (steps as f64).sqrt();
            for sum in [-4.0, -0.5, 0.0, 1.0, 3.0, 9.0] {
                let p_in: f64 = (0..=steps).map(|k| binom(steps, k, q) * gauss(sum, clip * k as f64, s)).sum();
                let direct = (p_in / gauss(sum, 0.0, s)).ln();
                let got = step.summed_log_likelihood_ratio(sum, steps as usize);
                assert!((got - direct).abs() < 1e-9, "q {q} C {clip} s {std} T {steps} L {sum}: {got} vs {direct}");
            }
        }
        // One step is the per-step ratio; without noise, the count of draws.
        let step = ClaimedStep { q: 0.3, clip: 1.0, std: 2.0, node_group: None };
        assert!((step.summed_log_likelihood_ratio(1.7, 1) - step.log_likelihood_ratio(1.7)).abs() < 1e-12);
        assert_eq!(ClaimedStep { std: 0.0, ..step }.summed_log_likelihood_ratio(3.0, 9), 3.0);
    }

    /// The vector form scores every read as the scalar form does.
    #[test]
    fn vector_ratios_match_the_scalar_ratio() {
        let xs = [-30.0, -3.0, -0.5, 0.0, 0.4, 1.0, 2.5, 40.0];
        let x = tch::Tensor::from_slice(&xs);
        for step in [
            ClaimedStep { q: 0.1, clip: 1.0, std: 1.5, node_group: None },
            ClaimedStep { q: 0.01, clip: 0.5, std: 0.01, node_group: None },
            ClaimedStep { q: 1.0, clip: 2.0, std: 4.0, node_group: None },
            ClaimedStep { q: 0.3, clip: 2.0, std: 0.0, node_group: None },
        ] {
            let got = Vec::<f64>::try_from(&step.log_likelihood_ratios(&x)).unwrap();
            for (x, got) in xs.iter().zip(got) {
                let want = step.log_likelihood_ratio(*x);
                assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "{step:?} x {x}: {got} vs {want}");
            }
        }
    }

    /// A node canary's terms follow the claim's hypergeometric (mass 1, mean K+1 times B/N), and
    /// its vector ratio is the direct ratio of the two mixtures, finite where the densities
    /// underflow; with one term it is the Poisson step's ratio included against replaced.
    #[test]
    fn node_ratios_are_the_ratio_of_the_two_hypergeometric_mixtures() {
        use super::NodeGroup;
        for g in [
            NodeGroup { population: 140, terms: 8, batch: 20 },
            NodeGroup { population: 30, terms: 30, batch: 10 },
            NodeGroup { population: 500, terms: 1, batch: 50 },
        ] {
            let pmf: Vec<f64> = g.ln_pmf().into_iter().map(f64::exp).collect();
            let mean: f64 = pmf.iter().enumerate().map(|(r, p)| r as f64 * p).sum();
            assert!((pmf.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{g:?}");
            assert!((mean - g.terms as f64 * g.batch as f64 / g.population as f64).abs() < 1e-10, "{g:?}: {mean}");
            assert!((g.cumulative().last().unwrap() - 1.0).abs() < 1e-12);
            let step =
                ClaimedStep { q: g.batch as f64 / g.population as f64, clip: 1.0, std: 3.0, node_group: Some(g) };
            let xs = [-6.0, -1.0, 0.0, 0.3, 2.0, 7.5];
            let got = Vec::<f64>::try_from(&step.log_likelihood_ratios(&tch::Tensor::from_slice(&xs))).unwrap();
            for (x, got) in xs.iter().zip(got) {
                let want = step.log_likelihood_ratio(*x);
                assert!((got - want).abs() < 1e-10 * want.abs().max(1.0), "{g:?} x {x}: {got} vs {want}");
            }
            // Antisymmetric: a read and its negation swap the hypotheses.
            assert!((step.log_likelihood_ratio(2.0) + step.log_likelihood_ratio(-2.0)).abs() < 1e-12);
        }
        let one = NodeGroup { population: 500, terms: 1, batch: 50 };
        let node = ClaimedStep { q: 0.1, clip: 1.0, std: 3.0, node_group: Some(one) };
        let poisson = ClaimedStep { node_group: None, ..node };
        for x in [-2.0, 0.5, 4.0] {
            let replaced = poisson.log_likelihood_ratio(x) - poisson.log_likelihood_ratio(-x);
            assert!((node.log_likelihood_ratio(x) - replaced).abs() < 1e-12, "x {x}");
        }
        let far = Vec::<f64>::try_from(&node.log_likelihood_ratios(&tch::Tensor::from_slice(&[2000.0]))).unwrap();
        assert!(far[0].is_finite() && far[0] > 100.0, "{far:?}");
        // A cycle's sum over 3 steps, against every triple of term counts enumerated.
        let g = NodeGroup { population: 10, terms: 3, batch: 4 };
        let step = ClaimedStep { q: 0.4, clip: 1.5, std: 2.0, node_group: Some(g) };
        let pmf: Vec<f64> = g.ln_pmf().into_iter().map(f64::exp).collect();
        let var = 3.0 * 4.0;
        for sum in [-7.0, -1.0, 0.0, 2.5, 9.0] {
            let density = |sign: f64| {
                let mut total = 0.0;
                for counts in 0..64usize {
                    let (a, b, c) = (counts % 4, counts / 4 % 4, counts / 16);
                    let mean = sign * 1.5 * (a + b + c) as f64;
                    total += pmf[a] * pmf[b] * pmf[c] * (-(sum - mean) * (sum - mean) / (2.0 * var)).exp();
                }
                total
            };
            let want = (density(1.0) / density(-1.0)).ln();
            let got = step.summed_log_likelihood_ratio(sum, 3);
            assert!((got - want).abs() < 1e-10 * want.abs().max(1.0), "sum {sum}: {got} vs {want}");
        }
        assert!((step.summed_log_likelihood_ratio(1.3, 1) - step.log_likelihood_ratio(1.3)).abs() < 1e-12);
    }

    /// Distinct rows of a Sylvester-Hadamard block are orthogonal: the sign codes of sharers.
    /// Geometric gaps draw each canary with probability q, independently: over 4,000 steps of
    /// 500 canaries at q = 0.02 each canary's count is Binomial(4000, q) (mean 80, sd 8.9), so
    /// the counts' mean and variance match, the first and last canaries are drawn alike, and
    /// pairs of neighbours are drawn together at q^2; q = 1 takes every canary, in order.
    #[test]
    fn poisson_draws_take_each_canary_independently_at_rate_q() {
        let (q, n, steps) = (0.02, 500, 4000);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut counts = vec![0usize; n];
        let mut pairs = 0usize;
        for _ in 0..steps {
            let drawn: Vec<usize> = poisson_draws(&mut rng, q, n).collect();
            assert!(drawn.windows(2).all(|w| w[0] < w[1]) && drawn.iter().all(|&d| d < n));
            pairs += drawn.windows(2).filter(|w| w[1] == w[0] + 1).count();
            drawn.iter().for_each(|&d| counts[d] += 1);
        }
        let mean = counts.iter().sum::<usize>() as f64 / n as f64;
        let var = counts.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let (want, want_var) = (steps as f64 * q, steps as f64 * q * (1.0 - q));
        assert!((mean - want).abs() < 4.0 * (want_var / n as f64).sqrt(), "mean {mean} vs {want}");
        assert!((var / want_var - 1.0).abs() < 0.25, "variance {var} vs {want_var}");
        let half = |r: std::ops::Range<usize>| counts[r].iter().sum::<usize>() as f64;
        assert!((half(0..n / 2) / half(n / 2..n) - 1.0).abs() < 0.05);
        // Neighbours drawn together: (n - 1) q^2 per step, 798 in expectation (sd about 28).
        let together = (steps * (n - 1)) as f64 * q * q;
        assert!((pairs as f64 - together).abs() < 4.0 * together.sqrt(), "{pairs} vs {together}");
        assert_eq!(poisson_draws(&mut rng, 1.0, 7).collect::<Vec<_>>(), (0..7).collect::<Vec<_>>());
        assert_eq!(poisson_draws(&mut rng, 0.0, 7).count(), 0);
    }

    #[test]
    fn walsh_rows_are_orthogonal_over_a_block() {
        for order in [2usize, 8, 64] {
            for a in 0..order {
                for b in 0..order {
                    let dot: f64 = (0..order).map(|t| walsh_sign(a, t) * walsh_sign(b, t)).sum();
                    assert_eq!(dot, if a == b { order as f64 } else { 0.0 }, "rows {a} {b} of order {order}");
                }
            }
        }
    }

    /// The log-sum-exp form is the ratio of the two densities, stays finite where the direct
    /// form overflows, and reduces to the Gaussian ratio without sampling.
    #[test]
    fn log_likelihood_ratio_is_the_density_ratio_and_stable() {
        let gauss = |x: f64, mean: f64, s: f64| (-(x - mean).powi(2) / (2.0 * s * s)).exp();
        for (q, clip, std) in [(0.1, 1.0, 1.5), (0.5, 2.0, 0.7), (0.01, 0.5, 3.0)] {
            let step = ClaimedStep { q, clip, std, node_group: None };
            for x in [-3.0, -0.5, 0.0, 0.4, 1.0, 2.5] {
                let direct = ((1.0 - q) * gauss(x, 0.0, std) + q * gauss(x, clip, std)) / gauss(x, 0.0, std);
                let got = step.log_likelihood_ratio(x);
                assert!((got - direct.ln()).abs() < 1e-12, "q {q} C {clip} s {std} x {x}: {got} vs {}", direct.ln());
            }
        }
        let tiny_noise = ClaimedStep { q: 0.2, clip: 1.0, std: 1e-3, node_group: None };
        let (high, low) = (tiny_noise.log_likelihood_ratio(1.0), tiny_noise.log_likelihood_ratio(0.0));
        assert!(high.is_finite() && (high - (0.2f64.ln() + 0.5e6)).abs() < 1e-6, "{high}");
        assert!((low - 0.8f64.ln()).abs() < 1e-12, "{low}");
        let full = ClaimedStep { q: 1.0, clip: 2.0, std: 4.0, node_group: None };
        assert_eq!(full.log_likelihood_ratio(3.0), (2.0 * 3.0 - 2.0) / 16.0);
        let noiseless = ClaimedStep { q: 0.3, clip: 2.0, std: 0.0, node_group: None };
        assert_eq!(noiseless.log_likelihood_ratio(4.0), 2.0);
    }
}
