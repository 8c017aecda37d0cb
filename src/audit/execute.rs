//! The real cell runner: loads each dataset once, prepares it as the GAP/ProGAP pipeline does
//! (symmetrise, split, class filter, self loops and isolated nodes removed), trains the cell's
//! target with its recipe, and runs the configured attacks against it.
use super::cell::CellSpec;
use super::progress::{Progress, Stage};
use super::recipe::build_recipe;
use super::runner::CellRunner;
use crate::data::{self, Csbm, Dataset, DatasetStats, SplitRatios};
use crate::data::{content_sha256, file_sha256};
use crate::error::{Error, Result};
use crate::methods::{self, Method};
use crate::report::config::DatasetSpec;
use crate::report::record::{BudgetRecord, CellMeasurement, CellSeconds};
use crate::report::DatasetInfo;
use crate::train::baseline::Baseline;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

pub struct RealRunner {
    data_dir: Option<PathBuf>,
    /// Raw datasets by config label, loaded once.
    raw: HashMap<String, Dataset>,
    /// Shared by the cells this runner trains: repeats of one budget calibrate it once.
    accounting: crate::train::accounting::Accounting,
}

impl RealRunner {
    pub fn new(data_dir: Option<PathBuf>) -> Self {
        RealRunner { data_dir, raw: HashMap::new(), accounting: Default::default() }
    }

    fn raw(&mut self, spec: &DatasetSpec) -> Result<&Dataset> {
        let label = spec.label();
        if !self.raw.contains_key(&label) {
            let ds = load_raw(spec, self.data_dir.as_deref())?;
            self.raw.insert(label.clone(), ds);
        }
        Ok(&self.raw[&label])
    }
}

pub use super::source::{resolve_dataset, DatasetSource};

pub(crate) fn load_raw(spec: &DatasetSpec, data_dir: Option<&std::path::Path>) -> Result<Dataset> {
    if spec.name == data::SYNTHETIC {
        return Csbm::from_table(spec.synthetic.clone().unwrap_or_default())?.generate();
    }
    data::load_dataset(&spec.name, data_dir)
}

/// The dataset a cell trains on: the GAP/ProGAP preprocessing with the config's class filter and
/// split (drawn from `split_seed`, else the cell's seed). Without a configured split, each method
/// uses its paper's (`MethodSpec::split`).
pub fn prepare(raw: &Dataset, spec: &DatasetSpec, seed: u64, method: Option<Method>) -> Result<Dataset> {
    let ratios = match (spec.split, method) {
        (Some(s), _) => SplitRatios::new(s.train, s.val, s.test)?,
        (None, Some(m)) => m.spec().split,
        (None, None) => SplitRatios::default(),
    };
    data::prepare_like_gap(raw, spec.min_class_count, ratios, spec.split_seed.unwrap_or(seed))
}

impl CellRunner for RealRunner {
    fn dataset_info(&mut self, spec: &DatasetSpec) -> Result<DatasetInfo> {
        let source = resolve_dataset(&spec.name, self.data_dir.as_deref())?;
        let raw = self.raw(spec)?;
        let (source, sha256) = match source {
            DatasetSource::Embedded => ("embedded".to_string(), content_sha256(raw)),
            DatasetSource::File(p) => {
                (p.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned()), file_sha256(&p)?)
            }
        };
        let prepared = prepare(raw, spec, spec.split_seed.unwrap_or(0), None)?;
        let stats = DatasetStats::of(&prepared);
        Ok(DatasetInfo {
            label: spec.label(),
            name: spec.name.clone(),
            source,
            sha256,
            nodes: stats.nodes,
            undirected_edges: stats.edges,
            features: stats.features,
            classes: stats.classes,
        })
    }

    fn release(&mut self) {
        self.raw.clear();
    }

    fn run_cell(&mut self, cell: &CellSpec, progress: &Progress) -> Result<CellMeasurement> {
        if cell.method.method == super::config::EXTERNAL_METHOD {
            return super::external::run_cell(cell, self.raw(cell.dataset)?, progress);
        }
        let key = &cell.key;
        let recipe = build_recipe(&cell.method.method, &cell.method.params, key.epsilon, cell.delta)
            .map_err(|(field, msg)| Error::invalid(format!("{}.{field}", cell.method.label()), msg))?;
        let ds = prepare(self.raw(cell.dataset)?, cell.dataset, key.seed, Some(recipe.method))?;
        let baseline = match recipe.method.utility_metric() {
            methods::UtilityMetric::RocAuc => Baseline::link_prediction(),
            methods::UtilityMetric::Accuracy => Baseline::of_classes(&ds)?,
        };
        progress.set_message(Stage::Training, format!("{key}"));
        let clock = Instant::now();
        let run = methods::train_with(&recipe, &ds, key.seed, &self.accounting)?;
        crate::target::ensure_converged(&run, &recipe)?;
        let train_seconds = clock.elapsed().as_secs_f64();
        progress.done(Stage::Training);

        let clock = Instant::now();
        let attacks = super::attack::run_attacks(cell, &recipe, &ds, &run, progress)?;
        let attack_seconds = clock.elapsed().as_secs_f64();

        Ok(CellMeasurement {
            privacy_unit: run.budget.privacy_unit,
            utility: run.accuracy,
            budget: BudgetRecord::from(&run.budget),
            recipe: serde_json::to_value(recipe.with_own_defaults())?,
            attacks,
            baseline: Some(baseline),
            seconds: CellSeconds { train: train_seconds, attacks: attack_seconds },
        })
    }
}
