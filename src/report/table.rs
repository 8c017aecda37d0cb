//! The report's tables as data (headers, alignment, cell text), built once per section so that
//! report.md and report.html show the same rows; each writer only renders a `Table` and escapes
//! its cells for its own format.
use super::{fmt_eps, fmt_num, AttackSummary, Report, Stat, SummaryRow};
use crate::privacy::accountant::PrivacyUnit;
use crate::report::record::Epsilon;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// How a column's cells are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// Shown as code (hashes).
    Code,
    /// The row's verdict, highlighted by its `Verdict`.
    Verdict,
}

/// One column; the header is spelled per format (HTML may carry markup, e.g. a subscript).
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub markdown: &'static str,
    pub html: &'static str,
    pub align: Align,
    pub kind: Kind,
}

const fn col(markdown: &'static str, html: &'static str, align: Align) -> Column {
    Column { markdown, html, align, kind: Kind::Text }
}

/// A column headed alike in both formats.
const fn plain(header: &'static str, align: Align) -> Column {
    col(header, header, align)
}

/// The columns that name a summary row in every table of rows: its dataset and method.
const ROW_KEY: [Column; 2] = [plain("dataset", Align::Left), plain("method", Align::Left)];

/// The verdict column, highlighted by the row's `Verdict`.
const VERDICT: Column = Column { kind: Kind::Verdict, ..plain("verdict", Align::Left) };

/// [`ROW_KEY`] followed by `columns`.
fn with_key(columns: Vec<Column>) -> Vec<Column> {
    ROW_KEY.into_iter().chain(columns).collect()
}

/// A summary row's cells under [`ROW_KEY`], followed by `rest`.
fn keyed(s: &SummaryRow, rest: impl IntoIterator<Item = String>) -> Vec<String> {
    [s.dataset.clone(), s.method.clone()].into_iter().chain(rest).collect()
}

/// Whether an attack's empirical lower bound contradicts the claimed epsilon, and whether the
/// attack showed the power to (its positive control refuted the claim).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Violation,
    NotRefuted,
    Inconclusive,
    NotComparable,
}

impl Verdict {
    /// The CSS class the HTML writer highlights with.
    pub fn class(self) -> &'static str {
        match self {
            Verdict::Violation => "violation",
            Verdict::NotRefuted => "not-refuted",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotComparable => "na",
        }
    }
}

/// One row: unescaped cell text, and the verdict when the table has a verdict column.
#[derive(Debug, Clone)]
pub struct Row {
    pub cells: Vec<String>,
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    fn new(columns: Vec<Column>) -> Table {
        Table { columns, rows: vec![] }
    }

    fn push(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len());
        self.rows.push(Row { cells, verdict: None });
    }
}

use Align::{Left as L, Right as R};

/// A metric in percent: "mean ± sd" over seeds, the mean alone for one seed, "-" for none.
pub fn pct(s: Stat) -> String {
    if s.n == 0 {
        return "-".into();
    }
    if s.n == 1 {
        return fmt_num(100.0 * s.mean, 1);
    }
    format!("{} ± {}", fmt_num(100.0 * s.mean, 1), fmt_num(100.0 * s.sd, 1))
}

fn verdict_of(a: &AttackSummary) -> (Verdict, String) {
    let control = a.control.as_ref().map(|c| match c.eps_lb {
        Some(x) => format!("{}, ε_lb {}", c.method, fmt_num(x, 2)),
        None => c.method.clone(),
    });
    match (a.violations, a.verdict.as_str()) {
        (v, _) if v > 0 => (Verdict::Violation, format!("VIOLATION ({v} of {} seeds)", a.auc.n)),
        (_, "no claim") => (Verdict::NotComparable, "no claim (non-private): ε_lb measures leakage".to_string()),
        (_, "not refuted") => (
            Verdict::NotRefuted,
            format!("not refuted (power shown: the same audit refutes the claim on {})", control.unwrap_or_default()),
        ),
        (_, "inconclusive" | "holds") => {
            let why = control.map_or("no positive control ran".to_string(), |c| {
                format!("the same audit does not refute the claim on the control {c}")
            });
            (Verdict::Inconclusive, format!("inconclusive ({why}); for power: {}", power_hint(a)))
        }
        _ => (Verdict::NotComparable, "not comparable".to_string()),
    }
}

/// What would give an inconclusive attack the power to refute the claim.
fn power_hint(a: &AttackSummary) -> &'static str {
    match a.kind.as_str() {
        crate::replay::KIND => "the replay checks sensitivities, not the noise; add a canary audit",
        "canary-aggregation" => "more canaries, or the gdp bound",
        "canary-gradient" => {
            "more canaries (a larger max_canaries, or canaries set; the row's JSON says how many the audit chose \
             and why), or the gdp bound (DP-SGD is Gaussian)"
        }
        k if k.starts_with("canary") => {
            "more canaries or runs, the gdp bound for Gaussian mechanisms, or the in-pipeline canary-aggregation audit"
        }
        _ => "a canary audit (more canaries or runs, the gdp bound for Gaussian mechanisms, or canary-aggregation)",
    }
}

