//! What a method tells the rest of gnnaudit about itself ([`MethodSpec`] and the plans it
//! carries). The types live apart from the registry, which imports every method, so that a
//! method's module can declare its entry without importing the others.
use super::checkpoint::Loader;
use super::method::Method;
use super::recipe::{Recipe, UtilityMetric};
use super::TrainedRun;
use crate::data::Dataset;
use crate::error::Result;
use crate::privacy::accountant::{Budget, PrivacyUnit};

pub use super::shared::{Reads, Shared, ALWAYS_READ};

/// Everything the rest of gnnaudit needs to know about one method.
pub struct MethodSpec {
    /// The name `--method` and configs spell.
    pub name: &'static str,
    /// One line for `train --help`, `gnnaudit methods` and the README table.
    pub about: &'static str,
    /// The unit its guarantee protects (None: not private).
    pub unit: PrivacyUnit,
    /// Calibrates noise to `--epsilon` (LPGNN-style local methods take `epsilon_x`/`epsilon_y`).
    pub takes_epsilon: bool,
    /// What its utility measures.
    pub utility: UtilityMetric,
    /// The split its paper uses when a run does not set one.
    pub split: crate::data::SplitRatios,
    /// An audit's epsilon grid sets `epsilon_x` or `epsilon_y` (its `sweep`), not `epsilon`.
    pub sweeps_local_budgets: bool,
    /// Whether a recipe adds noise (default: a method calibrated to `--epsilon` given one; the
    /// local methods look at their own budgets).
    pub is_private: fn(&Recipe) -> bool,
    /// Epochs when the recipe leaves them unset.
    pub epochs: usize,
    /// Whether normalisation is on when the recipe leaves `batch_norm` unset.
    pub batch_norm: bool,
    /// The shared settings it reads besides [`ALWAYS_READ`]; any other set away from the
    /// method's default is refused by name.
    pub reads: Reads,
    /// Its own knob struct (in its module), read from the recipe's knob map: the CLI flags, the
    /// docs and the refusal of unknown names all come from it.
    pub own_knobs: Option<super::knobs::OwnKnobs>,
    /// Its defaults on top of `Recipe::default()` (the paper's hyper-parameters).
    pub defaults: fn(&mut Recipe),
    /// Range checks of its own knobs (beyond the generic ones in `Recipe::validate`).
    pub check: fn(&Recipe) -> Result<()>,
    pub train: fn(&Recipe, &Dataset, u64, &crate::train::accounting::Accounting) -> Result<TrainedRun>,
    /// The budget a run on `data` with a seed claims, from the same events and calibration as
    /// `train`, without training: `gnnaudit account budget` prints it and audits check it before any cell runs.
    pub budget: fn(&Recipe, &Dataset, u64, &crate::train::accounting::Accounting) -> Result<Budget>,
    /// Rebuilds a saved model (None: the method cannot be saved).
    pub load: Option<Loader>,
    /// Why it is deliberately broken (a demo or an unsound reference variant), in the words its
    /// replay and budget reports print; a method with a note is never a default.
    pub unsound: Option<&'static str>,
    /// How `gnnaudit replay` recomputes its pre-noise releases, or why it has none.
    pub replay: Replay,
    /// What its runs allocate besides the input -> hidden -> classes weights (`methods::size`).
    pub memory: MemoryShape,
    /// The kernels `gnnaudit-bench methods` times as its floor (None: no floor plan).
    pub floor: Option<FloorPlan>,
    /// The positive control of its audits: the method with its noise switched off (or its
    /// non-private variant). An audit may call a claim `not refuted` only when the same attack
    /// refutes that claim on this control; None leaves the method's rows `inconclusive`.
    pub control: Option<Method>,
}

