//! Checks of the DP-SGD engine against direct computations.
use super::*;
use crate::models::{Activation, Fwd, Mlp, MlpStyle, NormKind, ParamStore};
use tch::{nn::OptimizerConfig, Kind, Reduction, Tensor};

fn small_model(ps: &mut ParamStore, norm: NormKind) -> Mlp {
    let style = MlpStyle { activation: Activation::Selu, dropout: 0.0, norm };
    Mlp::new(ps, "m", 5, 4, 3, 3, true, style)
}

fn loss_sum(logits: &Tensor, y: &Tensor) -> Tensor {
    logits.log_softmax(-1, Kind::Float).g_nll_loss::<Tensor>(y, None, Reduction::Sum, -100)
}

/// Per-sample gradients from one loop over samples with plain autograd.
fn loop_grads(ps: &ParamStore, m: &Mlp, x: &Tensor, y: &Tensor) -> Vec<Vec<Tensor>> {
    let ids = m.ids();
    (0..x.size()[0])
        .map(|b| {
            let out = m.forward(&x.narrow(0, b, 1), &mut Fwd::train());
            let l = loss_sum(&out, &y.narrow(0, b, 1));
            let ps_: Vec<&Tensor> = ids.iter().map(|&i| &ps.params[i]).collect();
            Tensor::run_backward(&[&l], &ps_, false, false)
        })
        .collect()
}

#[test]
fn per_sample_grads_match_a_loop_over_samples() {
    tch::manual_seed(1);
    let mut ps = ParamStore::new();
    let m = small_model(&mut ps, NormKind::Group(1));
    let x = Tensor::randn([6, 5], (Kind::Float, tch::Device::Cpu));
    let y = Tensor::from_slice(&[0i64, 1, 2, 1, 0, 2]);
    let mut f = Fwd::train_taped();
    let out = m.forward(&x, &mut f);
    let tape = f.tape.take().unwrap();
    let ps_grads = tape.per_sample_grads(&loss_sum(&out, &y));
    let reference = loop_grads(&ps, &m, &x, &y);
    let ids = m.ids();
    assert_eq!(ps_grads.len(), ids.len());
    for (k, id) in ids.iter().enumerate() {
        let got = &ps_grads.iter().find(|(i, _)| i == id).unwrap().1;
        for b in 0..6 {
            let want = &reference[b as usize][k];
            // float32: absolute 1e-5 relative to the gradient's scale
            let scale = want.abs().max().double_value(&[]).max(1.0);
            let diff = (got.get(b) - want).abs().max().double_value(&[]);
            assert!(diff < 1e-5 * scale, "param {id} sample {b}: max diff {diff} (scale {scale})");
        }
    }
}

#[test]
fn per_sample_grads_of_gathered_rows_match_a_loop() {
    // Each sample owns R = 3 rows (a gathered neighbourhood): z_b = sum_r W x_{b,r}.
    tch::manual_seed(2);
    let mut ps = ParamStore::new();
    let lin = ps.linear("l", 4, 3);
    let x = Tensor::randn([5, 3, 4], (Kind::Float, tch::Device::Cpu));
    let y = Tensor::from_slice(&[0i64, 1, 2, 1, 0]);
    let mut f = Fwd::train_taped();
    let out = lin.forward(&x, &mut f).sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
    let tape = f.tape.take().unwrap();
    let got = tape.per_sample_grads(&loss_sum(&out, &y));
    for b in 0..5 {
        let o =
            lin.forward(&x.narrow(0, b, 1), &mut Fwd::train()).sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
        let want = Tensor::run_backward(&[&loss_sum(&o, &y.narrow(0, b, 1))], &[&lin.ws, &lin.bs], false, false);
        for (k, id) in [lin.weight, lin.bias].iter().enumerate() {
            let g = &got.iter().find(|(i, _)| i == id).unwrap().1;
            let diff = (g.get(b) - &want[k]).abs().max().double_value(&[]);
            assert!(diff < 1e-5, "sample {b} param {id}: {diff}");
        }
    }
}

