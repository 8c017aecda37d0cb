//! `gnnaudit attack`: train a target (and, as the threat model allows, shadow models) with any
//! trainable method, run one attack over several seeds, and report its success next to the
//! claimed epsilon.
use crate::cli::train::RecipeArgs;
use crate::data::{self, Split};
use crate::error::{Error, Result};
use crate::target::{attack_graph, carve_attribute, from_attack, node_split, CpuWhiteBox, ModelBlackBox, RecipeOracle};
use crate::train;
use clap::Args;
use gnnaudit_attacks::classifier::AttackModel;
use gnnaudit_attacks::metrics::mean_std;
use gnnaudit_attacks::stats::{BoundKind, ThresholdStrategy, Verdict};
use gnnaudit_attacks::{
    certify_pooled, run_attack, AdversaryKnowledge, AttackKind, AttackParams, AttackResult, GameUnit, Target,
    CERTIFICATION_KEYS,
};
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
    /// The attack, by its name in the attack registry (the help lists them all).
    #[arg(long, value_parser = parse_attack, help = attack_help())]
    pub attack: AttackKind,
    /// Any parameter of the attack, as in an audit config's `params` table (repeatable), e.g.
    /// `--set shadows=8` or `--set variant="original"`; the flags below are aliases of the
    /// commonest ones. A key the attack does not have is refused.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the attack's parameters with their defaults (the keys `--set` and audit configs
    /// take), its game and the access it needs, and exit.
    #[arg(long)]
    pub describe: bool,
    /// LiRA shadow models [16].
    #[arg(long)]
    pub shadows: Option<usize>,
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
    /// mia, mia-metric: `reference` (default, as in audit configs: GAP's attack code,
    /// test_on_target=False, the set-up of the reference anchors: the attack trains on 70% of the
    /// target's own sampled members and non-members and is tested on the other 30%; param
    /// `source = "target-split"`) or `shadow` (an independent shadow model on a shadow graph, thesis
    /// ch.4 Sec. 4.8.2; a weaker adversary, e.g. Cora GAP-inf 64 vs 79 AUC; `source = "independent"`).
    #[arg(long)]
    pub mia_setup: Option<String>,
    /// mia and link-stealing: the attack classifier, mlp (default) | logistic | random-forest | knn.
    #[arg(long, value_parser = parse_attack_model)]
    pub attack_model: Option<AttackModel>,
    /// mia-metric: confidence | entropy | modified-entropy [modified-entropy].
    #[arg(long)]
    pub metric: Option<String>,
    /// LiRA: offline (OUT-only) score instead of online.
    #[arg(long)]
    pub offline: bool,
    /// LiRA: one global variance (default; Carlini et al.'s choice below 64 shadows) or, with
    /// `--global-variance false`, per-node variances.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub global_variance: Option<bool>,
    /// LiRA: rank-calibrate every model's confidences over the candidates (default), or not with
    /// `--rank-calibration false` (then an early-stopped target can fool the likelihood ratio).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub rank_calibration: Option<bool>,
    /// canary-edge / canary-node / canary-ldp: canaries per run [200]; canary-aggregation: crafted
    /// canary edges [100000]; canary-subclass: canary subclasses [40].
    #[arg(long)]
    pub canaries: Option<usize>,
    /// attribute: prefix of the one-hot feature block to carve out (Facebook100: gender).
    #[arg(long, default_value = "gender")]
    pub sensitive: String,
    /// Attack released embeddings instead of posteriors (link-stealing, attribute, canary-edge).
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
    /// on the rest; an attack that plans its own test, canary-gradient for gdp, is certified with
    /// it), split:F, bonferroni (every threshold, corrected), explicit:T (fixed in advance),
    /// planned:T (T on every trial at 0.9 alpha, a split at 0.1 alpha).
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
    /// e.g. 'python train.py --graph {graph} --out {out}': split into words, run without a shell,
    /// each path one argument (placeholders unquoted).
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
    /// Seconds one run of --command, or one forward of --torchscript, may take.
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
    /// The deployment named by the flags; a TorchScript module's shadow copies train with
    /// `--epochs`, `--lr`, `--optimizer` (adam, adamw or sgd) and `--weight-decay`.
    fn target(&self, recipe: &RecipeArgs) -> Result<Option<crate::external::TargetSpec>> {
        use crate::external::TargetSpec;
        let members = self.members.clone();
        if let Some(model) = &self.torchscript {
            let d = crate::external::ShadowRecipe::default();
            let s = &recipe.shared;
            let training = crate::external::ShadowRecipe {
                epochs: s.value("epochs")?.unwrap_or(d.epochs),
                lr: s.value("lr")?.unwrap_or(d.lr),
                optimizer: s.value("optimizer")?.unwrap_or(d.optimizer),
                weight_decay: s.value("weight_decay")?.unwrap_or(d.weight_decay),
            };
            return Ok(Some(TargetSpec::Torchscript {
                model: model.clone(),
                output: self.output,
                init: self.init.clone(),
                members,
                training,
                timeout: self.timeout,
            }));
        }
        if let Some(command) = &self.command {
            return Ok(Some(TargetSpec::Command {
                command: command.clone(),
                members,
                timeout: self.timeout,
                work_dir: self.work_dir.clone(),
            }));
        }
        Ok(self.posteriors.as_ref().map(|p| TargetSpec::Posteriors { posteriors: p.clone(), members }))
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
    let outcome = ext::run(&x).map_err(as_flags)?;
    let seconds = start.elapsed().as_secs_f64();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&ext::to_json(&x, &outcome, seconds))?);
    } else {
        ext::print(&x, &outcome, seconds);
    }
    Ok(())
}

