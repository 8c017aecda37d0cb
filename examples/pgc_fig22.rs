//! Thesis ch.2, Fig. 2.2: MAE of the first-layer estimate (eq. 2.15) vs eps in {1, 3, 5, 7, 9}
//! for one-bit PGC, Piecewise and Laplace, as an SVG (the report's plotters style) and a table.
//!
//!   cargo run --example pgc_fig22 -- cora 3 reports/pgc-fig22-cora.svg
//!   cargo run --example pgc_fig22 -- twitch-ENGB 3 reports/pgc-fig22-twitch.svg
//!
//! Arguments: dataset, collections per point (mean +- sd over them), output path. twitch-ENGB
//! drops its all-zero columns first (2,545 left, Table 2.1).
use gnnaudit::data::{load_dataset, transforms::drop_zero_columns};
use gnnaudit::report::mae_plot::{mae_curves, mae_figure, FIG22_EPSILONS};

fn main() -> gnnaudit::error::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("cora");
    let collections: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let out = args.get(3).cloned().unwrap_or_else(|| format!("pgc-fig22-{name}.svg"));
    // By name: $GNNAUDIT_DATA, then ~/.cache/gnnaudit/datasets (`gnnaudit datasets fetch NAME`).
    let mut ds = load_dataset(name, None)?;
    if name.starts_with("twitch") {
        ds = drop_zero_columns(&ds);
    }
    let curves = mae_curves(&ds, &FIG22_EPSILONS, collections, 7)?;
    for c in &curves {
        let cells: Vec<String> = c.points.iter().map(|(e, m, sd)| format!("eps {e}: {m:.4} +- {sd:.4}")).collect();
        println!("{name} {:9} MAE  {}", c.mechanism.name(), cells.join(" | "));
    }
    let fig = mae_figure(name, &curves)?;
    std::fs::write(&out, &fig.svg).map_err(|e| gnnaudit::error::Error::bad_file(std::path::Path::new(&out), e))?;
    println!("wrote {out}");
    Ok(())
}
