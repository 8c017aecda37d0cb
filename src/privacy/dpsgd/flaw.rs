//! The per-group clipping bug planted in a demo method ([`super::PlantedFlaw::BiasUnclipped`]):
//! a trainer that clips only its weight matrices and lets the biases through. Kept apart from the
//! correct clipping in [`super::tape`] so that no shipped path can reach it.
use super::tape::{clip_factor, Grads, OpKind, Tape};
use tch::Tensor;

impl Tape {
    /// Clips every sample's weight gradients by the norm of its weight gradients alone and sums
    /// over samples; one-dimensional parameters (biases) are summed unclipped.
    pub(super) fn weights_only_clipped_sum(&self, loss_sum: &Tensor, max_norm: f64) -> Grads {
        let grads = self.output_grads(loss_sum);
        if self.ghost_norms_apply() {
            self.weights_only_from_output_grads(&grads, max_norm)
        } else {
            self.weights_only_materialised(&grads, max_norm)
        }
    }

    /// The sum through materialised per-sample gradients (3-D inputs, shared parameters).
    fn weights_only_materialised(&self, grads: &[Tensor], max_norm: f64) -> Grads {
        let per_sample = self.per_sample_from(grads);
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

    /// The same sum from the output gradients alone, for per-row layers without shared
    /// parameters (an MLP): the weights' norms by the ghost-norm identity of [`Tape::clipped_sum`]
    /// and the clipped weight sum by one matmul, with no per-sample tensor.
    fn weights_only_from_output_grads(&self, grads: &[Tensor], max_norm: f64) -> Grads {
        let kind = grads[0].kind();
        let rows = |t: &Tensor| t.sum_dim_intlist([1i64].as_slice(), false, kind);
        let over_samples = |t: &Tensor| t.sum_dim_intlist([0i64].as_slice(), false, kind);
        let mut norm2 = Tensor::zeros([grads[0].size()[0]], (kind, grads[0].device()));
        // Only Linear weights are matrices: a ScaleShift's scale is one-dimensional, so it goes
        // unclipped with the biases, as on the materialised path.
        for (e, g) in self.entries.iter().zip(grads) {
            if let OpKind::Linear { .. } = e.kind {
                norm2 += rows(&e.input.square()) * rows(&g.square());
            }
        }
        let factor = clip_factor(&norm2.sqrt(), max_norm).unsqueeze(1);
        let mut out: Grads = Vec::new();
        for (e, g) in self.entries.iter().zip(grads) {
            let clipped = g * &factor;
            match e.kind {
                OpKind::Linear { weight, bias } => {
                    out.push((weight, clipped.tr().mm(&e.input)));
                    out.extend(bias.map(|b| (b, over_samples(g))));
                }
                OpKind::ScaleShift { weight, bias } => {
                    out.push((weight, over_samples(&(&e.input * g))));
                    out.push((bias, over_samples(g)));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::models::{Activation, Fwd, Mlp, MlpStyle, NormKind, ParamStore};
    use tch::{Kind, Reduction, Tensor};

    /// The ghost-norm route gives the materialised route's sum, group normalisation included, and
    /// both leave the biases unclipped while a weight-heavy sample is clipped.
    #[test]
    fn ghost_norm_route_matches_the_materialised_sum() {
        for norm in [NormKind::None, NormKind::Group(1)] {
            tch::manual_seed(4);
            let mut ps = ParamStore::new();
            let style = MlpStyle { activation: Activation::Selu, dropout: 0.0, norm };
            let mlp = Mlp::new(&mut ps, "m", 5, 4, 3, 3, true, style);
            let x = Tensor::randn([6, 5], (Kind::Float, tch::Device::Cpu)) * 3.0;
            let y = Tensor::from_slice(&[0i64, 1, 2, 1, 0, 2]);
            let mut f = Fwd::train_taped();
            let out = mlp.forward(&x, &mut f);
            let loss = out.log_softmax(-1, Kind::Float).g_nll_loss::<Tensor>(&y, None, Reduction::Sum, -100);
            let tape = f.tape.take().unwrap();
            assert!(tape.ghost_norms_apply());
            let grads = tape.output_grads(&loss);
            let clip = 0.01;
            let fast = tape.weights_only_from_output_grads(&grads, clip);
            let slow = tape.weights_only_materialised(&grads, clip);
            let unclipped = tape.weights_only_materialised(&grads, f64::INFINITY);
            assert_eq!(fast.len(), slow.len());
            for ((id, a), (id2, b)) in fast.iter().zip(&slow) {
                assert_eq!(id, id2);
                let scale = b.abs().max().double_value(&[]).max(1e-3);
                let diff = (a - b).abs().max().double_value(&[]);
                assert!(diff < 1e-5 * scale, "{norm:?} param {id}: max diff {diff} (scale {scale})");
                let raw = &unclipped.iter().find(|(i, _)| i == id).unwrap().1;
                if a.dim() == 1 {
                    assert!(a.equal(raw), "{norm:?} param {id}: a one-dimensional parameter was clipped");
                } else {
                    let (n, n_raw) = (a.norm().double_value(&[]), raw.norm().double_value(&[]));
                    assert!(n <= 6.0 * clip * (1.0 + 1e-4) && n < n_raw, "{norm:?} param {id}: {n} vs {n_raw}");
                }
            }
        }
    }
}