/// `--attack`'s help, from the attack registry so that it lists every attack.
fn attack_help() -> String {
    format!(
        "The attack: {} (`--describe` prints one's parameters with their defaults, its game and the access it needs)",
        AttackKind::NAMES.join(" | ")
    )
}

/// The target's checks name the keys of a config's `[target]` table; on the command line the
/// user gave flags, so an error names the flag instead.
fn as_flags(e: Error) -> Error {
    const FLAGS: [(&str, &str); 12] = [
        ("target.model", "--torchscript"),
        ("target.init", "--init"),
        ("target.posteriors", "--posteriors"),
        ("target.members", "--members"),
        ("members", "--members"),
        ("target.timeout", "--timeout"),
        ("timeout", "--timeout"),
        ("command", "--command"),
        ("target.command", "--command"),
        ("target.training.epochs", "--epochs"),
        ("target.training.lr", "--lr"),
        ("target.training.weight_decay", "--weight-decay"),
    ];
    match e {
        Error::InvalidParam { field, message } => {
            let field = FLAGS.iter().find(|(key, _)| *key == field).map_or(field, |(_, flag)| flag.to_string());
            Error::InvalidParam { field, message }
        }
        e => e,
    }
}

fn parse_attack(s: &str) -> std::result::Result<AttackKind, String> {
    AttackKind::parse(s).ok_or_else(|| format!("expected one of {}", AttackKind::NAMES.join(", ")))
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
    ThresholdStrategy::parse(s)
        .ok_or_else(|| "expected split, split:F, bonferroni, explicit:T or planned:T".to_string())
}

/// The attack parameters each flag is an alias of, for the flags given: (flag, key, value).
fn flag_settings(a: &AttackArgs) -> Result<Vec<(&'static str, &'static str, serde_json::Value)>> {
    let mut out: Vec<(&'static str, &'static str, serde_json::Value)> = Vec::new();
    if let Some(n) = a.shadows {
        out.push(("shadows", "shadows", n.into()));
    }
    if let Some(m) = a.attack_model {
        out.push(("attack-model", "model", serde_json::to_value(m)?));
    }
    if let Some(m) = &a.metric {
        out.push(("metric", "metric", m.as_str().into()));
    }
    if a.offline {
        out.push(("offline", "online", false.into()));
    }
    if let Some(b) = a.global_variance {
        out.push(("global-variance", "global_variance", b.into()));
    }
    if let Some(b) = a.rank_calibration {
        out.push(("rank-calibration", "rank_calibration", b.into()));
    }
    if let Some(n) = a.canaries {
        out.push(("canaries", "canaries", n.into()));
    }
    if a.use_embeddings {
        out.push(("use-embeddings", "use_embeddings", true.into()));
    }
    if let Some(s) = &a.mia_setup {
        let source = match s.as_str() {
            "shadow" => "independent",
            "reference" => "target-split",
            other => return Err(Error::invalid("mia-setup", format!("'{other}' is neither 'shadow' nor 'reference'"))),
        };
        out.push(("mia-setup", "source", source.into()));
    }
    if let Some(k) = a.nodes_per_class {
        crate::ensure!(
            a.attack.game() == GameUnit::NodeMembership,
            Error::invalid("nodes-per-class", format!("applies to membership attacks, not {}", a.attack))
        );
        // Also the shadow graph's size, where the attack trains a shadow model.
        if a.attack.default_config().to_table().contains_key("shadow_per_class") {
            out.push(("nodes-per-class", "shadow_per_class", k.into()));
        }
    }
    Ok(out)
}

