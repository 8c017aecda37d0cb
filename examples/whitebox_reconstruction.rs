//! Graph reconstruction and class inversion against a white-box dense GCN on a real dataset
//! (default cora), next to the black-box posterior-similarity baseline. Run:
//! `cargo run --example whitebox_reconstruction -- cora 1` (dataset, seed).
use gnnaudit::data::{self, SplitRatios};
use gnnaudit::target::{attack_graph, node_split};
use gnnaudit_attacks::toy::{Arch, ToyConfig, ToyModel, ToyOracle};
use gnnaudit_attacks::{run_attack, AdversaryKnowledge, AttackKind, AttackParams, Claim, Target};
// (Built with `--features toy`: the toy targets are not part of the shipped attacks crate.)

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("cora", |s| s.as_str());
    let seed: u64 = args.get(2).map_or(Ok(1), |s| s.parse())?;
    tch::set_num_threads(1);
    let raw = data::load_dataset(name, None)?;
    let ds = data::transforms::prepare_like_gap(&raw, 1, SplitRatios::default(), seed)?;
    let g = attack_graph(&ds)?;
    let split = node_split(ds.split()?);
    let cfg = ToyConfig { arch: Arch::Gcn, hidden: 16, epochs: 200, lr: 0.01 };
    let start = std::time::Instant::now();
    let gcn = ToyModel::train(&g, &split, cfg, seed);
    let post = gnnaudit_attacks::BlackBox::posteriors(&gcn, &split.test)?;
    let pred = Vec::<i64>::try_from(&post.argmax(1, false))?;
    let acc = split.test.iter().zip(&pred).filter(|(&v, &p)| g.labels[v] == p as usize).count() as f64
        / split.test.len() as f64;
    println!("dense GCN on {name}: test accuracy {:.2}% ({:.1} s)", 100.0 * acc, start.elapsed().as_secs_f64());
    let oracle = ToyOracle(cfg);
    let target = Target {
        graph: &g,
        split: &split,
        black_box: &gcn,
        white_box: Some(&gcn),
        oracle: Some(&oracle),
        claim: Claim::non_private(),
    };
    for kind in [AttackKind::GraphReconstruction, AttackKind::Inversion] {
        let t = std::time::Instant::now();
        let params = AttackParams::new(kind.default_config());
        let r = run_attack(&target, &AdversaryKnowledge::default(), &params, seed)?;
        let mut details = r.details.clone();
        details.remove("per_class");
        println!(
            "{}: AUC {:.2}%  TPR@1%FPR {:.2}%  ({:.1} s)  {}",
            kind.name(),
            100.0 * r.summary.auc,
            100.0 * r.summary.tpr_at_fpr.at_0_01,
            t.elapsed().as_secs_f64(),
            serde_json::Value::Object(details)
        );
    }
    Ok(())
}
