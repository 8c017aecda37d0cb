//! A GCN trained in plain PyTorch (tests/python/gcn.py) and exported as TorchScript, audited
//! through tch's CModule: its posteriors match PyTorch's, a membership attack beats chance,
//! shadow copies train through TrainableCModule, and bad exports or files are refused (exit 2).
#[path = "common/external.rs"]
mod common;
use common::*;
use gnnaudit::external::posteriors::read_npy_matrix;
use gnnaudit::external::torchscript::{ScriptOracle, ScriptTarget};
use gnnaudit::external::{OutputKind, ShadowRecipe};
use gnnaudit::target::attack_graph;
use gnnaudit_attacks::{BlackBox, NodeSplit};
use std::path::Path;

/// The default limit on one forward (as `--timeout`).
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

fn cora_graph() -> gnnaudit_attacks::AttackGraph {
    let ds = gnnaudit::data::load_dataset("cora", Some(Path::new(&data_dir()))).unwrap();
    attack_graph(&ds).unwrap()
}

fn members(n: usize) -> NodeSplit {
    let m = gnnaudit::external::members::load_members(&exported().join("members.txt"), n).unwrap();
    let test = (0..n).filter(|v| m.binary_search(v).is_err()).collect();
    NodeSplit { train: m, val: vec![], test }
}

#[test]
fn scripted_and_traced_exports_answer_as_pytorch_did() {
    let g = cora_graph();
    let (rows, cols, want) = read_npy_matrix(&exported().join("posteriors.npy")).unwrap();
    assert_eq!((rows, cols), (2708, 7));
    for file in ["model.pt", "model_traced.pt"] {
        let t = ScriptTarget::load(&exported().join(file), OutputKind::Logits, &g, TIMEOUT).unwrap();
        let all: Vec<usize> = (0..rows).collect();
        let got = Vec::<f32>::try_from(&t.released.posteriors(&all).unwrap().view([-1])).unwrap();
        let max = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(max < 1e-5, "{file}: max |gnnaudit - PyTorch| = {max}");
    }
}

#[test]
fn the_white_box_differentiates_through_the_module() {
    use gnnaudit_attacks::WhiteBox;
    let g = cora_graph();
    let t = ScriptTarget::load(&exported().join("model.pt"), OutputKind::Logits, &g, TIMEOUT).unwrap();
    assert_eq!(t.parameters().len(), 4, "lin1 and lin2, weight and bias");
    // An isolated record, as class inversion queries it: gradients reach the features.
    let x = g.features.narrow(0, 0, 1).to_kind(tch::Kind::Float).set_requires_grad(true);
    let adj = tch::Tensor::zeros([1, 1], (tch::Kind::Float, tch::Device::Cpu));
    let post = t.forward_dense(&x, &adj).expect("isolated records are supported").unwrap();
    assert_eq!(post.size(), vec![1, 7]);
    post.get(0).get(3).backward();
    assert!(x.grad().abs().sum(tch::Kind::Float).double_value(&[]) > 0.0);
    // A relaxed adjacency has no edge_index form.
    let full = tch::Tensor::full([2708, 2708], 0.5, (tch::Kind::Float, tch::Device::Cpu));
    assert!(t.forward_dense(&g.features, &full).is_none());
}

#[test]
fn membership_inference_on_the_non_private_export_beats_chance() {
    let model = exported().join("model.pt");
    let members = exported().join("members.txt");
    let v = json_of(&gnnaudit(&[
        "attack",
        "--threads",
        "1",
        "--json",
        "--dataset",
        "cora",
        "--torchscript",
        model.to_str().unwrap(),
        "--members",
        members.to_str().unwrap(),
        "--attack",
        "mia-metric",
    ]));
    let auc = v["auc"].as_f64().unwrap();
    eprintln!("cora GCN export, mia-metric: AUC {auc:.4}, eps_lb {}", v["eps_lb"]);
    assert!(auc > 0.6, "AUC {auc}");
    assert_eq!(v["target"], "torchscript");
    assert_eq!(v["members"], 541);
    assert_eq!(v["verdict"], "no-claim");
    // The export fits its members perfectly and generalises to the rest.
    assert!(v["utility"]["members"].as_f64().unwrap() > 0.99);
    assert!(v["utility"]["non_members"].as_f64().unwrap() > 0.75);
}

#[test]
fn shadow_copies_train_through_trainable_cmodule() {
    let g = cora_graph();
    let split = members(g.num_nodes);
    let recipe = ShadowRecipe { epochs: 30, ..Default::default() };
    let model = exported().join("model.pt");
    for init in [Some(exported().join("model_init.pt")), None] {
        let oracle = ScriptOracle::new(&model, init.as_deref(), OutputKind::Logits, recipe, TIMEOUT);
        let run = oracle.train_copy(&g, &split, 3).unwrap();
        let (first, last) = (run.losses[0], *run.losses.last().unwrap());
        eprintln!("shadow copy (init {:?}): loss {first:.4} -> {last:.4}", init.is_some());
        // Untrained: about log(7) = 1.95; trained on 541 members for 30 epochs: far below.
        assert!(first > 1.5 && last < 0.5 * first, "loss {first} -> {last}");
        let pred = Vec::<i64>::try_from(&run.posteriors.argmax(1, false)).unwrap();
        let acc =
            split.test.iter().filter(|&&v| pred[v] as usize == g.labels[v]).count() as f64 / split.test.len() as f64;
        assert!(acc > 0.6, "copy's accuracy on non-members {acc}");
    }
}

#[test]
fn bad_exports_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    run_python(&[script("bad_modules.py").as_os_str(), dir.path().as_os_str(), "1433".as_ref(), "7".as_ref()]);
    let attack = |model: &Path, dataset: &str| {
        gnnaudit(&[
            "attack",
            "--dataset",
            dataset,
            "--torchscript",
            model.to_str().unwrap(),
            "--attack",
            "link-stealing",
        ])
    };
    assert_bad_input(&attack(&dir.path().join("wrong_signature.pt"), "cora"), "wrong_signature.pt", "forward(x");
    assert_bad_input(&attack(&dir.path().join("nan_output.pt"), "cora"), "nan_output.pt", "NaN");
    // cora-ml has 2879 features; the export expects cora's 1433.
    if need("bad_exports_are_refused_naming_the_file (its cora-ml case)", "cora-ml").is_some() {
        assert_bad_input(&attack(&exported().join("model.pt"), "cora-ml"), "model.pt", "2879");
    }
    let junk = write_file(dir.path(), "junk.pt", "not a module");
    assert_bad_input(&attack(&junk, "cora"), "junk.pt", "not a loadable TorchScript module");
    // Membership attacks need the members.
    let out = gnnaudit(&["attack", "--dataset", "cora", "--torchscript", "x.pt", "--attack", "mia-metric"]);
    assert_bad_input(&out, "invalid --torchscript", "not a file");
}
