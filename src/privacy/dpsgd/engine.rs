//! DP-SGD / DP-Adam (Abadi et al. 2016): Poisson-sampled batches, per-sample clipping to C,
//! Gaussian noise N(0, sigma^2 C^2) on the clipped sum, division by the expected batch size, then
//! the optimizer update. The accountant models exactly this: `steps` Poisson-subsampled Gaussian
//! mechanisms with rate q and noise multiplier sigma.
use super::canary;
use super::tape::{Grads, Tape};
use tch::{Kind, Tensor};

/// The DP part of a training step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpSgd {
    /// sigma: noise std over the clipping bound.
    pub noise_multiplier: f64,
    /// C: every sample's whole-model gradient is clipped to this L2 norm.
    pub max_grad_norm: f64,
    /// q * n: what the noisy sum is divided by (Opacus's `expected_batch_size`).
    pub expected_batch_size: f64,
    /// q: the rate at which the accountant assumes a unit enters a batch; gradient canaries
    /// ([`super::canary`]) are sampled at it.
    pub sample_rate: f64,
    /// A deliberate bug for the demo methods (None in every shipped method).
    pub flaw: PlantedFlaw,
}

/// Bugs planted in the DP-SGD step of demo methods, which an audit must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlantedFlaw {
    #[default]
    None,
    /// The noise is calibrated for the mean (std sigma C / B) but added to the sum, so the
    /// released mean's noise is divided by the batch size twice.
    NoiseOnMean,
    /// Only the weights' per-example gradients are clipped (by their own norm); the biases'
    /// enter the sum unclipped.
    BiasUnclipped,
    /// The steps walk a fresh permutation of the training set each epoch in fixed-size batches
    /// (the incomplete last batch dropped) while the accountant is told Poisson sampling at the
    /// same rate: each example is in at most one batch an epoch, at a uniformly random place.
    ShuffledAsPoisson,
}

impl DpSgd {
    /// Private average gradient for one batch: clip per sample, sum, add noise, divide by the
    /// expected batch size. `tape` is `None` for an empty Poisson batch (pure noise, which the
    /// privacy analysis requires too). `shapes` lists every trainable parameter `(id, tensor)`.
    pub fn private_grads(&self, tape: Option<(&Tape, &Tensor)>, params: &[(usize, Tensor)]) -> Grads {
        self.private_flat(tape, params).0
    }

    /// [`Self::private_grads`], and the one vector they are views of, for
    /// [`super::Optimizer::step_flat`].
    pub fn private_flat(&self, tape: Option<(&Tape, &Tensor)>, params: &[(usize, Tensor)]) -> (Grads, Tensor) {
        let summed = match tape {
            Some((t, loss_sum)) if self.flaw == PlantedFlaw::BiasUnclipped => {
                t.weights_only_clipped_sum(loss_sum, self.max_grad_norm)
            }
            Some((t, loss_sum)) => t.clipped_sum(loss_sum, self.max_grad_norm).0,
            None => Vec::new(),
        };
        self.noisy_flat(summed, params)
    }

    /// Adds N(0, sigma^2 C^2) to an already clipped sum (missing ids count as zero) and divides by
    /// the expected batch size: the noise half of [`Self::private_grads`], shared with clipping
    /// schemes that clip something other than one sample (class-level DP-SGD clips whole units).
    pub fn noisy_mean(&self, summed: Grads, params: &[(usize, Tensor)]) -> Grads {
        self.noisy_flat(summed, params).0
    }

    /// [`Self::noisy_mean`], and the one vector its gradients are views of.
    pub fn noisy_flat(&self, summed: Grads, params: &[(usize, Tensor)]) -> (Grads, Tensor) {
        let mut std = self.noise_multiplier * self.max_grad_norm;
        if self.flaw == PlantedFlaw::NoiseOnMean {
            std /= self.expected_batch_size;
        }
        let sums: Vec<Tensor> = params
            .iter()
            .map(|(id, p)| {
                let g = summed.iter().find(|(i, _)| i == id).map(|(_, g)| g.shallow_clone());
                g.unwrap_or_else(|| p.zeros_like())
            })
            .collect();
        // The noise is drawn once for all parameters, as one vector: the same independent
        // N(0, std^2) per coordinate as a draw per parameter, in four ops a step instead of four
        // per parameter (GAP's classifier has dozens and a step lasts a millisecond).
        let mut flat = super::optim::concat_flat(&sums);
        let canaries = if canary::active() { canary::plant(&flat, params, self) } else { None };
        let noise = (std > 0.0 && std.is_finite()).then(|| flat.randn_like() * std);
        if let Some(reads) = canaries {
            // The auditor reads the mechanism's release (the sum with the canaries in it, noised);
            // the optimiser below steps on the same noise without them.
            let release = reads.release(&flat, noise.as_ref());
            canary::read(reads, &release);
        }
        if let Some(noise) = noise {
            flat += noise;
        }
        let flat = flat / self.expected_batch_size;
        let sizes: Vec<i64> = sums.iter().map(|t| t.numel() as i64).collect();
        let grads = params
            .iter()
            .zip(flat.split_with_sizes(sizes.as_slice(), 0))
            .map(|((id, p), g)| (*id, g.view(p.size().as_slice())))
            .collect();
        (grads, flat)
    }

    /// A Dirac per-example gradient of norm `raw` after this step's clipping: `raw` times
    /// Opacus's factor min(1, C / (norm + 1e-6)), as [`super::clip_factor`] gives every example;
    /// under [`PlantedFlaw::BiasUnclipped`] a bias coordinate keeps its raw norm.
    pub fn clip_dirac(&self, raw: f64, in_bias: bool) -> f64 {
        if self.flaw == PlantedFlaw::BiasUnclipped && in_bias {
            return raw;
        }
        raw * (self.max_grad_norm / (raw + 1e-6)).min(1.0)
    }
}

/// Poisson sampling of training nodes: each is in the batch independently with probability q.
pub struct PoissonSampler {
    pool: Tensor,
    rate: f64,
}

impl PoissonSampler {
    /// `pool`: int64 node ids that may be sampled; `rate`: q in (0, 1].
    pub fn new(pool: &Tensor, rate: f64) -> Self {
        PoissonSampler { pool: pool.shallow_clone(), rate }
    }
    /// One batch (possibly empty), drawn with torch's seeded generator.
    pub fn sample(&self) -> Tensor {
        let n = self.pool.size()[0];
        let mask = Tensor::rand([n], (Kind::Float, self.pool.device())).lt(self.rate);
        self.pool.masked_select(&mask)
    }
}

/// The step schedule the accountant sees: an epoch is `floor(1/q)` steps (at least 1), so that
/// `steps = epochs * floor(n / B)` as in Opacus and the reference implementation.
pub fn steps_per_epoch(n_train: usize, batch_size: usize) -> usize {
    (n_train / batch_size.max(1)).max(1)
}
