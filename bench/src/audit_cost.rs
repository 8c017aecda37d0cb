//! `gnnaudit-bench audit`: audit throughput. LiRA with 64 shadow models on
//! cora, and the canary-edge audit with 40 repeats, each as `gnnaudit attack` runs it (same
//! seeds, same split, same results), with their total and per-model cost.
//!
//! Every model goes through the attacks' shadow oracle, timed here. Shadows that train on one
//! graph share its dataset (`RecipeOracle`: CSR, feature copy, validation); `--before` runs LiRA
//! a second time with that sharing off and checks that the scores are identical. What a shadow
//! cannot share under the threat model: GAP's and ProGAP's cached aggregations are of embeddings
//! from an encoder trained on the shadow's own labels, so each shadow computes its own.
use gnnaudit::data::{self, Split, SplitRatios};
use gnnaudit::error::{Error, Result};
use gnnaudit::methods::{self, Method, Recipe};
use gnnaudit::target::{attack_graph, from_attack, node_split, RecipeOracle};
use gnnaudit::target::{claim_of, dataset_from, CpuWhiteBox, ModelBlackBox};
use gnnaudit_attacks::lira::LiraParams;
use gnnaudit_attacks::stats::{certify, AuditSpec};
use gnnaudit_attacks::{
    run_attack, AdversaryKnowledge, AttackConfig, AttackGraph, AttackParams, AttackResult, BlackBox, NodeSplit,
    ShadowOracle, Target,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;
use std::time::Instant;

#[derive(Debug, clap::Args)]
pub struct BenchAuditArgs {
    #[arg(long, default_value = "cora")]
    pub dataset: String,
    #[arg(long)]
    pub data_dir: Option<std::path::PathBuf>,
    /// LiRA's target method (non-private by default: the leaky case LiRA is measured on).
    #[arg(long, value_enum, default_value = "gap-inf")]
    pub lira_method: Method,
    #[arg(long, default_value_t = 64)]
    pub shadows: usize,
    /// The canary audit's target method and epsilon.
    #[arg(long, value_enum, default_value = "gap-edp")]
    pub canary_method: Method,
    #[arg(long, default_value_t = 4.0)]
    pub epsilon: f64,
    /// Canary-edge audit runs (seeds seed..seed+repeats-1, as `attack --repeats`).
    #[arg(long, default_value_t = 40)]
    pub repeats: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub threads: i32,
    /// Also run LiRA without shadow sharing (the cost before it) and check the scores agree.
    #[arg(long)]
    pub before: bool,
    /// Skip LiRA or the canary audit.
    #[arg(long, value_parser = ["lira", "canary"])]
    pub skip: Option<String>,
}

/// Wall time of every model an attack trains through its oracle.
struct Timed<'a> {
    inner: &'a dyn ShadowOracle,
    seconds: RefCell<Vec<f64>>,
}

impl ShadowOracle for Timed<'_> {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> gnnaudit_attacks::Result<Box<dyn BlackBox>> {
        let t = Instant::now();
        let out = self.inner.train(graph, split, seed);
        self.seconds.borrow_mut().push(t.elapsed().as_secs_f64());
        out
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// One target trained as `gnnaudit attack` trains it, and the attack run on it.
struct Run {
    result: AttackResult,
    target_seconds: f64,
    prep_seconds: f64,
    models: Vec<f64>,
    delta: f64,
}

#[allow(clippy::too_many_arguments)]
fn attack_once(raw: &data::Dataset, recipe: &Recipe, params: &AttackParams, seed: u64, share: bool) -> Result<Run> {
    let t = Instant::now();
    let mut ds = data::transforms::prepare_like_gap(raw, 1, SplitRatios::default(), seed)?;
    if params.kind().game() == gnnaudit_attacks::GameUnit::NodeMembership {
        // The membership game's class-balanced split, as `gnnaudit attack` draws it.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (_, s) =
            gnnaudit_attacks::membership_split(&ds.labels, ds.num_classes, None, &mut rng).map_err(from_attack)?;
        ds.split = Some(Split { train: s.train, val: s.val, test: s.test });
    }
    let prep_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let run = methods::train(recipe, &ds, seed)?;
    gnnaudit::target::ensure_converged(&run, recipe)?;
    let target_seconds = t.elapsed().as_secs_f64();
    let bb = ModelBlackBox::new(run.model.as_ref());
    let g = attack_graph(&ds)?;
    let split = node_split(ds.split()?);
    let oracle = RecipeOracle::new(recipe, &run.budget, &ds.name);
    let oracle = if share { oracle } else { oracle.unshared() };
    let timed = Timed { inner: &oracle, seconds: RefCell::new(Vec::new()) };
    let claim = claim_of(&run.budget);
    let white_box = CpuWhiteBox::of(run.model.white_box());
    let target = Target {
        graph: &g,
        split: &split,
        black_box: &bb,
        white_box: CpuWhiteBox::as_dyn(&white_box),
        oracle: Some(&timed),
        claim,
    };
    let result = run_attack(&target, &AdversaryKnowledge::default(), params, seed).map_err(from_attack)?;
    Ok(Run { result, target_seconds, prep_seconds, models: timed.seconds.take(), delta: claim.delta })
}

/// The part of one shadow's cost that sharing removes, timed alone on this graph.
fn dataset_build_seconds(raw: &data::Dataset, seed: u64) -> Result<f64> {
    let ds = data::transforms::prepare_like_gap(raw, 1, SplitRatios::default(), seed)?;
    let g = attack_graph(&ds)?;
    let split = node_split(ds.split()?);
    let t = Instant::now();
    let reps = 5;
    for _ in 0..reps {
        dataset_from(&g, &split, &ds.name)?;
    }
    Ok(t.elapsed().as_secs_f64() / reps as f64)
}