#[test]
fn ghost_clipping_equals_clipping_materialised_gradients() {
    tch::manual_seed(3);
    let mut ps = ParamStore::new();
    let m = small_model(&mut ps, NormKind::Group(4));
    let x = Tensor::randn([8, 5], (Kind::Float, tch::Device::Cpu)) * 3.0;
    let y = Tensor::from_slice(&[0i64, 1, 2, 1, 0, 2, 2, 1]);
    let run = || {
        let mut f = Fwd::train_taped();
        let out = m.forward(&x, &mut f);
        (f.tape.take().unwrap(), loss_sum(&out, &y))
    };
    let (t1, l1) = run();
    let (fast, norms_fast) = t1.clipped_sum(&l1, 0.3);
    let (t2, l2) = run();
    let (slow, norms_slow) = clip_materialised(t2.per_sample_grads(&l2), 0.3);
    assert!((norms_fast - &norms_slow).abs().max().double_value(&[]) < 1e-4);
    // Some samples must actually be clipped for the test to mean anything.
    assert!(norms_slow.gt(0.3).any().int64_value(&[]) == 1);
    for (id, g) in &fast {
        let s = &slow.iter().find(|(i, _)| i == id).unwrap().1;
        assert!((g - s).abs().max().double_value(&[]) < 1e-5, "param {id}");
    }
}

#[test]
fn dp_adam_without_noise_or_clipping_equals_adam_on_the_mean_loss() {
    tch::manual_seed(4);
    let mut ps = ParamStore::new();
    let m = small_model(&mut ps, NormKind::None);
    let x = Tensor::randn([7, 5], (Kind::Float, tch::Device::Cpu));
    let y = Tensor::from_slice(&[0i64, 1, 2, 1, 0, 2, 2]);
    let start = ps.snapshot();
    let ids = m.ids();
    let params: Vec<(usize, Tensor)> = ids.iter().map(|&i| (i, ps.params[i].shallow_clone())).collect();
    // Ours: DP path with sigma = 0, C = inf, expected batch = actual batch.
    let dp = DpSgd {
        noise_multiplier: 0.0,
        max_grad_norm: f64::INFINITY,
        expected_batch_size: 7.0,
        sample_rate: 1.0,
        flaw: Default::default(),
    };
    let mut opt = Optimizer::new(OptimizerKind::Adam, 0.01, 0.0);
    for _ in 0..3 {
        let mut f = Fwd::train_taped();
        let out = m.forward(&x, &mut f);
        let tape = f.tape.take().unwrap();
        let g = dp.private_grads(Some((&tape, &loss_sum(&out, &y))), &params);
        opt.step(&ps.params, &g);
    }
    let ours = ps.snapshot();
    // tch's own Adam on the mean loss from the same start.
    ps.restore(&start);
    let mut adam = tch::nn::Adam::default().build(&ps.vs, 0.01).unwrap();
    for _ in 0..3 {
        let out = m.forward(&x, &mut Fwd::train());
        let loss = out.cross_entropy_for_logits(&y);
        adam.backward_step(&loss);
    }
    let theirs = ps.snapshot();
    for ((k, a), (_, b)) in ours.iter().zip(&theirs) {
        let d = (a - b).abs().max().double_value(&[]);
        assert!(d < 1e-6, "{k}: {d}");
    }
    // And it moved.
    assert!(ours.iter().zip(&start).any(|((_, a), (_, b))| (a - b).abs().max().double_value(&[]) > 1e-4));
}

#[test]
fn noise_std_is_sigma_times_c_over_expected_batch() {
    tch::manual_seed(5);
    let p = Tensor::zeros([200, 100], (Kind::Float, tch::Device::Cpu));
    let dp = DpSgd {
        noise_multiplier: 2.0,
        max_grad_norm: 0.5,
        expected_batch_size: 4.0,
        sample_rate: 1.0,
        flaw: Default::default(),
    };
    let g = dp.private_grads(None, &[(0, p)]);
    let std = g[0].1.std(true).double_value(&[]);
    let mean = g[0].1.mean(Kind::Float).double_value(&[]);
    // std should be 2 * 0.5 / 4 = 0.25; 20,000 draws give a relative s.e. of 0.5%.
    assert!((std - 0.25).abs() < 0.25 * 0.03, "std {std}");
    assert!(mean.abs() < 0.25 * 0.03, "mean {mean}");
}

#[test]
fn poisson_sampler_rate_and_steps() {
    tch::manual_seed(6);
    let pool = Tensor::arange(10_000, (Kind::Int64, tch::Device::Cpu));
    let s = PoissonSampler::new(&pool, 0.1);
    let sizes: Vec<i64> = (0..20).map(|_| s.sample().size()[0]).collect();
    let mean = sizes.iter().sum::<i64>() as f64 / 20.0;
    assert!((mean - 1000.0).abs() < 30.0, "mean batch {mean}");
    assert!(sizes.windows(2).any(|w| w[0] != w[1]), "batch sizes must vary");
    assert_eq!(steps_per_epoch(2031, 256), 7);
    assert_eq!(steps_per_epoch(100, 256), 1);
}
