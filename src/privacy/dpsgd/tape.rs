//! Per-sample gradients in one vectorised pass.
//!
//! Why a tape and not per-sample weight copies: every trainable layer of our models (Linear and
//! the affine part of group normalisation) is a *per-row* map, so the gradient of sample `b`'s loss
//! with respect to a Linear weight is the outer product of the layer input `a_b` and the output
//! gradient `g_b = d loss_b / d z_b` (Abadi et al. 2016; Goodfellow 2015). The forward pass records
//! each layer's input (detached) and output (in the graph); one `autograd.grad` call of the summed
//! loss with respect to all recorded outputs yields every `g_b` at once (samples do not interact:
//! no batch norm under DP). From `(a, g)` we get
//! - per-sample squared norms without materialising anything for 2-D inputs:
//!   `||a_b g_b^T||_F^2 = ||a_b||^2 ||g_b||^2` (the "ghost norm"),
//! - the clipped sum with one matmul: `sum_b c_b g_b a_b^T = (c * G)^T A`.
//!
//! A sample whose computation spans several rows (e.g. DP-GNN's gathered neighbourhood) passes a
//! 3-D input `[B, R, in]`; its per-sample gradient `sum_r a_{b,r} g_{b,r}^T` is materialised with one
//! einsum (still no loop over samples). Copying the weights per sample would cost `B x in x out`
//! memory and a batched matmul in every forward; the tape costs only the activations.
use tch::Tensor;

/// Which parameters a recorded op uses (ids into the model's parameter list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// `z = a W^T + b` with W of shape [out, in].
    Linear { weight: usize, bias: Option<usize> },
    /// `z = a * w + b` elementwise over the last dim (the affine part of group norm).
    ScaleShift { weight: usize, bias: usize },
}

/// One recorded op: its input (detached) and its output (still in the autograd graph).
pub struct Entry {
    pub kind: OpKind,
    pub input: Tensor,
    pub output: Tensor,
}

/// The record of one forward pass over a batch whose first dim indexes samples.
#[derive(Default)]
pub struct Tape {
    pub entries: Vec<Entry>,
}

/// Per-parameter gradient (summed over samples) keyed by parameter id.
pub type Grads = Vec<(usize, Tensor)>;

impl Tape {
    pub fn new() -> Self {
        Tape { entries: Vec::new() }
    }

    pub fn push(&mut self, kind: OpKind, input: &Tensor, output: &Tensor) {
        self.entries.push(Entry { kind, input: input.detach(), output: output.shallow_clone() });
    }

    /// `d loss_sum / d output` for every entry, in one backward pass. `loss_sum` must be the sum of
    /// the per-sample losses, so that row b of each gradient is sample b's own output gradient.
    pub fn output_grads(&self, loss_sum: &Tensor) -> Vec<Tensor> {
        let outs: Vec<&Tensor> = self.entries.iter().map(|e| &e.output).collect();
        Tensor::run_backward(&[loss_sum], &outs, false, false)
    }

    /// Materialised per-sample gradients `[B, ...param shape]`, summed over entries sharing a
    /// parameter. Used by tests and by callers that need the full per-sample tensors.
    pub fn per_sample_grads(&self, loss_sum: &Tensor) -> Grads {
        let grads = self.output_grads(loss_sum);
        self.per_sample_from(&grads)
    }

