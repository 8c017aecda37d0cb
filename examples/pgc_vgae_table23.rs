//! Thesis ch.2, Table 2.3, link prediction half: `pgc-vgae` (VGAE on PGC's first-layer estimate)
//! on Cora or twitch-ENGB, LM / PM / PGC at eps 1, 5, 9 per feature and RAW; test ROC-AUC and
//! average precision, mean +- sd over the runs (run r: edge split, randomisation and training
//! all seeded with r).
//!
//!   cargo run --example pgc_vgae_table23 -- cora 10
//!   cargo run --example pgc_vgae_table23 -- twitch-ENGB 10 [onebit|laplace|piecewise|raw ...]
//!   cargo run --example pgc_vgae_table23 -- cora 10 onebit:1 laplace:1 piecewise:1 raw
//!
//! Cells named as `mechanism:eps` run in the order given (so that a time-boxed run finishes the
//! cells it needs first); each run's AUC is printed as it finishes, so an interrupted cell still
//! reports its run count.
//!
//! Hyper-parameters: Table 2.2's VGAE columns (Cora: lr 0.01, wd 0.01; Twitch: lr 0.01, wd 1e-3;
//! dropout 0), widths 32 -> 16. twitch-ENGB first drops its 625 all-zero columns (2,545 left).
use gnnaudit::data::{load_dataset, transforms::drop_zero_columns};
use gnnaudit::methods::pgc::PgcConfig;
use gnnaudit::methods::pgc_vgae::train;
use gnnaudit::privacy::mechanisms::feature_ldp::FeatureMechanismKind as K;

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let sd = (xs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (xs.len().max(2) - 1) as f64).sqrt();
    (mean, sd)
}

fn main() -> gnnaudit::error::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("cora");
    let runs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let only: Vec<&str> = args.iter().skip(3).map(String::as_str).collect();
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
        (PgcConfig { weight_decay: 1e-3, ..PgcConfig::vgae() }, ds)
    } else {
        (PgcConfig::vgae(), raw)
    };
    let grid: Vec<(K, Option<f64>)> = [K::Laplace, K::Piecewise, K::Onebit]
        .into_iter()
        .flat_map(|m| [1.0, 5.0, 9.0].map(|e| (m, Some(e))))
        .chain([(K::Raw, None)])
        .collect();
    let named = |m: K, e: Option<f64>| format!("{}:{}", m.name(), e.map_or("inf".into(), |e| e.to_string()));
    let cells: Vec<(K, Option<f64>)> = if only.is_empty() {
        grid
    } else {
        let mut cells = vec![];
        for want in &only {
            let hits: Vec<_> = grid.iter().filter(|(m, e)| m.name() == *want || named(*m, *e) == *want).collect();
            if hits.is_empty() {
                return Err(gnnaudit::error::Error::invalid(
                    "cell",
                    format!("'{want}' is not a mechanism or mechanism:eps of the grid (e.g. onebit:5, raw)"),
                ));
            }
            for c in hits {
                if !cells.contains(c) {
                    cells.push(*c);
                }
            }
        }
        cells
    };
    for (mech, eps) in cells {
        let cfg = PgcConfig { mechanism: mech, epsilon: eps, ..cfg0.clone() };
        let (mut aucs, mut aps) = (vec![], vec![]);
        for r in 0..runs {
            let run = train(&ds, &cfg, r)?;
            let m = run.model.link_metrics().expect("a VGAE reports link metrics");
            aucs.push(100.0 * m.test_auc);
            aps.push(100.0 * m.test_ap);
            println!("  {name} {} run {r}: ROC-AUC {:.2}", named(mech, eps), 100.0 * m.test_auc);
        }
        let ((auc, auc_sd), (ap, ap_sd)) = (mean_sd(&aucs), mean_sd(&aps));
        println!(
            "{name} {:9} eps {:>4}: ROC-AUC {auc:5.1} +- {auc_sd:3.1}, AP {ap:5.1} +- {ap_sd:3.1} ({runs} runs) {aucs:.1?}",
            mech.name(),
            eps.map_or("inf".into(), |e| e.to_string())
        );
    }
    Ok(())
}
