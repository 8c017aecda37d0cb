//! Runs a cell's attacks against its trained target through the attacks crate's threat-model
//! interface (black-box posteriors and a shadow oracle that retrains the target's recipe), and
//! turns each result into the report's `AttackRecord`.
use super::cell::CellSpec;
use super::config::{AttackSpec, Params};
use super::progress::{Progress, Stage};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::methods::{Recipe, TrainedRun};
use crate::privacy::mechanisms::audit::MIN_TRIALS;
use crate::privacy::mechanisms::spec::MechanismSpec;
use crate::report::record::{thin_roc, AttackRecord, ControlRecord, TprAtFpr, ROC_POINTS};
use crate::target::{attack_graph, claim_of, from_attack, node_split, CpuWhiteBox, ModelBlackBox, RecipeOracle};
use gnnaudit_attacks as attacks;
use gnnaudit_attacks::stats::Verdict;
use gnnaudit_attacks::{
    run_attack, AdversaryKnowledge, AttackGraph, AttackKind, AttackParams, AttackResult, BlackBox, NodeSplit,
    ShadowOracle, StatedKnowledge, Target,
};

/// A config table as the attacks crate's registry reads it (JSON values).
pub fn json_table(t: &Params) -> serde_json::Map<String, serde_json::Value> {
    t.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null))).collect()
}

/// The adversary knowledge and parameters of one attack entry, parsed by the attacks crate's
/// registry (the same parser as `gnnaudit attack`); errors are (key path, message).
pub fn attack_inputs(
    kind: &str,
    knowledge: &Params,
    params: &Params,
) -> std::result::Result<(AttackKind, AdversaryKnowledge, AttackParams), (String, String)> {
    let k = AttackKind::parse(kind).ok_or_else(|| {
        ("kind".to_string(), format!("unknown attack '{kind}' (known: {})", AttackKind::NAMES.join(", ")))
    })?;
    if k.default_config().requires().carved_attribute {
        return Err((
            "kind".to_string(),
            format!(
                "{kind} needs the sensitive attribute removed from the target's features before training, which an \
                 audit cell shared with other attacks cannot do; run `gnnaudit attack --attack {kind}` instead"
            ),
        ));
    }
    let know =
        StatedKnowledge::from_table(&json_table(knowledge)).map_err(|(key, m)| (format!("knowledge.{key}"), m))?;
    let p = AttackParams::from_table(kind, &json_table(params)).map_err(|(key, m)| (format!("params.{key}"), m))?;
    // Knowledge the attack cannot use is refused now (e.g. a shadow graph size without a shadow model).
    p.attack.clone().apply_knowledge(&know).map_err(|e| match e {
        attacks::Error::Invalid { field, message } => (format!("knowledge.{field}"), message),
        e => ("knowledge".to_string(), e.to_string()),
    })?;
    Ok((k, know, p))
}

/// [`attack_inputs`] of an attack entry of a cell run with `runs` seeds, errors naming the entry,
/// and its confidence split over the seeds: the summary takes the largest eps_lb over them, and
/// Bonferroni keeps that maximum a bound at the configured confidence.
pub(super) fn cell_attack_inputs(
    a: &AttackSpec,
    runs: usize,
) -> Result<(AttackKind, AdversaryKnowledge, AttackParams)> {
    let (kind, knowledge, mut params) = attack_inputs(&a.kind, &a.knowledge, &a.params)
        .map_err(|(k, m)| Error::invalid(format!("attack {}.{k}", a.label()), m))?;
    let confidence = params.confidence.unwrap_or(0.95);
    params.confidence = Some(1.0 - (1.0 - confidence) / runs.max(1) as f64);
    Ok((kind, knowledge, params))
}

/// Judges an inconclusive row by the bound the same attack reached on the target's positive
/// control `method`, and returns the control's record for the row.
pub(super) fn judge_by_control(
    result: &mut AttackResult,
    method: String,
    control_eps_lb: Option<f64>,
) -> ControlRecord {
    result.judge_with_control(control_eps_lb);
    ControlRecord { method, eps_lb: control_eps_lb, caught: result.verdict == Verdict::NotRefuted }
}

