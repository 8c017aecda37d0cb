//! The settings every recipe carries besides its method's own knobs: the training loop's
//! ([`TrainConfig`]), DP-SGD's
//! ([`DpSgdConfig`](crate::privacy::dpsgd::DpSgdConfig)) and the accountant. A method's registry
//! entry says which of them it reads ([`Reads`]); a setting it does not read is refused by name
//! when set away from its default, so that nothing is silently ignored.

use super::knobs::{docs_of, KnobDoc};
use crate::error::{Error, Result};
use crate::privacy::accountant::Accountant;
use crate::privacy::dpsgd::{DpSgdConfig, OptimizerKind};
use serde::{Deserialize, Serialize};

/// Declares [`Shared`], its list and its keys from one table.
macro_rules! shared_settings {
    ($($variant:ident => $key:literal,)*) => {
        /// One shared setting, named by its recipe key (the CLI flag is the key with dashes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Shared {
            $($variant,)*
        }

        impl Shared {
            /// Every shared setting, in the order the docs list them.
            pub const ALL: &'static [Shared] = &[$(Shared::$variant,)*];

            /// Its recipe key (a test keeps each equal to a serialised field of the recipe).
            pub const fn key(self) -> &'static str {
                match self {
                    $(Shared::$variant => $key,)*
                }
            }
        }
    };
}

shared_settings! {
    Hidden => "hidden",
    WeightDecay => "weight_decay",
    Dropout => "dropout",
    Activation => "activation",
    Optimizer => "optimizer",
    BatchNorm => "batch_norm",
    BatchSize => "batch_size",
    SelectBestVal => "select_best_val",
    Accountant => "accountant",
    MaxDegree => "max_degree",
    MaxGradNorm => "max_grad_norm",
    NormGroups => "norm_groups",
}

use Shared::*;

impl Shared {
    pub fn from_key(key: &str) -> Option<Shared> {
        Shared::ALL.iter().copied().find(|s| s.key() == key)
    }
}

/// The training loop's settings (burn's `TrainingConfig` idea). Every recipe carries them; each
/// method's entry says which it reads ([`Reads`]), and its own settings live in
/// its knob struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct TrainConfig {
    /// Epochs (per stage for ProGAP; default 100, node level 10, ProGAP-NDP 5).
    pub epochs: Option<usize>,
    /// (Expected) batch size (default full batch; 256 under node-level DP).
    pub batch_size: Option<usize>,
    /// Hidden units per layer.
    pub hidden: usize,
    /// Learning rate.
    pub lr: f64,
    /// L2 weight decay.
    pub weight_decay: f64,
    /// Dropout rate, in [0, 1).
    pub dropout: f64,
    /// Activation between layers.
    pub activation: crate::models::Activation,
    /// Optimiser (DP-Adam or DP-SGD under DP).
    pub optimizer: OptimizerKind,
    /// Batch norm on/off (default: the method's; group norm under node-level DP).
    pub batch_norm: Option<bool>,
    /// Keep the parameters of the epoch with the best validation accuracy (the references do).
    pub select_best_val: bool,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            epochs: None,
            batch_size: None,
            hidden: 16,
            lr: 0.01,
            weight_decay: 0.0,
            dropout: 0.0,
            activation: crate::models::Activation::Selu,
            optimizer: OptimizerKind::Adam,
            batch_norm: None,
            select_best_val: true,
        }
    }
}

/// The shared settings with their docs (the CLI's flags): `epochs` and `lr`, which every method
/// reads, then [`Shared::ALL`], from the doc comments of the structs that hold them.
pub fn docs() -> Vec<KnobDoc> {
    let mut all = docs_of::<TrainConfig>();
    all.extend(docs_of::<DpSgdConfig>());
    all.push(KnobDoc {
        name: Shared::Accountant.key().into(),
        help: "Accountant the noise is calibrated to: rdp or pld (tight; the claim is the PLD epsilon).".into(),
        default: Some(Accountant::default().name().into()),
        switch: false,
    });
    let rank = |d: &KnobDoc| match Shared::from_key(&d.name) {
        Some(s) => 100 + s as usize,
        None => ALWAYS_READ.iter().position(|k| *k == d.name).unwrap_or(usize::MAX),
    };
    all.sort_by_key(rank);
    all
}

