//! `gnnaudit attack` against an external target: loads the dataset as the deployment saw it
//! (node ids kept: no reindexing, no class filter), adapts the target to the threat model, runs
//! the attack over the requested seeds, certifies eps_lb over all runs pooled (through
//! `attacks::stats`), and reports it next to the declared claim as stated and as recomputed.
use super::claim::{ClaimReport, DeclaredClaim};
use super::command::{CommandOracle, CommandRunner};
use super::members::load_members;
use super::posteriors::{load_posteriors, Released};
use super::spec::TargetSpec;
use super::torchscript::{ScriptOracle, ScriptTarget};
use crate::data::{self, SplitRatios};
use crate::error::{Error, Result};
pub use crate::target::claim_unit;
use crate::target::{attack_graph, from_attack};
use gnnaudit_attacks as attacks;
use gnnaudit_attacks::certify_pooled;
use gnnaudit_attacks::stats::{Certificate, Verdict};
use gnnaudit_attacks::{
    run_attack, AdversaryKnowledge, AttackGraph, AttackKind, AttackParams, AttackResult, BlackBox, Claim, ClaimUnit,
    NodeSplit, ShadowOracle, Target, WhiteBox,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::path::PathBuf;
use tch::Tensor;

/// One `gnnaudit attack` invocation against an external target.
pub struct ExternalAttack {
    pub target: TargetSpec,
    pub claim: Option<DeclaredClaim>,
    pub dataset: String,
    pub data_dir: Option<PathBuf>,
    pub attack: AttackKind,
    pub params: AttackParams,
    pub knowledge: AdversaryKnowledge,
    pub repeats: usize,
    pub seed: u64,
}

/// What the run found, for printing or JSON.
pub struct ExternalOutcome {
    pub results: Vec<AttackResult>,
    pub certificate: Option<Certificate>,
    pub claim: Claim,
    pub claim_report: Option<ClaimReport>,
    pub verdict: Verdict,
    pub verdict_vs_recomputed: Option<Verdict>,
    pub members: Option<usize>,
    /// Accuracy of the released posteriors on members and on the other nodes (first run).
    pub accuracy: Option<(f64, f64)>,
    pub command_runs: Option<usize>,
    /// A TorchScript module's answer to: does its output depend on `edge_index`?
    pub edge_probe: Option<super::torchscript::EdgeProbe>,
}

/// A black box for attacks that never query the target (canary audits train their own models).
struct NotQueried;

impl BlackBox for NotQueried {
    fn num_classes(&self) -> usize {
        0
    }
    fn posteriors(&self, _nodes: &[usize]) -> attacks::Result<Tensor> {
        Err(attacks::Error::Unsupported("this attack does not query the deployed model".into()))
    }
}

/// Whether the attack queries the deployed model (canary audits only train their own).
fn queries_target(kind: AttackKind) -> bool {
    let access = kind.default_config().requires();
    access.black_box || access.white_box
}

/// Whether the attack is about the graph's edges: its evidence comes from how the model's
/// output changes with `edge_index`.
pub fn is_edge_level(kind: AttackKind) -> bool {
    matches!(
        kind,
        AttackKind::LinkStealing
            | AttackKind::CanaryEdge
            | AttackKind::CanaryAggregation
            | AttackKind::GraphReconstruction
            | AttackKind::DegreeInference
    ) || kind.game() == attacks::GameUnit::EdgeCanary
}

fn is_membership(kind: AttackKind) -> bool {
    kind.game() == attacks::GameUnit::NodeMembership
}

/// Accuracy of argmax posteriors on `a` and on `b`.
fn accuracy(post: &Tensor, labels: &[usize], a: &[usize], b: &[usize]) -> Result<(f64, f64)> {
    let pred = Vec::<i64>::try_from(&post.argmax(1, false))?;
    let acc =
        |idx: &[usize]| idx.iter().filter(|&&v| pred[v] as usize == labels[v]).count() as f64 / idx.len().max(1) as f64;
    Ok((acc(a), acc(b)))
}

pub fn split_of_members(members: &[usize], n: usize) -> NodeSplit {
    let mut is = vec![false; n];
    for &v in members {
        is[v] = true;
    }
    NodeSplit { train: members.to_vec(), val: vec![], test: (0..n).filter(|&v| !is[v]).collect() }
}

/// The split a run trains or attacks with: the members when the auditor has them; otherwise, for
/// a command target (gnnaudit trains it, so it knows membership), a class-balanced split for the
/// membership game or GAP's 75/10/15 for canary audits.
fn run_split(
    g: &AttackGraph,
    ds: &data::Dataset,
    members: &Option<Vec<usize>>,
    kind: AttackKind,
    seed: u64,
) -> Result<NodeSplit> {
    if let Some(m) = members {
        return Ok(split_of_members(m, g.num_nodes));
    }
    if is_membership(kind) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        return Ok(attacks::membership_split(&g.labels, g.num_classes, None, &mut rng).map_err(from_attack)?.1);
    }
    let s = data::random_split(ds, SplitRatios::default(), seed)?;
    let s = s.split()?;
    Ok(NodeSplit { train: s.train.clone(), val: s.val.clone(), test: s.test.clone() })
}

