//! report.md: the report as Markdown tables (for reviews, pull requests, terminals).
use super::table::{self, Align, Kind, Table, Verdict};
use super::Report;
use std::fmt::Write;

/// Escapes the characters that break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Free text from the config (its description) as inert Markdown: HTML in it is shown, not run,
/// by renderers that pass inline HTML through.
fn text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A command shown in a table cell as code, whatever backticks it holds.
fn code_cell(s: &str) -> String {
    let fence = if s.contains('`') { "``" } else { "`" };
    format!("{fence} {} {fence}", cell(s))
}

pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Audit report: {}\n", cell(&r.name));
    if !r.description.is_empty() {
        let _ = writeln!(o, "{}\n", text(&r.description));
    }
    let dirty = match r.tool.git_dirty {
        Some(true) => " (uncommitted changes)",
        _ => "",
    };
    let _ = writeln!(o, "| | |\n|---|---|");
    let _ = writeln!(o, "| tool | {} {} |", r.tool.name, r.tool.version);
    let _ = writeln!(o, "| git commit | `{}`{dirty} |", r.tool.git_commit);
    let _ = writeln!(
        o,
        "| config | `{}` (sha256 `{}`) |",
        cell(&r.run.config_path),
        &r.config_sha256[..16.min(r.config_sha256.len())]
    );
    for t in r.config.target.iter().flat_map(|t| t.iter()) {
        if let crate::external::TargetSpec::Command { command, .. } = &t.spec {
            let _ = writeln!(o, "| target command ({}) | {} |", cell(&t.label()), code_cell(command));
        }
    }
    if let Some(crate::external::TargetSpec::Command { command, .. }) = &r.config.control {
        let _ = writeln!(o, "| control command | {} |", code_cell(command));
    }
    let _ = writeln!(o, "| seeds | {:?} |", r.config.seed_list());
    let _ = writeln!(
        o,
        "| run | {} to {}, {:.0} s, {} cells computed, {} reused |",
        r.run.started_at, r.run.finished_at, r.run.wall_seconds, r.run.cells_computed, r.run.cells_reused
    );

    let _ = writeln!(o, "\n## Datasets\n");
    table_md(&mut o, &table::datasets(r, 16));

    let _ = writeln!(o, "\n## Utility and claimed budget\n");
    let _ = writeln!(
        o,
        "Accuracy in % (ROC-AUC where marked: link prediction), mean ± sd over seeds, beside the majority class (the train split's most frequent class, scored on the test split) and chance (1 / classes; ROC-AUC 0.5). The claimed epsilon is the accountant's (the tighter of RDP and PLD).\n"
    );
    table_md(&mut o, &table::utility(r));
    if let Some(note) = table::at_chance_note(r) {
        let _ = writeln!(o, "\n{}", cell(&note));
    }

    let claims = table::recomputed_claims(r);
    if !claims.rows.is_empty() {
        let _ = writeln!(o, "\n## Recomputed claims\n");
        let _ = writeln!(
            o,
            "Each claim recomputed by the accountant from the mechanism the run recorded (noise, steps, sampling \
             rate, sensitivity) at the recorded δ. Flagged: a claim the mechanism does not reproduce, or a δ not \
             below 1/N for N private units. {} of {} flagged.\n",
            table::flagged_claims(r),
            claims.rows.len()
        );
        table_md(&mut o, &claims);
    }

    if r.summary.iter().any(|s| !s.attacks.is_empty()) {
        let _ = writeln!(o, "\n## Attacks\n");
        let _ = writeln!(
            o,
            "AUC, TPR at 0.1% and 1% FPR and balanced accuracy in %, mean ± sd over seeds. ε_lb is the largest \
             empirical lower bound over seeds, each seed certified at confidence 1 - α/seeds so that the largest is \
             still a bound at 1 - α (see \"How to read the bounds\"); it is given only where the attack's game \
             matches the claimed privacy unit, and a violation means ε_lb > claimed ε.\n"
        );
        table_md(&mut o, &table::attacks(r, true));
        let _ = writeln!(o, "\n### Games\n");
        let mut seen: Vec<&str> = vec![];
        for a in r.summary.iter().flat_map(|s| &s.attacks) {
            if !seen.contains(&a.attack.as_str()) {
                seen.push(&a.attack);
                let _ = writeln!(o, "- **{}** ({}): {}", cell(&a.attack), a.kind, a.game.replace('\n', " "));
            }
        }
    }

    let bounds = bounds_used(r);
    if !bounds.is_empty() {
        let _ = writeln!(o, "\n### How to read the bounds\n");
        for b in bounds {
            let _ = writeln!(o, "- **{}**: {}. {}", b.name(), b.describe(), how_to_read(b));
        }
    }
    super::tightness::markdown(&mut o, r);

    let _ = writeln!(o, "\n## Budget breakdown\n");
    let _ = writeln!(o, "First seed of each private (dataset, method, ε); every component's ε is at the total δ.\n");
    table_md(&mut o, &table::budget(r));
    o
}

