//! report.md: the report as Markdown tables (for reviews, pull requests, terminals).
use super::table::{self, Align, Kind, Table, Verdict};
use super::Report;
use std::fmt::Write;

/// Escapes the characters that break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Audit report: {}\n", cell(&r.name));
    if !r.description.is_empty() {
        let _ = writeln!(o, "{}\n", r.description);
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
        "Accuracy in %, mean ± sd over seeds. The claimed epsilon is the accountant's (the tighter of RDP and PLD).\n"
    );
    table_md(&mut o, &table::utility(r));

    if r.summary.iter().any(|s| !s.attacks.is_empty()) {
        let _ = writeln!(o, "\n## Attacks\n");
        let _ = writeln!(
            o,
            "AUC, TPR at 0.1% and 1% FPR and balanced accuracy in %, mean ± sd over seeds. ε_lb is the largest \
             empirical lower bound over seeds (Clopper-Pearson, 95%), given only where the attack's game matches the \
             claimed privacy unit; a violation means ε_lb > claimed ε.\n"
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