fn lira(a: &BenchAuditArgs, raw: &data::Dataset) -> Result<()> {
    let recipe = Recipe::new(a.lira_method, None);
    recipe.validate()?;
    let params = AttackParams::new(AttackConfig::Lira(LiraParams { shadows: a.shadows, ..Default::default() }));
    let t = Instant::now();
    let run = attack_once(raw, &recipe, &params, a.seed, true)?;
    let total = t.elapsed().as_secs_f64();
    let r = &run.result.summary;
    println!(
        "LiRA, {} shadows, {} on {}: AUC {:.2}%, TPR@1%FPR {:.2}% (as `gnnaudit attack --attack lira --shadows {} \
         --method {} --dataset {} --seed {}`)",
        a.shadows,
        a.lira_method.name(),
        a.dataset,
        100.0 * r.auc,
        100.0 * r.tpr_at_fpr.at_0_01,
        a.shadows,
        a.lira_method.name(),
        a.dataset,
        a.seed
    );
    let per = mean(&run.models);
    println!(
        "  total {total:.1} s: preprocessing {:.2} s, target {:.2} s, {} shadows {:.1} s ({per:.3} s per shadow)",
        run.prep_seconds,
        run.target_seconds,
        run.models.len(),
        run.models.iter().sum::<f64>()
    );
    if a.before {
        let t = Instant::now();
        let old = attack_once(raw, &recipe, &params, a.seed, false)?;
        let total_old = t.elapsed().as_secs_f64();
        let before = mean(&old.models);
        let same = old.result.scores == run.result.scores;
        println!(
            "  before sharing: total {total_old:.1} s, {before:.3} s per shadow; shared: {per:.3} s per shadow \
             ({:+.1}%); the dataset build it shares takes {:.4} s alone; scores identical: {same}",
            100.0 * (per - before) / before,
            dataset_build_seconds(raw, a.seed)?
        );
        gnnaudit::ensure!(same, Error::Other("LiRA's scores changed with shadow sharing".into()));
    }
    Ok(())
}

fn canary(a: &BenchAuditArgs, raw: &data::Dataset) -> Result<()> {
    let recipe = Recipe::new(a.canary_method, Some(a.epsilon));
    recipe.validate()?;
    let canary = gnnaudit_attacks::canary::CanaryParams::default();
    let params = AttackParams::new(AttackConfig::CanaryEdge(canary));
    let t = Instant::now();
    let mut runs = Vec::new();
    for r in 0..a.repeats {
        runs.push(attack_once(raw, &recipe, &params, a.seed + r as u64, true)?);
    }
    let total = t.elapsed().as_secs_f64();
    // One test over all runs' canaries pooled, as `gnnaudit attack --repeats` certifies.
    let first = &runs[0].result;
    let pos: Vec<f64> = runs.iter().flat_map(|r| r.result.scores.0.iter().copied()).collect();
    let neg: Vec<f64> = runs.iter().flat_map(|r| r.result.scores.1.iter().copied()).collect();
    let eps_lb = match &first.certificate {
        Some(c) => {
            let spec = AuditSpec {
                bound: params.bound,
                strategy: params.strategy,
                confidence: first.eps_lb_confidence,
                delta: runs[0].delta,
                seed: a.seed,
            };
            format!("{:.3}", certify(&pos, &neg, &spec, &c.assumption).map_err(from_attack)?.eps_lb)
        }
        None => "n/a (the game does not match the claim)".into(),
    };
    let models: Vec<f64> = runs.iter().flat_map(|r| r.models.iter().copied()).collect();
    let targets: Vec<f64> = runs.iter().map(|r| r.target_seconds).collect();
    println!(
        "canary-edge audit, {} repeats x {} canaries, {} eps {} on {}: pooled eps_lb {eps_lb} (as `gnnaudit attack \
         --attack canary-edge --repeats {} --method {} --epsilon {} --dataset {} --seed {}`)",
        a.repeats,
        canary.canaries,
        a.canary_method.name(),
        a.epsilon,
        a.dataset,
        a.repeats,
        a.canary_method.name(),
        a.epsilon,
        a.dataset,
        a.seed
    );
    println!(
        "  total {total:.1} s: preprocessing {:.3} s, target {:.3} s and canary model {:.3} s per repeat ({} models, \
         {:.3} s per model)",
        mean(&runs.iter().map(|r| r.prep_seconds).collect::<Vec<_>>()),
        mean(&targets),
        mean(&models),
        targets.len() + models.len(),
        (targets.iter().sum::<f64>() + models.iter().sum::<f64>()) / (targets.len() + models.len()) as f64
    );
    Ok(())
}

pub fn run(a: BenchAuditArgs) -> Result<()> {
    gnnaudit::ensure!(
        a.shadows >= 2 && a.shadows.is_multiple_of(2),
        Error::invalid("shadows", "must be even and at least 2")
    );
    gnnaudit::ensure!(a.repeats >= 1, Error::invalid("repeats", "must be at least 1"));
    gnnaudit::cli::train::set_threads(Some(a.threads))?;
    let raw = data::load_dataset(&a.dataset, a.data_dir.as_deref())?;
    println!(
        "bench audit: {} torch thread(s), one process, models timed through the attacks' shadow oracle",
        a.threads
    );
    if a.skip.as_deref() != Some("lira") {
        lira(&a, &raw)?;
    }
    if a.skip.as_deref() != Some("canary") {
        canary(&a, &raw)?;
    }
    Ok(())
}