/// One `--set KEY=VALUE`: the value read as a TOML value (`8`, `true`, `"original"`), or as a
/// string when it is not one (`--set variant=original`).
fn set_entry(s: &str) -> Result<(String, serde_json::Value)> {
    let (key, value) = s.split_once('=').ok_or_else(|| Error::invalid("set", format!("'{s}' is not KEY=VALUE")))?;
    let key = key.trim().to_string();
    let value = value.trim();
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}")).ok().and_then(|mut t| t.remove("v"));
    let json = match parsed {
        Some(v) => serde_json::to_value(v)?,
        None => serde_json::Value::String(value.to_string()),
    };
    Ok((key, json))
}

/// The attack's parameters from the flags and `--set`, through the attacks crate's registry (the
/// parser audit configs use, so the two agree on every default), and checked before training.
fn params_of(a: &AttackArgs) -> Result<AttackParams> {
    let name = a.attack.name();
    let own = a.attack.default_config().to_table();
    let mut table = serde_json::Map::new();
    for (flag, key, value) in flag_settings(a)? {
        crate::ensure!(
            own.contains_key(key),
            Error::invalid(
                flag,
                format!(
                    "does not apply to {name} (its parameters: {}; `--set KEY=VALUE` sets any)",
                    own.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            )
        );
        table.insert(key.to_string(), value);
    }
    for s in &a.set {
        let (key, value) = set_entry(s)?;
        crate::ensure!(
            !CERTIFICATION_KEYS.contains(&key.as_str()),
            Error::invalid("set", format!("{key} has its own flag (--{})", key.replace('_', "-")))
        );
        table.insert(key, value);
    }
    let mut p = AttackParams::from_table(name, &table).map_err(|(key, m)| {
        let flag = flag_settings(a).ok().and_then(|f| f.into_iter().find(|f| f.1 == key).map(|f| f.0));
        Error::invalid(flag.map_or(key, String::from), m)
    })?;
    p.bound = a.bound;
    p.strategy = a.threshold_strategy;
    p.confidence = Some(a.confidence);
    p.check().map_err(from_attack)?;
    crate::cli::train::seeds(a.seed, a.repeats)?;
    Ok(p)
}

/// Train, validation and test accuracy of argmax posteriors on a split.
fn accuracy_of(post: &tch::Tensor, ds: &crate::data::Dataset) -> Result<train::Accuracy> {
    Ok(train::evaluate::Labels::from_dataset(ds)?.accuracy(post))
}

/// `--describe`: the attack's parameter table with defaults, from the registry.
fn describe(kind: AttackKind) -> String {
    let config = kind.default_config();
    let mut out = format!(
        "{kind}: game {:?}, needs {:?}\nparameters (--set KEY=VALUE, or params = {{ .. }} in an audit config):\n",
        config.game(),
        config.requires()
    );
    for (key, value) in config.to_table() {
        out.push_str(&format!("  {key} = {value}\n"));
    }
    out.push_str("certification (every attack): confidence = 0.95, bound = \"clopper-pearson\", threshold_strategy = \"split\"\n");
    out
}

pub fn run(a: AttackArgs) -> Result<()> {
    if a.describe {
        print!("{}", describe(a.attack));
        return Ok(());
    }
    // Before any other thread exists: Ctrl-C then kills a running training command's whole
    // process group and removes its temporary folder before exiting 130.
    crate::interrupt::install();
    crate::interrupt::set_message(|| "the attack was stopped; nothing was reported".into());
    if a.external.command.is_some() || a.external.torchscript.is_some() {
        crate::external::command::timeout_duration("--timeout", a.external.timeout)?;
    }
    // Before any tensor exists (a saved target loads onto it); a missing CUDA device: exit 2.
    crate::device::select(a.device)?;
    if let Some(target) = a.external.target(&a.recipe)? {
        return run_external(&a, target);
    }
    for (flag, set) in [
        ("members", a.external.members.is_some()),
        ("claim", a.external.claim.is_some()),
        ("init", a.external.init.is_some()),
    ] {
        crate::ensure!(!set, Error::invalid(flag, "only applies to --torchscript, --command or --posteriors targets"));
    }
    let mut loaded = saved_target(&a)?;
    let recipe = target_recipe(&a, loaded.as_ref())?;
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
    let ratios = if let Some(p) = &provenance { p.split } else { recipe.method.spec().split };
    let mut runs = Vec::with_capacity(a.repeats);
    for &seed in seeds.iter().take(a.repeats) {
        // A saved target is one model on one graph and split (the checkpoint's split seed; its
        // training seed samples a node-level degree bound); only the attack's own randomness
        // (sampling, shadows, canaries, attack model) moves with the repeat.
        let (split_seed, data_seed) = match &provenance {
            Some(p) => (p.split_seed, p.train_seed),
            None => (seed, seed),
        };
        let ds = data::transforms::prepare_like_gap(&raw, a.min_class_count, ratios, split_seed)?;
        runs.push(attack_once(&a, &recipe, &params, ds, loaded.as_mut(), seed, data_seed)?);
    }
    let report = Pooled::of(&a, &params, runs)?;
    let repeat_mode = repeat_mode(&a, loaded.is_some());
    let seconds = start.elapsed().as_secs_f64();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report.json(&a, &recipe, &repeat_mode, seconds))?);
    } else {
        report.print(&a, &recipe, &repeat_mode, seconds);
    }
    Ok(())
}

