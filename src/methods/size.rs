//! Memory a training run needs at least, checked before the first tensor is allocated: libtorch
//! reports an allocation failure by throwing through tch (a panic with C++ frames), and the
//! knob that asked for it (`--hidden 1000000000`) is then nowhere to be seen.
use crate::data::{memory, Dataset};
use crate::error::Result;
use crate::methods::spec::MemoryShape;
use crate::methods::Recipe;

/// A lower bound on the bytes a run of `recipe` on `ds` allocates: every weight matrix four times
/// (value, gradient, Adam's two moments) plus the best-epoch snapshot, and one float per node and
/// hidden unit for every hidden layer's activations and every cached hop (GAP) or stage (ProGAP).
pub fn bytes_needed(recipe: &Recipe, ds: &Dataset) -> (f64, &'static str) {
    let (n, f, c) = (ds.num_nodes() as f64, ds.num_features() as f64, ds.num_classes as f64);
    let h = recipe.train.hidden as f64;
    // Only matrices the method surely builds, so that the bound never refuses a run that fits:
    // input -> hidden and hidden -> classes, plus the MLP's hidden -> hidden layers in between.
    let shape = recipe.method.spec().memory;
    let hidden_to_hidden = match shape {
        // Validation refuses a depth that does not parse before anything is sized.
        MemoryShape::Mlp(hidden_layers) => hidden_layers(recipe).unwrap_or(0) as f64,
        _ => 0.0,
    };
    let layers = hidden_to_hidden + 2.0;
    let hops = cached_aggregations(recipe).map_or(0.0, |(_, k)| k as f64);
    let weights = 5.0 * 4.0 * (f * h + hidden_to_hidden * h * h + h * c);
    let activations = 4.0 * n * h * (layers - 1.0);
    let cached = 4.0 * n * h * hops;
    // The cache grows with hidden x hops: blame hops only when it is the larger factor.
    let field = match cached_aggregations(recipe) {
        Some((knob, _)) if cached > weights + activations && hops > h => knob,
        _ => "hidden",
    };
    (weights + activations + cached, field)
}

/// Refuses a run that cannot fit in the memory available, naming the knob to lower.
pub fn ensure_fits(recipe: &Recipe, ds: &Dataset) -> Result<()> {
    let (bytes, field) = bytes_needed(recipe, ds);
    memory::ensure_fits(
        field,
        &format!(
            "{} with hidden = {}{} on {} nodes x {} features",
            recipe.method.name(),
            recipe.train.hidden,
            match cached_aggregations(recipe) {
                Some((knob, k)) if knob == field => format!(" and {field} = {k}"),
                _ => String::new(),
            },
            ds.num_nodes(),
            ds.num_features()
        ),
        bytes,
    )
}

/// The knob and count of the cached aggregations (GAP's hops, ProGAP's stages), if any.
fn cached_aggregations(recipe: &Recipe) -> Option<(&'static str, usize)> {
    match recipe.method.spec().memory {
        // A recipe whose knobs do not parse is refused by validation before it is sized.
        MemoryShape::HopCache => Some(("hops", super::gap::hops(recipe).ok()?)),
        MemoryShape::StageCache => Some(("depth", super::progap::depth(recipe).ok()?)),
        MemoryShape::TwoLayers | MemoryShape::Mlp(_) => None,
    }
}
