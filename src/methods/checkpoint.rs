//! Saving a trained model to a directory and loading it back, so that a model trained once can
//! be attacked many times. Layout:
//! - `params.safetensors`: the VarStore (parameters and batch-norm statistics);
//! - `cache.safetensors`: the cached inputs the model answers from (GAP's private aggregations,
//!   ProGAP's stage inputs, the MLP's features), so transductive queries stay free of privacy cost;
//! - `model.json`: format tag, recipe, budget, dimensions and the PMA/NAP noise scale.
//!
//! Files are written under temporary names and renamed, so a crash never leaves a half-written one.
//!
//! Every method saves through the same three pieces: its VarStore ([`save_store`]), the named
//! tensors it answers from ([`Cache`]: cached releases, randomized inputs, the graph it was trained
//! on via [`graph_entries`]) and the [`Meta`]. A method added later implements
//! [`TrainedModel::save`] with [`save_store`] and names a [`Loader`] in its registry entry.
use super::{Recipe, TrainedModel};
use crate::error::{Error, Result};
use crate::fsutil::write_atomic_with as write_atomic;
use crate::privacy::accountant::Budget;
use serde::{Deserialize, Serialize};
use std::path::Path;
use tch::Tensor;

pub const FORMAT: &str = "gnnaudit-model-v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub format: String,
    pub recipe: Recipe,
    pub budget: Budget,
    pub num_features: i64,
    pub num_classes: i64,
    /// Standard deviation of the aggregation noise (for inductive inference on a new graph).
    pub noise_std: f64,
    pub max_degree: Option<usize>,
    /// The data the model was trained on (absent in older checkpoints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataProvenance>,
}

/// What `attack --target` needs to rebuild the graph and split the model was trained on, and to
/// refuse another one: the dataset's content hash and every preprocessing input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataProvenance {
    /// The dataset spec as given (informative; the hash decides).
    pub dataset: String,
    /// sha256 of the loaded dataset's content (graph, features, labels), before preprocessing.
    pub sha256: String,
    pub min_class_count: usize,
    pub split_seed: u64,
    pub split: crate::data::SplitRatios,
    /// Seed of the saved run's training (also samples a node-level model's degree bound).
    pub train_seed: u64,
}

impl DataProvenance {
    pub fn of(
        spec: &str,
        raw: &crate::data::Dataset,
        min_class_count: usize,
        split_seed: u64,
        split: crate::data::SplitRatios,
        train_seed: u64,
    ) -> Self {
        DataProvenance {
            dataset: spec.to_string(),
            sha256: crate::data::content_sha256(raw),
            min_class_count,
            split_seed,
            split,
            train_seed,
        }
    }
}

/// Adds the data provenance to a saved model's `model.json` (written atomically, like the rest).
pub fn record_data(dir: &Path, data: &DataProvenance) -> Result<()> {
    let meta_path = dir.join("model.json");
    let text = std::fs::read_to_string(&meta_path).map_err(|e| Error::bad_file(&meta_path, e))?;
    let mut meta: Meta = serde_json::from_str(&text).map_err(|e| Error::bad_file(&meta_path, e))?;
    meta.data = Some(data.clone());
    write_atomic(&meta_path, |p| Ok(std::fs::write(p, serde_json::to_string_pretty(&meta)?)?))
}

impl Meta {
    pub fn new(recipe: &Recipe, budget: &Budget, num_features: i64, num_classes: i64) -> Self {
        Meta {
            format: FORMAT.into(),
            recipe: recipe.clone(),
            budget: budget.clone(),
            num_features,
            num_classes,
            noise_std: 0.0,
            max_degree: None,
            data: None,
        }
    }
}

pub fn save_dir(dir: &Path, ps: &crate::models::ParamStore, meta: &Meta, cache: &[(String, Tensor)]) -> Result<()> {
    save_store(dir, &ps.vs, meta, cache)
}

/// Saves any model: its variables, the named tensors it answers from (sparse ones densified is
/// the caller's choice; use [`graph_entries`] for a graph) and the meta.
pub fn save_store(dir: &Path, vs: &tch::nn::VarStore, meta: &Meta, cache: &[(String, Tensor)]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::bad_file(dir, format!("cannot create directory: {e}")))?;
    write_atomic(&dir.join("params.safetensors"), |p| {
        let tmp = p.with_extension("tmp.safetensors");
        vs.save(&tmp)?;
        std::fs::rename(&tmp, p)?;
        Ok(())
    })?;
    write_atomic(&dir.join("cache.safetensors"), |p| {
        let tmp = p.with_extension("tmp.safetensors");
        let named: Vec<(&str, &Tensor)> = cache.iter().map(|(k, t)| (k.as_str(), t)).collect();
        Tensor::write_safetensors(&named, &tmp)?;
        std::fs::rename(&tmp, p)?;
        Ok(())
    })?;
    write_atomic(&dir.join("model.json"), |p| Ok(std::fs::write(p, serde_json::to_string_pretty(meta)?)?))
}

/// A model read back from disk with the recipe and budget it was trained with.
pub struct LoadedModel {
    pub model: Box<dyn TrainedModel>,
    pub recipe: Recipe,
    pub budget: Budget,
    /// Where it came from (None: an older checkpoint).
    pub data: Option<DataProvenance>,
    pub dir: std::path::PathBuf,
}