/// The positive control's bound as a cell ("-" without a control or a bound).
fn control_eps_lb(a: &AttackSummary) -> String {
    a.control.as_ref().and_then(|c| c.eps_lb).map_or("-".into(), |x| fmt_num(x, 2))
}

/// A model that reads no edges (MLP) is accounted at the edge unit with ε = 0: exactly true for
/// edges, but it guards nothing else. Said in full so that "edge, claimed 0, target ∞" does not
/// read as a contradiction.
fn uses_no_edges(s: &SummaryRow) -> bool {
    s.privacy_unit == PrivacyUnit::Edge && s.epsilon_claimed == Epsilon::Finite(0.0)
}

/// The privacy unit as a reader needs it: MLP rows say "edge: uses no edges (ε = 0) · node: not private".
pub fn unit_cell(s: &SummaryRow) -> String {
    if uses_no_edges(s) {
        "edge: uses no edges (ε = 0) · node: not private".into()
    } else {
        s.privacy_unit.name().into()
    }
}

/// The claimed ε, per unit where a single number would mislead (see [`unit_cell`]).
fn claimed_cell(s: &SummaryRow) -> String {
    if uses_no_edges(s) {
        "0 (edge) · ∞ (node)".into()
    } else {
        fmt_eps(s.epsilon_claimed)
    }
}

fn eps_lb(a: &AttackSummary) -> String {
    a.eps_lb_max.map_or("-".into(), |x| fmt_num(x, 2))
}

/// A utility in %, marked when it is a link-prediction ROC-AUC rather than an accuracy.
fn utility_cell(s: &crate::report::SummaryRow, v: crate::report::Stat) -> String {
    match s.utility_metric {
        crate::methods::UtilityMetric::Accuracy => pct(v),
        m => format!("{} ({})", pct(v), m.label()),
    }
}

/// The marker of a row whose test accuracy does not clear the majority class.
pub const AT_CHANCE_MARK: &str = "(at chance)";

/// The row's majority-class and chance utility in % ("-" where no cell recorded them).
fn baseline_cell(s: &SummaryRow) -> String {
    match &s.baseline {
        None => "-".into(),
        Some(b) => {
            let majority = b.majority_accuracy.map_or("-".into(), pct);
            format!("{majority} / {}", fmt_num(100.0 * b.chance, 1))
        }
    }
}

/// The sentence under the utility table: which rows are at chance, by which test. None when no
/// row is.
pub fn at_chance_note(r: &Report) -> Option<String> {
    let rows: Vec<String> = r
        .summary
        .iter()
        .filter(|s| s.at_chance == Some(true))
        .map(|s| {
            let b = s.baseline.as_ref();
            format!(
                "{} / {} / ε={} ({} of {} seeds)",
                s.dataset,
                s.method,
                fmt_eps(s.epsilon),
                b.map_or(0, |b| b.at_chance_seeds),
                b.map_or(0, |b| b.tested_seeds)
            )
        })
        .collect();
    let b = r.summary.iter().find(|s| s.at_chance == Some(true))?.baseline.as_ref()?;
    Some(format!(
        "{AT_CHANCE_MARK}: the test accuracy does not clear the majority class (the train split's most frequent \
         class, scored on the test nodes): its {:.0}% {} over the test nodes ({} per seed) is at or below the \
         majority class's accuracy for at least one seed. Such a model learned nothing its ε could protect: \
         {}.",
        100.0 * b.confidence,
        b.test,
        b.test_nodes,
        rows.join("; ")
    ))
}

/// Accuracy (or ROC-AUC, marked) and claimed budget of each (dataset, method, ε).
pub fn utility(r: &Report) -> Table {
    let mut t = Table::new(with_key(vec![
        plain("privacy unit", L),
        plain("target ε", R),
        col("test acc", "test acc %", R),
        col("majority / chance", "majority / chance %", R),
        col("train acc", "train acc %", R),
        plain("claimed ε", R),
        col("ε (RDP)", "ε RDP", R),
        col("ε (PLD)", "ε PLD", R),
        plain("δ", R),
    ]));
    for s in &r.summary {
        // Unmeasured utility is unknown, not 0.
        let measured = r.cells_of(s).any(|c| c.utility_measured());
        let shown = |v| if measured { utility_cell(s, v) } else { "-".into() };
        t.push(keyed(
            s,
            [
                unit_cell(s),
                fmt_eps(s.epsilon),
                if measured && s.at_chance == Some(true) {
                    format!("{} {AT_CHANCE_MARK}", shown(s.test_accuracy))
                } else {
                    shown(s.test_accuracy)
                },
                baseline_cell(s),
                shown(s.train_accuracy),
                claimed_cell(s),
                fmt_eps(s.epsilon_rdp),
                s.epsilon_pld.map_or("-".into(), fmt_eps),
                if s.delta > 0.0 { format!("{:.1e}", s.delta) } else { "0".into() },
            ],
        ));
    }
    t
}

