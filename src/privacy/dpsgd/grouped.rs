//! Per-unit clipping for class- and subclass-level DP-SGD (Zhang thesis ch.4 Algorithm 5, line 6):
//! the clipped quantity is a whole unit's *mean* gradient, not one sample's.
//!
//! The batch's rows are ordered by unit (consecutive runs of `unit_rows[u]` rows) and the loss is
//! `sum_b loss_b / |unit(b)|`, so a unit's gradient is the sum of its rows' per-sample gradients,
//! which the tape gives as `G_u^T A_u` per Linear layer (output gradients times inputs of the
//! unit's rows) without materialising any per-sample tensor. Each unit's whole-model gradient is
//! clipped to L2 norm S and the clipped unit gradients are summed; the noise is added by
//! [`super::DpSgd::noisy_mean`].
use super::tape::{clip_factor, Grads, OpKind, Tape};
use crate::ensure;
use crate::error::{Error, Result};
use tch::{Kind, Tensor};

impl Tape {
    /// Clips every unit's gradient to `max_norm` and sums over units. `unit_rows[u]` is the number
    /// of consecutive batch rows of unit u. Returns the clipped sum and the unit norms before
    /// clipping. Only per-row layers with 2-D inputs (an MLP) are supported: per-unit isolation
    /// does not hold through message passing anyway.
    pub fn unit_clipped_sum(&self, loss_sum: &Tensor, unit_rows: &[i64], max_norm: f64) -> Result<(Grads, Tensor)> {
        ensure!(
            self.entries.iter().all(|e| e.input.dim() == 2),
            Error::invalid("method", "unit-level clipping supports per-row layers (MLP) only")
        );
        let total: i64 = unit_rows.iter().sum();
        let grads = self.output_grads(loss_sum);
        ensure!(
            grads.first().is_none_or(|g| g.size()[0] == total),
            Error::Other(format!("unit rows sum to {total}, the batch has {} rows", grads[0].size()[0]))
        );
        let mut sum: Grads = Vec::new();
        let mut norms = Vec::with_capacity(unit_rows.len());
        let mut start = 0;
        for &len in unit_rows {
            let mut unit: Grads = Vec::new();
            for (e, g) in self.entries.iter().zip(&grads) {
                let (a, g) = (e.input.narrow(0, start, len), g.narrow(0, start, len));
                let kind = g.kind();
                let rows_sum = |t: &Tensor| t.sum_dim_intlist([0i64].as_slice(), false, kind);
                let parts: Vec<(usize, Tensor)> = match e.kind {
                    OpKind::Linear { weight, bias } => {
                        let mut v = vec![(weight, g.tr().mm(&a))];
                        if let Some(b) = bias {
                            v.push((b, rows_sum(&g)));
                        }
                        v
                    }
                    OpKind::ScaleShift { weight, bias } => vec![(weight, rows_sum(&(&a * &g))), (bias, rows_sum(&g))],
                };
                for (id, t) in parts {
                    match unit.iter_mut().find(|(i, _)| *i == id) {
                        Some((_, acc)) => *acc = &*acc + t,
                        None => unit.push((id, t)),
                    }
                }
            }
            start += len;
            let norm2: f64 = unit.iter().map(|(_, t)| t.square().sum(Kind::Double).double_value(&[])).sum();
            let norm = norm2.sqrt();
            norms.push(norm);
            let factor = clip_factor(&Tensor::from(norm), max_norm).double_value(&[]);
            for (id, t) in unit {
                let t = t * factor;
                match sum.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, acc)) => *acc = &*acc + t,
                    None => sum.push((id, t)),
                }
            }
        }
        Ok((sum, Tensor::from_slice(&norms)))
    }
}

#[cfg(test)]
mod tests {
    use crate::models::{Activation, Fwd, Mlp, MlpStyle, NormKind, ParamStore};
    use tch::{Kind, Reduction, Tensor};

    /// A unit's clipped gradient is the clipped gradient of the unit's mean loss, computed
    /// directly by autograd, and units sum.
    #[test]
    fn unit_gradients_equal_autograd_of_each_units_mean_loss() {
        tch::manual_seed(3);
        let mut ps = ParamStore::new();
        let style = MlpStyle { activation: Activation::Selu, dropout: 0.0, norm: NormKind::None };
        let mlp = Mlp::new(&mut ps, "m", 5, 4, 3, 2, true, style);
        let x = Tensor::randn([7, 5], (Kind::Float, tch::Device::Cpu));
        let y = Tensor::from_slice(&[0i64, 1, 2, 0, 1, 2, 2]);
        let rows = [3i64, 4];
        let w = Tensor::from_slice(&[1.0f32 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.25, 0.25, 0.25, 0.25]);
        let mut f = Fwd::train_taped();
        let logits = mlp.forward(&x, &mut f);
        let nll = crate::models::log_softmax_rows(&logits).g_nll_loss::<Tensor>(&y, None, Reduction::None, -100);
        let loss = (nll * &w).sum(Kind::Float);
        let tape = f.tape.take().unwrap();
        let clip = 0.05;
        let (sum, norms) = tape.unit_clipped_sum(&loss, &rows, clip).unwrap();
        // Reference: autograd of each unit's mean loss, clipped, summed.
        let ids = mlp.ids();
        let mut want: Vec<Tensor> = ids.iter().map(|&i| ps.params[i].zeros_like()).collect();
        let mut start = 0;
        for (u, &len) in rows.iter().enumerate() {
            let l = crate::models::cross_entropy(
                &mlp.forward(&x.narrow(0, start, len), &mut Fwd::train()),
                &y.narrow(0, start, len),
            );
            let params: Vec<&Tensor> = ids.iter().map(|&i| &ps.params[i]).collect();
            let g = Tensor::run_backward(&[l], &params, false, false);
            let n: f64 = g.iter().map(|t| t.square().sum(Kind::Double).double_value(&[])).sum::<f64>().sqrt();
            assert!((n - norms.double_value(&[u as i64])).abs() < 1e-4 * n.max(1e-6), "unit {u}: {n}");
            let c = (clip / (n + 1e-6)).min(1.0);
            for (acc, t) in want.iter_mut().zip(g) {
                *acc = &*acc + t * c;
            }
            start += len;
        }
        for (&id, w) in ids.iter().zip(&want) {
            let got = &sum.iter().find(|(i, _)| *i == id).unwrap().1;
            let err = (got - w).abs().max().double_value(&[]);
            assert!(err < 1e-5, "param {id}: max error {err}");
        }
    }
}