/// The mechanism audit of an attack entry of kind `mechanism` (no adversary knowledge; `params`
/// are the fields of `MechanismSpec`, checked by building the mechanism). Errors are (key, message).
pub fn mechanism_inputs(knowledge: &Params, params: &Params) -> std::result::Result<MechanismSpec, (String, String)> {
    if let Some(k) = knowledge.keys().next() {
        return Err((format!("knowledge.{k}"), "a mechanism audit takes no adversary knowledge".into()));
    }
    let value = serde_json::to_value(params).map_err(|e| ("params".to_string(), e.to_string()))?;
    let spec: MechanismSpec = serde_json::from_value(value).map_err(|e| ("params".to_string(), e.to_string()))?;
    let key = |field: &str| format!("params.{}", field.trim_start_matches("--").replace('-', "_"));
    if spec.trials() < MIN_TRIALS {
        return Err((key("trials"), format!("must be at least {MIN_TRIALS}, got {}", spec.trials())));
    }
    let c = spec.confidence();
    if !(c > 0.0 && c < 1.0) {
        return Err((key("confidence"), format!("must be in (0, 1), got {c}")));
    }
    spec.build().map_err(|e| match e {
        Error::InvalidParam { field, message } => (key(&field), message),
        e => ("params".to_string(), e.to_string()),
    })?;
    Ok(spec)
}

/// Runs a `mechanism` attack entry: independent of the cell's target (the mechanism is run on
/// its own worst-case pair), recorded with the cell.
fn mechanism_record(a: &AttackSpec, seed: u64) -> Result<AttackRecord> {
    let spec = mechanism_inputs(&a.knowledge, &a.params)
        .map_err(|(k, m)| Error::invalid(format!("attack {}.{k}", a.label()), m))?;
    let pair = spec.build()?;
    let r = crate::privacy::mechanisms::audit::run(pair.as_ref(), spec.trials(), seed, spec.confidence(), true)?;
    Ok(crate::report::tightness::record(a.label(), &r))
}

/// A shadow oracle that counts its trainings on the progress bar.
struct CountingOracle<'a> {
    inner: RecipeOracle,
    progress: &'a Progress,
}

impl ShadowOracle for CountingOracle<'_> {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> attacks::Result<Box<dyn BlackBox>> {
        self.progress.add_work(Stage::ShadowTraining, 1);
        let out = self.inner.train(graph, split, seed);
        self.progress.done(Stage::ShadowTraining);
        out
    }
    fn train_with_gradient_canaries(
        &self,
        graph: &AttackGraph,
        split: &NodeSplit,
        plan: &attacks::GradientCanaryPlan,
        seed: u64,
    ) -> attacks::Result<attacks::GradientCanaryReadings> {
        self.progress.add_work(Stage::ShadowTraining, 1);
        let out = self.inner.train_with_gradient_canaries(graph, split, plan, seed);
        self.progress.done(Stage::ShadowTraining);
        out
    }
}

/// Every attack of the cell, in config order, against the cell's target.
pub fn run_attacks(
    cell: &CellSpec,
    recipe: &Recipe,
    ds: &Dataset,
    run: &TrainedRun,
    progress: &Progress,
) -> Result<Vec<AttackRecord>> {
    if cell.attacks.is_empty() {
        return Ok(vec![]);
    }
    let graph = attack_graph(ds)?;
    let split = node_split(ds.split()?);
    with_target(recipe, run, ds, (&graph, &split), claim_of(&run.budget), progress, |target| {
        attack_all(cell, recipe, ds, run, (&graph, &split), target, progress)
    })
}

