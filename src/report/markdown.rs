//! report.md: the report as Markdown tables (for reviews, pull requests, terminals).
use super::{fmt_eps, fmt_num, unit_name, Report, Stat};
use std::fmt::Write;

fn pm(s: Stat, decimals: usize) -> String {
    if s.n == 0 {
        return "-".into();
    }
    if s.n == 1 {
        return fmt_num(s.mean, decimals);
    }
    format!("{} ± {}", fmt_num(s.mean, decimals), fmt_num(s.sd, decimals))
}

fn pct(s: Stat) -> String {
    pm(Stat { mean: s.mean * 100.0, sd: s.sd * 100.0, n: s.n }, 1)
}

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
    let _ = writeln!(
        o,
        "| dataset | source | sha256 | nodes | edges | features | classes |\n|---|---|---|--:|--:|--:|--:|"
    );
    for d in &r.datasets {
        let _ = writeln!(
            o,
            "| {} | {} | `{}` | {} | {} | {} | {} |",
            cell(&d.label),
            cell(&d.source),
            &d.sha256[..16.min(d.sha256.len())],
            d.nodes,
            d.undirected_edges,
            d.features,
            d.classes
        );
    }

    let _ = writeln!(o, "\n## Utility and claimed budget\n");
    let _ = writeln!(
        o,
        "Accuracy in %, mean ± sd over seeds. The claimed epsilon is the accountant's (the tighter of RDP and PLD).\n"
    );
    let _ = writeln!(
        o,
        "| dataset | method | privacy unit | target ε | test acc | train acc | claimed ε | ε (RDP) | ε (PLD) | δ |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|"
    );
    for s in &r.summary {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&s.dataset),
            cell(&s.method),
            unit_name(s.privacy_unit),
            fmt_eps(s.epsilon),
            pct(s.test_accuracy),
            pct(s.train_accuracy),
            fmt_eps(s.epsilon_claimed),
            fmt_eps(s.epsilon_rdp),
            s.epsilon_pld.map_or("-".into(), fmt_eps),
            if s.delta > 0.0 { format!("{:.1e}", s.delta) } else { "0".into() }
        );
    }

    if r.summary.iter().any(|s| !s.attacks.is_empty()) {
        let _ = writeln!(o, "\n## Attacks\n");
        let _ = writeln!(
            o,
            "AUC, TPR at 0.1% and 1% FPR and balanced accuracy in %, mean ± sd over seeds. ε_lb is the largest \
             empirical lower bound over seeds (Clopper-Pearson, 95%), given only where the attack's game matches the \
             claimed privacy unit; a violation means ε_lb > claimed ε.\n"
        );
        let _ = writeln!(
            o,
            "| dataset | method | ε | attack | AUC | TPR@0.1% | TPR@1% | bal. acc | ε_lb | claimed ε | verdict |\n|---|---|--:|---|--:|--:|--:|--:|--:|--:|---|"
        );
        for s in &r.summary {
            for a in &s.attacks {
                let verdict = match (a.eps_lb_max, a.violations) {
                    (_, v) if v > 0 => format!("**VIOLATION** ({v} of {} seeds)", a.auc.n),
                    (Some(_), _) => "holds".to_string(),
                    (None, _) => "not comparable".to_string(),
                };
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    cell(&s.dataset),
                    cell(&s.method),
                    fmt_eps(s.epsilon),
                    cell(&a.attack),
                    pct(a.auc),
                    pct(a.tpr_at_0_1pct_fpr),
                    pct(a.tpr_at_1pct_fpr),
                    pct(a.balanced_accuracy),
                    a.eps_lb_max.map_or("-".into(), |x| fmt_num(x, 2)),
                    fmt_eps(s.epsilon_claimed),
                    verdict
                );
            }
        }
        let _ = writeln!(o, "\n### Games\n");
        let mut seen: Vec<&str> = vec![];
        for a in r.summary.iter().flat_map(|s| &s.attacks) {
            if !seen.contains(&a.attack.as_str()) {
                seen.push(&a.attack);
                let _ = writeln!(o, "- **{}** ({}): {}", cell(&a.attack), a.kind, a.game.replace('\n', " "));
            }
        }
    }

    let _ = writeln!(o, "\n## Budget breakdown\n");
    let _ = writeln!(o, "First seed of each private (dataset, method, ε); every component's ε is at the total δ.\n");
    let _ = writeln!(o, "| dataset | method | ε | component | mechanism | ε of component |\n|---|---|--:|---|---|--:|");
    for s in &r.summary {
        if let Some(c) = r.cells_of(s).next() {
            for comp in &c.budget.components {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} |",
                    cell(&s.dataset),
                    cell(&s.method),
                    fmt_eps(s.epsilon),
                    cell(&comp.name),
                    cell(&comp.mechanism),
                    fmt_num(comp.epsilon, 3)
                );
            }
        }
    }
    o
}