/// Reads `value` as the type of shared setting `key`; an error names the key.
pub fn check_type(key: &str, value: &toml::Value) -> Result<()> {
    let fail = |e: toml::de::Error| Error::invalid(key, e.to_string().trim().replace('\n', " "));
    if key == Shared::Accountant.key() {
        return Accountant::deserialize(value.clone()).map(|_| ()).map_err(fail);
    }
    let one = toml::Value::Table(toml::Table::from_iter([(key.to_string(), value.clone())]));
    TrainConfig::deserialize(one.clone()).map_err(fail)?;
    DpSgdConfig::deserialize(one).map_err(fail)?;
    Ok(())
}

/// Recipe keys every method reads.
pub const ALWAYS_READ: &[&str] = &["method", "epsilon", "delta", "epochs", "lr"];

/// The shared settings a method reads (a set, so that entries compose them in const context).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reads(u16);

impl Reads {
    pub const NONE: Reads = Reads(0);
    /// The width, dropout and weight decay of a fixed two-layer network.
    pub const NETWORK: Reads = Reads::of(&[Hidden, WeightDecay, Dropout]);
    /// What a trainer built on `train::fit` reads: the network, its activation and optimiser, the
    /// normalisation, the (expected) batch and best-validation selection.
    pub const TRAINING_LOOP: Reads = Reads::NETWORK.with(&[Activation, Optimizer, BatchNorm, BatchSize, SelectBestVal]);
    /// DP-SGD at node level: the degree bound, the clip and the group norm's groups.
    pub const NODE_DP_SGD: Reads = Reads::of(&[MaxDegree, MaxGradNorm, NormGroups]);

    pub const fn of(settings: &[Shared]) -> Reads {
        Reads::NONE.with(settings)
    }

    pub const fn with(self, settings: &[Shared]) -> Reads {
        let mut bits = self.0;
        let mut i = 0;
        while i < settings.len() {
            bits |= 1 << settings[i] as u16;
            i += 1;
        }
        Reads(bits)
    }

    pub const fn and(self, other: Reads) -> Reads {
        Reads(self.0 | other.0)
    }

    pub const fn without(self, settings: &[Shared]) -> Reads {
        let mut bits = self.0;
        let mut i = 0;
        while i < settings.len() {
            bits &= !(1 << settings[i] as u16);
            i += 1;
        }
        Reads(bits)
    }

    pub const fn contains(self, s: Shared) -> bool {
        self.0 & (1 << s as u16) != 0
    }

    /// Whether the method reads recipe key `key` (the keys of [`ALWAYS_READ`] included).
    pub fn reads_key(self, key: &str) -> bool {
        ALWAYS_READ.contains(&key) || Shared::from_key(key).is_some_and(|s| self.contains(s))
    }

    /// The keys it reads besides [`ALWAYS_READ`], in the docs' order.
    pub fn keys(self) -> impl Iterator<Item = &'static str> {
        Shared::ALL.iter().copied().filter(move |s| self.contains(*s)).map(Shared::key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_compose_in_const_context() {
        const R: Reads = Reads::TRAINING_LOOP.with(&[Accountant]).without(&[Dropout]);
        assert!(R.contains(Accountant) && R.contains(Hidden) && !R.contains(Dropout) && !R.contains(MaxDegree));
        assert_eq!(R.keys().next(), Some("hidden"));
        assert!(R.reads_key("lr") && R.reads_key("accountant") && !R.reads_key("dropout") && !R.reads_key("teachers"));
    }
}