/// The saved model `--target` names, if any (refused for attacks that carve an attribute out of
/// the training data).
fn saved_target(a: &AttackArgs) -> Result<Option<crate::methods::LoadedModel>> {
    let Some(dir) = &a.target else { return Ok(None) };
    crate::ensure!(
        !a.attack.default_config().requires().carved_attribute,
        Error::invalid("target", "attribute inference carves the attribute out before training; train the target here")
    );
    Ok(Some(crate::methods::load_model(dir)?))
}

/// The recipe of the target: the saved model's (a different `--method` is refused), else the flags'.
fn target_recipe(a: &AttackArgs, loaded: Option<&crate::methods::LoadedModel>) -> Result<crate::methods::Recipe> {
    match loaded {
        Some(l) => {
            if let Some(m) = a.recipe.method.filter(|m| *m != l.recipe.method) {
                return Err(Error::invalid(
                    "method",
                    format!("--method {} but the saved target was trained with {}", m.name(), l.recipe.method.name()),
                ));
            }
            Ok(l.recipe.clone())
        }
        None => a.recipe.to_recipe(),
    }
}

/// One repeat: the target (trained on `ds` with `seed`, or the saved one attached to it), then
/// the attack with `seed`.
struct OneRun {
    result: AttackResult,
    accuracy: train::Accuracy,
    claim: gnnaudit_attacks::Claim,
    sensitive_names: Option<Vec<String>>,
}

fn attack_once(
    a: &AttackArgs,
    recipe: &crate::methods::Recipe,
    params: &AttackParams,
    mut ds: crate::data::Dataset,
    loaded: Option<&mut crate::methods::LoadedModel>,
    seed: u64,
    data_seed: u64,
) -> Result<OneRun> {
    let mut sensitive = None;
    let mut sensitive_names = None;
    if a.attack.default_config().requires().carved_attribute {
        let (carved, values, names) = carve_attribute(&ds, &a.sensitive)?;
        ds = carved;
        sensitive = Some(values);
        sensitive_names = Some(names);
    }
    if a.attack.game() == GameUnit::NodeMembership && loaded.is_none() {
        // The membership game: members and non-members drawn from one class-balanced sample.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (_, s) = gnnaudit_attacks::membership_split(&ds.labels, ds.num_classes, a.nodes_per_class, &mut rng)
            .map_err(from_attack)?;
        ds.split = Some(Split { train: s.train, val: s.val, test: s.test });
    }
    let mut g = attack_graph(&ds)?;
    if let Some(v) = sensitive {
        g = g.with_sensitive(v).map_err(from_attack)?;
    }
    let split = node_split(ds.split()?);
    if a.attack == AttackKind::CanaryGradient && loaded.is_none() {
        return observed_run(recipe, params, ds, (&g, &split), seed, a.attack);
    }
    let mut trained = None;
    let (model, budget, accuracy): (&dyn crate::methods::TrainedModel, _, _) = match loaded {
        Some(l) => {
            // The checkpoint's white box recomputes aggregations over its training graph (for a
            // node-level model, degree-bounded with the training seed, i.e. --seed).
            l.model.attach_graph(&ds, data_seed)?;
            let post = l.model.posteriors();
            crate::ensure!(
                post.size()[0] as usize == ds.num_nodes(),
                Error::invalid(
                    "target",
                    format!(
                        "the saved model answers for {} nodes, the dataset has {}; pass the dataset options it was \
                         trained with",
                        post.size()[0],
                        ds.num_nodes()
                    )
                )
            );
            let accuracy = accuracy_of(&post, &ds)?;
            (l.model.as_ref(), l.budget.clone(), accuracy)
        }
        None => {
            let run = trained.insert(crate::methods::train(recipe, &ds, seed)?);
            crate::target::ensure_converged(run, recipe)?;
            (run.model.as_ref(), run.budget.clone(), run.accuracy)
        }
    };
    let bb = ModelBlackBox::new(model);
    let oracle = RecipeOracle::new(recipe, &budget, &ds.name);
    let claim = crate::audit::feature_claim::claim_for(a.attack, &budget)?;
    let white_box = CpuWhiteBox::of(model.white_box());
    let white_box = CpuWhiteBox::as_dyn(&white_box);
    let target = Target { graph: &g, split: &split, black_box: &bb, white_box, oracle: Some(&oracle), claim };
    let result = run_attack(&target, &AdversaryKnowledge::default(), params, seed).map_err(from_attack)?;
    tracing::info!(seed, auc = result.summary.auc, "attack run done");
    Ok(OneRun { result, accuracy, claim, sensitive_names })
}

