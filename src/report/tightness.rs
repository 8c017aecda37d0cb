//! "Is the accountant tight?": the report section of the mechanism-level audits (attack kind
//! `mechanism`). Per mechanism: the accountant's claimed epsilon, the certified
//! eps_lb and their ratio, as a table and a bar chart. An accountant whose claims the audits
//! approach from below is tight; a bar above its claim is a violation.
use super::plots::{category_labels, plot_err, Figure};
use super::record::{AttackRecord, TprAtFpr};
use super::Report;
use crate::error::Result;
use crate::privacy::mechanisms::audit::MechanismAudit;
use plotters::prelude::*;

/// The attack kind of a mechanism-level audit in configs.
pub const KIND: &str = "mechanism";

/// The report's record of one mechanism audit. Its `eps_lb` stays empty: the bound is about the
/// mechanism's own claim (in `details`), not the cell's, and must not be compared with the
/// latter. `violation` is the audit's own verdict, so `gnnaudit check` fails on it.
pub fn record(label: String, r: &MechanismAudit) -> AttackRecord {
    let mut details = serde_json::to_value(r).unwrap_or_default();
    if let Some(o) = details.as_object_mut() {
        o.remove("seconds"); // keeps report.json deterministic
    }
    let s = r.summary.as_ref();
    AttackRecord {
        attack: label,
        kind: KIND.to_string(),
        game: format!(
            "mechanism-level audit of {} on its worst-case neighbouring pair, {} runs per input; statistic: {}",
            r.mechanism, r.trials, r.statistic
        ),
        auc: s.map_or(0.5, |s| s.auc),
        tpr_at_fpr: TprAtFpr {
            fpr_0_1pct: s.map_or(0.0, |s| s.tpr_at_fpr.at_0_001),
            fpr_1pct: s.map_or(0.0, |s| s.tpr_at_fpr.at_0_01),
        },
        balanced_accuracy: s.map_or(0.5, |s| s.balanced_accuracy),
        eps_lb: None,
        verdict: Some(r.verdict.name().to_string()),
        violation: r.verdict == gnnaudit_attacks::stats::Verdict::Violated,
        control: Some(crate::report::record::ControlRecord {
            method: format!("{} with its noise switched off", r.mechanism),
            eps_lb: Some(r.control_eps_lb),
            caught: r.control_eps_lb > r.claimed_epsilon,
        }),
        roc: s.map_or(vec![], |s| s.roc.iter().map(|p| (p.fpr, p.tpr)).collect()),
        details,
    }
}

/// One mechanism audit as the section shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub attack: String,
    pub mechanism: String,
    pub claimed: f64,
    pub paper: Option<f64>,
    pub eps_lb: f64,
    pub tightness: f64,
    pub verdict: String,
    pub paper_verdict: Option<String>,
    pub bound: String,
    pub trials: u64,
}

/// The attack kind of the in-pipeline DP-SGD audit: its rows join the section, one per
/// (dataset, method, epsilon) cell and label (the first seed), compared with the claim of the
/// method's DP-SGD component.
pub const GRADIENT_KIND: &str = "canary-gradient";

/// The mechanism audits of a report, one row per attack label (its first cell: the audit does
/// not depend on the cell's target), then the in-pipeline gradient-canary audits.
pub fn rows(r: &Report) -> Vec<Row> {
    let mut out = mechanism_rows(r);
    let mut seen: Vec<String> = vec![];
    for c in &r.cells {
        for a in c.attacks.iter().filter(|a| a.kind == GRADIENT_KIND) {
            let label = format!("{} ({} {} ε {})", a.attack, c.dataset, c.method, c.epsilon);
            let d = &a.details;
            let num = |k: &str| d.get(k).and_then(|v| v.as_f64());
            let (Some(claimed), Some(eps_lb)) = (num("claimed_epsilon"), a.eps_lb) else { continue };
            if seen.contains(&label) {
                continue;
            }
            seen.push(label.clone());
            let cert = d.get("certificate");
            let trials = cert.and_then(|c| Some(c.get("positives")?.as_u64()? + c.get("negatives")?.as_u64()?));
            let total = num("method_claimed_epsilon").map_or("none".to_string(), fmt);
            out.push(Row {
                attack: label,
                mechanism: format!(
                    "DP-SGD of {} in-pipeline ({} steps; the method's total claim ε {total})",
                    c.method,
                    d.get("steps").and_then(|v| v.as_u64()).unwrap_or(0)
                ),
                claimed,
                paper: None,
                eps_lb,
                tightness: num("tightness").unwrap_or(eps_lb / claimed),
                verdict: a.verdict.clone().unwrap_or_default(),
                paper_verdict: None,
                bound: cert.and_then(|c| c.get("bound")).and_then(|v| v.as_str()).unwrap_or_default().to_string(),
                trials: trials.unwrap_or(0),
            });
        }
    }
    out
}

/// The mechanism-level audits' rows.
fn mechanism_rows(r: &Report) -> Vec<Row> {
    let mut out: Vec<Row> = vec![];
    for a in r.cells.iter().flat_map(|c| &c.attacks).filter(|a| a.kind == KIND) {
        if out.iter().any(|x| x.attack == a.attack) {
            continue;
        }
        let d = &a.details;
        let num = |k: &str| d.get(k).and_then(|v| v.as_f64());
        let text = |k: &str| d.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(claimed), Some(eps_lb)) = (num("claimed_epsilon"), num("eps_lb")) else { continue };
        out.push(Row {
            attack: a.attack.clone(),
            mechanism: text("mechanism").unwrap_or_default(),
            claimed,
            paper: num("paper_epsilon"),
            eps_lb,
            tightness: num("tightness").unwrap_or(0.0),
            verdict: a.verdict.clone().unwrap_or_default(),
            paper_verdict: text("paper_verdict"),
            bound: text("bound").unwrap_or_default(),
            trials: d.get("trials").and_then(|v| v.as_u64()).unwrap_or(0),
        });
    }
    out
}

