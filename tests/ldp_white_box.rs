//! White boxes of the local-DP methods PGC and RGNN (src/models/pgc.rs, rgnn.rs): on the noise-free
//! path (PGC RAW, RGNN at eps_x = eps_y = inf) the sparse and dense forwards reproduce the model's
//! own posteriors on Cora, gradients reach the relaxed adjacency, and model inversion's query (one
//! isolated node) has a finite input gradient.
mod common_cora;
use common_cora::load;
use gnnaudit::methods::{train, Method, Recipe};
use tch::{Kind, Tensor};

#[test]
fn pgc_and_rgnn_white_boxes_reproduce_their_posteriors() {
    tch::set_num_threads(1);
    let data = load("cora", 0.5, 0.25, 0);
    let x = data.features.to_tensor().to_kind(Kind::Float);
    let dense = data.graph.aggregation_tensor().to_dense(None, false);
    let mut rgnn = Recipe::new(Method::Rgnn, None);
    rgnn.knobs.set("epsilon_x", f64::INFINITY);
    rgnn.knobs.set("epsilon_y", f64::INFINITY);
    rgnn.knobs.set("group_size", 25);
    for mut recipe in [Recipe::new(Method::Pgc, None), rgnn] {
        recipe.train.epochs = Some(5);
        let name = recipe.method.name();
        let run = train(&recipe, &data, 1).unwrap();
        let want = run.model.posteriors();
        let wb = run.model.white_box().unwrap_or_else(|| panic!("{name} has no white box"));
        assert_eq!(wb.num_classes(), 7, "{name}");
        assert!(!wb.parameters().is_empty(), "{name}");
        let gap = |t: &Tensor| (t - &want).abs().max().double_value(&[]);
        let sparse = wb.forward_features(&x).unwrap();
        assert!(gap(&sparse) < 1e-5, "{name}: forward_features off by {}", gap(&sparse));
        let adj = dense.copy().set_requires_grad(true);
        let d = wb.forward_dense(&x, &adj).expect("dense form").unwrap();
        assert!(gap(&d) < 1e-5, "{name}: forward_dense off by {}", gap(&d));
        d.select(1, 0).sum(Kind::Float).backward();
        assert!(adj.grad().abs().sum(Kind::Float).double_value(&[]) > 0.0, "{name}: no gradient in A");
        let one = x.narrow(0, 0, 1).copy().set_requires_grad(true);
        let zero = Tensor::zeros([1, 1], (Kind::Float, tch::Device::Cpu));
        wb.forward_dense(&one, &zero).unwrap().unwrap().select(1, 0).sum(Kind::Float).backward();
        let g = one.grad();
        assert!(bool::try_from(g.isfinite().all()).unwrap(), "{name}: NaN input gradient");
        // A record that does not fit the model is an error, not a panic.
        if recipe.method == Method::Rgnn {
            assert!(wb.forward_features(&x.narrow(1, 0, 100)).is_err());
        }
    }
}
