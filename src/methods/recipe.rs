//! A training recipe: which method, which privacy target, which hyper-parameters. Serialisable so
//! that a run's exact configuration is saved next to its results and reports (burn-style config).
//! Defaults are the papers' and the reference scripts' (thesis §4.7.3-4.7.4, §5.5.3; anchors file).
pub use super::shared::TrainConfig;
use crate::error::{Error, Result};
use crate::privacy::accountant::PrivacyUnit;
use crate::privacy::dpsgd::DpSgdConfig;
use serde::{Deserialize, Serialize};

/// Most epochs accepted: far beyond any published recipe; 10^12 is a typo that would train for
/// years (and size per-epoch buffers).
pub const MAX_EPOCHS: usize = 1_000_000;

/// Most runs (seeds) one `train` or `attack` makes, and most seeds of an audit cell: each run
/// trains a model, so more is a typo (and 10^12 seeds alone would not fit in memory).
pub const MAX_REPEATS: usize = 100_000;

pub use super::method::Method;

impl Method {
    /// The unit the method's guarantee protects (MLP protects edges perfectly: it uses none).
    pub fn privacy_unit(self) -> PrivacyUnit {
        self.spec().unit
    }
    /// Trained with DP-Adam (node level).
    pub fn is_node_level(self) -> bool {
        self.privacy_unit() == PrivacyUnit::Node
    }
    /// Needs an epsilon to calibrate noise (None means no noise).
    pub fn takes_epsilon(self) -> bool {
        self.spec().takes_epsilon
    }
    /// Deliberately broken variants (kept to prove that the audits catch them); never defaults.
    pub fn is_unsound(self) -> bool {
        self.spec().unsound.is_some()
    }
    /// What the utility measures: accuracy (node classification) or ROC-AUC (link prediction).
    pub fn utility_metric(self) -> UtilityMetric {
        self.spec().utility
    }
}

/// The quantity a run's utility (`Accuracy`'s train/val/test) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UtilityMetric {
    /// Node classification accuracy (micro-F1).
    #[default]
    Accuracy,
    /// Link prediction: ROC-AUC of held-out edges against as many sampled non-edges.
    RocAuc,
}

impl UtilityMetric {
    pub fn label(self) -> &'static str {
        match self {
            UtilityMetric::Accuracy => "accuracy",
            UtilityMetric::RocAuc => "ROC-AUC",
        }
    }
}

/// Every knob of a training run: the method, its privacy target, the shared training settings,
/// the DP-SGD settings several families share ([`DpSgdConfig`]), and
/// the method's own knobs (its struct in its module, stored in `knobs`). Fields left `None` take
/// the method's default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
// No `deny_unknown_fields`: serde cannot combine it with the flattened knob map, which collects every
// name that is not a common field; `validate` then refuses the names the method does not own.
#[serde(default)]
pub struct Recipe {
    pub method: Method,
    /// Target epsilon; None = no noise (eps = inf).
    pub epsilon: Option<f64>,
    /// Target delta; None = 1/10^digits(count) of the private units (edges or nodes), below 1/count.
    pub delta: Option<f64>,
    /// The training loop's settings, which every method reads (flat keys: `epochs`, not
    /// `train.epochs`). Declared before `knobs`, so serde hands these keys to it first.
    #[serde(flatten)]
    pub train: TrainConfig,
    /// The DP-SGD settings several families share (clip, degree bound, group norm), flat keys.
    /// Declared before `knobs`, like `train`.
    #[serde(flatten)]
    pub dp: DpSgdConfig,
    /// The accountant the noise is calibrated to (rdp or pld); written only when not rdp, so
    /// that existing recipes serialise as before.
    #[serde(skip_serializing_if = "crate::privacy::accountant::Accountant::is_rdp")]
    pub accountant: crate::privacy::accountant::Accountant,
    /// The method's own knobs (graph-pate's teachers, DPAR's c1, ...), read through its knob struct
    /// ([`super::knobs`]); any name the method does not own is refused by [`Recipe::validate`].
    #[serde(flatten)]
    pub knobs: super::knobs::KnobMap,
}

