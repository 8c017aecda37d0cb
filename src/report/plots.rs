//! The report's figures, drawn by plotters into SVG strings (no files, no fonts: the browser
//! renders the text): accuracy vs epsilon per dataset, attack AUC vs epsilon per dataset and
//! attack, and ROC curves on a log FPR axis per dataset, attack and method.
//!
//! Epsilon axes are categorical (the grid's values in order, "∞" last), so that a grid such as
//! {1, 8, inf} shows the non-private point next to the private ones.
use super::{fmt_eps, Report, ReportCell, SummaryRow};
use crate::error::{Error, Result};
use crate::report::record::Epsilon;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One rendered figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Stable, HTML-safe id.
    pub id: String,
    pub title: String,
    /// What the figure shows, for the caption.
    pub caption: String,
    pub svg: String,
}

const SIZE: (u32, u32) = (760, 380);
const LEGEND_WIDTH: u32 = 190;
/// Tableau 10: distinct for most colour-vision deficiencies.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x79, 0x70, 0x6e),
];
const GREY: RGBColor = RGBColor(0x99, 0x99, 0x99);
const FONT: &str = "sans-serif";

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub(super) fn plot_err<E: std::fmt::Debug>(e: E) -> Error {
    Error::Other(format!("plot: {e:?}"))
}

/// The x-axis labels of a chart with one category at each whole x from 0: `labels[x]` there,
/// nothing at the ticks in between.
pub(super) fn category_labels(labels: &[String]) -> impl Fn(&f64) -> String + '_ {
    move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
            labels[i as usize].clone()
        } else {
            String::new()
        }
    }
}

/// A line over the epsilon grid: (grid index, mean, sd) per point.
struct Series {
    name: String,
    points: Vec<(usize, f64, f64)>,
    /// A method without privacy (only the inf point): also drawn as a dashed reference line.
    reference: bool,
}

