//! Shared by the audit and check tests: a fake cell runner with deterministic, plausible results
//! (so the pipeline, resume, reports and check can be tested without training), a small config,
//! and a minimal XML well-formedness checker for the report's SVGs.
#![allow(dead_code)]
use gnnaudit::audit::config::DatasetSpec;
use gnnaudit::audit::{
    run_audit, AttackRecord, AuditConfig, BudgetRecord, CellKey, CellMeasurement, CellRunner, CellSpec, Epsilon,
    OutputOptions, Progress, Stage, TprAtFpr,
};
use gnnaudit::privacy::accountant::{Budget, BudgetComponent, PrivacyUnit};
use gnnaudit::report::record::{thin_roc, CellSeconds, ROC_POINTS};
use gnnaudit::report::DatasetInfo;
use gnnaudit::train::Accuracy;
use gnnaudit::Result;
use statrs::distribution::{ContinuousCDF, Normal};
use std::path::{Path, PathBuf};

pub const FAKE_CONFIG: &str = r#"
name = "fake"
description = "fake runner fixture"
repeats = 2
seed = 7
[privacy]
epsilons = [1, 8, inf]
[[datasets]]
name = "synthetic"
[[methods]]
method = "mlp"
[[methods]]
method = "gap-edp"
hops = 2
[[methods]]
method = "gap-ndp"
[[attacks]]
kind = "mia"
[[attacks]]
kind = "link-stealing"
"#;

/// FAKE_CONFIG, parsed and validated.
pub fn fake_config() -> AuditConfig {
    let c = AuditConfig::parse(FAKE_CONFIG).unwrap();
    c.validate(None).unwrap();
    c
}

/// The audit of FAKE_CONFIG by `runner`, written to `dir`; returns its report.json.
pub fn fake_report(dir: &Path, runner: &mut impl CellRunner) -> PathBuf {
    let opts = OutputOptions { out: Some(dir.to_path_buf()), fresh: false };
    run_audit(&fake_config(), Path::new("fake.toml"), runner, &opts).unwrap();
    dir.join("report.json")
}

/// Number of cells of FAKE_CONFIG: mlp 1 eps x 2 seeds + 2 private methods x 3 eps x 2 seeds.
pub const FAKE_CELLS: usize = 14;

/// Deterministic results shaped like the real ones: accuracy and attack success grow with
/// epsilon; node-level MIA gets an eps_lb below the claim (or above it when `violate`).
#[derive(Default)]
pub struct FakeRunner {
    pub computed: Vec<CellKey>,
    /// Make node-level MIA report eps_lb above the claimed epsilon.
    pub violate: bool,
    /// Extra AUC added to every attack (to fail thresholds).
    pub leak: f64,
}

fn strength(key: &CellKey) -> f64 {
    let e = key.epsilon.as_f64();
    let s = if e.is_infinite() { 1.0 } else { e / (e + 4.0) };
    s + 0.01 * (key.seed % 3) as f64
}

/// Binormal ROC with separation d: TPR = Phi(Phi^-1(FPR) + d), AUC = Phi(d / sqrt 2).
pub fn binormal(d: f64) -> (f64, Vec<(f64, f64)>) {
    let n = Normal::new(0.0, 1.0).unwrap();
    let mut pts = vec![(0.0, 0.0)];
    for i in 1..2000 {
        let f = 10f64.powf(-4.0 + 4.0 * i as f64 / 2000.0);
        pts.push((f, n.cdf(n.inverse_cdf(f) + d)));
    }
    pts.push((1.0, 1.0));
    (n.cdf(d / 2f64.sqrt()), thin_roc(&pts, ROC_POINTS))
}

impl CellRunner for FakeRunner {
    fn dataset_info(&mut self, spec: &DatasetSpec) -> Result<DatasetInfo> {
        Ok(DatasetInfo {
            label: spec.label(),
            name: spec.name.clone(),
            source: "embedded".into(),
            sha256: "0".repeat(64),
            nodes: 1000,
            undirected_edges: 5000,
            features: 32,
            classes: 4,
        })
    }