/// Prefers the whole error a target kept (bad file, failed command: exit code 2) to the text the
/// attacks crate carried.
fn target_error(e: attacks::Error, kept: Option<Error>) -> Error {
    kept.unwrap_or_else(|| from_attack(e))
}

/// A deployment adapted to the threat model, on the dataset it was trained on: what every attack
/// against it (from `gnnaudit attack` or an audit cell) starts from.
pub struct Deployment {
    pub graph: AttackGraph,
    pub dataset: data::Dataset,
    pub members: Option<Vec<usize>>,
    pub claim: Claim,
    pub claim_report: Option<ClaimReport>,
    released: Option<Released>,
    script: Option<ScriptTarget>,
    script_oracle: Option<ScriptOracle>,
    runner: Option<CommandRunner>,
    /// The command target's deployed model (pipeline run on the dataset) and the seed it was run for.
    command_target: std::cell::RefCell<Option<(u64, std::rc::Rc<Released>)>>,
}

impl Deployment {
    /// Validates the target and the claim against the dataset (node ids as in the file: no
    /// reindexing, no class filter) and loads what can be loaded up front.
    pub fn open(target: &TargetSpec, claim: Option<&DeclaredClaim>, dataset: data::Dataset) -> Result<Self> {
        target.validate()?;
        let g = attack_graph(&dataset)?;
        let n = g.num_nodes;
        let members = target.members().map(|p| load_members(p, n)).transpose()?;
        let claim_report = match claim {
            Some(c) => {
                // The attack graph holds each undirected edge once: the edge-level unit.
                let units =
                    crate::privacy::claim_rules::private_units(c.unit(), n as u64, g.edges.len() as u64) as usize;
                Some(c.check(units)?)
            }
            None => None,
        };
        let claim = match &claim_report {
            Some(r) => Claim { unit: claim_unit(r.unit), epsilon: Some(r.audited_epsilon()), delta: r.audited_delta() },
            None => Claim::non_private(),
        };
        let mut d = Deployment {
            graph: g,
            dataset,
            members,
            claim,
            claim_report,
            released: None,
            script: None,
            script_oracle: None,
            runner: None,
            command_target: Default::default(),
        };
        match target {
            TargetSpec::Posteriors { posteriors, .. } => {
                d.released = Some(Released::new(load_posteriors(posteriors, n, d.graph.num_classes)?));
            }
            TargetSpec::Torchscript { model, output, init, training, timeout, .. } => {
                // Checked by `validate`.
                let timeout = std::time::Duration::from_secs_f64(*timeout);
                d.script = Some(ScriptTarget::load(model, *output, &d.graph, timeout)?);
                d.script_oracle = Some(ScriptOracle::new(model, init.as_deref(), *output, *training, timeout));
            }
            TargetSpec::Command { command, timeout, work_dir, .. } => {
                d.runner = Some(CommandRunner::new(command, *timeout, work_dir.as_deref())?);
            }
        }
        Ok(d)
    }

    /// The TorchScript module's edge probe (None for other kinds).
    pub fn edge_probe(&self) -> Option<&super::torchscript::EdgeProbe> {
        self.script.as_ref().map(|s| &s.edge_probe)
    }

    /// The warning an edge-level attack carries when the module ignores `edge_index`.
    pub fn edge_warning(&self, kind: AttackKind) -> Option<String> {
        let s = self.script.as_ref()?;
        if is_edge_level(kind) {
            s.edge_probe.warning(&s.path)
        } else {
            None
        }
    }