const NDP_GROUPS_PROGAP: usize = 1;

impl Recipe {
    /// The method's recipe: `Recipe::default()` with the method's own defaults on top.
    pub fn new(method: Method, epsilon: Option<f64>) -> Self {
        let mut r = Recipe { method, epsilon, ..Default::default() };
        (method.spec().defaults)(&mut r);
        r
    }
    pub fn epochs(&self) -> usize {
        self.train.epochs.unwrap_or(self.method.spec().epochs)
    }
    /// The (expected) batch size, None = full batch.
    pub fn batch_size(&self) -> Option<usize> {
        if self.method.is_node_level() {
            Some(self.train.batch_size.unwrap_or(256))
        } else {
            self.train.batch_size
        }
    }
    /// Groups of the group norm under node-level DP when the recipe leaves them unset. ProGAP-NDP:
    /// one group, i.e. every sample normalised over all its channels (thesis §5.5.3, "group
    /// normalization with one group"); the reference code's Opacus fix gives GroupNorm(16, 16),
    /// which on [N, 16] rows has one value per group and outputs only its bias (plus rounding noise).
    fn default_norm_groups(&self) -> usize {
        if self.method == Method::ProgapNdp {
            NDP_GROUPS_PROGAP
        } else {
            4
        }
    }
    /// The normalisation layer the models use.
    pub fn norm(&self) -> crate::models::NormKind {
        use crate::models::NormKind;
        // Defaults chosen on the anchors (Cora): GAP keeps batch norm at edge level; GAP-NDP and
        // DP-MLP train best without normalisation; ProGAP-NDP needs group norm to tame its NAP
        // inputs (noise std sigma sqrt(D)); ProGAP at edge level / non-private does better
        // without batch norm (with it, progressive training overfits the noisy stage inputs:
        // Cora eps 4, 57% with vs 73% without, seed 1), unlike the reference script.
        let on = self.train.batch_norm.unwrap_or(self.method.spec().batch_norm);
        match (on, self.method.is_node_level()) {
            (false, _) => NormKind::None,
            (true, false) => NormKind::Batch,
            (true, true) => NormKind::Group(self.dp.norm_groups.unwrap_or(self.default_norm_groups())),
        }
    }
    /// Is noise added (a finite epsilon for a private method)?
    pub fn is_private(&self) -> bool {
        (self.method.spec().is_private)(self)
    }