    fn run_cell(&mut self, cell: &CellSpec, progress: &Progress) -> Result<CellMeasurement> {
        self.computed.push(cell.key.clone());
        let s = strength(&cell.key);
        let unit = cell.method.privacy_unit().unwrap_or(PrivacyUnit::None);
        let test = 0.4 + 0.4 * s;
        let budget = match (unit, cell.key.epsilon) {
            (PrivacyUnit::None, _) | (_, Epsilon::Infinite) => Budget::non_private(),
            (u, Epsilon::Finite(e)) => Budget {
                privacy_unit: u,
                target_epsilon: Some(e),
                delta: 1e-4,
                epsilon_rdp: e * 1.05,
                rdp_order: Some(12.0),
                epsilon_pld: Some(e),
                pld_fallback: None,
                event: None,
                noise: vec![("sigma_agg".into(), 3.0 / e)],
                components: vec![BudgetComponent { name: "PMA".into(), mechanism: "Gaussian x 2".into(), epsilon: e }],
            },
        };
        progress.done(Stage::Training);
        let mut attacks = vec![];
        for a in &cell.attacks {
            if a.kind == "mia" {
                progress.add_work(Stage::ShadowTraining, 1);
                progress.done(Stage::ShadowTraining);
            }
            let d = (if a.kind == "mia" { 1.2 } else { 1.8 }) * s + 6.0 * self.leak;
            let (auc, roc) = binormal(d);
            let claimed = budget.claimed_epsilon();
            let node_mia = a.kind == "mia" && unit == PrivacyUnit::Node;
            let eps_lb = node_mia.then(|| if self.violate { claimed.min(50.0) + 1.0 } else { 0.1 * s });
            attacks.push(AttackRecord {
                attack: a.label(),
                kind: a.kind.clone(),
                game: format!("{} fixture game", a.kind),
                auc: auc.min(1.0),
                tpr_at_fpr: TprAtFpr {
                    fpr_0_1pct: gnnaudit::report::plots::tpr_at(&roc, 0.001),
                    fpr_1pct: gnnaudit::report::plots::tpr_at(&roc, 0.01),
                },
                balanced_accuracy: 0.5 + (auc - 0.5) * 0.8,
                eps_lb,
                verdict: eps_lb.map(|lb| if lb > claimed { "violated" } else { "inconclusive" }.to_string()),
                violation: eps_lb.is_some_and(|lb| lb > claimed),
                control: None,
                roc,
                details: serde_json::json!({ "samples": 1000 }),
            });
            progress.done(Stage::Attack);
        }
        Ok(CellMeasurement {
            privacy_unit: unit,
            utility: Accuracy { train: (test + 0.1).min(1.0), val: test, test },
            budget: BudgetRecord::from(&budget),
            recipe: serde_json::json!({ "method": cell.method.method, "params": cell.method.params }),
            attacks,
            baseline: None,
            seconds: CellSeconds { train: 0.5 + cell.key.seed as f64 * 1e-3, attacks: 0.25 },
        })
    }
}

