//! The per-group clipping bug planted in a demo method ([`super::PlantedFlaw::BiasUnclipped`]):
//! a trainer that clips only its weight matrices and lets the biases through. Kept apart from the
//! correct clipping in [`super::tape`] so that no shipped path can reach it.
use super::tape::{clip_factor, Grads, Tape};
use tch::Tensor;

impl Tape {
    /// Clips every sample's weight gradients by the norm of its weight gradients alone and sums
    /// over samples; one-dimensional parameters (biases) are summed unclipped.
    pub(super) fn weights_only_clipped_sum(&self, loss_sum: &Tensor, max_norm: f64) -> Grads {
        let per_sample = self.per_sample_grads(loss_sum);
        let b = per_sample[0].1.size()[0];
        let kind = per_sample[0].1.kind();
        // A per-sample weight is [B, out, in]; a per-sample bias [B, out].
        let is_weight = |t: &Tensor| t.dim() > 2;
        let mut norm2 = Tensor::zeros([b], (kind, per_sample[0].1.device()));
        for (_, t) in per_sample.iter().filter(|(_, t)| is_weight(t)) {
            norm2 += t.reshape([b, -1]).square().sum_dim_intlist([1i64].as_slice(), false, kind);
        }
        let factor = clip_factor(&norm2.sqrt(), max_norm);
        per_sample
            .into_iter()
            .map(|(id, t)| {
                let t = if is_weight(&t) { t * factor.reshape([b, 1, 1]) } else { t };
                (id, t.sum_dim_intlist([0i64].as_slice(), false, kind))
            })
            .collect()
    }
}
