//! Measures what the reference DP-GNN (sisaman/ProGAP `gnn node`) clips per step, to compare its
//! noise with DP-GNN's per-node bound. The reference bounds only the *in*-degree (each node keeps
//! <= K sampled in-neighbours), trains on the 1-hop subgraph of each batch of m seed nodes and lets
//! Opacus clip one gradient per subgraph row. This counts, over many batches:
//! - N_sub = |B u N_in(B)|, the rows clipped and summed per step (vs m under per-node clipping);
//! - how many rows one node can influence: its own row, the rows of its out-neighbours (through
//!   their aggregation; out-degree is not bounded) and of its in-neighbours (through its loss).
//!
//! `cargo run --example reference_subgraph_rows -- [dataset] [min_class_count] [K] [m]`
use gnnaudit::data::{self, SplitRatios};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() -> gnnaudit::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("facebook100-Cornell5", |s| s.as_str());
    let min_count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let k: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100);
    let m: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(256);
    let dir = std::env::var("GNNAUDIT_DATA").ok().map(std::path::PathBuf::from);
    let raw = data::load_dataset(name, dir.as_deref())?;
    let ds = data::transforms::prepare_like_gap(&raw, min_count, SplitRatios::default(), 0)?;
    let g = &ds.graph;
    let n = g.num_nodes();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    // In-degree bound only, as the reference's BoundOutDegree (neighbour sampling per target).
    let kept: Vec<Vec<usize>> = (0..n)
        .map(|v| {
            let mut nb: Vec<usize> = g.in_neighbors(v).iter().copied().filter(|&u| u != v).collect();
            nb.shuffle(&mut rng);
            nb.truncate(k);
            nb
        })
        .collect();
    let mut out_deg = vec![0usize; n];
    kept.iter().flatten().for_each(|&u| out_deg[u] += 1);
    let max_out = *out_deg.iter().max().unwrap();
    let over = out_deg.iter().filter(|&&d| d > k).count();
    let influence_max = (0..n).map(|v| 1 + kept[v].len() + out_deg[v]).max().unwrap();
    let train = &ds.split()?.train;
    let mut pool = train.clone();
    let mut sizes = vec![];
    let mut seen = vec![usize::MAX; n];
    for step in 0..200 {
        pool.shuffle(&mut rng);
        let mut count = 0;
        for &v in &pool[..m] {
            for &u in std::iter::once(&v).chain(kept[v].iter()) {
                if seen[u] != step {
                    seen[u] = step;
                    count += 1;
                }
            }
        }
        sizes.push(count as f64);
    }
    let mean = sizes.iter().sum::<f64>() / sizes.len() as f64;
    let (lo, hi) = sizes.iter().fold((f64::MAX, 0f64), |(a, b), &s| (a.min(s), b.max(s)));
    println!("{name} (min class {min_count}): {n} nodes, K = {k}, m = {m}, {} train nodes", train.len());
    println!(
        "rows per batch N_sub over 200 batches: mean {mean:.0} (min {lo:.0}, max {hi:.0}); N_sub/m = {:.1}",
        mean / m as f64
    );
    println!("out-degree after the in-degree bound: max {max_out}, {over} nodes above K");
    println!(
        "rows one node can influence (1 + in + out): max {influence_max} vs the K+1 = {} the noise assumes",
        k + 1
    );
    Ok(())
}