/// The gradient-canary audit of a recipe trained here: the one training run the canaries are
/// planted in is the target, and its utility is reported (as Steinke et al. 2023 report the run
/// they audit), so the whole command costs about one training, not two. The target's budget
/// goes through the oracle's calibrations, which that training then reuses.
fn observed_run(
    recipe: &crate::methods::Recipe,
    params: &AttackParams,
    ds: crate::data::Dataset,
    (graph, split): (&gnnaudit_attacks::AttackGraph, &gnnaudit_attacks::NodeSplit),
    seed: u64,
    kind: AttackKind,
) -> Result<OneRun> {
    let classes = ds.num_classes;
    let (oracle, budget) = RecipeOracle::with_budget(recipe, ds, graph, seed)?;
    let claim = crate::audit::feature_claim::claim_for(kind, &budget)?;
    let bb = NoQueries { classes };
    let target = Target { graph, split, black_box: &bb, white_box: None, oracle: Some(&oracle), claim };
    let result = run_attack(&target, &AdversaryKnowledge::default(), params, seed).map_err(from_attack)?;
    let accuracy = oracle.observed_accuracy().ok_or_else(|| Error::Other("the audit observed no training".into()))?;
    tracing::info!(seed, auc = result.summary.auc, "attack run done");
    Ok(OneRun { result, accuracy, claim, sensitive_names: None })
}

/// Which training the reported utility is of.
fn utility_of(a: &AttackArgs) -> &'static str {
    if a.attack == AttackKind::CanaryGradient && a.target.is_none() {
        "the audited training, which is the target's"
    } else {
        "the target"
    }
}

/// The target of an audit that observes its training and queries no trained model.
struct NoQueries {
    classes: usize,
}

impl gnnaudit_attacks::BlackBox for NoQueries {
    fn num_classes(&self) -> usize {
        self.classes
    }
    fn posteriors(&self, _nodes: &[usize]) -> gnnaudit_attacks::Result<tch::Tensor> {
        Err(gnnaudit_attacks::Error::Unsupported("this audit observes the training and queries no model".into()))
    }
}

/// How the repeats were drawn, in words.
fn repeat_mode(a: &AttackArgs, saved: bool) -> String {
    let last = a.seed + a.repeats as u64 - 1;
    if saved {
        format!("{} attack run(s) with attack seeds {}..={last} on one saved target", a.repeats, a.seed)
    } else {
        format!("{} independent run(s) with seeds {}..={last} (new split, target and attack each)", a.repeats, a.seed)
    }
}

/// Every run's success averaged, and one certificate over all runs' scores pooled.
struct Pooled {
    results: Vec<AttackResult>,
    utility: Vec<train::Accuracy>,
    claim: gnnaudit_attacks::Claim,
    /// The method's total claim, when `claim` is one audited component's (gradient canaries face
    /// the method's DP-SGD alone).
    method_epsilon: Option<f64>,
    sensitive_names: Option<Vec<String>>,
    certificate: Option<gnnaudit_attacks::stats::Certificate>,
    one_run: Option<gnnaudit_attacks::stats::Certificate>,
    verdict: Verdict,
    tightness: Option<f64>,
}

