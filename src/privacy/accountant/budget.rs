//! What a trained model spent: the claim an audit compares attacks against.
use serde::{Deserialize, Serialize};

/// The private unit a guarantee protects; an attack's epsilon lower bound is only comparable with
/// a claim about the same unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrivacyUnit {
    /// No formal guarantee (non-private model).
    None,
    /// Edge-level DP: neighbouring graphs differ in one edge.
    Edge,
    /// Node-level DP: neighbouring graphs differ in one node with its features, label and edges.
    Node,
    /// Local DP: each node's features/labels are randomised on the user's side.
    Local,
}

/// One mechanism's share of the budget (e.g. "PMA, 2 hops" or "encoder DP-Adam").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetComponent {
    pub name: String,
    /// Human-readable description of the event, e.g. "Gaussian(sigma=3.1) x 2".
    pub mechanism: String,
    /// Epsilon of this component alone at the total delta (RDP conversion).
    pub epsilon: f64,
}

/// The (epsilon, delta) a method claims, computed by the accountant from its event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    pub privacy_unit: PrivacyUnit,
    /// The target the noise was calibrated for (None for non-private runs).
    pub target_epsilon: Option<f64>,
    pub delta: f64,
    /// Epsilon by RDP with the improved (Balle et al. 2020) conversion.
    pub epsilon_rdp: f64,
    /// The RDP order at which `epsilon_rdp` was attained.
    pub rdp_order: Option<f64>,
    /// Epsilon by the tight PLD accountant, where the event supports it.
    pub epsilon_pld: Option<f64>,
    /// Noise multipliers chosen by calibration, by name (e.g. "sigma_agg").
    pub noise: Vec<(String, f64)>,
    pub components: Vec<BudgetComponent>,
}

impl Budget {
    /// The budget of a model trained without any privacy mechanism.
    pub fn non_private() -> Self {
        Budget {
            privacy_unit: PrivacyUnit::None,
            target_epsilon: None,
            delta: 0.0,
            epsilon_rdp: f64::INFINITY,
            rdp_order: None,
            epsilon_pld: None,
            noise: vec![],
            components: vec![],
        }
    }
    /// The epsilon the report states as the claim: the tightest available.
    pub fn claimed_epsilon(&self) -> f64 {
        self.epsilon_pld.map_or(self.epsilon_rdp, |p| p.min(self.epsilon_rdp))
    }
}
