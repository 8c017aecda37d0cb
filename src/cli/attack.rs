//! `gnnaudit attack`: train a target (and, as the threat model allows, shadow models) with any
//! trainable method, run one attack over several seeds, and report its success next to the
//! claimed epsilon.
use crate::audit::adapters::{attack_graph, carve_attribute, from_attack, node_split, ModelBlackBox, RecipeOracle};
use crate::cli::train::RecipeArgs;
use crate::data::{self, Split, SplitRatios};
use crate::error::{Error, Result};
use crate::train;
use clap::Args;
use gnnaudit_attacks::classifier::AttackModel;
use gnnaudit_attacks::membership::{MembershipMetric, ShadowSource};
use gnnaudit_attacks::stats::{certify, AuditSpec, BoundKind, ThresholdStrategy, Verdict};
use gnnaudit_attacks::{run_attack, AdversaryKnowledge, AttackKind, AttackParams, AttackResult, Target};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct AttackArgs {
    /// Dataset name (in the data directory), path, or `synthetic`.
    #[arg(long, default_value = "synthetic")]
    pub dataset: String,
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Drop classes with fewer nodes (the Facebook100 anchors use 1000).
    #[arg(long, default_value_t = 1)]
    pub min_class_count: usize,
    /// mia | mia-metric | lira | link-stealing | canary-edge | canary-node | canary-ldp |
    /// canary-ldp-features | canary-ldp-feature (pgc, rgnn: the claim is per feature) |
    /// canary-aggregation (white box: GAP/ProGAP's released aggregations) | canary-subclass
    /// (class/subclass-level DP) | inversion | graph-reconstruction | attribute | degree-inference (dpar-* targets: training-node degree
    /// regression, RMSE vs the mean predictor)
    #[arg(long, value_parser = parse_attack)]
    pub attack: AttackKind,
    /// LiRA shadow models.
    #[arg(long, default_value_t = 16)]
    pub shadows: usize,
    /// Runs with seeds seed, seed+1, ... (new split, target, shadows and attack each; with
    /// --target: the one saved model, attacked with attack seeds seed, seed+1, ...).
    #[arg(long, default_value_t = 1)]
    pub repeats: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long)]
    pub threads: Option<i32>,
    /// Torch device: cpu | cuda | cuda:N | auto (CUDA device 0 if any, else cpu).
    #[arg(long, default_value = "cpu", value_parser = crate::device::parse_device)]
    pub device: crate::device::DeviceSpec,
    /// Membership attacks: K nodes per class in the target's split (0.4K train, 0.2K val, 0.4K test)
    /// and in the shadow graph (default min(1000, smallest class), thesis ch.4 Sec. 4.8.2).
    #[arg(long)]
    pub nodes_per_class: Option<usize>,
    /// Membership attacks: `reference` (default: GAP's attack code, test_on_target=False, the set-up
    /// of the reference anchors: the attack trains on 70% of the target's own sampled members and
    /// non-members and is tested on the other 30%) or `shadow` (an independent shadow model on a
    /// shadow graph, thesis ch.4 Sec. 4.8.2; a weaker adversary, e.g. Cora GAP-inf 64 vs 79 AUC).
    #[arg(long, default_value = "reference")]
    pub mia_setup: String,
    /// mia and link-stealing: the attack classifier, mlp (default) | logistic | random-forest | knn.
    #[arg(long, default_value = "mlp", value_parser = parse_attack_model)]
    pub attack_model: AttackModel,
    /// mia-metric: confidence | entropy | modified-entropy.
    #[arg(long, default_value = "modified-entropy")]
    pub metric: String,
    /// LiRA: offline (OUT-only) score instead of online.
    #[arg(long)]
    pub offline: bool,
    /// LiRA: one global variance (default; Carlini et al.'s choice below 64 shadows) or, with
    /// `--global-variance false`, per-node variances.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub global_variance: bool,
    /// LiRA: rank-calibrate every model's confidences over the candidates (default), or not with
    /// `--rank-calibration false` (then an early-stopped target can fool the likelihood ratio).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub rank_calibration: bool,
    /// canary-edge / canary-node / canary-ldp: canaries per run [200]; canary-aggregation: crafted
    /// canary edges [100000].
    #[arg(long)]
    pub canaries: Option<usize>,
    /// attribute: prefix of the one-hot feature block to carve out (Facebook100: gender).
    #[arg(long, default_value = "gender")]
    pub sensitive: String,
    /// Attack released embeddings instead of posteriors (link stealing, attribute, canary-edge).
    #[arg(long)]
    pub use_embeddings: bool,
    /// Attack a model saved by `gnnaudit train --save DIR` instead of training one; pass the same
    /// --dataset and --min-class-count (checked against the checkpoint, which also supplies the
    /// split seed and training seed). Its recipe (from the checkpoint) drives the shadow models.
    #[arg(long)]
    pub target: Option<PathBuf>,
    /// The bound behind eps_lb: clopper-pearson (default, any mechanism) | gdp (Gaussian
    /// trade-off curve) | one-run | one-run-fdp.
    #[arg(long, default_value = "clopper-pearson", value_parser = parse_bound)]
    pub bound: BoundKind,
    /// How the bound's threshold is chosen: split (default; chosen on half the trials, certified
    /// on the rest), split:F, bonferroni (every threshold, corrected), explicit:T (fixed in advance).
    #[arg(long, default_value = "split", value_parser = parse_strategy)]
    pub threshold_strategy: ThresholdStrategy,
    /// Confidence of the bound, in (0.5, 1).
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub recipe: RecipeArgs,
    #[command(flatten)]
    pub external: ExternalArgs,
}