/// Every figure of a report, in display order.
pub fn figures(r: &Report) -> Result<Vec<Figure>> {
    let mut out = vec![];
    for d in datasets(r) {
        let rows: Vec<&SummaryRow> = r.summary.iter().filter(|s| s.dataset == d).collect();
        let grid = epsilon_grid(&rows);
        let methods = ordered(rows.iter().map(|s| s.method.clone()));
        let series: Vec<Series> = methods
            .iter()
            .map(|m| {
                let pts: Vec<_> = rows
                    .iter()
                    .filter(|s| &s.method == m && s.test_accuracy.n > 0)
                    .map(|s| (grid_index(&grid, s.epsilon), s.test_accuracy.mean, s.test_accuracy.sd))
                    .collect();
                let reference = rows.iter().filter(|s| &s.method == m).all(|s| s.epsilon.is_infinite());
                Series { name: m.clone(), points: pts, reference }
            })
            .collect();
        let title = format!("{d}: test accuracy vs ε");
        out.push(Figure {
            id: slug(&["acc", &d]),
            svg: eps_chart(&title, "test accuracy", &grid, &series, None)?,
            caption:
                "Mean test accuracy over seeds (bars: ± 1 sd). Non-private methods are dashed lines at their ∞ value."
                    .into(),
            title,
        });
        let attacks = ordered(rows.iter().flat_map(|s| s.attacks.iter().map(|a| a.attack.clone())));
        for a in &attacks {
            let series: Vec<Series> = methods
                .iter()
                .map(|m| {
                    let pts: Vec<_> = rows
                        .iter()
                        .filter(|s| &s.method == m)
                        .filter_map(|s| s.attacks.iter().find(|x| &x.attack == a).map(|x| (s, x)))
                        .filter(|(_, x)| x.auc.n > 0)
                        .map(|(s, x)| (grid_index(&grid, s.epsilon), x.auc.mean, x.auc.sd))
                        .collect();
                    let reference = rows.iter().filter(|s| &s.method == m).all(|s| s.epsilon.is_infinite());
                    Series { name: m.clone(), points: pts, reference }
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            let title = format!("{d}: {a} AUC vs ε");
            out.push(Figure {
                id: slug(&["auc", &d, a]),
                svg: eps_chart(&title, "attack AUC", &grid, &series, Some(0.5))?,
                caption: format!("Mean AUC of {a} over seeds (bars: ± 1 sd); the grey line is chance (0.5)."),
                title,
            });
        }
        for a in &attacks {
            for m in &methods {
                let cells: Vec<&ReportCell> = r.cells.iter().filter(|c| c.dataset == d && &c.method == m).collect();
                let curves = roc_curves(&cells, a);
                if curves.is_empty() {
                    continue;
                }
                let title = format!("{d}: {a} ROC, {m}");
                out.push(Figure {
                    id: slug(&["roc", &d, a, m]),
                    svg: roc_chart(&title, &curves)?,
                    caption: format!(
                        "ROC of {a} against {m}, TPR averaged over seeds at each FPR, log FPR axis; grey: chance."
                    ),
                    title,
                });
            }
        }
    }
    Ok(out)
}

fn datasets(r: &Report) -> Vec<String> {
    ordered(r.summary.iter().map(|s| s.dataset.clone()))
}

/// Distinct values in first-seen order.
fn ordered(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = vec![];
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// The sorted distinct epsilons of some rows (inf last).
fn epsilon_grid(rows: &[&SummaryRow]) -> Vec<Epsilon> {
    let mut g: Vec<Epsilon> = vec![];
    for s in rows {
        if !g.contains(&s.epsilon) {
            g.push(s.epsilon);
        }
    }
    g.sort_by(|a, b| a.total_cmp(b));
    g
}

fn grid_index(grid: &[Epsilon], e: Epsilon) -> usize {
    grid.iter().position(|x| *x == e).unwrap_or(0)
}

fn slug(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// Splits the canvas into the plot and a legend column on the right.
fn canvas(svg: &mut String) -> (DrawingArea<SVGBackend<'_>, Shift>, DrawingArea<SVGBackend<'_>, Shift>) {
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    let _ = root.fill(&WHITE);
    root.split_horizontally(SIZE.0 - LEGEND_WIDTH)
}

/// Legend entries drawn as (colour, dashed?, name) rows.
fn legend(area: &DrawingArea<SVGBackend<'_>, Shift>, title: &str, entries: &[(RGBColor, bool, String)]) -> Result<()> {
    area.draw(&Text::new(title.to_string(), (8, 40), (FONT, 17).into_font().style(FontStyle::Bold)))
        .map_err(plot_err)?;
    for (i, (c, dashed, name)) in entries.iter().enumerate() {
        let y = 70 + 22 * i as i32;
        let style = c.stroke_width(2);
        if *dashed {
            area.draw(&plotters::element::DashedPathElement::new(vec![(8, y), (36, y)], 5, 3, style))
                .map_err(plot_err)?;
        } else {
            area.draw(&PathElement::new(vec![(8, y), (36, y)], style)).map_err(plot_err)?;
        }
        area.draw(&Circle::new((22, y), 3, c.filled())).map_err(plot_err)?;
        area.draw(&Text::new(name.clone(), (44, y - 7), (FONT, 16).into_font())).map_err(plot_err)?;
    }
    Ok(())
}

/// A metric over the categorical epsilon axis, one line per series with ± sd bars.
fn eps_chart(title: &str, y_desc: &str, grid: &[Epsilon], series: &[Series], chance: Option<f64>) -> Result<String> {
    let mut svg = String::new();
    {
        let (plot, side) = canvas(&mut svg);
        let values = series.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.1 - p.2, p.1 + p.2]));
        let (lo, hi) = values.chain(chance).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let pad = ((hi - lo) * 0.1).max(0.02);
        let (y0, y1) = ((lo - pad).max(0.0), (hi + pad).min(1.0));
        let n = grid.len().max(1);
        let labels: Vec<String> = grid.iter().map(|e| fmt_eps(*e)).collect();
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 21))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
            .map_err(plot_err)?;
        let fmt_x = category_labels(&labels);
        chart
            .configure_mesh()
            .x_labels(n + 1)
            .x_label_formatter(&fmt_x)
            .y_label_formatter(&|y| format!("{y:.2}"))
            .x_desc("ε (claimed target)")
            .y_desc(y_desc)
            .label_style((FONT, 16))
            .light_line_style(RGBColor(0xf4, 0xf4, 0xf4))
            .draw()
            .map_err(plot_err)?;
        let right = n as f64 - 0.5;
        if let Some(c) = chance {
            chart
                .draw_series(DashedLineSeries::new(vec![(-0.5, c), (right, c)], 6, 4, GREY.stroke_width(1)))
                .map_err(plot_err)?;
        }
        let mut entries = vec![];
        for (k, s) in series.iter().enumerate() {
            let c = color(k);
            let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0 as f64, p.1)).collect();
            if s.reference {
                if let Some(&(_, y)) = pts.first() {
                    chart
                        .draw_series(DashedLineSeries::new(vec![(-0.5, y), (right, y)], 6, 4, c.stroke_width(2)))
                        .map_err(plot_err)?;
                }
            } else {
                chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2))).map_err(plot_err)?;
            }
            for p in &s.points {
                let x = p.0 as f64;
                if p.2 > 0.0 {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(x, (p.1 - p.2).max(y0)), (x, (p.1 + p.2).min(y1))],
                            c.stroke_width(1),
                        )))
                        .map_err(plot_err)?;
                }
            }
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled()))).map_err(plot_err)?;
            entries.push((c, s.reference, s.name.clone()));
        }
        legend(&side, "method", &entries)?;
        plot.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// (epsilon, mean TPR at each FPR of `ROC_GRID`) per epsilon of one (dataset, method, attack).