impl MethodSpec {
    /// A method with the common choices, which a registry entry overrides where it differs:
    /// guarantee calibrated to `--epsilon` unless the unit is none, accuracy, GAP's 75/10/15 split,
    /// 100 epochs, normalisation on, no knobs, defaults or checks of its own, no checkpoint.
    pub const fn new(
        name: &'static str,
        about: &'static str,
        unit: PrivacyUnit,
        train: fn(&Recipe, &Dataset, u64, &crate::train::accounting::Accounting) -> Result<TrainedRun>,
        budget: fn(&Recipe, &Dataset, u64, &crate::train::accounting::Accounting) -> Result<Budget>,
    ) -> MethodSpec {
        MethodSpec {
            name,
            about,
            unit,
            takes_epsilon: !matches!(unit, PrivacyUnit::None),
            utility: UtilityMetric::Accuracy,
            split: crate::data::SplitRatios::GAP,
            sweeps_local_budgets: false,
            is_private: calibrated_and_given,
            epochs: 100,
            batch_norm: true,
            reads: Reads::NONE,
            own_knobs: None,
            defaults: no_defaults,
            check: no_check,
            train,
            budget,
            load: None,
            unsound: None,
            replay: Replay::default_for(unit),
            memory: MemoryShape::TwoLayers,
            floor: None,
            control: None,
        }
    }
}

/// A method's sensitivity replay (`crate::replay`): the family of releases it recomputes on
/// neighbouring graphs, or the reason it has none (`gnnaudit replay` refuses with it, exit 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    Releases(ReplayFamily),
    Refused(&'static str),
}

/// The release families the replay knows how to recompute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayFamily {
    /// GAP's K noisy hop aggregations (and, node-level, its DP-SGD steps).
    Gap,
    /// ProGAP's stage aggregations (NAP) and, node-level, its DP-SGD steps.
    Progap,
    /// The clipped per-sample gradient sum of a DP-SGD step.
    DpMlp,
    /// SAGE-EDP's randomised-response edges.
    EdgeRand,
    /// DP-GNN's clipped gradient sums over a degree-bounded graph.
    Dpgnn,
    /// Class- or subclass-level DP-SGD's clipped unit gradients.
    UnitDp,
    /// DPAR's Gaussian DP-APPR rows (L2-clipped APPR vectors).
    DparGaussianRows,
    /// DPAR's exponential-mechanism DP-APPR scores (entry-clipped APPR vectors).
    DparExponentialRows,
    /// DPAR's DP-SGD step over the post-processed rows.
    DparSgd,
    /// Graph PATE's teacher vote histograms.
    PateVotes,
}

/// A method's refusal when its entry names no replay.
pub const NOT_PRIVATE: &str = "it is not private and declares no sensitivity to replay";
pub const LOCAL_DP: &str = "it is local DP (randomised reports of each node's own features or labels): each \
     report is bounded by construction and there is no sensitivity-calibrated release to replay; audit its \
     mechanisms with the mechanism audit instead";
pub const NO_REPLAY_WRITTEN: &str = "no sensitivity replay is written for its releases";

impl Replay {
    /// The refusal a method's unit implies when its entry names no replay.
    pub const fn default_for(unit: PrivacyUnit) -> Replay {
        match unit {
            PrivacyUnit::None => Replay::Refused(NOT_PRIVATE),
            PrivacyUnit::Local => Replay::Refused(LOCAL_DP),
            _ => Replay::Refused(NO_REPLAY_WRITTEN),
        }
    }
}

/// What a run holds besides the input -> hidden -> classes weights, for the memory bound checked
/// before training.
#[derive(Debug, Clone, Copy)]
pub enum MemoryShape {
    /// Nothing more.
    TwoLayers,
    /// An MLP's hidden -> hidden layers (its depth, read from the recipe, less 2).
    Mlp(fn(&Recipe) -> Result<usize>),
    /// One cached aggregation per hop (`hops`).
    HopCache,
    /// One cached aggregation per stage (`depth`).
    StageCache,
}

/// The kernels of a method the benchmark's floor times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorPlan {
    Mlp,
    Gap,
    Progap,
    /// Full-graph GraphSAGE epochs (a run at eps = inf only: at a finite epsilon it trains on a
    /// randomised graph of unknown size).
    Sage,
}

/// Private when the method calibrates noise to `--epsilon` and the recipe gives one.
pub fn calibrated_and_given(r: &Recipe) -> bool {
    r.method.takes_epsilon() && r.epsilon.is_some()
}

/// No extra checks.
pub fn no_check(_: &Recipe) -> Result<()> {
    Ok(())
}

/// No extra defaults.
pub fn no_defaults(_: &mut Recipe) {}