/// Checks that `xml` is one well-formed element: balanced tags, quoted attributes, known entity
/// references. Returns the number of elements.
pub fn check_well_formed(xml: &str) -> std::result::Result<usize, String> {
    let b = xml.as_bytes();
    let (mut i, mut stack, mut count) = (0usize, Vec::<String>::new(), 0usize);
    let check_text = |t: &str| -> std::result::Result<(), String> {
        let mut rest = t;
        while let Some(p) = rest.find('&') {
            let end = rest[p..].find(';').ok_or_else(|| format!("unterminated entity in {:?}", &rest[p..]))?;
            let ent = &rest[p + 1..p + end];
            let ok = matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                || (ent.starts_with("#x") && u32::from_str_radix(&ent[2..], 16).is_ok())
                || (ent.starts_with('#') && ent[1..].parse::<u32>().is_ok());
            if !ok {
                return Err(format!("bad entity &{ent};"));
            }
            rest = &rest[p + end + 1..];
        }
        if t.contains('<') {
            return Err("stray '<'".into());
        }
        Ok(())
    };
    while i < b.len() {
        if b[i] != b'<' {
            let next = xml[i..].find('<').map_or(b.len(), |p| i + p);
            check_text(&xml[i..next])?;
            if stack.is_empty() && !xml[i..next].trim().is_empty() {
                return Err("text outside the root element".into());
            }
            i = next;
            continue;
        }
        if xml[i..].starts_with("<!--") {
            i += xml[i..].find("-->").ok_or("unterminated comment")? + 3;
            continue;
        }
        let end = i + find_tag_end(&xml[i..]).ok_or("unterminated tag")?;
        let tag = &xml[i + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or_else(|| format!("closing </{name}> without opening"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{}>", name.trim()));
            }
        } else {
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name: String = body.chars().take_while(|c| !c.is_whitespace()).collect();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_:".contains(c)) {
                return Err(format!("bad tag name in <{tag}>"));
            }
            check_attributes(&body[name.len()..]).map_err(|e| format!("<{name}>: {e}"))?;
            if stack.is_empty() && count > 0 {
                return Err("more than one root element".into());
            }
            count += 1;
            if !self_closing {
                stack.push(name);
            }
        }
        i = end + 1;
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    Ok(count)
}

/// Index of the '>' closing the tag that starts at 0, skipping quoted attribute values.
fn find_tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (k, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(k),
            _ => {}
        }
    }
    None
}

fn check_attributes(s: &str) -> std::result::Result<(), String> {
    let mut rest = s.trim();
    let mut names = vec![];
    while !rest.is_empty() {
        let eq = rest.find('=').ok_or_else(|| format!("attribute without value: {rest:?}"))?;
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("bad attribute name {name:?}"));
        }
        if names.contains(&name) {
            return Err(format!("duplicate attribute {name}"));
        }
        names.push(name);
        let after = rest[eq + 1..].trim_start();
        let q = after.chars().next().ok_or("missing attribute value")?;
        if q != '"' && q != '\'' {
            return Err(format!("unquoted value of {name}"));
        }
        let close = after[1..].find(q).ok_or("unterminated attribute value")?;
        let value = &after[1..1 + close];
        if value.contains('<') {
            return Err(format!("'<' in the value of {name}"));
        }
        rest = after[close + 2..].trim_start();
    }
    Ok(())
}

/// The inline `<svg>...</svg>` blocks of an HTML page.
pub fn svg_blocks(html: &str) -> Vec<&str> {
    let mut out = vec![];
    let mut rest = html;
    while let Some(p) = rest.find("<svg") {
        let end = rest[p..].find("</svg>").map(|e| p + e + "</svg>".len()).unwrap_or(rest.len());
        out.push(&rest[p..end]);
        rest = &rest[end..];
    }
    out
}

/// Drawn elements of an SVG (lines, paths, marks): what makes a plot non-empty.
pub fn drawn_elements(svg: &str) -> usize {
    ["<polyline", "<path", "<circle", "<line", "<rect", "<polygon"].iter().map(|t| svg.matches(t).count()).sum()
}

/// assert_eq for long texts: shows the neighbourhood of the first difference only.
pub fn assert_same_text(a: &str, b: &str, what: &str) {
    if a == b {
        return;
    }
    let i = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let ctx = |s: &str| {
        let lo = s.floor_char_boundary(i.saturating_sub(200));
        let hi = s.ceil_char_boundary((i + 200).min(s.len()));
        s[lo..hi].to_string()
    };
    panic!(
        "{what} differ at byte {i} (lengths {} and {}):\n--- left\n{}\n--- right\n{}",
        a.len(),
        b.len(),
        ctx(a),
        ctx(b)
    );
}