    /// Number of command runs executed so far (None for other kinds).
    pub fn command_runs(&self) -> Option<usize> {
        self.runner.as_ref().map(|r| *r.executed.borrow())
    }

    /// Number of finished command runs reused from the work folder (None for other kinds).
    pub fn command_runs_reused(&self) -> Option<usize> {
        self.runner.as_ref().map(|r| *r.reused.borrow())
    }

    /// Runs one attack with `seed`; returns the result and the split it used.
    pub fn attack(
        &self,
        kind: AttackKind,
        knowledge: &AdversaryKnowledge,
        params: &AttackParams,
        seed: u64,
    ) -> Result<(AttackResult, NodeSplit)> {
        crate::ensure!(
            !kind.default_config().requires().carved_attribute,
            Error::invalid(
                "attack",
                "attribute inference needs the attribute carved out of the features before training, which an \
                 external target was not"
            )
        );
        if is_membership(kind) && self.members.is_none() && self.runner.is_none() {
            return Err(Error::invalid(
                "members",
                format!(
                    "{} needs the ids of the nodes the deployment trained on (--members FILE, or members in [target])",
                    kind.name()
                ),
            ));
        }
        crate::ensure!(
            self.released.is_none() || queries_target(kind),
            Error::invalid("attack", "a canary audit trains models; a posteriors target has none (use command)")
        );
        let needs_oracle = params.attack.requires().oracle;
        crate::ensure!(
            !(needs_oracle && self.released.is_some()),
            Error::invalid(
                "mia-setup",
                format!(
                    "{} with shadow models needs a model to train copies of; released posteriors have none (use the \
                     reference set-up, or a torchscript or command target)",
                    kind.name()
                )
            )
        );
        let g = &self.graph;
        let split = run_split(g, &self.dataset, &self.members, kind, seed)?;
        // A command target's deployed model: the pipeline run on the dataset with this split
        // (once when the members are fixed).
        let mut command_bb = None;
        if let Some(runner) = &self.runner {
            if queries_target(kind) {
                let mut cached = self.command_target.borrow_mut();
                let reuse = matches!(&*cached, Some((s, _)) if self.members.is_some() || *s == seed);
                if !reuse {
                    let out = runner.run(g, &split, seed)?;
                    *cached = Some((seed, std::rc::Rc::new(out.released)));
                }
                command_bb = cached.as_ref().map(|(_, r)| r.clone());
            }
        }
        let not_queried = NotQueried;
        let bb: &dyn BlackBox = match (&self.released, &self.script, &command_bb) {
            (Some(b), _, _) => b,
            (_, Some(s), _) => &s.released,
            (_, _, Some(b)) => b.as_ref(),
            _ => &not_queried,
        };
        let command_oracle = self.runner.as_ref().map(|r| CommandOracle { runner: r });
        let oracle: Option<&dyn ShadowOracle> = match (&self.script_oracle, &command_oracle) {
            (Some(o), _) => Some(o),
            (_, Some(o)) => Some(o),
            _ => None,
        };
        let white_box: Option<&dyn WhiteBox> = self.script.as_ref().map(|s| s as &dyn WhiteBox);
        let target = Target { graph: g, split: &split, black_box: bb, white_box, oracle, claim: self.claim };
        let mut result = run_attack(&target, knowledge, params, seed).map_err(|e| {
            let kept = self
                .script_oracle
                .as_ref()
                .and_then(|o| o.failure.borrow_mut().take())
                .or_else(|| self.runner.as_ref().and_then(|r| r.failure.borrow_mut().take()));
            self.too_few_members(kind, target_error(e, kept))
        })?;
        if let Some(w) = self.edge_warning(kind) {
            // Marked through the existing verdict: no eps_lb can speak for edges the model ignores.
            result.verdict = Verdict::Inconclusive;
            result.violation = false;
            result.note = Some(match result.note.take() {
                Some(n) => format!("{w} {n}"),
                None => w,
            });
        }
        Ok((result, split))
    }