/// The loop of [`run_attacks`] over one built target (and its control, on the same graph).
fn attack_all(
    cell: &CellSpec,
    recipe: &Recipe,
    ds: &Dataset,
    run: &TrainedRun,
    (graph, split): (&AttackGraph, &NodeSplit),
    target: &Target,
    progress: &Progress,
) -> Result<Vec<AttackRecord>> {
    let mut control = PositiveControl::of(recipe)?;
    let mut out = vec![];
    for (i, a) in cell.attacks.iter().enumerate() {
        let seed = cell.key.seed.wrapping_mul(1_000_003).wrapping_add(i as u64 + 1);
        if a.kind == crate::report::tightness::KIND {
            progress.set_message(Stage::Attack, format!("{} (mechanism audit)", a.label()));
            out.push(mechanism_record(a, seed)?);
            progress.done(Stage::Attack);
            continue;
        }
        if a.kind == crate::replay::KIND {
            progress.set_message(Stage::Attack, format!("{} on {}", a.label(), cell.key));
            let mut r = super::replay::record(a, recipe, ds, cell.key.seed)?;
            if r.verdict.as_deref() == Some("not refuted") {
                r.control = match &control {
                    Some(c) => {
                        let on_control = super::replay::record(a, &c.recipe, ds, cell.key.seed)?;
                        let caught = on_control.verdict.as_deref() == Some("violated");
                        Some(ControlRecord { method: c.recipe.method.name().into(), eps_lb: None, caught })
                    }
                    None => None,
                };
                if !r.control.as_ref().is_some_and(|c| c.caught) {
                    r.verdict = Some(Verdict::Inconclusive.name().into());
                }
            }
            out.push(r);
            progress.done(Stage::Attack);
            continue;
        }
        let (kind, knowledge, params) = cell_attack_inputs(a, cell.runs)?;
        progress.set_message(Stage::Attack, format!("{} on {}", a.label(), cell.key));
        // The one-feature game is compared with the per-feature claim (PGC: eps per feature).
        let own = Target { claim: super::feature_claim::claim_for(kind, &run.budget)?, ..*target };
        let mut result = run_attack(&own, &knowledge, &params, seed).map_err(from_attack)?;
        let mut control_record = None;
        if let (Verdict::Inconclusive, attacks::AttackConfig::CanaryGradient(g)) = (result.verdict, &params.attack) {
            // Gradient canaries need DP-SGD in the training, which the registered controls (the
            // methods without their noise or privacy) do not run: this audit's control is the
            // same training with DP-SGD's noise left out, scored by the same statistic.
            let name = format!("{} without DP-SGD noise", recipe.method.name());
            progress.set_message(Stage::Attack, format!("{} on the control {name}", a.label()));
            let on_noise_off = AttackParams {
                attack: attacks::AttackConfig::CanaryGradient(g.on_positive_control()),
                ..params.clone()
            };
            let on_control = run_attack(&own, &knowledge, &on_noise_off, seed).map_err(from_attack)?;
            control_record = Some(judge_by_control(&mut result, name, on_control.eps_lb));
        } else if let (Verdict::Inconclusive, Some(c)) = (result.verdict, control.as_mut()) {
            // The same attack, seed and settings on the control, judged against this claim.
            progress.set_message(Stage::Attack, format!("{} on the control {}", a.label(), c.recipe.method.name()));
            let on_control =
                c.attack(ds, (graph, split), cell.key.seed, own.claim, &knowledge, &params, seed, progress)?;
            control_record = Some(judge_by_control(&mut result, c.recipe.method.name().into(), on_control.eps_lb));
        }
        let mut r = record(a, &result);
        r.control = control_record;
        out.push(r);
        progress.done(Stage::Attack);
    }
    Ok(out)
}

/// The positive control of a cell's target (its method with the noise switched off, or its
/// non-private variant; see `MethodSpec::control`), trained on the cell's dataset and seed the
/// first time an attack needs it.
struct PositiveControl {
    recipe: Recipe,
    run: Option<TrainedRun>,
}

impl PositiveControl {
    fn of(target: &Recipe) -> Result<Option<Self>> {
        if !target.is_private() {
            return Ok(None);
        }
        Ok(crate::methods::registry::control_recipe(target)?.map(|recipe| PositiveControl { recipe, run: None }))
    }

    /// Runs one attack on the control, with the target's claim and the target's attack seed.
    #[allow(clippy::too_many_arguments)]
    fn attack(
        &mut self,
        ds: &Dataset,
        on: (&AttackGraph, &NodeSplit),
        train_seed: u64,
        claim: attacks::Claim,
        knowledge: &AdversaryKnowledge,
        params: &AttackParams,
        seed: u64,
        progress: &Progress,
    ) -> Result<AttackResult> {
        if self.run.is_none() {
            progress.add_work(Stage::Training, 1);
            progress.set_message(Stage::Training, format!("control {}", self.recipe.method.name()));
            self.run = Some(crate::methods::train_with(&self.recipe, ds, train_seed, &Default::default())?);
            progress.done(Stage::Training);
        }
        let run = self.run.as_ref().expect("trained above");
        with_target(&self.recipe, run, ds, on, claim, progress, |target| {
            run_attack(target, knowledge, params, seed).map_err(from_attack)
        })
    }
}

