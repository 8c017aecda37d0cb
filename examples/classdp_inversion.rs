//! Zhang thesis ch.4 §4.5 on node features: at matched accuracy, does model inversion get harder
//! as the subclass-level epsilon falls, and not as the record-level epsilon falls? Trains the
//! vanilla MLP, DP-MLP (record-level DP-SGD) at three epsilons and subclass-DP-MLP (Algorithm 5
//! over k-means subclasses) at three epsilons, then runs both inversions of §4.3 (enhanced =
//! Algorithm 4, original = Fredrikson et al.) against each and prints accuracy, the claim, the
//! thesis's closed-form claim, and the mean MIA distance (Euclidean, min over the class's training
//! records, l.704-708) beside a random input's.
//!
//! `cargo run --example classdp_inversion -- DATASET SEED STEPS MIN_CLASS "r1,r2,r3" "s1,s2,s3" K_SUB`
//! e.g. `-- cora 0 300 1 "8,2,0.5" "30,8,3" 50`; configs/classdp-paper.toml records the figures.
use gnnaudit::data::{self, SplitRatios};
use gnnaudit::methods::{self, Method, Recipe};
use gnnaudit::target::{attack_graph, claim_of, node_split, ModelBlackBox};
use gnnaudit_attacks::inversion::{InversionParams, InversionVariant};
use gnnaudit_attacks::{run_attack, AdversaryKnowledge, AttackConfig, AttackParams, Target};

fn list(s: Option<&String>, default: &str) -> Vec<f64> {
    s.map_or(default, |s| s.as_str()).split(',').map(|v| v.trim().parse().expect("a number")).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("cora", |s| s.as_str());
    let seed: u64 = args.get(2).map_or(Ok(0), |s| s.parse())?;
    let steps: usize = args.get(3).map_or(Ok(300), |s| s.parse())?;
    let min_class: usize = args.get(4).map_or(Ok(1), |s| s.parse())?;
    let record = list(args.get(5), "8,2,0.5");
    let subclass = list(args.get(6), "30,8,3");
    let k_sub: usize = args.get(7).map_or(Ok(50), |s| s.parse())?;
    // Threads follow OMP_NUM_THREADS (runs share a small machine).
    let accounting = gnnaudit::train::accounting::Accounting::rdp_only();
    let raw = data::load_dataset(name, None)?;
    let ds = data::transforms::prepare_like_gap(&raw, min_class, SplitRatios::default(), seed)?;
    let g = attack_graph(&ds)?;
    let split = node_split(ds.split()?);
    println!(
        "{name}: {} nodes, {} classes, {} features, {} training nodes; inversion T = {steps}",
        ds.num_nodes(),
        ds.num_classes,
        g.num_features(),
        split.train.len()
    );
    let mut rows: Vec<Recipe> = vec![Recipe::new(Method::Mlp, None)];
    rows.extend(record.iter().map(|&e| Recipe::new(Method::DpMlp, Some(e))));
    for &e in &subclass {
        let mut r = Recipe::new(Method::SubclassDpMlp, Some(e));
        r.knobs.set("subclasses", k_sub as i64);
        r.knobs.set("unit_rate", 0.5);
        rows.push(r);
    }
    println!(
        "{:<16} {:>8} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>8}",
        "method", "eps", "paper_eps", "sigma", "test_acc", "enh_dist", "orig_dist", "rand_dist", "enh_auc"
    );
    for r in rows {
        let t = std::time::Instant::now();
        let run = methods::train_with(&r, &ds, seed, &accounting)?;
        let bb = ModelBlackBox::new(run.model.as_ref());
        let target = Target {
            graph: &g,
            split: &split,
            black_box: &bb,
            white_box: run.model.white_box(),
            oracle: None,
            claim: claim_of(&run.budget),
        };
        let mut out = vec![];
        for variant in [InversionVariant::Enhanced, InversionVariant::Original] {
            let p =
                AttackParams::new(AttackConfig::Inversion(InversionParams { steps, variant, ..Default::default() }));
            let res = run_attack(&target, &AdversaryKnowledge::default(), &p, seed)?;
            out.push((
                res.details["mean_mia_distance"].as_f64().unwrap_or(f64::NAN),
                res.details["mean_random_input_distance"].as_f64().unwrap_or(f64::NAN),
                res.summary.auc,
            ));
        }
        let noise = |k: &str| run.budget.noise.iter().find(|(n, _)| n == k).map_or(f64::NAN, |(_, v)| *v);
        println!(
            "{:<16} {:>8} {:>9.2} {:>9.4} {:>8.2}% {:>10.4} {:>10.4} {:>10.4} {:>7.1}%   ({:.0} s)",
            r.method.name(),
            r.epsilon.map_or("inf".into(), |_| format!("{:.3}", run.budget.claimed_epsilon())),
            noise("paper_epsilon"),
            noise("sigma"),
            100.0 * run.accuracy.test,
            out[0].0,
            out[1].0,
            out[0].1,
            100.0 * out[0].2,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