impl Pooled {
    fn of(a: &AttackArgs, params: &AttackParams, runs: Vec<OneRun>) -> Result<Pooled> {
        let claim = runs.last().map(|r| r.claim).ok_or_else(|| Error::invalid("repeats", "must be at least 1"))?;
        let sensitive_names = runs.iter().rev().find_map(|r| r.sensitive_names.clone());
        let utility: Vec<train::Accuracy> = runs.iter().map(|r| r.accuracy).collect();
        let results: Vec<AttackResult> = runs.into_iter().map(|r| r.result).collect();
        // An attack that measured one component of the method is judged against that component's
        // claim; the method's total is printed beside it.
        let method_epsilon = claim.epsilon;
        let first = &results[0];
        let claim = if first.details.contains_key("method_claimed_epsilon") {
            gnnaudit_attacks::Claim { unit: first.privacy_unit, epsilon: first.epsilon, delta: first.delta }
        } else {
            claim
        };
        // One test over all runs' scores pooled (each run is an independent draw of the game),
        // never a maximum over runs.
        let pooled = |bound: BoundKind, strategy: ThresholdStrategy, assumption: &str| {
            certify_pooled(&results, bound, strategy, claim.delta, a.seed, assumption).map_err(from_attack)
        };
        // One run pooled is that run: its own certificates (made with the same bound, strategy,
        // confidence, delta and seed) are reused instead of certifying the same scores again.
        let single = results.len() == 1;
        let certificate = match &results[0].certificate {
            Some(c) if single => Some(c.clone()),
            Some(c) => Some(pooled(params.bound, params.strategy, &c.assumption)?),
            None => None,
        };
        // The one-run bound of canary games, over all runs' canaries (each canary is in one run only).
        let one_run = match results[0].details.get("eps_lb_one_run") {
            Some(v) if !v.is_null() => match results[0].details.get("one_run").filter(|_| single) {
                Some(c) => Some(serde_json::from_value(c.clone()).map_err(|e| Error::Other(e.to_string()))?),
                None => Some(pooled(
                    BoundKind::OneRun,
                    ThresholdStrategy::default(),
                    gnnaudit_attacks::stats::COIN_ASSUMPTION,
                )?),
            },
            _ => None,
        };
        let claimed =
            if claim.unit == gnnaudit_attacks::ClaimUnit::None { None } else { claim.epsilon.or(Some(f64::INFINITY)) };
        let verdict = certificate.as_ref().map_or(Verdict::NotComparable, |c| c.verdict(claimed));
        let tightness = certificate.as_ref().and_then(|c| c.tightness(claimed));
        Ok(Pooled {
            results,
            utility,
            claim,
            method_epsilon,
            sensitive_names,
            certificate,
            one_run,
            verdict,
            tightness,
        })
    }

    /// Mean and standard deviation over the runs of one figure of each result.
    fn stat(&self, f: impl Fn(&AttackResult) -> f64) -> (f64, f64) {
        mean_std(&self.results.iter().map(f).collect::<Vec<_>>())
    }

    /// Mean and standard deviation of one accuracy of the targets.
    fn acc(&self, f: fn(&train::Accuracy) -> f64) -> (f64, f64) {
        mean_std(&self.utility.iter().map(f).collect::<Vec<_>>())
    }

