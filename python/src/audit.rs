//! A Python model as an audit target: its posteriors come from a Python callable (the user's PyG
//! module, called in-process), its shadow models from the user's `train_fn`. Everything else is
//! the CLI's: the attacks crate's `run_attack`, the pooled `stats::certify` over seeds and the
//! verdict against a declared claim checked by gnnaudit's own accountant.
//!
//! The GIL is released while Rust works and taken back for each call into Python; every such call
//! first checks for signals, so a Ctrl-C ends the audit with `KeyboardInterrupt`.
use crate::report;
use gnnaudit::audit::attack::attack_inputs;
use gnnaudit::error::Error;
use gnnaudit::external::run::{claim_unit, split_of_members};
use gnnaudit::external::DeclaredClaim;
use gnnaudit::report::DatasetInfo;
use gnnaudit::target::{from_attack, rows_of};
use gnnaudit::train::baseline::{at_chance, Baseline, DEFAULT_CHANCE_CONFIDENCE};
use gnnaudit_attacks as attacks;
use gnnaudit_attacks::stats::{certify, AuditSpec};
use gnnaudit_attacks::{run_attack, AttackGraph, BlackBox, Claim, ClaimUnit, NodeSplit, ShadowOracle, Target};
use pyo3::prelude::*;
use pyo3_tch::PyTensor;
use serde_json::{json, Value};
use std::cell::RefCell;
use tch::{Kind, Tensor};

/// Posteriors [N, C] computed once on the target graph: every query reads rows of them.
struct Posteriors {
    table: Tensor,
    classes: usize,
}

impl BlackBox for Posteriors {
    fn num_classes(&self) -> usize {
        self.classes
    }
    fn posteriors(&self, nodes: &[usize]) -> attacks::Result<Tensor> {
        rows_of(&self.table, nodes)
    }
}

/// The Python side: `predict(x, edge_index) -> posteriors` and `shadow(x, edge_index, y,
/// train_mask, seed) -> posteriors` (the user's train_fn, then its model's posteriors). The first
/// Python exception is kept so that it, not a summary, reaches the caller.
pub struct PythonTarget {
    pub predict: PyObject,
    pub shadow: Option<PyObject>,
    pub failure: RefCell<Option<PyErr>>,
}