impl LoadedModel {
    /// The provenance the model was trained with, checked against the data an attack loaded:
    /// another dataset (by content) or another class filter is refused, since the attack would
    /// then score members and non-members of a split the model never saw.
    pub fn check_data(&self, raw: &crate::data::Dataset, min_class_count: usize) -> Result<&DataProvenance> {
        let meta = self.dir.join("model.json");
        let p = self.data.as_ref().ok_or_else(|| {
            Error::bad_file(
                &meta,
                "this checkpoint does not record the dataset and split it was trained on (it predates them); \
                 re-create it with `gnnaudit train --save DIR` and the same options",
            )
        })?;
        let sha = crate::data::content_sha256(raw);
        if sha != p.sha256 {
            return Err(Error::invalid(
                "dataset",
                format!(
                    "'{}' is not the dataset the target in {} was trained on ('{}'): content sha256 {} vs {}",
                    raw.name,
                    self.dir.display(),
                    p.dataset,
                    &sha[..12],
                    &p.sha256[..p.sha256.len().min(12)]
                ),
            ));
        }
        if min_class_count != p.min_class_count {
            return Err(Error::invalid(
                "min-class-count",
                format!(
                    "{min_class_count}, but the target in {} was trained with --min-class-count {}",
                    self.dir.display(),
                    p.min_class_count
                ),
            ));
        }
        Ok(p)
    }
}

/// Refuses a checkpoint whose variables are not all finite: a diverged model answers NaN, and an
/// attack on it would measure nothing.
fn ensure_finite(vs: &tch::nn::VarStore, path: &Path) -> Result<()> {
    for (name, t) in vs.variables() {
        let finite = t.f_isfinite()?.f_all()?.f_int64_value(&[])? == 1;
        if !finite {
            return Err(Error::bad_file(
                path,
                format!(
                    "weight '{name}' holds NaN or infinite values: the model diverged; retrain it with a \
                     lower --lr"
                ),
            ));
        }
    }
    Ok(())
}

/// Saves a model that answers over its training graph: its weights, the tensors it answers from
/// (`cache`) and the graph itself ([`graph_entries`]).
pub fn save_with_graph(
    dir: &Path,
    vs: &tch::nn::VarStore,
    meta: &Meta,
    mut cache: Vec<(String, Tensor)>,
    graph: &crate::data::Graph,
) -> Result<()> {
    cache.extend(graph_entries(graph));
    save_store(dir, vs, meta, &cache)
}

/// The graph a model was trained on (e.g. DP-GNN's degree-bounded sample, SAGE-EDP's perturbed
/// graph), as cache entries: its edge index and node count.
pub fn graph_entries(graph: &crate::data::Graph) -> Vec<(String, Tensor)> {
    vec![
        ("graph.edges".into(), graph.edge_index_tensor()),
        ("graph.nodes".into(), Tensor::from_slice(&[graph.num_nodes() as i64])),
    ]
}

/// The named tensors of a checkpoint's `cache.safetensors`.
pub struct Cache {
    path: std::path::PathBuf,
    tensors: Vec<(String, Tensor)>,
}

impl Cache {
    pub fn get(&self, name: &str) -> Result<Tensor> {
        self.tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.shallow_clone())
            .ok_or_else(|| Error::bad_file(&self.path, format!("missing tensor '{name}'")))
    }
    /// The graph saved with [`graph_entries`].
    pub fn graph(&self) -> Result<crate::data::Graph> {
        let n = self.get("graph.nodes")?.int64_value(&[0]);
        let edges = self.get("graph.edges")?;
        let bad = |e: String| Error::bad_file(&self.path, format!("graph.edges: {e}"));
        if edges.dim() != 2 || edges.size()[0] != 2 || n < 0 {
            return Err(bad(format!("expected [2, E] and a node count, got {:?} and {n}", edges.size())));
        }
        let src = Vec::<i64>::try_from(&edges.get(0)).map_err(|e| bad(e.to_string()))?;
        let dst = Vec::<i64>::try_from(&edges.get(1)).map_err(|e| bad(e.to_string()))?;
        crate::data::Graph::from_edges(n as usize, src.into_iter().zip(dst).map(|(u, v)| (u as usize, v as usize)))
            .map_err(|e| bad(e.to_string()))
    }
}

/// Rebuilds one method's model from its meta, cache and a VarStore loader.
pub type Loader = fn(&Meta, &Cache, &dyn Fn(&mut tch::nn::VarStore) -> Result<()>) -> Result<Box<dyn TrainedModel>>;

/// Loads a directory written by [`TrainedModel::save`].
pub fn load_model(dir: &Path) -> Result<LoadedModel> {
    let meta_path = dir.join("model.json");
    let text = std::fs::read_to_string(&meta_path).map_err(|e| Error::bad_file(&meta_path, e))?;
    let mut meta: Meta = serde_json::from_str(&text).map_err(|e| Error::bad_file(&meta_path, e))?;
    let method = meta.recipe.method;
    meta.recipe.knobs.forget_v1_defaults(method);
    if meta.format != FORMAT {
        return Err(Error::bad_file(&meta_path, format!("format '{}' is not {FORMAT}", meta.format)));
    }
    let cache_path = dir.join("cache.safetensors");
    let cache = Tensor::read_safetensors(&cache_path).map_err(|e| Error::bad_file(&cache_path, e))?;
    // Onto the selected device once, where the model that reads them lives.
    let tensors = cache.into_iter().map(|(name, t)| (name, crate::device::place(t))).collect();
    let cache = Cache { path: cache_path, tensors };
    let params_path = dir.join("params.safetensors");
    let load_store = |vs: &mut tch::nn::VarStore| -> Result<()> {
        vs.load(&params_path).map_err(|e| Error::bad_file(&params_path, e))?;
        ensure_finite(vs, &params_path)
    };
    let load = method
        .spec()
        .load
        .ok_or_else(|| Error::invalid("method", format!("checkpoints of {} are not supported", method.name())))?;
    let model = load(&meta, &cache, &load_store)?;
    Ok(LoadedModel { model, recipe: meta.recipe, budget: meta.budget, data: meta.data, dir: dir.to_path_buf() })
}