    /// Checks every field once, before any work (linfa's ParamGuard idea).
    pub fn validate(&self) -> Result<()> {
        if let Some(e) = self.epsilon {
            if e.is_nan() || e <= 0.0 {
                return Err(Error::invalid("epsilon", format!("{e} must be > 0 (omit it for eps = inf)")));
            }
            if e.is_infinite() {
                return Err(Error::invalid("epsilon", "omit --epsilon for eps = inf"));
            }
            if !self.method.takes_epsilon() {
                return Err(Error::invalid(
                    "epsilon",
                    format!("method {} is not private and takes no epsilon", self.method.name()),
                ));
            }
        }
        if let Some(d) = self.delta {
            if !(d > 0.0 && d < 1.0) {
                return Err(Error::invalid("delta", format!("{d} must be in (0, 1)")));
            }
        }
        let pos = |name: &str, v: usize| -> Result<()> {
            if v == 0 {
                Err(Error::invalid(name, "must be at least 1"))
            } else {
                Ok(())
            }
        };
        self.dp.validate()?;
        pos("epochs", self.epochs())?;
        if self.epochs() > MAX_EPOCHS {
            return Err(Error::invalid(
                "epochs",
                format!("{} is more than the {MAX_EPOCHS} epochs any method trains for", self.epochs()),
            ));
        }
        if let Some(b) = self.train.batch_size {
            pos("batch_size", b)?;
        }
        pos("hidden", self.train.hidden)?;
        if !(self.train.lr > 0.0 && self.train.lr.is_finite()) {
            return Err(Error::invalid("lr", format!("{} must be a positive number", self.train.lr)));
        }
        if !(0.0..1.0).contains(&self.train.dropout) {
            return Err(Error::invalid("dropout", format!("{} must be in [0, 1)", self.train.dropout)));
        }
        if !(self.train.weight_decay >= 0.0 && self.train.weight_decay.is_finite()) {
            return Err(Error::invalid("weight_decay", "must be >= 0"));
        }
        if !self.accountant.is_rdp() {
            // Only the methods whose noise `train::methods` calibrates from one event can follow
            // another accountant; elsewhere the knob would be ignored. (At eps = inf these methods
            // add no noise: an audit grid that includes inf keeps the knob for its finite cells.)
            let calibrated = self.method.spec().reads.contains(super::shared::Shared::Accountant);
            if !calibrated {
                return Err(Error::invalid(
                    "accountant",
                    format!(
                        "{} calibrates no noise to a target epsilon: accountant = \"{}\" applies to \
                         dp-mlp, gap-edp, gap-ndp, progap-edp and progap-ndp",
                        self.method.name(),
                        self.accountant.name()
                    ),
                ));
            }
        }
        self.refuse_unread_knobs()?;
        (self.method.spec().check)(self)
    }

    /// A field the method never reads, set away from the method's default, is an error naming the
    /// method and the field, and so is any knob it does not own: nothing is silently ignored.
    fn refuse_unread_knobs(&self) -> Result<()> {
        let spec = self.method.spec();
        let own = super::knobs::names_of(self.method);
        if let Some(k) = self.knobs.names().find(|k| !own.iter().any(|o| o == k)) {
            return Err(Error::invalid(k, super::knobs::unread_knob(self.method, k)));
        }
        if let Some(own) = spec.own_knobs {
            (own.check)(&self.knobs)?;
        }
        let set = serde_json::to_value(Recipe { knobs: Default::default(), ..self.clone() })?;
        let default = serde_json::to_value(Recipe::new(self.method, self.epsilon))?;
        for (k, v) in set.as_object().into_iter().flatten() {
            if !spec.reads.reads_key(k) && default.get(k) != Some(v) {
                return Err(Error::invalid(k, super::knobs::unread_knob(self.method, k)));
            }
        }
        Ok(())
    }

    /// The method's own knobs as its typed struct (defaults for what the recipe leaves unset).
    pub fn own<T: super::knobs::Knobs>(&self) -> Result<T> {
        self.knobs.parse()
    }

    /// The recipe with the method's own knobs written out at their defaults where it leaves them
    /// unset (a knob whose default depends on the method or the data stays unset), so that a
    /// record says every setting the run used, not only those its config named.
    pub fn with_own_defaults(&self) -> Recipe {
        let mut r = self.clone();
        for d in self.method.spec().own_knobs.map(|o| o.docs()).unwrap_or_default() {
            if let (false, Some(v)) = (r.knobs.contains(&d.name), d.default) {
                r.knobs.set(&d.name, v);
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::shared::{Shared, ALWAYS_READ};

    #[test]
    fn every_shared_key_is_a_serialised_field_of_the_recipe_and_only_those() {
        let pld = crate::privacy::accountant::Accountant::Pld;
        let recipe = serde_json::to_value(Recipe { accountant: pld, ..Default::default() }).unwrap();
        let fields: Vec<&str> = recipe.as_object().unwrap().keys().map(String::as_str).collect();
        for s in Shared::ALL {
            assert!(fields.contains(&s.key()), "{} is not a recipe field", s.key());
        }
        for f in fields {
            assert!(Shared::from_key(f).is_some() || ALWAYS_READ.contains(&f), "recipe field {f} is unaccounted for");
        }
    }
}