    /// A membership attack that ran out of trials on the auditor's members says so in terms of
    /// the members file: how many it holds and how many are needed. The attack scores as many
    /// non-members as members, keeps 30% of each class's members for its test (60/10/30 within
    /// each class) and certifies on half of those, so a class with fewer than 7 members may leave
    /// it 1 or 0; `classes + 6` members leave at least 2 whatever their classes.
    fn too_few_members(&self, kind: AttackKind, e: Error) -> Error {
        let (Some(members), Error::InvalidParam { field, message }) = (&self.members, &e) else { return e };
        let out_of_trials = ["no positive trials", "no negative trials", "too few to split", "need at least 2 members"];
        if !(matches!(field.as_str(), "scores" | "split") && out_of_trials.iter().any(|p| message.contains(p))) {
            return e;
        }
        let need = self.graph.num_classes + 6;
        Error::invalid(
            "members",
            format!(
                "{} members are too few for {}: at least {need} members are needed ({} classes + 6: the attack \
                 scores as many non-members as members, tests on 30% of each class's members and certifies on half \
                 of those), and a bound worth reading needs tens per class (the attack said: {message})",
                members.len(),
                kind.name(),
                self.graph.num_classes
            ),
        )
    }

    /// Accuracy of the deployed model's posteriors on the split's train, val and test nodes (None
    /// when the attack never queried it).
    pub fn accuracy(&self, split: &NodeSplit) -> Result<Option<(f64, f64, f64)>> {
        let post = match (&self.released, &self.script, &*self.command_target.borrow()) {
            (Some(b), _, _) => b.posteriors.shallow_clone(),
            (_, Some(s), _) => s.released.posteriors.shallow_clone(),
            (_, _, Some((_, b))) => b.posteriors.shallow_clone(),
            _ => return Ok(None),
        };
        let (tr, va) = accuracy(&post, &self.graph.labels, &split.train, &split.val)?;
        let (_, te) = accuracy(&post, &self.graph.labels, &split.train, &split.test)?;
        Ok(Some((tr, va, te)))
    }
}