const INTRO: &str = "Each privacy mechanism run many times on its own worst-case neighbouring pair; ε_lb is \
    certified at 95% confidence (the test is fixed before sampling). Tightness = ε_lb / claimed ε: near 1 the \
    accountant is tight, above 1 the claim is violated.";

fn fmt(x: f64) -> String {
    format!("{x:.3}")
}

/// The section as Markdown (nothing when the report has no mechanism audit).
pub fn markdown(o: &mut String, r: &Report) {
    let rows = rows(r);
    if rows.is_empty() {
        return;
    }
    o.push_str("\n## Is the accountant tight?\n\n");
    o.push_str(INTRO);
    o.push_str("\n\n| audit | mechanism | claimed ε | paper ε | ε_lb | tightness | bound | trials | verdict |\n");
    o.push_str("|---|---|--:|--:|--:|--:|---|--:|---|\n");
    for x in &rows {
        let verdict = match &x.paper_verdict {
            Some(p) => format!("{} (paper claim: {p})", x.verdict),
            None => x.verdict.clone(),
        };
        let verdict = if x.verdict == "violated" { verdict.replacen("violated", "**VIOLATED**", 1) } else { verdict };
        o.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            x.attack,
            x.mechanism,
            fmt(x.claimed),
            x.paper.map_or("—".into(), fmt),
            fmt(x.eps_lb),
            fmt(x.tightness),
            x.bound,
            x.trials,
            verdict
        ));
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The section as HTML, with the bar chart.
pub fn html(o: &mut String, r: &Report) {
    let rows = rows(r);
    if rows.is_empty() {
        return;
    }
    o.push_str(&format!("<h2 id=\"tightness\">Is the accountant tight?</h2>\n<p class=\"muted\">{}</p>\n", esc(INTRO)));
    match chart(&rows) {
        Ok(f) => {
            let svg = f.svg.find("<svg").map_or(f.svg.as_str(), |i| &f.svg[i..]);
            o.push_str(&format!(
                "<figure id=\"{}\">{svg}<figcaption>{}</figcaption></figure>\n",
                f.id,
                esc(&f.caption)
            ));
        }
        Err(e) => tracing::warn!("could not draw the tightness chart: {e}"),
    }
    o.push_str("<table><tr><th class=\"l\">audit</th><th class=\"l\">mechanism</th><th>claimed ε</th><th>paper ε</th><th>ε<sub>lb</sub></th><th>tightness</th><th class=\"l\">bound</th><th>trials</th><th class=\"l\">verdict</th></tr>\n");
    for x in &rows {
        let mut verdict = esc(&x.verdict);
        if x.verdict == "violated" {
            verdict = format!("<b style=\"color:#b00\">{verdict}</b>");
        }
        if let Some(p) = &x.paper_verdict {
            verdict += &format!(" (paper claim: {})", esc(p));
        }
        o.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>\n",
            esc(&x.attack),
            esc(&x.mechanism),
            fmt(x.claimed),
            x.paper.map_or("—".into(), fmt),
            fmt(x.eps_lb),
            fmt(x.tightness),
            esc(&x.bound),
            x.trials,
            verdict
        ));
    }
    o.push_str("</table>\n");
}

/// Grouped bars per mechanism audit: claimed ε (grey), paper ε where one is published (orange),
/// certified ε_lb (blue, red when it exceeds the claim).
pub fn chart(rows: &[Row]) -> Result<Figure> {
    const GREY: RGBColor = RGBColor(0xbb, 0xbb, 0xbb);
    const ORANGE: RGBColor = RGBColor(0xf2, 0x8e, 0x2b);
    const BLUE: RGBColor = RGBColor(0x4e, 0x79, 0xa7);
    const RED: RGBColor = RGBColor(0xe1, 0x57, 0x59);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let top = rows.iter().flat_map(|r| [r.claimed, r.eps_lb, r.paper.unwrap_or(0.0)]).fold(0.0f64, f64::max);
        let n = rows.len();
        let labels: Vec<String> = rows.iter().map(|r| r.attack.clone()).collect();
        let mut c = ChartBuilder::on(&root)
            .caption("Claimed ε vs certified ε_lb per mechanism", ("sans-serif", 21))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..(top * 1.15).max(0.1))
            .map_err(plot_err)?;
        let fmt_x = category_labels(&labels);
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(n + 1)
            .x_label_formatter(&fmt_x)
            .y_desc("ε")
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(plot_err)?;
        for (i, r) in rows.iter().enumerate() {
            let x = i as f64;
            let mut bars = vec![(r.claimed, GREY)];
            if let Some(p) = r.paper {
                bars.push((p, ORANGE));
            }
            bars.push((r.eps_lb, if r.eps_lb > r.claimed { RED } else { BLUE }));
            let w = 0.7 / bars.len() as f64;
            for (k, (v, col)) in bars.into_iter().enumerate() {
                let x0 = x - 0.35 + k as f64 * w;
                c.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x0 + w * 0.9, v)], col.filled())))
                    .map_err(plot_err)?;
            }
        }
        root.present().map_err(plot_err)?;
    }
    Ok(Figure {
        id: "tightness".into(),
        title: "Is the accountant tight?".into(),
        caption: "Per mechanism audit: grey = claimed ε (accountant), orange = a published claim where it differs, \
                  blue = certified ε_lb (red when above the claim: violated)."
            .into(),
        svg,
    })
}