/// Each attack's success metrics; with `verdicts`, also its lower bound, the claim and the verdict.
pub fn attacks(r: &Report, verdicts: bool) -> Table {
    let mut columns = with_key(vec![
        plain("ε", R),
        plain("attack", L),
        col("AUC", "AUC %", R),
        col("TPR@0.1%", "TPR@0.1% FPR", R),
        col("TPR@1%", "TPR@1% FPR", R),
        col("bal. acc", "bal. acc %", R),
    ]);
    if verdicts {
        columns.push(col("ε_lb", "ε<sub>lb</sub>", R));
        columns.push(col("control ε_lb", "control ε<sub>lb</sub>", R));
        columns.push(plain("claimed ε", R));
        columns.push(VERDICT);
    }
    let mut t = Table::new(columns);
    for s in &r.summary {
        for a in &s.attacks {
            let mut cells = keyed(
                s,
                [
                    fmt_eps(s.epsilon),
                    a.attack.clone(),
                    pct(a.auc),
                    pct(a.tpr_at_0_1pct_fpr),
                    pct(a.tpr_at_1pct_fpr),
                    pct(a.balanced_accuracy),
                ],
            );
            let mut verdict = None;
            if verdicts {
                let (v, text) = verdict_of(a);
                cells.extend([eps_lb(a), control_eps_lb(a), claimed_cell(s), text]);
                verdict = Some(v);
            }
            t.rows.push(Row { cells, verdict });
        }
    }
    t
}

/// Each attack's empirical lower bound next to the claimed ε, with the verdict.
pub fn claims(r: &Report) -> Table {
    let mut t = Table::new(with_key(vec![
        plain("unit", L),
        plain("attack", L),
        plain("claimed ε", R),
        col("ε_lb", "ε<sub>lb</sub>", R),
        col("control ε_lb", "control ε<sub>lb</sub>", R),
        VERDICT,
    ]));
    for s in &r.summary {
        for a in &s.attacks {
            let (v, text) = verdict_of(a);
            let cells = keyed(s, [unit_cell(s), a.attack.clone(), claimed_cell(s), eps_lb(a), control_eps_lb(a), text]);
            t.rows.push(Row { cells, verdict: Some(v) });
        }
    }
    t
}

/// The budget components of the first seed of each (dataset, method, ε), each at the total δ.
pub fn budget(r: &Report) -> Table {
    let mut t = Table::new(with_key(vec![
        plain("ε", R),
        plain("component", L),
        plain("mechanism", L),
        plain("ε of component", R),
    ]));
    for s in &r.summary {
        if let Some(c) = r.cells_of(s).next() {
            for comp in &c.budget.components {
                t.push(keyed(
                    s,
                    [fmt_eps(s.epsilon), comp.name.clone(), comp.mechanism.clone(), fmt_num(comp.epsilon, 3)],
                ));
            }
        }
    }
    t
}

/// The datasets with their provenance; hashes cut to `sha_chars` characters.
pub fn datasets(r: &Report, sha_chars: usize) -> Table {
    let mut t = Table::new(vec![
        plain("dataset", L),
        plain("source", L),
        Column { kind: Kind::Code, ..plain("sha256", L) },
        plain("nodes", R),
        plain("edges", R),
        plain("features", R),
        plain("classes", R),
    ]);
    for d in &r.datasets {
        t.push(vec![
            d.label.clone(),
            d.source.clone(),
            d.sha256.chars().take(sha_chars).collect(),
            d.nodes.to_string(),
            d.undirected_edges.to_string(),
            d.features.to_string(),
            d.classes.to_string(),
        ]);
    }
    t
}

/// Each private (dataset, method, ε)'s claim as stated and as recomputed by the accountant from
/// the mechanism the run recorded (first seed; the seeds share it), the δ and why it was chosen,
/// and whether the claim is reproduced or flagged (see `report::claim`).
pub fn recomputed_claims(r: &Report) -> Table {
    let mut t = Table::new(with_key(vec![
        plain("ε stated", R),
        plain("ε recomputed", R),
        plain("δ", R),
        plain("why this δ", L),
        plain("check", L),
    ]));
    for s in &r.summary {
        let Some(claim) = r.cells_of(s).next().and_then(|c| c.claim.as_ref()) else { continue };
        if s.privacy_unit == crate::privacy::accountant::PrivacyUnit::None {
            continue;
        }
        t.push(keyed(
            s,
            [
                fmt_eps(claim.stated),
                claim.recomputed.map_or("-".into(), fmt_eps),
                if claim.delta == 0.0 { "0".into() } else { format!("{:e}", claim.delta) },
                claim.delta_reason.clone(),
                if claim.is_flagged() { format!("FLAGGED: {}", claim.flags.join("; ")) } else { "reproduced".into() },
            ],
        ));
    }
    t
}

/// How many private (dataset, method, ε) claims are flagged (first seed of each).
pub fn flagged_claims(r: &Report) -> usize {
    r.summary
        .iter()
        .filter_map(|s| r.cells_of(s).next().and_then(|c| c.claim.as_ref()))
        .filter(|c| c.is_flagged())
        .count()
}