/// What the attacks may see of a trained run on `graph`: its posteriors, its white box (on the
/// CPU) and shadow training with its recipe, judged against `claim`.
fn with_target<R>(
    recipe: &Recipe,
    run: &TrainedRun,
    ds: &Dataset,
    (graph, split): (&AttackGraph, &NodeSplit),
    claim: attacks::Claim,
    progress: &Progress,
    f: impl FnOnce(&Target) -> Result<R>,
) -> Result<R> {
    let black_box = ModelBlackBox::new(run.model.as_ref());
    let oracle = CountingOracle { inner: RecipeOracle::new(recipe, &run.budget, &ds.name), progress };
    let white_box = CpuWhiteBox::of(run.model.white_box());
    f(&Target {
        graph,
        split,
        black_box: &black_box,
        white_box: CpuWhiteBox::as_dyn(&white_box),
        oracle: Some(&oracle),
        claim,
    })
}

/// The report's view of an attack result.
pub fn record(a: &AttackSpec, r: &AttackResult) -> AttackRecord {
    let s = &r.summary;
    let roc: Vec<(f64, f64)> = s.roc.iter().map(|p| (p.fpr, p.tpr)).collect();
    let mut details = r.details.clone();
    details.insert("knowledge".into(), serde_json::to_value(&r.knowledge).unwrap_or_default());
    details.insert("positives".into(), s.num_positives.into());
    details.insert("negatives".into(), s.num_negatives.into());
    details.insert("eps_lb_confidence".into(), r.eps_lb_confidence.into());
    if let Some(c) = &r.certificate {
        details.insert("certificate".into(), serde_json::to_value(c).unwrap_or_default());
    }
    if let Some(t) = r.tightness {
        details.insert("tightness".into(), t.into());
    }
    if let Some(n) = &r.note {
        details.insert("note".into(), n.clone().into());
    }
    AttackRecord {
        attack: a.label(),
        kind: a.kind.clone(),
        game: r.game.statement.clone(),
        auc: s.auc,
        tpr_at_fpr: TprAtFpr { fpr_0_1pct: s.tpr_at_fpr.at_0_001, fpr_1pct: s.tpr_at_fpr.at_0_01 },
        balanced_accuracy: s.balanced_accuracy,
        eps_lb: r.eps_lb,
        verdict: Some(r.verdict.name().to_string()),
        violation: r.violation,
        control: None,
        roc: thin_roc(&roc, ROC_POINTS),
        details: serde_json::Value::Object(details),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_selects_the_attack_classifier() {
        use attacks::AttackConfig;
        let params: Params = toml::from_str(r#"model = "random-forest""#).unwrap();
        let (_, _, p) = attack_inputs("mia", &Params::new(), &params).unwrap();
        assert!(matches!(p.attack, AttackConfig::Mia(m) if m.model == attacks::classifier::AttackModel::RandomForest));
        let params: Params = toml::from_str(r#"model = "knn""#).unwrap();
        let (_, _, p) = attack_inputs("link-stealing", &Params::new(), &params).unwrap();
        assert!(matches!(p.attack, AttackConfig::LinkStealing(l) if l.model == attacks::classifier::AttackModel::Knn));
        let params: Params = toml::from_str(r#"model = "svm""#).unwrap();
        let (key, _) = attack_inputs("mia", &Params::new(), &params).unwrap_err();
        assert_eq!(key, "params.model");
    }

    /// A shadow graph size is knowledge about a shadow model: refused for the reference set-up
    /// (which trains none), taken by the shadow set-up.
    #[test]
    fn shadow_knowledge_needs_the_shadow_set_up() {
        let knowledge: Params = toml::from_str("shadow_nodes_per_class = 100").unwrap();
        let (key, m) = attack_inputs("mia", &knowledge, &Params::new()).unwrap_err();
        assert_eq!(key, "knowledge.shadow_nodes_per_class", "{m}");
        let shadow: Params = toml::from_str(r#"source = "independent""#).unwrap();
        assert!(attack_inputs("mia", &knowledge, &shadow).is_ok());
    }
}
