//! A toy method, the demonstration of what adding a method takes (one file and one registry
//! line): randomized response on every training label at `--epsilon` (label-level local DP,
//! Warner 1965), then an MLP on the clean features trained against the randomised labels. Its two
//! settings are its own knob struct; the CLI, the docs and the refusal of unknown keys read it.
use super::decoupled::{fit_config, style};
use super::knobs::Knobs;
use super::recipe::Recipe;
use super::spec::MethodSpec;
use super::TrainedRun;
use crate::data::Dataset;
use crate::ensure;
use crate::error::{Error, Result};
use crate::models::mlp::MlpClassifier;
use crate::models::{ParamStore, Rows};
use crate::privacy::accountant::{pure_budget, Budget, Event, PrivacyUnit};
use crate::privacy::mechanisms::randomized_response::RandomizedResponse;
use crate::train::accounting::Accounting;
use crate::train::fit::{fit, Labels};
use serde::{Deserialize, Serialize};

/// The toy's own settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ToyKnobs {
    /// Layers of the MLP trained on the randomised labels.
    pub layers: usize,
    /// Randomise the validation labels too (else the curator keeps a clean validation set).
    pub noisy_validation: bool,
}

impl Default for ToyKnobs {
    fn default() -> Self {
        ToyKnobs { layers: 2, noisy_validation: true }
    }
}

impl Knobs for ToyKnobs {
    fn check(&self) -> Result<()> {
        ensure!(self.layers >= 1, Error::invalid("layers", "must be at least 1"));
        Ok(())
    }
}

/// Each label is reported once through randomized response: eps-LDP per node's label.
fn budget(r: &Recipe, data: &Dataset, _seed: u64, _acct: &Accounting) -> Result<Budget> {
    let Some(eps) = r.epsilon else { return Ok(Budget::non_private()) };
    let rr = RandomizedResponse::new(eps, data.num_classes)?;
    let event = Event::PureDp { epsilon: eps }.labelled("randomized response on one label");
    pure_budget(&event, PrivacyUnit::Local, vec![("p_keep".into(), rr.p_keep())])
}

fn train(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<TrainedRun> {
    let own: ToyKnobs = r.own()?;
    tch::manual_seed(seed as i64);
    let clean = Labels::from_dataset(data)?;
    let budget = budget(r, data, seed, acct)?;
    let mut noisy = Labels::from_dataset(data)?;
    if let Some(eps) = r.epsilon {
        let flipped = RandomizedResponse::new(eps, data.num_classes)?.perturb(&clean.y)?;
        let mut reported = vec![&clean.train];
        if own.noisy_validation {
            reported.push(&clean.val);
        }
        for idx in reported {
            noisy.y = noisy.y.index_copy(0, idx, &flipped.index_select(0, idx));
        }
    }
    let mut ps = ParamStore::new();
    let x = Rows::of_features(&data.features);
    let net = MlpClassifier::new(&mut ps, x, r.hidden as i64, data.num_classes as i64, own.layers, style(r));
    fit(&net, &ps, &noisy, &fit_config(r, clean.train.size()[0] as usize, 0.0))?;
    let accuracy = clean.model_accuracy(&net);
    let model = super::mlp::MlpModel { ps, net };
    Ok(TrainedRun { model: Box::new(model), accuracy, budget, seconds: 0.0 })
}

pub const TOY_RR_LABELS: MethodSpec = MethodSpec {
    knobs: &["hidden", "weight_decay", "dropout"],
    own_knobs: Some(super::knobs::own::<ToyKnobs>()),
    ..MethodSpec::new(
        "toy-rr-labels",
        "TOY, a demo of adding a method: randomized response on each training label (--epsilon per label), \
         then an MLP on the randomised labels",
        PrivacyUnit::Local,
        train,
        budget,
    )
};