    pub(super) fn per_sample_from(&self, grads: &[Tensor]) -> Grads {
        let mut out: Grads = Vec::new();
        for (e, g) in self.entries.iter().zip(grads) {
            for (id, t) in entry_per_sample(e.kind, &e.input, g) {
                match out.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, acc)) => *acc = &*acc + t,
                    None => out.push((id, t)),
                }
            }
        }
        out
    }

    /// Whether every per-sample norm follows from the recorded inputs and output gradients
    /// alone (the ghost norm): 2-D inputs only, and no parameter used by two entries.
    pub(super) fn ghost_norms_apply(&self) -> bool {
        let mut ids: Vec<usize> = self.entries.iter().flat_map(|e| param_ids(e.kind)).collect();
        let n_ids = ids.len();
        ids.sort_unstable();
        ids.dedup();
        ids.len() == n_ids && self.entries.iter().all(|e| e.input.dim() == 2)
    }

    /// Clips every sample's whole-model gradient to L2 norm `max_norm` and sums over samples.
    /// Returns the clipped sum per parameter and the per-sample norms before clipping.
    pub fn clipped_sum(&self, loss_sum: &Tensor, max_norm: f64) -> (Grads, Tensor) {
        let grads = self.output_grads(loss_sum);
        // Norms and sums in the gradients' own precision (float32 in training).
        let kind = grads[0].kind();
        if !self.ghost_norms_apply() {
            // General path: materialise, then clip (exact for shared parameters and 3-D inputs).
            return clip_materialised(self.per_sample_from(&grads), max_norm);
        }
        // Ghost norms: ||a g^T||^2 = ||a||^2 ||g||^2 for each sample.
        let b = grads[0].size()[0];
        let mut norm2 = Tensor::zeros([b], (kind, grads[0].device()));
        for (e, g) in self.entries.iter().zip(&grads) {
            let g2 = g.square().sum_dim_intlist([1i64].as_slice(), false, kind);
            match e.kind {
                OpKind::Linear { bias, .. } => {
                    let a2 = e.input.square().sum_dim_intlist([1i64].as_slice(), false, kind);
                    norm2 += &a2 * &g2;
                    if bias.is_some() {
                        norm2 += &g2;
                    }
                }
                OpKind::ScaleShift { .. } => {
                    let ag2 = (&e.input * g).square().sum_dim_intlist([1i64].as_slice(), false, kind);
                    norm2 += ag2 + &g2;
                }
            }
        }
        let norms = norm2.sqrt();
        let factor = clip_factor(&norms, max_norm);
        let f = factor.unsqueeze(1);
        let mut out: Grads = Vec::new();
        for (e, g) in self.entries.iter().zip(&grads) {
            let cg = g * &f;
            match e.kind {
                OpKind::Linear { weight, bias } => {
                    out.push((weight, cg.tr().mm(&e.input)));
                    if let Some(bi) = bias {
                        out.push((bi, cg.sum_dim_intlist([0i64].as_slice(), false, kind)));
                    }
                }
                OpKind::ScaleShift { weight, bias } => {
                    out.push((weight, (&e.input * &cg).sum_dim_intlist([0i64].as_slice(), false, kind)));
                    out.push((bias, cg.sum_dim_intlist([0i64].as_slice(), false, kind)));
                }
            }
        }
        (out, norms)
    }
}

/// Clips materialised per-sample gradients `[B, ...]` and sums them over samples.
pub fn clip_materialised(ps: Grads, max_norm: f64) -> (Grads, Tensor) {
    let b = ps[0].1.size()[0];
    let kind = ps[0].1.kind();
    let mut norm2 = Tensor::zeros([b], (kind, ps[0].1.device()));
    for (_, t) in &ps {
        norm2 += t.reshape([b, -1]).square().sum_dim_intlist([1i64].as_slice(), false, kind);
    }
    let norms = norm2.sqrt();
    let factor = clip_factor(&norms, max_norm);
    let out = ps
        .into_iter()
        .map(|(id, t)| {
            let mut shape = vec![b];
            shape.extend(std::iter::repeat_n(1, t.dim() - 1));
            (id, (t * factor.reshape(shape.as_slice())).sum_dim_intlist([0i64].as_slice(), false, kind))
        })
        .collect();
    (out, norms)
}

/// Opacus's clip factor: min(1, C / (||g_b|| + 1e-6)).
pub fn clip_factor(norms: &Tensor, max_norm: f64) -> Tensor {
    if max_norm.is_infinite() {
        return norms.ones_like();
    }
    (max_norm / (norms + 1e-6)).clamp_max(1.0)
}

fn param_ids(kind: OpKind) -> Vec<usize> {
    match kind {
        OpKind::Linear { weight, bias } => std::iter::once(weight).chain(bias).collect(),
        OpKind::ScaleShift { weight, bias } => vec![weight, bias],
    }
}

/// Per-sample gradients of one entry from its input `a` and output gradient `g`.
fn entry_per_sample(kind: OpKind, a: &Tensor, g: &Tensor) -> Vec<(usize, Tensor)> {
    let three_d = a.dim() == 3;
    let dtype = g.kind();
    let sum_rows = |t: Tensor| if three_d { t.sum_dim_intlist([1i64].as_slice(), false, dtype) } else { t };
    match kind {
        OpKind::Linear { weight, bias } => {
            let w = if three_d {
                Tensor::einsum("bro,bri->boi", &[g, a], None::<&[i64]>)
            } else {
                Tensor::einsum("bo,bi->boi", &[g, a], None::<&[i64]>)
            };
            let mut v = vec![(weight, w)];
            if let Some(bi) = bias {
                v.push((bi, sum_rows(g.shallow_clone())));
            }
            v
        }
        OpKind::ScaleShift { weight, bias } => {
            vec![(weight, sum_rows(a * g)), (bias, sum_rows(g.shallow_clone()))]
        }
    }
}