impl PythonTarget {
    /// Calls `f(args)` with the GIL; the result must be a float tensor [nodes, classes].
    fn call(
        &self,
        f: &PyObject,
        args: impl FnOnce(Python<'_>) -> PyResult<Vec<PyObject>>,
        nodes: usize,
    ) -> attacks::Result<Tensor> {
        let out = Python::with_gil(|py| -> PyResult<Tensor> {
            py.check_signals()?;
            let args = pyo3::types::PyTuple::new(py, args(py)?)?;
            let t: PyTensor = f.call1(py, args)?.extract(py)?;
            Ok(t.0)
        });
        let t = match out {
            Ok(t) => t,
            Err(e) => {
                let message = Python::with_gil(|py| e.value(py).to_string());
                self.failure.borrow_mut().get_or_insert(e);
                return Err(attacks::Error::Target(message));
            }
        };
        let size = t.size();
        if size.len() != 2 || size[0] != nodes as i64 {
            return Err(attacks::Error::invalid(
                "model",
                format!("returned a tensor of shape {size:?}, expected [{nodes}, classes] (one row per node)"),
            ));
        }
        Ok(t.to_device(tch::Device::Cpu).to_kind(Kind::Float).detach())
    }

    fn posteriors(&self, x: &Tensor, edge_index: &Tensor) -> attacks::Result<Tensor> {
        let (x, ei) = (x.shallow_clone(), edge_index.shallow_clone());
        let n = x.size()[0] as usize;
        self.call(&self.predict, |py| Ok(vec![tensor(py, x)?, tensor(py, ei)?]), n)
    }
}

fn tensor(py: Python<'_>, t: Tensor) -> PyResult<PyObject> {
    Ok(PyTensor(t).into_pyobject(py)?.unbind())
}

/// The graph as PyG holds it: both directions of each undirected edge, int64 [2, 2E].
fn edge_index(g: &AttackGraph) -> Tensor {
    let (mut src, mut dst) = (Vec::with_capacity(2 * g.edges.len()), Vec::with_capacity(2 * g.edges.len()));
    for &(u, v) in &g.edges {
        src.extend([u as i64, v as i64]);
        dst.extend([v as i64, u as i64]);
    }
    Tensor::stack(&[Tensor::from_slice(&src), Tensor::from_slice(&dst)], 0)
}

impl ShadowOracle for PythonTarget {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> attacks::Result<Box<dyn BlackBox>> {
        let Some(shadow) = &self.shadow else {
            return Err(attacks::Error::Unsupported(
                "this attack trains shadow models: pass train_fn(x, edge_index, y, train_mask, seed) -> model".into(),
            ));
        };
        let n = graph.num_nodes;
        let mut mask = vec![false; n];
        for &v in &split.train {
            mask[v] = true;
        }
        let labels: Vec<i64> = graph.labels.iter().map(|&l| l as i64).collect();
        let (x, ei) = (graph.features.shallow_clone(), edge_index(graph));
        let table = self.call(
            shadow,
            |py| {
                Ok(vec![
                    tensor(py, x)?,
                    tensor(py, ei)?,
                    tensor(py, Tensor::from_slice(&labels))?,
                    tensor(py, Tensor::from_slice(&mask))?,
                    seed.into_pyobject(py)?.into_any().unbind(),
                ])
            },
            n,
        )?;
        Ok(Box::new(Posteriors { classes: table.size()[1] as usize, table }))
    }
}

/// One attack of the audit: its name and its `params` table (as in an audit config).
pub struct AttackEntry {
    pub kind: String,
    pub params: serde_json::Map<String, Value>,
}

/// The audit's inputs as they arrive from Python.
pub struct AuditInputs {
    pub x: Tensor,
    pub edge_index: Tensor,
    pub labels: Vec<i64>,
    pub members: Vec<usize>,
    pub attacks: Vec<AttackEntry>,
    pub seeds: Vec<u64>,
    pub claim: Option<Value>,
    /// Per attack, the pooled eps_lb the same audit reached on the positive control.
    pub controls: Option<Vec<Option<f64>>>,
}

/// Runs every attack for every seed; returns {"rows": [...], "attacks": [...], "claim": ...}.
/// A Python exception raised by the model or train_fn is returned as itself.
pub fn run(target: &PythonTarget, inputs: AuditInputs) -> Result<Value, Error> {
    let n = inputs.x.size().first().copied().unwrap_or(0) as usize;
    gnnaudit::ensure!(
        inputs.x.dim() == 2 && n > 0,
        Error::invalid("x", format!("expected node features [nodes, features], got shape {:?}", inputs.x.size()))
    );
    let ei = &inputs.edge_index;
    gnnaudit::ensure!(
        ei.dim() == 2 && ei.size()[0] == 2,
        Error::invalid("edge_index", format!("expected shape [2, edges], got {:?}", ei.size()))
    );
    gnnaudit::ensure!(
        inputs.labels.len() == n,
        Error::invalid("y", format!("{} labels for {n} nodes: give one label per node", inputs.labels.len()))
    );
    if let Some(bad) = inputs.labels.iter().find(|&&l| l < 0) {
        return Err(Error::invalid("y", format!("label {bad} is negative: labels are class ids 0..C-1")));
    }
    gnnaudit::ensure!(!inputs.seeds.is_empty(), Error::invalid("seeds", "give at least one seed"));
    let ei_cpu = ei.to_device(tch::Device::Cpu).to_kind(Kind::Int64);
    let pairs = Vec::<i64>::try_from(&ei_cpu.transpose(0, 1).contiguous().view([-1]))?;
    let mut edges = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks(2) {
        gnnaudit::ensure!(
            p[0] >= 0 && p[1] >= 0 && (p[0] as usize) < n && (p[1] as usize) < n,
            Error::invalid("edge_index", format!("edge ({}, {}) names a node outside 0..{n}", p[0], p[1]))
        );
        edges.push((p[0] as usize, p[1] as usize));
    }
    edges.iter_mut().for_each(|e| *e = (e.0.min(e.1), e.0.max(e.1)));
    edges.sort_unstable();
    edges.dedup();
    let classes = inputs.labels.iter().max().map_or(0, |&m| m as usize + 1);
    let features = inputs.x.to_device(tch::Device::Cpu).to_kind(Kind::Float).detach();
    let labels: Vec<usize> = inputs.labels.iter().map(|&l| l as usize).collect();
    let graph = AttackGraph::new(n, edges, features, labels, classes).map_err(from_attack)?;
    let split = split_of_members(&inputs.members, n);

    let claim_report = match &inputs.claim {
        Some(v) => {
            let declared: DeclaredClaim = serde_json::from_value(v.clone()).map_err(|e| Error::invalid("claim", e))?;
            let units =
                gnnaudit::privacy::claim_rules::private_units(declared.unit(), n as u64, graph.edges.len() as u64);
            Some(declared.check(units as usize)?)
        }
        None => None,
    };
    let claim = match &claim_report {
        Some(r) => Claim { unit: claim_unit(r.unit), epsilon: Some(r.audited_epsilon()), delta: r.audited_delta() },
        None => Claim::non_private(),
    };

    let table = target.posteriors(&inputs.x, &inputs.edge_index).map_err(|e| python_first(target, e))?;
    let released = Posteriors { classes: table.size()[1] as usize, table };
    gnnaudit::ensure!(
        released.classes >= classes,
        Error::invalid(
            "model",
            format!("returns {} classes but y holds labels up to {}", released.classes, classes - 1)
        )
    );
    // Always offered: without a train_fn, its refusal tells the user what an attack with
    // shadow models needs.
    let oracle: Option<&dyn ShadowOracle> = Some(target);
    let attack_target = Target { graph: &graph, split: &split, black_box: &released, white_box: None, oracle, claim };

    let started = std::time::SystemTime::now();
    let clock = std::time::Instant::now();
    let mut rows = vec![];
    let mut summaries = vec![];
    let mut all_runs: Vec<(String, gnnaudit::report::config::Params, Vec<attacks::AttackResult>, Option<f64>)> = vec![];
    if let Some(c) = &inputs.controls {
        gnnaudit::ensure!(c.len() == inputs.attacks.len(), Error::invalid("control", "one control bound per attack"));
    }
    for (i, entry) in inputs.attacks.iter().enumerate() {
        let table: gnnaudit::report::config::Params =
            entry.params.iter().map(|(k, v)| (k.clone(), json_to_toml(v))).collect();
        let (kind, knowledge, mut params) = attack_inputs(&entry.kind, &Default::default(), &table)
            .map_err(|(k, m)| Error::invalid(format!("attack {}.{k}", entry.kind), m))?;
        // Each seed's own bound at alpha / seeds (Bonferroni), as the CLI's audit does, since a
        // report's summary takes the largest over seeds; the pooled test below runs at alpha.
        let confidence = params.confidence.unwrap_or(0.95);
        params.confidence = Some(1.0 - (1.0 - confidence) / inputs.seeds.len() as f64);
        let mut results = vec![];
        for &seed in &inputs.seeds {
            let r = run_attack(&attack_target, &knowledge, &params, seed).map_err(|e| python_first(target, e))?;
            rows.push(json!({
                "attack": kind.name(),
                "seed": seed,
                "auc": r.summary.auc,
                "tpr_at_1pct_fpr": r.summary.tpr_at_fpr.at_0_01,
                "tpr_at_0_1pct_fpr": r.summary.tpr_at_fpr.at_0_001,
                "eps_lb": r.eps_lb,
                "verdict": r.verdict.name(),
                "game": r.game.statement,
                "note": r.note,
            }));
            results.push(r);
        }
        // One test over every seed's scores pooled (each seed an independent draw), never a maximum.
        let first = &results[0];
        let certificate = match &first.certificate {
            Some(c) => {
                let pos: Vec<f64> = results.iter().flat_map(|r| r.scores.0.iter().copied()).collect();
                let neg: Vec<f64> = results.iter().flat_map(|r| r.scores.1.iter().copied()).collect();
                let spec = AuditSpec {
                    bound: params.bound,
                    strategy: params.strategy,
                    confidence,
                    delta: claim.delta,
                    seed: inputs.seeds[0],
                };
                Some(certify(&pos, &neg, &spec, &c.assumption).map_err(from_attack)?)
            }
            None => None,
        };
        let claimed = if claim.unit == ClaimUnit::None { None } else { claim.epsilon };
        let control = inputs.controls.as_ref().and_then(|c| c[i]);
        let verdict = certificate
            .as_ref()
            .map_or(gnnaudit_attacks::stats::Verdict::NotComparable, |c| c.verdict_with_control(claimed, control));
        summaries.push(json!({
            "attack": kind.name(),
            "seeds": inputs.seeds,
            "auc": results.iter().map(|r| r.summary.auc).sum::<f64>() / results.len() as f64,
            "eps_lb": certificate.as_ref().map(|c| c.eps_lb),
            "certificate": certificate,
            "verdict": verdict.name(),
            "control_eps_lb": control,
            "runs": results,
        }));
        all_runs.push((entry.kind.clone(), table, results, control));
    }
    let accuracy = accuracy_of(&released.table, &graph.labels, &split)?;
    // What the model must beat, as the CLI's audits record it: the members are the train split,
    // every other node the test split.
    let baseline = Baseline::of_labels(&graph.labels, graph.num_classes, &split.train, &split.test);
    let chance_test = at_chance(accuracy.1, &baseline, DEFAULT_CHANCE_CONFIDENCE);
    let facts = report::AuditFacts {
        dataset: dataset_info(&inputs.x, &inputs.edge_index, &inputs.labels, &graph)?,
        members_sha256: report::sha256_hex(
            &inputs.members.iter().flat_map(|m| (*m as u64).to_le_bytes()).collect::<Vec<_>>(),
        ),
        members: inputs.members.len(),
        seeds: &inputs.seeds,
        claim: claim_report.as_ref(),
        claim_table: inputs.claim.as_ref(),
        accuracy,
        baseline,
        started,
        seconds: clock.elapsed().as_secs_f64(),
    };
    let runs: Vec<report::AttackRuns<'_>> = all_runs
        .iter()
        .map(|(kind, table, results, control)| report::AttackRuns {
            spec: report::attack_spec(kind, table.clone()),
            runs: results,
            control: *control,
        })
        .collect();
    let report = report::build(&facts, &runs)?;
    Ok(json!({
        "rows": rows,
        "attacks": summaries,
        "claim": claim_report,
        "audited_claim": claim,
        "accuracy": {"members": accuracy.0, "non_members": accuracy.1},
        "baseline": baseline,
        "chance_test": chance_test,
        "report": report,
    }))
}

/// Accuracy of argmax posteriors on the members and on the other nodes.
fn accuracy_of(table: &Tensor, labels: &[usize], split: &NodeSplit) -> Result<(f64, f64), Error> {
    let pred = Vec::<i64>::try_from(&table.argmax(1, false))?;
    let acc =
        |idx: &[usize]| idx.iter().filter(|&&v| pred[v] as usize == labels[v]).count() as f64 / idx.len().max(1) as f64;
    Ok((acc(&split.train), acc(&split.test)))
}

/// The graph as the report names it: sizes and the sha256 of its tensors' bytes.
fn dataset_info(x: &Tensor, edge_index: &Tensor, labels: &[i64], g: &AttackGraph) -> Result<DatasetInfo, Error> {
    let mut bytes = vec![];
    let xs = Vec::<f32>::try_from(&x.to_device(tch::Device::Cpu).to_kind(Kind::Float).contiguous().view([-1]))?;
    bytes.extend(xs.iter().flat_map(|v| v.to_le_bytes()));
    let es =
        Vec::<i64>::try_from(&edge_index.to_device(tch::Device::Cpu).to_kind(Kind::Int64).contiguous().view([-1]))?;
    bytes.extend(es.iter().flat_map(|v| v.to_le_bytes()));
    bytes.extend(labels.iter().flat_map(|v| v.to_le_bytes()));
    Ok(DatasetInfo {
        label: report::DATASET.into(),
        name: report::DATASET.into(),
        source: "tensors passed to gnnaudit.audit".into(),
        sha256: report::sha256_hex(&bytes),
        nodes: g.num_nodes,
        undirected_edges: g.edges.len(),
        features: x.size()[1] as usize,
        classes: g.num_classes,
    })
}

/// The Python exception the model or train_fn raised, if any, else the attack's error.
fn python_first(target: &PythonTarget, e: attacks::Error) -> Error {
    match target.failure.borrow().as_ref() {
        Some(_) => Error::Other(PYTHON_FAILED.into()),
        None => from_attack(e),
    }
}

/// Marks an error whose cause is the Python exception kept in `PythonTarget::failure`.
pub const PYTHON_FAILED: &str = "the model or train_fn raised an exception";

fn json_to_toml(v: &Value) -> toml::Value {
    match v {
        Value::Null => toml::Value::String(String::new()),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(a.iter().map(json_to_toml).collect()),
        Value::Object(o) => toml::Value::Table(o.iter().map(|(k, v)| (k.clone(), json_to_toml(v))).collect()),
    }
}
