//! `gnnaudit datasets list|describe`: what datasets are available and what they look like.
use crate::data::{self, DatasetStats, SplitRatios};
use crate::error::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;

const SPEC_HELP: &str = "\
A dataset spec is one of:
  synthetic                      the embedded CSBM (2,000 nodes, 5 classes, mean degree 10, homophily 0.8)
  synthetic:nodes=N,seed=S,...   CSBM overrides: nodes, classes, mean_degree, homophily, features, signal, seed
  NAME                           NAME.npz, NAME.toml or NAME/ in --data-dir, then $GNNAUDIT_DATA, then ./datasets
  path/to/file.npz               the gnn-benchmark .npz layout (adj_*, attr_* or attr_matrix, labels)
  path/to/dir/                   a directory with edges.csv|parquet and nodes.csv|parquet
  path/to/x.edges.csv            an edge list with its node table beside it (x.nodes.csv|parquet)
  path/to/manifest.toml          edges = \"e.parquet\", nodes = \"n.csv\" (+ optional source, target, id, label,
                                 features = [..], undirected, name)
Edge tables have columns source,target (made undirected by default); node tables have an id column
(optional: row number otherwise), a label column (integers >= 0 or strings) and either numeric feature
columns or one list column.";

#[derive(Debug, Args)]
#[command(after_help = SPEC_HELP)]
pub struct DatasetsArgs {
    #[command(subcommand)]
    pub command: DatasetsCommand,
}

#[derive(Debug, Subcommand)]
pub enum DatasetsCommand {
    /// List the datasets available by name: `synthetic` plus the files in the data directories.
    #[command(after_help = SPEC_HELP)]
    List {
        /// Directory searched first (then $GNNAUDIT_DATA, then ./datasets).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Load one dataset and print its size, degrees, classes and majority-class accuracy.
    #[command(after_help = SPEC_HELP)]
    Describe {
        /// A name, path or `synthetic[:overrides]` (see below).
        spec: String,
        /// Directory searched first for a name (then $GNNAUDIT_DATA, then ./datasets).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Drop the nodes of classes with fewer members and relabel (GAP's FilterClassByCount).
        #[arg(long, value_name = "N")]
        min_class_count: Option<usize>,
        /// Apply the GAP/ProGAP reference preprocessing first: symmetrise, 75/10/15 random split,
        /// class filter (--min-class-count, default 1), remove self loops and isolated nodes.
        #[arg(long)]
        like_gap: bool,
        /// Bound every node's in- and out-degree by random neighbour sampling (node-level DP
        /// preprocessing), after the steps above.
        #[arg(long, value_name = "D")]
        max_degree: Option<usize>,
        /// Seed of the split drawn by --like-gap and of the sampling of --max-degree.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
}

pub fn run(args: DatasetsArgs) -> Result<()> {
    match args.command {
        DatasetsCommand::List { data_dir, json } => {
            data::registry::check_data_dir(data_dir.as_deref())?;
            let found = data::list_datasets(data_dir.as_deref());
            if json {
                println!("{}", serde_json::to_string_pretty(&found)?);
            } else {
                for a in found {
                    match a.path {
                        Some(p) => println!("{:<32} {}", a.name, p.display()),
                        None => println!("{:<32} (embedded CSBM)", a.name),
                    }
                }
            }
        }
        DatasetsCommand::Describe { spec, data_dir, json, min_class_count, like_gap, max_degree, seed } => {
            let t = std::time::Instant::now();
            let mut ds = data::load_dataset(&spec, data_dir.as_deref())?;
            tracing::info!("loaded {spec} in {:?}", t.elapsed());
            if like_gap {
                ds = data::prepare_like_gap(&ds, min_class_count.unwrap_or(1), SplitRatios::default(), seed)?;
            } else if let Some(m) = min_class_count {
                ds = data::filter_classes(&ds, m)?;
            }
            if let Some(d) = max_degree {
                ds.graph = data::bound_degree(&ds.graph, data::DegreeBound::Both, d, seed)?;
            }
            let t = std::time::Instant::now();
            let stats = DatasetStats::of(&ds);
            tracing::info!("statistics in {:?}", t.elapsed());
            if json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
                print!("{}", stats.to_text());
            }
        }
    }
    Ok(())
}