/// A deployment gnnaudit did not train, in place of --method (README: "Audit a model you
/// trained in PyTorch"). The dataset (--dataset) must be the graph it was trained on, node ids
/// as in that file.
#[derive(Debug, Args)]
pub struct ExternalArgs {
    /// A TorchScript export, forward(x: Tensor[N, F], edge_index: Tensor[2, E]) -> Tensor[N, C].
    #[arg(long, conflicts_with_all = ["command", "posteriors", "method", "target"])]
    pub torchscript: Option<PathBuf>,
    /// The training pipeline as a command template with {graph} and {out} (and optionally {seed}),
    /// e.g. 'python train.py --graph {graph} --out {out}'.
    #[arg(long, conflicts_with_all = ["posteriors", "method", "target"])]
    pub command: Option<String>,
    /// Released posteriors: .npy [N, C] (row = node id), or CSV/Parquet with a node column.
    #[arg(long, conflicts_with_all = ["method", "target"])]
    pub posteriors: Option<PathBuf>,
    /// Ids of the nodes the deployment trained on: .npy, CSV/Parquet, or text (one per line).
    #[arg(long)]
    pub members: Option<PathBuf>,
    /// What the TorchScript module returns.
    #[arg(long, value_enum, default_value = "logits")]
    pub output: crate::external::OutputKind,
    /// An untrained export of the same module, the start of shadow copies (default: the export,
    /// re-initialised Glorot-uniform).
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Shadow copies' optimiser (with --epochs and --lr; defaults 100 and 0.01).
    #[arg(long, value_enum, default_value = "adam")]
    pub optimizer: crate::external::spec::Optimizer,
    #[arg(long, default_value_t = 0.0)]
    pub weight_decay: f64,
    /// Seconds one run of --command may take.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
    /// Keep --command's graphs, outputs and logs here (finished runs are reused).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// A TOML file with a [claim] table: the deployment's mechanism, knobs and stated (eps, delta).
    #[arg(long)]
    pub claim: Option<PathBuf>,
}

impl ExternalArgs {
    fn target(&self, recipe: &RecipeArgs) -> Option<crate::external::TargetSpec> {
        use crate::external::TargetSpec;
        let members = self.members.clone();
        if let Some(model) = &self.torchscript {
            let d = crate::external::ShadowRecipe::default();
            let training = crate::external::ShadowRecipe {
                epochs: recipe.epochs.unwrap_or(d.epochs),
                lr: recipe.lr.unwrap_or(d.lr),
                optimizer: self.optimizer,
                weight_decay: self.weight_decay,
            };
            return Some(TargetSpec::Torchscript {
                model: model.clone(),
                output: self.output,
                init: self.init.clone(),
                members,
                training,
            });
        }
        if let Some(command) = &self.command {
            return Some(TargetSpec::Command {
                command: command.clone(),
                members,
                timeout: self.timeout,
                work_dir: self.work_dir.clone(),
            });
        }
        self.posteriors.as_ref().map(|p| TargetSpec::Posteriors { posteriors: p.clone(), members })
    }
}

