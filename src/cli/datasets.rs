//! `gnnaudit datasets list|describe|fetch`: what datasets are available, what they look like, and
//! installing the catalog's datasets with their checksums verified.
use crate::data::catalog::{self, Entry, Upstream};
use crate::data::{self, download, DatasetStats, SplitRatios};
use crate::error::{Error, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

const SPEC_HELP: &str = "\
A dataset spec is one of:
  synthetic                      the embedded CSBM (2,000 nodes, 5 classes, mean degree 10, homophily 0.8)
  synthetic:nodes=N,seed=S,...   CSBM overrides: nodes, classes, mean_degree, homophily, features, signal, seed
  NAME                           NAME.npz, NAME.toml or NAME/ in --data-dir, then $GNNAUDIT_DATA, then
                                 ~/.cache/gnnaudit/datasets (`datasets fetch NAME`), then ./datasets
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
        /// Directory searched first (then $GNNAUDIT_DATA, ~/.cache/gnnaudit/datasets, ./datasets).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Download datasets of the catalog and install them once their sha256 matches.
    #[command(after_help = FETCH_HELP)]
    Fetch {
        /// Catalog names (e.g. cora, cora-ml, facebook100-Cornell5, twitch-DE).
        #[arg(required = true, value_name = "NAME")]
        names: Vec<String>,
        /// Base URL of a mirror holding NAME.npz in gnnaudit's layout (default:
        /// $GNNAUDIT_DATASETS_MIRROR; without either, the upstream source).
        #[arg(long, value_name = "URL")]
        mirror: Option<String>,
        /// Directory to install into (default ~/.cache/gnnaudit/datasets).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Load one dataset and print its size, degrees, classes and majority-class accuracy.
    #[command(after_help = SPEC_HELP)]
    Describe {
        /// A name, path or `synthetic[:overrides]` (see below).
        spec: String,
        /// Directory searched first for a name (then $GNNAUDIT_DATA, ~/.cache/gnnaudit/datasets, ./datasets).
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
        DatasetsCommand::Fetch { names, mirror, data_dir } => fetch(&names, mirror, data_dir)?,
    }
    Ok(())
}

const FETCH_HELP: &str = "\
Every file is checked against the sha256 the catalog records before it is installed; a mismatch
exits 2 and leaves nothing. From a mirror (--mirror or GNNAUDIT_DATASETS_MIRROR: a base URL with
NAME.npz in gnnaudit's layout, as docs/datasets.md describes) every dataset can be fetched. Without a
mirror, cora and cora-ml come from their upstream gnn-benchmark .npz files (upstream checksum
verified, then symmetrised into gnnaudit's layout and checked against the catalog's content hash);
Facebook100 (.mat) and the MUSAE graphs (CSV/JSON) need a mirror, as gnnaudit cannot convert them yet.
Only http:// and https:// URLs are accepted.";

/// Where a fetch reads from: a mirror (flag first, then the environment) or upstream.
fn mirror_base(flag: Option<String>) -> Option<(String, &'static str)> {
    if let Some(m) = flag.filter(|m| !m.is_empty()) {
        return Some((m, "--mirror"));
    }
    std::env::var("GNNAUDIT_DATASETS_MIRROR").ok().filter(|m| !m.is_empty()).map(|m| (m, "GNNAUDIT_DATASETS_MIRROR"))
}

fn fetch(names: &[String], mirror: Option<String>, data_dir: Option<PathBuf>) -> Result<()> {
    let entries: Vec<&Entry> = names
        .iter()
        .map(|n| {
            catalog::find(n).ok_or_else(|| {
                Error::invalid(
                    "NAME",
                    format!("'{n}' is not in the catalog; known: {}", catalog::names().collect::<Vec<_>>().join(", ")),
                )
            })
        })
        .collect::<Result<_>>()?;
    let mirror = mirror_base(mirror);
    if let Some((url, source)) = &mirror {
        download::check_url(url, source)?;
    }
    let dir = match data_dir.or_else(data::registry::default_data_dir) {
        Some(d) => d,
        None => return Err(Error::invalid("--data-dir", "HOME is not set: name the directory to install into")),
    };
    for entry in entries {
        let dest = dir.join(entry.file_name());
        if dest.is_file() && (data::file_sha256(&dest)? == entry.sha256 || data::normalise::holds_content(entry, &dest))
        {
            eprintln!("{}: already installed and verified ({})", entry.name, dest.display());
            continue;
        }
        match &mirror {
            Some((base, source)) => {
                let url = format!("{}/{}", base.trim_end_matches('/'), entry.file_name());
                let got = download::download(&url, Some(entry.sha256), &dir, source)?;
                download::install(got, &dest)?;
            }
            None => from_upstream(entry, &dir, &dest)?,
        }
        eprintln!("{}: installed {} (sha256 {} verified)", entry.name, dest.display(), entry.sha256);
    }
    Ok(())
}

/// Fetches `entry` from its upstream source, where gnnaudit can convert it.
fn from_upstream(entry: &Entry, dir: &std::path::Path, dest: &std::path::Path) -> Result<()> {
    match entry.upstream {
        Upstream::Npz { url, sha256, .. } => {
            let got = download::download(url, Some(sha256), dir, "upstream")?;
            data::normalise::install_normalised(entry, got, dest)
        }
        Upstream::Convert { url, format, .. } => Err(Error::invalid(
            "--mirror",
            format!(
                "{}: its upstream source ({url}) is {format}, which gnnaudit cannot convert yet; fetch it \
                 from a mirror holding {} in gnnaudit's layout (--mirror URL or GNNAUDIT_DATASETS_MIRROR)",
                entry.name,
                entry.file_name()
            ),
        )),
    }
}
