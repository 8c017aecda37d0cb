//! In-pipeline gradient canaries: the white-box audit of the DP-SGD step a trainer actually runs
//! (Nasr et al. 2023: Dirac canary gradients, every intermediate update observed; Steinke et al.
//! 2023: many independent canaries in one training run).
//!
//! While [`observe`] runs a training, every DP-SGD step that reaches [`super::DpSgd::noisy_flat`]
//! (all of gnnaudit's trainers do) gets extra per-example gradients: canary i is a Dirac gradient
//! on its own coordinate, of raw norm `raw_norm * C`, included in the run by the plan's fair coin,
//! and in each step it is eligible for, sampled with the step's Poisson rate q. A sampled canary is
//! clipped by the trainer's own rule ([`super::DpSgd::clip_dirac`]) and added to the clipped sum
//! before the trainer adds its noise; the observer then reads the released noisy sum (before the
//! division by the batch size and the optimiser) at every canary's coordinate, less the real
//! examples' clipped sum there.
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
//! Canaries never share a (coordinate, step): with more canaries than eligible coordinates, the
//! steps are dealt out in `period` phases and canaries on one coordinate read disjoint steps. So
//! every score is a function of its own coin, its own sampling draws and noise no other canary
//! reads, given the (adaptively trained) real gradients: the independence the split bounds need.
//!
//! Each distinct parameter list (a GAP encoder, its classifier, a ProGAP stage) is a stage with
//! its own coordinates; a canary's score adds its reads over all stages, so the audit measures the
//! composition of every DP-SGD stage the method runs, the claim it is compared with.
//!
//! The positive control of this audit ([`CanaryPlan::noise_off`]) runs the same training with the
//! DP-SGD noise left out of every step and keeps the statistic of the claimed mechanism: the
//! version of the trainer that leaks, judged by the same test.
//!
//! When no audit runs, the engine checks one thread-local flag per step and touches neither the
//! gradients nor torch's generator (the canaries draw from their own ChaCha stream): training is
//! bit-identical with the hook absent.
use super::engine::DpSgd;
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
    /// The positive control: every observed DP-SGD step releases its sum without noise.
    pub noise_off: bool,
}

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
    /// Eligible coordinates of the smallest stage: with at most this many canaries, every
    /// canary reads every step of every stage.
    pub fewest_coordinates: usize,
    /// Included canaries' draws into a batch, over all steps.
    pub sampled: usize,
}

/// One stage's canaries: where each sits and in which phase of the steps it is read.
struct Stage {
    key: Vec<(usize, i64)>,
    /// `coordinate[i]`: canary i's index into the stage's flat gradient.
    coordinate: Vec<i64>,
    /// Whether that coordinate belongs to a one-dimensional parameter.
    in_bias: Vec<bool>,
    period: usize,
    step: usize,
    eligible: usize,
}