    fn json(
        &self,
        a: &AttackArgs,
        recipe: &crate::methods::Recipe,
        repeat_mode: &str,
        seconds: f64,
    ) -> serde_json::Value {
        let first = &self.results[0];
        let (auc, auc_std) = self.stat(|r| r.summary.auc);
        let (t2, t2_std) = self.stat(|r| r.summary.tpr_at_fpr.at_0_01);
        json!({
            "attack": a.attack.name(),
            "method": recipe.method.name(),
            "dataset": a.dataset,
            "epsilon": self.claim.epsilon,
            "claimed_epsilon": self.claim.epsilon,
            "method_claimed_epsilon": self.method_epsilon,
            "delta": self.claim.delta,
            "privacy_unit": self.claim.unit,
            "game": first.game.statement,
            "game_detail": first.game,
            "knowledge": first.knowledge,
            "auc": auc,
            "auc_std": auc_std,
            "tpr_at_fpr": {"0.001": self.stat(|r| r.summary.tpr_at_fpr.at_0_001).0, "0.01": t2},
            "tpr_at_1pct_fpr_std": t2_std,
            "balanced_accuracy": self.stat(|r| r.summary.balanced_accuracy).0,
            "eps_lb": self.certificate.as_ref().map(|c| c.eps_lb),
            "eps_lb_confidence": first.eps_lb_confidence,
            "eps_lb_one_run": self.one_run.as_ref().map(|c| c.eps_lb),
            "certificate": self.certificate,
            "one_run_certificate": self.one_run,
            "verdict": self.verdict,
            "tightness": self.tightness,
            "violation": self.verdict == Verdict::Violated,
            "utility": {"train": self.acc(|u| u.train).0, "val": self.acc(|u| u.val).0, "test": self.acc(|u| u.test).0,
                        "test_std": self.acc(|u| u.test).1, "of": utility_of(a)},
            "note": first.note,
            "sensitive_values": self.sensitive_names,
            "repeats": a.repeats,
            "repeat_mode": repeat_mode,
            "seconds": seconds,
            "runs": self.results,
        })
    }