/// One pipe table, cells escaped with `cell()`; hashes as code, violations in bold.
fn table_md(o: &mut String, t: &Table) {
    let headers: Vec<&str> = t.columns.iter().map(|c| c.markdown).collect();
    let rule: Vec<&str> = t.columns.iter().map(|c| if c.align == Align::Left { "---" } else { "--:" }).collect();
    let _ = writeln!(o, "| {} |\n|{}|", headers.join(" | "), rule.join("|"));
    for row in &t.rows {
        let cells: Vec<String> = t
            .columns
            .iter()
            .zip(&row.cells)
            .map(|(c, text)| match (c.kind, row.verdict) {
                (Kind::Code, _) => format!("`{}`", cell(text)),
                (Kind::Verdict, Some(Verdict::Violation)) => cell(text).replacen("VIOLATION", "**VIOLATION**", 1),
                _ => cell(text),
            })
            .collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
}

/// The bounds behind the report's eps_lb figures, in a fixed order.
pub fn bounds_used(r: &Report) -> Vec<gnnaudit_attacks::stats::BoundKind> {
    use gnnaudit_attacks::stats::BoundKind;
    let names: Vec<&str> = r
        .cells
        .iter()
        .flat_map(|c| &c.attacks)
        .filter_map(|a| a.details.get("certificate").and_then(|c| c.get("bound")).and_then(|b| b.as_str()))
        .collect();
    BoundKind::ALL.into_iter().filter(|b| names.contains(&b.name())).collect()
}

/// What a figure from this bound lets a reader conclude, and what it does not.
pub fn how_to_read(b: gnnaudit_attacks::stats::BoundKind) -> &'static str {
    use gnnaudit_attacks::stats::BoundKind;
    match b {
        BoundKind::ClopperPearson => {
            "Read ε_lb as: with the stated confidence, no mechanism with a smaller ε (at the claimed δ) could have \
             produced an attack this good on these trials. It needs no assumption about the noise, so it is \
             conservative: it is limited by ln(trials) and rarely reaches a tight claim. ε_lb = 0 means the attack \
             showed nothing at this power, not that the model is private; check 'max certifiable' in the certificate"
        }
        BoundKind::Gdp => {
            "Read ε_lb as the ε of the weakest Gaussian mechanism consistent with the observed TPR/FPR. It is close to \
             the truth for Gaussian mechanisms (GAP's aggregation, DP-SGD) and is the bound for tight audits of them; \
             against a mechanism with another trade-off curve (randomised response) it is not a valid lower bound"
        }
        BoundKind::OneRun => {
            "Read ε_lb as what one training run with many canaries (independent coins) certifies; one run costs no \
             retraining, and the bound is looser than a many-run audit at the same number of canaries"
        }
        BoundKind::OneRunFdp => {
            "As the one-run bound, but judged against the Gaussian trade-off curve of (ε, δ): tighter for Gaussian \
             mechanisms, with the same assumption as gdp"
        }
    }
}