fn roc_curves(cells: &[&ReportCell], attack: &str) -> Vec<(Epsilon, Vec<(f64, f64)>)> {
    let mut grid: Vec<Epsilon> = vec![];
    for c in cells {
        if !grid.contains(&c.epsilon) {
            grid.push(c.epsilon);
        }
    }
    grid.sort_by(|a, b| a.total_cmp(b));
    let fprs = roc_grid();
    grid.into_iter()
        .filter_map(|e| {
            let rocs: Vec<&Vec<(f64, f64)>> = cells
                .iter()
                .filter(|c| c.epsilon == e)
                .flat_map(|c| c.attacks.iter().filter(|a| a.attack == attack && !a.roc.is_empty()).map(|a| &a.roc))
                .collect();
            if rocs.is_empty() {
                return None;
            }
            let curve =
                fprs.iter().map(|&f| (f, rocs.iter().map(|r| tpr_at(r, f)).sum::<f64>() / rocs.len() as f64)).collect();
            Some((e, curve))
        })
        .collect()
}

const ROC_MIN_FPR: f64 = 1e-4;

/// Log-spaced FPR values from 1e-4 to 1.
fn roc_grid() -> Vec<f64> {
    let n = 81;
    (0..n).map(|i| 10f64.powf(ROC_MIN_FPR.log10() * (1.0 - i as f64 / (n - 1) as f64))).collect()
}

/// Highest TPR the curve reaches at FPR <= f (the ROC as a step function, which is what a
/// threshold achieves without randomisation).
pub fn tpr_at(roc: &[(f64, f64)], f: f64) -> f64 {
    roc.iter().filter(|p| p.0 <= f + 1e-12).map(|p| p.1).fold(0.0, f64::max)
}

fn roc_chart(title: &str, curves: &[(Epsilon, Vec<(f64, f64)>)]) -> Result<String> {
    let mut svg = String::new();
    {
        let (plot, side) = canvas(&mut svg);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 21))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(56)
            // Log-log, as in the LiRA paper: the low-FPR corner, where every eps_lb comes from, is
            // a dot on linear axes.
            .build_cartesian_2d((ROC_MIN_FPR..1.0f64).log_scale(), (ROC_MIN_FPR..1.0f64).log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|x| format!("{x:.0e}"))
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .x_desc("false positive rate (log)")
            .y_desc("true positive rate (log)")
            .label_style((FONT, 16))
            .light_line_style(RGBColor(0xf4, 0xf4, 0xf4))
            .draw()
            .map_err(plot_err)?;
        let chance: Vec<(f64, f64)> = roc_grid().into_iter().map(|f| (f, f)).collect();
        chart.draw_series(DashedLineSeries::new(chance, 6, 4, GREY.stroke_width(1))).map_err(plot_err)?;
        let mut entries = vec![];
        for (k, (e, curve)) in curves.iter().enumerate() {
            let c = color(k);
            let floored = curve.iter().map(|&(f, t)| (f, t.max(ROC_MIN_FPR)));
            chart.draw_series(LineSeries::new(floored, c.stroke_width(2))).map_err(plot_err)?;
            entries.push((c, false, format!("ε = {}", fmt_eps(*e))));
        }
        legend(&side, "target ε", &entries)?;
        plot.present().map_err(plot_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpr_at_is_the_step_function_of_the_roc() {
        let roc = [(0.0, 0.0), (0.001, 0.2), (0.01, 0.3), (0.5, 0.9), (1.0, 1.0)];
        assert_eq!(tpr_at(&roc, 0.0005), 0.0);
        assert_eq!(tpr_at(&roc, 0.001), 0.2);
        assert_eq!(tpr_at(&roc, 0.2), 0.3);
        assert_eq!(tpr_at(&roc, 1.0), 1.0);
        let g = roc_grid();
        assert!((g[0] - 1e-4).abs() < 1e-12 && (g[g.len() - 1] - 1.0).abs() < 1e-12);
    }
}
