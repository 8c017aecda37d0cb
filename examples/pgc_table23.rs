//! Thesis ch.2, Table 2.3 (node classification) and Fig. 2.2 (first-layer MAE) for the `pgc`
//! method on Cora and twitch-ENGB: LM / PM / PGC at eps 1, 5, 9 and RAW.
//!
//!   cargo run --example pgc_table23 -- cora 3
//!   cargo run --example pgc_table23 -- twitch-ENGB 3
//!
//! Splits: Cora 20 per class / ~500 val (72 per class) / rest test (our cora.npz is not
//! in Planetoid order); Twitch random 50/25/25 after dropping its all-zero columns (2,545 left).
//! Hyper-parameters: Table 2.2 (Cora: lr 0.01, wd 0.01, dropout 0.5; Twitch: lr 0.001, wd 1e-4,
//! dropout 0). Prints mean +- sd of test accuracy (micro-F1) over the runs, and the MAE of eq.
//! 2.15 for one collection per (mechanism, eps).
use gnnaudit::data::{load_dataset, random_split, split_per_class, transforms::drop_zero_columns, SplitRatios};
use gnnaudit::methods::pgc::{aggregation_mae, first_layer_estimate, train, PgcConfig};
use gnnaudit::privacy::mechanisms::feature_ldp::{FeatureLdp, FeatureMechanismKind as K};
use tch::Kind;

fn main() -> gnnaudit::error::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("cora");
    let runs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    // By name: $GNNAUDIT_DATA, then ~/.cache/gnnaudit/datasets (`gnnaudit datasets fetch NAME`).
    let raw = load_dataset(name, None)?;
    let twitch = name.starts_with("twitch");
    let (cfg0, ds) = if twitch {
        let ds = drop_zero_columns(&raw);
        println!(
            "{name}: {} -> {} feature columns after dropping all-zero ones",
            raw.num_features(),
            ds.num_features()
        );
        (PgcConfig { learning_rate: 0.001, weight_decay: 1e-4, dropout: 0.0, ..Default::default() }, ds)
    } else {
        (PgcConfig::default(), raw)
    };
    let split = |seed| {
        if twitch {
            random_split(&ds, SplitRatios::new(0.5, 0.25, 0.25).unwrap(), seed)
        } else {
            split_per_class(&ds, 20, 72, seed)
        }
    };
    let x = ds.features.to_tensor().to_kind(Kind::Float);
    let exact = first_layer_estimate(&ds.graph, &x);
    for (mech, eps) in [(K::Laplace, 1.0), (K::Piecewise, 1.0), (K::Onebit, 1.0)]
        .into_iter()
        .flat_map(|(m, _)| [1.0, 5.0, 9.0].map(|e| (m, Some(e))))
        .chain([(K::Raw, None)])
    {
        let cfg = PgcConfig { mechanism: mech, epsilon: eps, ..cfg0.clone() };
        let mut accs = vec![];
        for r in 0..runs {
            let data = split(r)?;
            accs.push(100.0 * train(&data, &cfg, r)?.accuracy.test);
        }
        let mean = accs.iter().sum::<f64>() / accs.len() as f64;
        let sd = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (accs.len().max(2) - 1) as f64).sqrt();
        let mae = match eps {
            Some(e) => {
                let (y, _) = FeatureLdp::new(mech, e, 0.0, 1.0)?.perturb(&x, 7)?;
                aggregation_mae(&exact, &first_layer_estimate(&ds.graph, &y))
            }
            None => 0.0,
        };
        let line = format!(
            "{name} {:9} eps {:>4}: acc {mean:5.1} +- {sd:3.1} ({runs} runs), MAE {mae:.4}",
            mech.name(),
            eps.map_or("inf".into(), |e| e.to_string())
        );
        println!("{line}");
    }
    Ok(())
}
