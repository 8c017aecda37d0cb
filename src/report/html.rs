//! report.html: one self-contained page (inline CSS and SVG, no scripts, no external resources)
//! that a reviewer can open offline or attach to a ticket.
use super::plots::{figures, Figure};
use super::table::{self, Align, Kind, Table, Verdict};
use super::Report;
use std::fmt::Write;

const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1.5em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}th,td{border:1px solid #ddd;padding:.3em .6em;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}code{font-size:.9em}
tr.violation td{background:#fde2e1}td.violation{color:#b00;font-weight:bold}td.not-refuted{color:#2a7a2a}td.inconclusive{color:#a60}td.na{color:#888}p.at-chance{color:#b00}
figure{margin:1em 0;border:1px solid #eee;padding:.5em;display:inline-block;max-width:100%}
figure svg{max-width:100%;height:auto;display:block}figcaption{font-size:.85em;color:#555;max-width:760px}
.muted{color:#666;font-size:.9em}nav a{margin-right:1em}
";

/// HTML-escapes text for element content and attribute values.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The figure as inline SVG (the XML prologue, if any, removed).
fn figure_html(o: &mut String, f: &Figure) {
    let svg = f.svg.find("<svg").map_or(f.svg.as_str(), |i| &f.svg[i..]);
    let _ = writeln!(o, "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>", esc(&f.id), svg, esc(&f.caption));
}

pub fn render(r: &Report) -> String {
    let figs = figures(r).unwrap_or_else(|e| {
        tracing::warn!("could not draw the report's figures: {e}");
        vec![]
    });
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>gnnaudit: {}</title>\n<style>{CSS}</style>\n</head>\n<body>",
        esc(&r.name)
    );
    let _ = writeln!(o, "<h1>Audit report: {}</h1>", esc(&r.name));
    if !r.description.is_empty() {
        let _ = writeln!(o, "<p>{}</p>", esc(&r.description));
    }
    let dirty = if r.tool.git_dirty == Some(true) { " (uncommitted changes)" } else { "" };
    let _ = writeln!(
        o,
        "<p class=\"muted\">{} {}, commit <code>{}</code>{dirty}; config sha256 <code>{}</code>; seeds {:?}; run {} to {} ({:.0} s, {} cells computed, {} reused).</p>",
        esc(&r.tool.name),
        esc(&r.tool.version),
        esc(&r.tool.git_commit),
        esc(&r.config_sha256),
        r.config.seed_list(),
        esc(&r.run.started_at),
        esc(&r.run.finished_at),
        r.run.wall_seconds,
        r.run.cells_computed,
        r.run.cells_reused
    );
    let _ = writeln!(
        o,
        "<nav><a href=\"#claims\">Claims vs attacks</a><a href=\"#utility\">Utility</a><a href=\"#attacks\">Attacks</a><a href=\"#roc\">ROC curves</a><a href=\"#budget\">Budget</a><a href=\"#datasets\">Datasets</a></nav>"
    );

    claims_section(&mut o, r);
    super::tightness::html(&mut o, r);

    let _ = writeln!(o, "<h2 id=\"utility\">Utility</h2>");
    let _ = writeln!(
        o,
        "<p>Test accuracy beside the majority class (the train split's most frequent class, scored on the test split) and chance (1 / classes; ROC-AUC 0.5).</p>"
    );
    table_html(&mut o, &table::utility(r));
    if let Some(note) = table::at_chance_note(r) {
        let _ = writeln!(o, "<p class=\"at-chance\">{}</p>", esc(&note));
    }
    for f in figs.iter().filter(|f| f.id.starts_with("acc-")) {
        figure_html(&mut o, f);
    }

    let _ = writeln!(o, "<h2 id=\"attacks\">Attacks</h2>");
    let any_attack = r.summary.iter().any(|s| !s.attacks.is_empty());
    if !any_attack {
        let _ = writeln!(o, "<p>No attacks were configured.</p>");
    } else {
        table_html(&mut o, &table::attacks(r, false));
        let mut seen: Vec<&str> = vec![];
        let _ = writeln!(o, "<ul>");
        for a in r.summary.iter().flat_map(|s| &s.attacks) {
            if !seen.contains(&a.attack.as_str()) {
                seen.push(&a.attack);
                let _ = writeln!(o, "<li><b>{}</b> ({}): {}</li>", esc(&a.attack), esc(&a.kind), esc(&a.game));
            }
        }
        let _ = writeln!(o, "</ul>");
    }
    for f in figs.iter().filter(|f| f.id.starts_with("auc-")) {
        figure_html(&mut o, f);
    }
    let _ = writeln!(o, "<h2 id=\"roc\">ROC curves</h2>");
    for f in figs.iter().filter(|f| f.id.starts_with("roc-")) {
        figure_html(&mut o, f);
    }

    let _ = writeln!(o, "<h2 id=\"budget\">Budget breakdown</h2><p class=\"muted\">First seed of each (dataset, method, ε); each component's ε at the total δ.</p>");
    table_html(&mut o, &table::budget(r));

    let _ = writeln!(o, "<h2 id=\"datasets\">Datasets</h2>");
    table_html(&mut o, &table::datasets(r, usize::MAX));
    let _ = writeln!(o, "</body>\n</html>");
    o
}

/// The empirical lower bound next to the claim, violations highlighted.
fn claims_section(o: &mut String, r: &Report) {
    let _ = writeln!(o, "<h2 id=\"claims\">Claimed ε vs empirical lower bounds</h2>");
    let _ = writeln!(
        o,
        "<p class=\"muted\">ε<sub>lb</sub> is the largest empirical lower bound over seeds (one-sided Clopper-Pearson, 95%). \
         It is only comparable with the claim when the attack's game differs in exactly one unit of the claimed kind \
         (node membership vs node-level DP, canary edges vs edge-level DP); other attacks measure practical leakage \
         and show “not comparable”.</p>"
    );
    let claims = table::recomputed_claims(r);
    if !claims.rows.is_empty() {
        let flagged = table::flagged_claims(r);
        if flagged > 0 {
            let _ = writeln!(o, "<p><b style=\"color:#b00\">{flagged} claim(s) flagged: the accountant cannot reproduce them from the recorded mechanism, or their δ is not below 1/N (see “Recomputed claims”).</b></p>");
        } else {
            let _ = writeln!(
                o,
                "<p>Every claim is reproduced by the accountant from the recorded mechanism, at a δ below 1/N.</p>"
            );
        }
        let _ = writeln!(o, "<h3 id=\"recomputed\">Recomputed claims</h3>");
        table_html(o, &claims);
    }
    if r.summary.iter().all(|s| s.attacks.is_empty()) {
        let _ = writeln!(o, "<p>No attacks were configured: this is a utility-only report.</p>");
        return;
    }
    let violations: usize = r.summary.iter().flat_map(|s| &s.attacks).map(|a| a.violations).sum();
    if violations > 0 {
        let _ = writeln!(o, "<p><b style=\"color:#b00\">{violations} violation(s): an attack proved more leakage than the claimed ε allows.</b></p>");
    } else {
        let _ = writeln!(o, "<p>No attack exceeded a claimed ε.</p>");
    }
    table_html(o, &table::claims(r));
}

/// One table: left-aligned columns get class "l" (the CSS right-aligns the rest), violations a
/// highlighted row and verdict cell.
fn table_html(o: &mut String, t: &Table) {
    let left = |a: Align| if a == Align::Left { " class=\"l\"" } else { "" };
    o.push_str("<table><tr>");
    for c in &t.columns {
        let _ = write!(o, "<th{}>{}</th>", left(c.align), c.html);
    }
    o.push_str("</tr>\n");
    for row in &t.rows {
        o.push_str(if row.verdict == Some(Verdict::Violation) { "<tr class=\"violation\">" } else { "<tr>" });
        for (c, text) in t.columns.iter().zip(&row.cells) {
            let text = esc(text);
            match (c.kind, row.verdict) {
                (Kind::Code, _) => {
                    let _ = write!(o, "<td{}><code>{text}</code></td>", left(c.align));
                }
                (Kind::Verdict, Some(v)) => {
                    let _ = write!(o, "<td class=\"l {}\">{text}</td>", v.class());
                }
                _ => {
                    let _ = write!(o, "<td{}>{text}</td>", left(c.align));
                }
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}