    fn print(&self, a: &AttackArgs, recipe: &crate::methods::Recipe, repeat_mode: &str, seconds: f64) {
        let (first, claim, verdict) = (&self.results[0], &self.claim, self.verdict);
        let (auc, auc_std) = self.stat(|r| r.summary.auc);
        println!("{} against {} on {} ({repeat_mode})", a.attack.name(), recipe.method.name(), a.dataset);
        println!("game: {}", first.game.statement);
        println!(
            "AUC {:.2} ± {:.2}%   TPR@0.1%FPR {:.2}%   TPR@1%FPR {:.2}%   balanced acc {:.2}%",
            100.0 * auc,
            100.0 * auc_std,
            100.0 * self.stat(|r| r.summary.tpr_at_fpr.at_0_001).0,
            100.0 * self.stat(|r| r.summary.tpr_at_fpr.at_0_01).0,
            100.0 * self.stat(|r| r.summary.balanced_accuracy).0
        );
        let (te, te_std) = self.acc(|u| u.test);
        println!(
            "target accuracy ({}): train {:.2}%  test {:.2} ± {:.2}%",
            utility_of(a),
            100.0 * self.acc(|u| u.train).0,
            100.0 * te,
            100.0 * te_std
        );
        match (&self.certificate, claim.epsilon) {
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
        if let Some(why) = self.certificate.as_ref().and_then(|c| c.cannot_certify.as_ref()) {
            println!("cannot certify: {why}");
        }
        if self.method_epsilon != claim.epsilon {
            let total = self.method_epsilon.map_or("none".to_string(), |e| format!("{e:.3}"));
            println!("the claim above is the audited component's; the method's total claim is eps {total}");
        }
        if verdict == Verdict::Inconclusive && a.attack == AttackKind::CanaryGradient {
            println!(
                "inconclusive: no positive control showed this attack's power (its control is the same training with \
                 DP-SGD's noise left out, which `gnnaudit audit` runs); more canaries when the bound is capped by \
                 what the test could certify, or --bound gdp, add power"
            );
        } else if verdict == Verdict::Inconclusive {
            let control =
                recipe.method.spec().control.map_or("none in the registry".to_string(), |m| m.name().to_string());
            println!(
                "inconclusive: no positive control showed this attack's power (the method's control: {control};              `gnnaudit audit` runs it, or run this command with --method {control} to see whether it is caught);              more canaries or --repeats, --bound gdp for Gaussian mechanisms, or the canary-aggregation audit add power"
            );
        }
        if let Some(c) = &self.one_run {
            println!("eps_lb_one_run {:.3} (Steinke, Nasr & Jagielski 2023, all runs' canaries)", c.eps_lb);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::attack::attack_inputs;
    use crate::audit::config::Params;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: AttackArgs,
    }

    fn cli(args: &[&str]) -> Result<AttackParams> {
        let cli =
            Cli::try_parse_from([&["gnnaudit-attack"][..], args].concat()).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        params_of(&cli.args)
    }

    fn audit(kind: &str, params: &str) -> AttackParams {
        let params: Params = toml::from_str(params).unwrap();
        attack_inputs(kind, &Params::new(), &params).unwrap_or_else(|e| panic!("{kind}: {e:?}")).2
    }

    /// `gnnaudit attack` and an audit config took different default
    /// membership set-ups. Both now take every attack's defaults from the registry, so an attack
    /// with no flags and an `[[attacks]]` entry with no params are the same attack, for every
    /// registry name (the certification defaults included).
    #[test]
    fn cli_and_audit_agree_on_every_attacks_defaults() {
        for &name in AttackKind::NAMES {
            let from_cli = cli(&["--attack", name]).unwrap();
            let registry = AttackParams::from_table(name, &serde_json::Map::new()).unwrap();
            assert_eq!(from_cli.attack, registry.attack, "{name}");
            assert_eq!((from_cli.bound, from_cli.strategy), (registry.bound, registry.strategy), "{name}");
            assert_eq!(from_cli.confidence, Some(registry.confidence.unwrap_or(0.95)), "{name}");
            if registry.attack.requires().carved_attribute {
                // The audit refuses it outright rather than run another game.
                assert_eq!(attack_inputs(name, &Params::new(), &Params::new()).unwrap_err().0, "kind");
                continue;
            }
            let from_audit = audit(name, "");
            assert_eq!(from_cli.attack, from_audit.attack, "{name}: CLI and audit defaults differ");
        }
        // The membership default is the reference set-up on both sides.
        let mia = audit("mia", "");
        assert!(matches!(mia.attack, gnnaudit_attacks::AttackConfig::Mia(p)
            if p.source == gnnaudit_attacks::membership::ShadowSource::TargetSplit));
    }

    /// The CLI flags are aliases of the attacks' config keys, and `--set` reaches any key.
    #[test]
    fn cli_flags_and_set_are_config_keys() {
        let cases: [(&[&str], &str, &str); 8] = [
            (&["--attack", "lira", "--shadows", "8", "--offline"], "lira", "shadows = 8\nonline = false"),
            (&["--attack", "lira", "--global-variance", "false"], "lira", "global_variance = false"),
            (
                &["--attack", "mia", "--mia-setup", "shadow", "--nodes-per-class", "50"],
                "mia",
                "source = \"independent\"\nshadow_per_class = 50",
            ),
            (&["--attack", "mia-metric", "--metric", "entropy"], "mia-metric", "metric = \"entropy\""),
            (
                &["--attack", "link-stealing", "--attack-model", "knn", "--use-embeddings"],
                "link-stealing",
                "model = \"knn\"\nuse_embeddings = true",
            ),
            (&["--attack", "canary-subclass", "--canaries", "12"], "canary-subclass", "canaries = 12"),
            (
                &["--attack", "inversion", "--set", "steps=30", "--set", "variant=original"],
                "inversion",
                "steps = 30\nvariant = \"original\"",
            ),
            (&["--attack", "canary-edge", "--set", "crafted=false"], "canary-edge", "crafted = false"),
        ];
        for (args, kind, params) in cases {
            assert_eq!(cli(args).unwrap().attack, audit(kind, params).attack, "{args:?}");
        }
    }

    /// A flag the attack has no parameter for is refused, naming the flag; so is a bad value.
    #[test]
    fn cli_refuses_flags_the_attack_does_not_use() {
        let field = |args: &[&str]| match cli(args) {
            Err(Error::InvalidParam { field, .. }) => field,
            other => panic!("{args:?}: {other:?}"),
        };
        assert_eq!(field(&["--attack", "mia", "--shadows", "8"]), "shadows");
        assert_eq!(field(&["--attack", "canary-node", "--use-embeddings"]), "use-embeddings");
        assert_eq!(field(&["--attack", "canary-edge", "--nodes-per-class", "10"]), "nodes-per-class");
        assert_eq!(field(&["--attack", "lira", "--shadows", "3"]), "shadows");
        assert_eq!(field(&["--attack", "mia-metric", "--metric", "loss"]), "metric");
        assert_eq!(field(&["--attack", "lira", "--set", "shadow=4"]), "shadow");
        assert_eq!(field(&["--attack", "lira", "--set", "bound=gdp"]), "set");
    }

    /// `--describe` lists every key `--set` accepts, with its default.
    #[test]
    fn describe_lists_every_parameter() {
        for &kind in AttackKind::ALL {
            let text = describe(kind);
            for (key, value) in kind.default_config().to_table() {
                assert!(text.contains(&format!("{key} = {value}")), "{kind}: {text}");
            }
        }
    }
}