struct Run {
    plan: CanaryPlan,
    rng: ChaCha8Rng,
    stages: Vec<Stage>,
    scores: Vec<f64>,
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
    let rng = ChaCha8Rng::seed_from_u64(plan.seed);
    RUN.with(|r| {
        *r.borrow_mut() =
            Some(Run { plan, rng, stages: Vec::new(), scores: vec![0.0; m], steps: 0, sampled: 0, error: None })
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
    let period = run.stages.iter().map(|s| s.period).max().unwrap_or(1);
    let fewest_coordinates = run.stages.iter().map(|s| s.eligible).min().unwrap_or(0);
    Ok((
        out,
        CanaryReadings {
            scores: run.scores,
            stages: run.stages.len(),
            steps: run.steps,
            period,
            fewest_coordinates,
            sampled: run.sampled,
        },
    ))
}

/// The canaries read in one step: their indices, coordinates, and the real examples' clipped
/// sum at those coordinates (read before any canary is added).
pub(super) struct StepReads {
    canaries: Vec<usize>,
    coordinates: Tensor,
    real: Vec<f64>,
    /// The step as the accountant models it: Poisson rate, clipping bound, noise std.
    claimed: ClaimedStep,
    noise_off: bool,
}

impl StepReads {
    /// Whether this step is to be released without noise (the positive control).
    pub(super) fn noise_off(&self) -> bool {
        self.noise_off
    }
}

/// One DP-SGD step as the accountant models it: Poisson rate q, clipping bound C and the
/// std `sigma C` of the noise on the sum.
#[derive(Debug, Clone, Copy)]
struct ClaimedStep {
    q: f64,
    clip: f64,
    std: f64,
}

impl ClaimedStep {
    /// `ln(p_in(x) / p_out(x))` for one read x: `ln(1 - q + q exp((C x - C^2 / 2) / s^2))`,
    /// by log-sum-exp so that a large exponent neither overflows nor loses the `1 - q` term;
    /// `x / C` without noise (the ratio is then infinite or `ln(1 - q)`, ordered by the draw).
    fn log_likelihood_ratio(self, x: f64) -> f64 {
        let ClaimedStep { q, clip, std } = self;
        if !(std > 0.0 && std.is_finite()) {
            return x / clip;
        }
        let z = (clip * x - clip * clip / 2.0) / (std * std);
        if q >= 1.0 {
            return z;
        }
        let (a, b) = ((1.0 - q).ln(), q.ln() + z);
        let hi = a.max(b);
        hi + (-(a - b).abs()).exp().ln_1p()
    }
}

/// `t` at `at`, as doubles on the CPU.
fn values_at(t: &Tensor, at: &Tensor) -> Vec<f64> {
    let v = t.index_select(0, at).to_kind(Kind::Double).to_device(tch::Device::Cpu);
    Vec::try_from(&v).unwrap_or_default()
}

/// Whether an audit is observing this thread (one flag read: the cost of the hook when off).
pub(super) fn active() -> bool {
    RUN.with(|r| r.borrow().is_some())
}

/// Adds this step's sampled, clipped canaries to the clipped sum `flat` (the stage's parameters
/// `params`, laid end to end) and says which coordinates to read once the noise is in.
pub(super) fn plant(flat: &mut Tensor, params: &[(usize, Tensor)], dp: &DpSgd) -> Option<StepReads> {
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

/// Adds the released noisy sum `released` at each read canary's coordinate to its score.
pub(super) fn read(reads: StepReads, released: &Tensor) {
    let values = values_at(released, &reads.coordinates);
    RUN.with(|r| {
        if let Some(run) = r.borrow_mut().as_mut() {
            for ((i, v), real) in reads.canaries.into_iter().zip(values).zip(reads.real) {
                run.scores[i] += reads.claimed.log_likelihood_ratio(v - real);
            }
        }
    })
}

impl Run {
    fn plant(&mut self, flat: &mut Tensor, params: &[(usize, Tensor)], dp: &DpSgd) -> Result<StepReads> {
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
                let stage = self.new_stage(key, params)?;
                self.stages.push(stage);
                self.stages.len() - 1
            }
        };
        let m = self.plan.included.len();
        let (period, phase) = {
            let st = &mut self.stages[s];
            let phase = st.step % st.period;
            st.step += 1;
            (st.period, phase)
        };
        self.steps += 1;
        let raw = self.plan.raw_norm * dp.max_grad_norm;
        let (mut read, mut read_at) = (Vec::new(), Vec::new());
        let (mut add_at, mut add_value) = (Vec::new(), Vec::new());
        for i in (phase..m).step_by(period) {
            let st = &self.stages[s];
            read.push(i);
            read_at.push(st.coordinate[i]);
            if self.plan.included[i] && self.rng.gen_bool(dp.sample_rate) {
                add_at.push(st.coordinate[i]);
                add_value.push(dp.clip_dirac(raw, st.in_bias[i]) as f32);
            }
        }
        self.sampled += add_at.len();
        let device = flat.device();
        let coordinates = Tensor::from_slice(&read_at).to_device(device);
        let real = values_at(flat, &coordinates);
        if !add_at.is_empty() {
            let at = Tensor::from_slice(&add_at).to_device(device);
            let values = Tensor::from_slice(&add_value).to_device(device).to_kind(flat.kind());
            let _ = flat.index_add_(0, &at, &values);
        }
        let claimed =
            ClaimedStep { q: dp.sample_rate, clip: dp.max_grad_norm, std: dp.noise_multiplier * dp.max_grad_norm };
        Ok(StepReads { canaries: read, coordinates, real, claimed, noise_off: self.plan.noise_off })
    }

    /// Deals the stage's eligible coordinates to the canaries: distinct coordinates while they
    /// last, then phases of the steps (`period`), so that no two canaries read one (coordinate, step).
    fn new_stage(&mut self, key: Vec<(usize, i64)>, params: &[(usize, Tensor)]) -> Result<Stage> {
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
        let m = self.plan.included.len();
        let period = m.div_ceil(eligible.len());
        let slots = m.div_ceil(period);
        let picked = rand::seq::index::sample(&mut self.rng, eligible.len(), slots).into_vec();
        // Canary i sits on slot i / period and reads the steps of phase i % period.
        let coordinate = (0..m).map(|i| eligible[picked[i / period]]).collect();
        let in_bias = (0..m).map(|i| bias[picked[i / period]]).collect();
        Ok(Stage { key, coordinate, in_bias, period, step: 0, eligible: eligible.len() })
    }
}

#[cfg(test)]
mod tests {
    use super::ClaimedStep;

    /// The log-sum-exp form is the ratio of the two densities, stays finite where the direct
    /// form overflows, and reduces to the Gaussian ratio without sampling.
    #[test]
    fn log_likelihood_ratio_is_the_density_ratio_and_stable() {
        let gauss = |x: f64, mean: f64, s: f64| (-(x - mean).powi(2) / (2.0 * s * s)).exp();
        for (q, clip, std) in [(0.1, 1.0, 1.5), (0.5, 2.0, 0.7), (0.01, 0.5, 3.0)] {
            let step = ClaimedStep { q, clip, std };
            for x in [-3.0, -0.5, 0.0, 0.4, 1.0, 2.5] {
                let direct = ((1.0 - q) * gauss(x, 0.0, std) + q * gauss(x, clip, std)) / gauss(x, 0.0, std);
                let got = step.log_likelihood_ratio(x);
                assert!((got - direct.ln()).abs() < 1e-12, "q {q} C {clip} s {std} x {x}: {got} vs {}", direct.ln());
            }
        }
        let tiny_noise = ClaimedStep { q: 0.2, clip: 1.0, std: 1e-3 };
        let (high, low) = (tiny_noise.log_likelihood_ratio(1.0), tiny_noise.log_likelihood_ratio(0.0));
        assert!(high.is_finite() && (high - (0.2f64.ln() + 0.5e6)).abs() < 1e-6, "{high}");
        assert!((low - 0.8f64.ln()).abs() < 1e-12, "{low}");
        let full = ClaimedStep { q: 1.0, clip: 2.0, std: 4.0 };
        assert_eq!(full.log_likelihood_ratio(3.0), (2.0 * 3.0 - 2.0) / 16.0);
        let noiseless = ClaimedStep { q: 0.3, clip: 2.0, std: 0.0 };
        assert_eq!(noiseless.log_likelihood_ratio(4.0), 2.0);
    }
}
