//! Fig. 2.2 of thesis ch.2: the mean absolute error of the first-layer estimate (eq. 2.15,
//! MAE(v) = (1/d) sum_i |GC(v)_i - GC^(v)_i|, averaged over nodes) against the per-feature eps,
//! one line per mechanism (one-bit PGC, Piecewise, Laplace), drawn by plotters into an SVG string
//! like the report's other figures ([`super::plots`]); log-scaled error axis, as the errors span
//! orders of magnitude (PGC at eps 9 is ~1e-4, Laplace at eps 1 ~0.5 on Cora).
use super::plots::Figure;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::methods::pgc::{aggregation_mae, first_layer_estimate};
use crate::privacy::mechanisms::feature_ldp::{FeatureLdp, FeatureMechanismKind};
use plotters::prelude::*;
use tch::Kind;

/// The chapter's grid for Fig. 2.2.
pub const FIG22_EPSILONS: [f64; 5] = [1.0, 3.0, 5.0, 7.0, 9.0];

/// One mechanism's curve: (eps, mean MAE, sd over collections) per grid point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MaeCurve {
    pub mechanism: FeatureMechanismKind,
    pub points: Vec<(f64, f64, f64)>,
}

/// Fig. 2.2's data on `data`: for each mechanism and eps, the MAE of A^ Y* against A^ X over
/// `collections` independent collections (seeds seed, seed + 1, ...). Features must already be
/// in the public range [0, 1].
pub fn mae_curves(data: &Dataset, epsilons: &[f64], collections: u64, seed: u64) -> Result<Vec<MaeCurve>> {
    if collections == 0 {
        return Err(Error::invalid("collections", "must be at least 1"));
    }
    let x = data.features.to_tensor().to_kind(Kind::Float);
    let exact = first_layer_estimate(&data.graph, &x);
    let mut out = vec![];
    for kind in [FeatureMechanismKind::Onebit, FeatureMechanismKind::Piecewise, FeatureMechanismKind::Laplace] {
        let mut points = vec![];
        for &eps in epsilons {
            let m = FeatureLdp::new(kind, eps, 0.0, 1.0)?;
            let maes: Vec<f64> = (0..collections)
                .map(|c| {
                    let (y, _) = m.perturb(&x, seed + c)?;
                    Ok(aggregation_mae(&exact, &first_layer_estimate(&data.graph, &y)))
                })
                .collect::<Result<_>>()?;
            let mean = maes.iter().sum::<f64>() / maes.len() as f64;
            let sd = if maes.len() > 1 {
                (maes.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (maes.len() - 1) as f64).sqrt()
            } else {
                0.0
            };
            points.push((eps, mean, sd));
        }
        out.push(MaeCurve { mechanism: kind, points });
    }
    Ok(out)
}

fn plot_err<E: std::fmt::Debug>(e: E) -> Error {
    Error::Other(format!("plot: {e:?}"))
}

const COLORS: [RGBColor; 3] = [RGBColor(0x4e, 0x79, 0xa7), RGBColor(0xf2, 0x8e, 0x2b), RGBColor(0xe1, 0x57, 0x59)];

/// The figure: MAE (log axis) vs eps per mechanism.
pub fn mae_figure(dataset: &str, curves: &[MaeCurve]) -> Result<Figure> {
    let pts = curves.iter().flat_map(|c| c.points.iter());
    let (lo, hi) =
        pts.clone().map(|p| p.1).filter(|v| *v > 0.0).fold((f64::INFINITY, 0f64), |(l, h), v| (l.min(v), h.max(v)));
    if !lo.is_finite() {
        return Err(Error::invalid("curves", "no positive MAE to plot"));
    }
    let (x0, x1) = pts.map(|p| p.0).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    let title = format!("{dataset}: first-layer MAE vs ε (Fig. 2.2)");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&title, ("sans-serif", 21))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .build_cartesian_2d((x0 - 0.5)..(x1 + 0.5), (lo / 2.0..hi * 2.0).log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("ε per feature")
            .y_desc("MAE of the first-layer estimate")
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .label_style(("sans-serif", 16))
            .draw()
            .map_err(plot_err)?;
        for (k, c) in curves.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            let line: Vec<(f64, f64)> = c.points.iter().filter(|p| p.1 > 0.0).map(|p| (p.0, p.1)).collect();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(c.mechanism.name())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(line.into_iter().map(|p| Circle::new(p, 4, color.filled()))).map_err(plot_err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 16))
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(Figure {
        id: format!("mae-{}", dataset.to_ascii_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "-")),
        caption: "Mean absolute error (eq. 2.15) of the server's first-layer estimate A^ Y* against A^ X, averaged \
                  over nodes and collections, per mechanism and per-feature ε (thesis Fig. 2.2)."
            .into(),
        title,
        svg,
    })
}
