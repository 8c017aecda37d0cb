//! The DP-SGD settings several families share: the clip, the degree bound that caps how many
//! per-example terms one node reaches, and the group norm that replaces batch norm under
//! node-level DP (batch statistics would mix examples). Flattened into the recipe, so configs and
//! checkpoints keep their flat keys (`max_grad_norm = 1`, not `dp.max_grad_norm`).
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct DpSgdConfig {
    /// Degree bound D for node-level methods.
    pub max_degree: usize,
    /// Groups of the group norm that replaces batch norm under node-level DP (default 4;
    /// ProGAP-NDP 1).
    pub norm_groups: Option<usize>,
    /// DP-SGD/DP-Adam clipping bound C.
    pub max_grad_norm: f64,
}

impl Default for DpSgdConfig {
    fn default() -> Self {
        DpSgdConfig { max_degree: 100, norm_groups: None, max_grad_norm: 1.0 }
    }
}

impl DpSgdConfig {
    /// Range checks, naming the key at fault.
    pub fn validate(&self) -> Result<()> {
        if self.max_degree == 0 {
            return Err(Error::invalid("max_degree", "must be at least 1"));
        }
        if self.norm_groups == Some(0) {
            return Err(Error::invalid("norm_groups", "must be at least 1"));
        }
        if !(self.max_grad_norm > 0.0 && self.max_grad_norm.is_finite()) {
            // An infinite clip leaves each example's gradient unbounded: the noise (sigma times
            // the clip) no longer bounds any one example's influence, so no epsilon holds.
            return Err(Error::invalid(
                "max_grad_norm",
                format!("{} must be > 0 and finite: an unbounded clip voids the DP-SGD guarantee", self.max_grad_norm),
            ));
        }
        Ok(())
    }
}