/// `gnnaudit attack` against a deployment gnnaudit did not train.
fn run_external(a: &AttackArgs, target: crate::external::TargetSpec) -> Result<()> {
    use crate::external::run as ext;
    let claim = a.external.claim.as_deref().map(crate::external::DeclaredClaim::from_file).transpose()?;
    if let Some(t) = a.threads {
        crate::ensure!(t >= 1, Error::invalid("threads", "must be at least 1"));
        tch::set_num_threads(t);
    }
    let x = ext::ExternalAttack {
        target,
        claim,
        dataset: a.dataset.clone(),
        data_dir: a.data_dir.clone(),
        attack: a.attack,
        params: params_of(a)?,
        knowledge: gnnaudit_attacks::AdversaryKnowledge::default(),
        repeats: a.repeats,
        seed: a.seed,
    };
    let start = std::time::Instant::now();
    let outcome = ext::run(&x)?;
    let seconds = start.elapsed().as_secs_f64();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&ext::to_json(&x, &outcome, seconds))?);
    } else {
        ext::print(&x, &outcome, seconds);
    }
    Ok(())
}

fn parse_attack(s: &str) -> std::result::Result<AttackKind, String> {
    AttackKind::parse(s).ok_or_else(|| {
        let names: Vec<&str> = AttackKind::ALL.iter().map(|k| k.name()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

fn parse_attack_model(s: &str) -> std::result::Result<AttackModel, String> {
    AttackModel::parse(s).ok_or_else(|| {
        let names: Vec<&str> = AttackModel::ALL.iter().map(|m| m.name()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

fn parse_bound(s: &str) -> std::result::Result<BoundKind, String> {
    BoundKind::parse(s).ok_or_else(|| "expected one of clopper-pearson, gdp, one-run, one-run-fdp".to_string())
}

fn parse_strategy(s: &str) -> std::result::Result<ThresholdStrategy, String> {
    ThresholdStrategy::parse(s).ok_or_else(|| "expected split, split:F, bonferroni or explicit:T".to_string())
}

fn params_of(a: &AttackArgs) -> Result<AttackParams> {
    let mut p = AttackParams::default();
    p.mia.source = match a.mia_setup.as_str() {
        "shadow" => ShadowSource::Independent,
        "reference" => ShadowSource::TargetSplit,
        other => return Err(Error::invalid("mia-setup", format!("'{other}' is neither 'shadow' nor 'reference'"))),
    };
    p.mia.shadow_per_class = a.nodes_per_class;
    p.mia.model = a.attack_model;
    p.link.model = a.attack_model;
    p.bound = a.bound;
    p.strategy = a.threshold_strategy;
    crate::ensure!(
        a.confidence > 0.5 && a.confidence < 1.0,
        Error::invalid("confidence", format!("{} is outside (0.5, 1)", a.confidence))
    );
    p.confidence = Some(a.confidence);
    p.metric = Some(match a.metric.as_str() {
        "confidence" => MembershipMetric::Confidence,
        "entropy" => MembershipMetric::Entropy,
        "modified-entropy" => MembershipMetric::ModifiedEntropy,
        other => return Err(Error::invalid("metric", format!("unknown metric '{other}'"))),
    });
    p.lira.shadows = a.shadows;
    p.lira.online = !a.offline;
    p.lira.global_variance = a.global_variance;
    p.lira.rank_calibration = a.rank_calibration;
    if let Some(n) = a.canaries {
        p.canary.canaries = n;
        p.aggregation.canaries = n;
        p.subclass_canary.canaries = n;
    }
    p.canary.use_embeddings = a.use_embeddings;
    p.link.use_embeddings = a.use_embeddings;
    p.attribute.use_embeddings = a.use_embeddings;
    crate::ensure!(a.shadows >= 2 && a.shadows % 2 == 0, Error::invalid("shadows", "must be even and at least 2"));
    crate::ensure!(a.canaries.is_none_or(|n| n >= 2), Error::invalid("canaries", "must be at least 2"));
    crate::ensure!(a.repeats >= 1, Error::invalid("repeats", "must be at least 1"));
    Ok(p)
}

fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len().max(1) as f64;
    let m = xs.iter().sum::<f64>() / n;
    (m, (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt())
}

/// Train, validation and test accuracy of argmax posteriors on a split.
fn accuracy_of(post: &tch::Tensor, ds: &crate::data::Dataset) -> Result<train::Accuracy> {
    Ok(train::evaluate::Labels::from_dataset(ds)?.accuracy(post))
}

pub fn run(a: AttackArgs) -> Result<()> {
    // Before any tensor exists (a saved target loads onto it); a missing CUDA device: exit 2.
    crate::device::select_for_attacks(a.device, "attack")?;
    if let Some(target) = a.external.target(&a.recipe) {
        return run_external(&a, target);
    }
    for (flag, set) in [
        ("members", a.external.members.is_some()),
        ("claim", a.external.claim.is_some()),
        ("init", a.external.init.is_some()),
    ] {
        crate::ensure!(!set, Error::invalid(flag, "only applies to --torchscript, --command or --posteriors targets"));
    }
    let mut loaded = match &a.target {
        Some(dir) => {
            crate::ensure!(
                a.attack != AttackKind::Attribute,
                Error::invalid(
                    "target",
                    "attribute inference carves the attribute out before training; train the target here"
                )
            );
            Some(crate::methods::load_model(dir)?)
        }
        None => None,
    };
    let recipe = match &loaded {
        Some(l) => {
            if let Some(m) = a.recipe.method.filter(|m| *m != l.recipe.method) {
                return Err(Error::invalid(
                    "method",
                    format!("--method {} but the saved target was trained with {}", m.name(), l.recipe.method.name()),
                ));
            }
            l.recipe.clone()
        }
        None => a.recipe.to_recipe()?,
    };
    recipe.validate()?;
    let params = params_of(&a)?;
    crate::cli::train::set_threads(a.threads)?;
    let seeds = crate::cli::train::seeds(a.seed, a.repeats)?;
    let start = std::time::Instant::now();
    let raw = data::load_dataset(&a.dataset, a.data_dir.as_deref())?;
    // LPGNN trains on a 50/25/25 split (as `gnnaudit train` does); the others on GAP's 75/10/15.
    // A saved target names the data it was trained on; another dataset or filter is refused.
    let provenance = match &loaded {
        Some(l) => Some(l.check_data(&raw, a.min_class_count)?.clone()),
        None => None,
    };
    let ratios = if let Some(p) = &provenance {
        p.split
    } else if matches!(recipe.method, crate::methods::Method::Lpgnn | crate::methods::Method::Rgnn) {
        SplitRatios::new(0.5, 0.25, 0.25)?
    } else {
        SplitRatios::default()
    };
    let membership = matches!(a.attack, AttackKind::Mia | AttackKind::MiaMetric | AttackKind::Lira);
    let mut results: Vec<AttackResult> = Vec::new();
    let mut utility = Vec::new();
    let mut claim = None;
    let mut sensitive_names = None;
    for r in 0..a.repeats {
        let seed = seeds[r];
        // A saved target is one model on one graph and split (the checkpoint's split seed; its
        // training seed samples a node-level degree bound); only the attack's own randomness
        // (sampling, shadows, canaries, attack model) moves with the repeat.
        let (split_seed, data_seed) = match &provenance {
            Some(p) => (p.split_seed, p.train_seed),
            None => (seed, seed),
        };
        let mut ds = data::transforms::prepare_like_gap(&raw, a.min_class_count, ratios, split_seed)?;
        let mut sensitive = None;
        if a.attack == AttackKind::Attribute {
            let (carved, values, names) = carve_attribute(&ds, &a.sensitive)?;
            ds = carved;
            sensitive = Some(values);
            sensitive_names = Some(names);
        }
        if membership && loaded.is_none() {
            // The membership game: members and non-members drawn from one class-balanced sample.
            let counts = ds.class_counts();
            let smallest = counts.iter().copied().filter(|&c| c > 0).min().unwrap_or(0);
            let k = a.nodes_per_class.unwrap_or(smallest.min(1000));
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let s = gnnaudit_attacks::class_balanced_split(&ds.labels, ds.num_classes, k, 0.4, 0.2, &mut rng)
                .map_err(from_attack)?;
            ds.split = Some(Split { train: s.train, val: s.val, test: s.test });
        }
        if let Some(l) = loaded.as_mut() {
            // The checkpoint's white box recomputes aggregations over its training graph (for a
            // node-level model, degree-bounded with the training seed, i.e. --seed).
            l.model.attach_graph(&ds, data_seed)?;
        }
        let mut trained = None;
        let (bb, budget, accuracy) = match &loaded {
            Some(l) => {
                let bb = ModelBlackBox::new(l.model.as_ref());
                let post = l.model.posteriors();
                crate::ensure!(
                    post.size()[0] as usize == ds.num_nodes(),
                    Error::invalid("target", format!("the saved model answers for {} nodes, the dataset has {}; pass the dataset options it was trained with", post.size()[0], ds.num_nodes()))
                );
                (bb, l.budget.clone(), accuracy_of(&post, &ds)?)
            }
            None => {
                let run = crate::methods::train(&recipe, &ds, seed)?;
                crate::cli::train::ensure_converged(&run, &recipe)?;
                let out = (ModelBlackBox::new(run.model.as_ref()), run.budget.clone(), run.accuracy);
                trained = Some(run);
                out
            }
        };
        let mut g = attack_graph(&ds)?;
        if let Some(v) = sensitive {
            g = g.with_sensitive(v).map_err(from_attack)?;
        }
        let split = node_split(ds.split()?);
        let oracle = RecipeOracle::new(&recipe, &budget, &ds.name);
        let c = crate::audit::feature_claim::claim_for(a.attack, &budget);
        let white_box = match (&loaded, &trained) {
            (Some(l), _) => l.model.white_box(),
            (None, Some(run)) => run.model.white_box(),
            _ => None,
        };
        let target = Target { graph: &g, split: &split, black_box: &bb, white_box, oracle: Some(&oracle), claim: c };
        let result =
            run_attack(a.attack, &target, &AdversaryKnowledge::default(), &params, seed).map_err(from_attack)?;
        tracing::info!(seed, auc = result.summary.auc, "attack run done");
        utility.push(accuracy);
        claim = Some(c);
        results.push(result);
    }
    let claim = claim.expect("at least one run");
    let aucs: Vec<f64> = results.iter().map(|r| r.summary.auc).collect();
    let (auc, auc_std) = mean_std(&aucs);
    let (t1, _) = mean_std(&results.iter().map(|r| r.summary.tpr_at_fpr.at_0_001).collect::<Vec<_>>());
    let (t2, t2_std) = mean_std(&results.iter().map(|r| r.summary.tpr_at_fpr.at_0_01).collect::<Vec<_>>());
    let (bacc, _) = mean_std(&results.iter().map(|r| r.summary.balanced_accuracy).collect::<Vec<_>>());
    // One test over all runs' scores pooled (each run is an independent draw of the game), never a
    // maximum over runs.
    let first = &results[0];
    let pos: Vec<f64> = results.iter().flat_map(|r| r.scores.0.iter().copied()).collect();
    let neg: Vec<f64> = results.iter().flat_map(|r| r.scores.1.iter().copied()).collect();
    let pooled = |bound: BoundKind, strategy: ThresholdStrategy, assumption: &str| -> Result<_> {
        let spec = AuditSpec { bound, strategy, confidence: first.eps_lb_confidence, delta: claim.delta, seed: a.seed };
        certify(&pos, &neg, &spec, assumption).map_err(from_attack)
    };
    let certificate = match &first.certificate {
        Some(c) => Some(pooled(params.bound, params.strategy, &c.assumption)?),
        None => None,
    };
    // The one-run bound of canary games, over all runs' canaries (each canary is in one run only).
    let one_run = match first.details.get("eps_lb_one_run") {
        Some(v) if !v.is_null() => {
            Some(pooled(BoundKind::OneRun, ThresholdStrategy::default(), gnnaudit_attacks::stats::COIN_ASSUMPTION)?)
        }
        _ => None,
    };
    let eps_lb = certificate.as_ref().map(|c| c.eps_lb);
    let eps_lb_one_run = one_run.as_ref().map(|c| c.eps_lb);
    let claimed =
        if claim.unit == gnnaudit_attacks::ClaimUnit::None { None } else { claim.epsilon.or(Some(f64::INFINITY)) };
    let verdict = certificate.as_ref().map_or(Verdict::NotComparable, |c| c.verdict(claimed));
    let tightness = certificate.as_ref().and_then(|c| c.tightness(claimed));
    let violation = verdict == Verdict::Violated;
    let acc = |f: fn(&train::Accuracy) -> f64| mean_std(&utility.iter().map(f).collect::<Vec<_>>());
    let seconds = start.elapsed().as_secs_f64();
    let repeat_mode = if loaded.is_some() {
        format!(
            "{} attack run(s) with attack seeds {}..={} on one saved target",
            a.repeats,
            a.seed,
            a.seed + a.repeats as u64 - 1
        )
    } else {
        format!(
            "{} independent run(s) with seeds {}..={} (new split, target and attack each)",
            a.repeats,
            a.seed,
            a.seed + a.repeats as u64 - 1
        )
    };
    if a.json {
        let out = json!({
            "attack": a.attack.name(),
            "method": recipe.method.name(),
            "dataset": a.dataset,
            "epsilon": claim.epsilon,
            "delta": claim.delta,
            "privacy_unit": claim.unit,
            "game": first.game.statement,
            "game_detail": first.game,
            "knowledge": first.knowledge,
            "auc": auc,
            "auc_std": auc_std,
            "tpr_at_fpr": {"0.001": t1, "0.01": t2},
            "tpr_at_1pct_fpr_std": t2_std,
            "balanced_accuracy": bacc,
            "eps_lb": eps_lb,
            "eps_lb_confidence": first.eps_lb_confidence,
            "eps_lb_one_run": eps_lb_one_run,
            "certificate": certificate,
            "one_run_certificate": one_run,
            "verdict": verdict,
            "tightness": tightness,
            "violation": violation,
            "utility": {"train": acc(|u| u.train).0, "val": acc(|u| u.val).0, "test": acc(|u| u.test).0,
                        "test_std": acc(|u| u.test).1},
            "note": first.note,
            "sensitive_values": sensitive_names,
            "repeats": a.repeats,
            "repeat_mode": repeat_mode,
            "seconds": seconds,
            "runs": results,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!("{} against {} on {} ({repeat_mode})", a.attack.name(), recipe.method.name(), a.dataset);
    println!("game: {}", first.game.statement);
    println!(
        "AUC {:.2} ± {:.2}%   TPR@0.1%FPR {:.2}%   TPR@1%FPR {:.2}%   balanced acc {:.2}%",
        100.0 * auc,
        100.0 * auc_std,
        100.0 * t1,
        100.0 * t2,
        100.0 * bacc
    );
    let (te, te_std) = acc(|u| u.test);
    println!(
        "target accuracy: train {:.2}%  test {:.2} ± {:.2}%",
        100.0 * acc(|u| u.train).0,
        100.0 * te,
        100.0 * te_std
    );
    match (&certificate, claim.epsilon) {
        (Some(c), Some(eps)) => println!(
            "eps_lb {:.3} vs claimed eps {eps:.3} ({:?} level): {verdict} ({}, {} threshold, {:.0}% confidence, {} + {} \
             trials; the test could certify at most {:.3})",
            c.eps_lb,
            claim.unit,
            c.bound.name(),
            c.strategy,
            100.0 * c.confidence,
            c.positives,
            c.negatives,
            c.max_certifiable
        ),
        (Some(c), None) => println!("eps_lb {:.3} (non-private target: evidence of leakage)", c.eps_lb),
        _ => println!("eps_lb: not computed (the game does not match the claimed privacy unit)"),
    }
    if let Some(lb) = eps_lb_one_run {
        println!("eps_lb_one_run {lb:.3} (Steinke, Nasr & Jagielski 2023, all runs' canaries)");
    }
    if let Some(n) = &first.note {
        println!("note: {n}");
    }
    for (k, v) in &first.details {
        // (The run's own one-run bound is in the JSON; the pooled one is printed above.)
        if k != "coins" && k != "per_class" && k != "eps_lb_one_run" {
            println!("  {k}: {v}");
        }
    }
    println!("wall time: {seconds:.1} s");
    Ok(())
}