pub fn run(x: &ExternalAttack) -> Result<ExternalOutcome> {
    crate::ensure!(x.repeats >= 1, Error::invalid("repeats", "must be at least 1"));
    x.target.validate()?;
    let ds = data::load_dataset(&x.dataset, x.data_dir.as_deref())?;
    let d = Deployment::open(&x.target, x.claim.as_ref(), ds)?;
    let mut results = vec![];
    let mut first_accuracy = None;
    for r in 0..x.repeats {
        let seed = x.seed + r as u64;
        let (result, split) = d.attack(x.attack, &x.knowledge, &x.params, seed)?;
        if first_accuracy.is_none() {
            first_accuracy = d.accuracy(&split)?.map(|(tr, _, te)| (tr, te));
        }
        tracing::info!(seed, auc = result.summary.auc, "external attack run done");
        results.push(result);
    }
    let claim = d.claim;

    // One test over all runs' scores pooled (each run an independent draw), never a maximum.
    let certificate = match &results[0].certificate {
        Some(c) => Some(
            certify_pooled(&results, x.params.bound, x.params.strategy, claim.delta, x.seed, &c.assumption)
                .map_err(from_attack)?,
        ),
        None => None,
    };
    let claimed = if claim.unit == ClaimUnit::None { None } else { claim.epsilon };
    let edge_warning = d.edge_warning(x.attack);
    let verdict = match (&certificate, &edge_warning) {
        (_, Some(_)) => Verdict::Inconclusive,
        (Some(c), None) => c.verdict(claimed),
        (None, None) => Verdict::NotComparable,
    };
    let verdict_vs_recomputed = match (&certificate, &d.claim_report, &edge_warning) {
        (Some(_), Some(_), Some(_)) => Some(Verdict::Inconclusive),
        (Some(c), Some(r), None) => Some(c.verdict(Some(r.recomputed_epsilon))),
        _ => None,
    };
    if let Some(w) = &edge_warning {
        tracing::warn!("{w}");
    }
    Ok(ExternalOutcome {
        results,
        certificate,
        claim,
        claim_report: d.claim_report.clone(),
        verdict,
        verdict_vs_recomputed,
        members: d.members.as_ref().map(Vec::len),
        accuracy: first_accuracy,
        command_runs: d.command_runs(),
        edge_probe: d.edge_probe().cloned(),
    })
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The JSON `gnnaudit attack --json` prints for an external target.
pub fn to_json(x: &ExternalAttack, o: &ExternalOutcome, seconds: f64) -> serde_json::Value {
    let first = &o.results[0];
    json!({
        "attack": x.attack.name(),
        "target": x.target.kind(),
        "target_spec": x.target,
        "dataset": x.dataset,
        "members": o.members,
        "epsilon": o.claim.epsilon,
        "delta": o.claim.delta,
        "privacy_unit": o.claim.unit,
        "claim": o.claim_report,
        "game": first.game.statement,
        "game_detail": first.game,
        "knowledge": first.knowledge,
        "auc": mean(o.results.iter().map(|r| r.summary.auc)),
        "tpr_at_fpr": {"0.001": mean(o.results.iter().map(|r| r.summary.tpr_at_fpr.at_0_001)),
                       "0.01": mean(o.results.iter().map(|r| r.summary.tpr_at_fpr.at_0_01))},
        "balanced_accuracy": mean(o.results.iter().map(|r| r.summary.balanced_accuracy)),
        "eps_lb": o.certificate.as_ref().map(|c| c.eps_lb),
        "eps_lb_confidence": first.eps_lb_confidence,
        "certificate": o.certificate,
        "verdict": o.verdict,
        "verdict_vs_recomputed": o.verdict_vs_recomputed,
        "violation": o.verdict == Verdict::Violated,
        "utility": o.accuracy.map(|(m, r)| json!({"members": m, "non_members": r})),
        "command_runs": o.command_runs,
        "edge_probe": o.edge_probe,
        "note": first.note,
        "repeats": x.repeats,
        "seconds": seconds,
        "runs": o.results,
    })
}

/// The human-readable report.
pub fn print(x: &ExternalAttack, o: &ExternalOutcome, seconds: f64) {
    let first = &o.results[0];
    println!(
        "{} against {} target {} on {} ({} run(s), seeds {}..={})",
        x.attack.name(),
        x.target.kind(),
        x.target.label(),
        x.dataset,
        x.repeats,
        x.seed,
        x.seed + x.repeats as u64 - 1
    );
    println!("game: {}", first.game.statement);
    println!(
        "AUC {:.2}%   TPR@0.1%FPR {:.2}%   TPR@1%FPR {:.2}%   balanced acc {:.2}%",
        100.0 * mean(o.results.iter().map(|r| r.summary.auc)),
        100.0 * mean(o.results.iter().map(|r| r.summary.tpr_at_fpr.at_0_001)),
        100.0 * mean(o.results.iter().map(|r| r.summary.tpr_at_fpr.at_0_01)),
        100.0 * mean(o.results.iter().map(|r| r.summary.balanced_accuracy))
    );
    if let (Some(m), Some(path)) = (o.members, x.target.members()) {
        println!("members: {m} node ids read from {}", path.display());
    }
    if let Some((m, r)) = o.accuracy {
        println!("released posteriors: accuracy {:.2}% on members, {:.2}% on the other nodes", 100.0 * m, 100.0 * r);
    }
    if let Some(c) = &o.claim_report {
        println!(
            "declared claim: {:?} level, stated eps {} at delta {}; gnnaudit's accountant: eps {:.4} ({})",
            c.unit,
            c.stated_epsilon.map_or("(none)".into(), |e| e.to_string()),
            c.stated_delta.map_or("(none)".into(), |d| d.to_string()),
            c.recomputed_epsilon,
            c.event
        );
        for f in &c.flags {
            println!("  FLAG: {f}");
        }
    }
    match (&o.certificate, o.claim.epsilon) {
        (Some(c), Some(eps)) => println!(
            "eps_lb {:.3} vs audited eps {eps:.3}: {} ({}, {} threshold, {:.0}% confidence, {} + {} trials; the test \
             could certify at most {:.3}){}",
            c.eps_lb,
            o.verdict.name(),
            c.bound.name(),
            c.strategy,
            100.0 * c.confidence,
            c.positives,
            c.negatives,
            c.max_certifiable,
            o.verdict_vs_recomputed.map(|v| format!("; vs the recomputed eps: {}", v.name())).unwrap_or_default()
        ),
        (Some(c), None) => println!("eps_lb {:.3} (no claim declared: evidence of leakage)", c.eps_lb),
        _ => println!("eps_lb: not computed (the game does not match the claimed privacy unit)"),
    }
    if let Some(why) = o.certificate.as_ref().and_then(|c| c.cannot_certify.as_ref()) {
        println!("cannot certify: {why}");
    }
    if let Some(n) = &first.note {
        println!("note: {n}");
    }
    if let Some(k) = o.command_runs {
        println!("command runs: {k}");
    }
    println!("wall time: {seconds:.1} s");
}
