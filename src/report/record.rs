//! The records report.json is made of: a cell's key, its measurement (utility, budget, attacks)
//! and `Epsilon`. The audit writes them (one file per cell, so that an interrupted audit resumes
//! where it stopped); reports, `check` and `report diff` read them.
//!
//! `Epsilon` is a privacy budget value that may be infinite ("no privacy"), with one textual form
//! everywhere: a positive number, or `inf`. TOML has a native `inf` float and JSON has none, so
//! the serde form is a number when finite and the string "inf" otherwise; reports stay valid JSON.
use crate::privacy::accountant::{Budget, Event, PrivacyUnit};
use crate::train::baseline::Baseline;
use crate::train::Accuracy;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

/// Target or claimed epsilon. `Infinite` is the non-private setting (thesis tables' "eps = inf").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Epsilon {
    Finite(f64),
    Infinite,
}

impl Epsilon {
    /// `inf` for infinite and non-finite values.
    pub fn from_f64(x: f64) -> Self {
        if x.is_finite() {
            Epsilon::Finite(x)
        } else {
            Epsilon::Infinite
        }
    }
    pub fn as_f64(self) -> f64 {
        match self {
            Epsilon::Finite(x) => x,
            Epsilon::Infinite => f64::INFINITY,
        }
    }
    /// The finite value, None for "no privacy".
    pub fn finite(self) -> Option<f64> {
        match self {
            Epsilon::Finite(x) => Some(x),
            Epsilon::Infinite => None,
        }
    }
    pub fn is_infinite(self) -> bool {
        matches!(self, Epsilon::Infinite)
    }
    /// Total order (inf last), for sorting grids.
    pub fn total_cmp(&self, other: &Self) -> Ordering {
        self.as_f64().total_cmp(&other.as_f64())
    }
    /// Short label for file names and plot axes: "1", "0.5", "inf".
    pub fn label(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Epsilon::Finite(x) => write!(f, "{x}"),
            Epsilon::Infinite => f.write_str("inf"),
        }
    }
}

impl Serialize for Epsilon {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Epsilon::Finite(x) => s.serialize_f64(*x),
            Epsilon::Infinite => s.serialize_str("inf"),
        }
    }
}

impl<'de> Deserialize<'de> for Epsilon {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Epsilon;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a positive number or \"inf\"")
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Epsilon, E> {
                checked(x)
            }
            fn visit_i64<E: de::Error>(self, x: i64) -> Result<Epsilon, E> {
                Ok(Epsilon::Finite(x as f64))
            }
            fn visit_u64<E: de::Error>(self, x: u64) -> Result<Epsilon, E> {
                Ok(Epsilon::Finite(x as f64))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Epsilon, E> {
                match s.trim().to_ascii_lowercase().as_str() {
                    "inf" | "+inf" | "infinity" | "∞" => Ok(Epsilon::Infinite),
                    other => match other.parse::<f64>() {
                        Ok(x) => checked(x),
                        Err(_) => Err(E::custom(format!("expected a number or \"inf\", got \"{s}\""))),
                    },
                }
            }
        }
        /// NaN and -inf are refused here, where they are still visible: `from_f64` maps every
        /// non-finite value to "no privacy", so `-inf` used to run silently as eps = inf.
        fn checked<E: de::Error>(x: f64) -> Result<Epsilon, E> {
            if x.is_nan() || x == f64::NEG_INFINITY {
                return Err(E::custom(format!("epsilon {x} is not a privacy level (give a number > 0, or inf)")));
            }
            Ok(Epsilon::from_f64(x))
        }
        d.deserialize_any(V)
    }
}

/// serde helper for plain `f64` fields that may be infinite (written as "inf").
pub mod f64_or_inf {
    use super::Epsilon;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        Epsilon::from_f64(*x).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Epsilon::deserialize(d)?.as_f64())
    }
}

/// Identifies a cell; dataset and method are their config labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellKey {
    pub dataset: String,
    pub method: String,
    pub epsilon: Epsilon,
    pub seed: u64,
}

impl CellKey {
    /// The cell's file name in the store (labels are file-safe by validation).
    pub fn file_name(&self) -> String {
        format!("{}__{}__eps-{}__seed-{}.json", self.dataset, self.method, self.epsilon, self.seed)
    }
}

impl std::fmt::Display for CellKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / eps={} / seed {}", self.dataset, self.method, self.epsilon, self.seed)
    }
}

/// What a cell runner measures for one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellMeasurement {
    pub privacy_unit: PrivacyUnit,
    pub utility: Accuracy,
    pub budget: BudgetRecord,
    /// The run's recipe with the method's own knobs written out at their defaults (a default that
    /// the method or the data resolves stays unset), so that an auditor can rerun the cell and
    /// see that shadow models matched the target.
    pub recipe: serde_json::Value,
    pub attacks: Vec<AttackRecord>,
    /// The trivial predictors' utility on the cell's split (absent from cells stored before it
    /// was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// Wall time; not deterministic, so the report keeps it apart from the results.
    pub seconds: CellSeconds,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSeconds {
    pub train: f64,
    pub attacks: f64,
}

/// A finished cell as stored and reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellRecord {
    pub key: CellKey,
    pub fingerprint: String,
    /// The files (and texts) outside the config that the result depends on, by content; part of
    /// the fingerprint, kept so that `audit status` can say which one changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, InputDigest>,
    pub result: CellMeasurement,
}

/// One input of a cell by content: a file (its path as the config gave it) or a text of the
/// config (no path), with the sha256 of its bytes. `sha256` is None when the file could not be
/// read at planning time (the run then refuses it, naming the file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputDigest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub sha256: Option<String>,
}

impl InputDigest {
    /// The digest of a file's bytes.
    pub fn of_file(path: &std::path::Path) -> InputDigest {
        InputDigest { path: Some(path.display().to_string()), sha256: crate::data::file_sha256(path).ok() }
    }
    /// The digest of a text of the config (a command template, a declared claim).
    pub fn of_text(text: &str) -> InputDigest {
        use sha2::{Digest, Sha256};
        InputDigest { path: None, sha256: Some(crate::fsutil::hex(&Sha256::digest(text.as_bytes()))) }
    }
}

/// The roles whose digests differ between two input sets, each with what changed (a role
/// present in only one of them counts as changed).
pub fn changed_inputs(stored: &BTreeMap<String, InputDigest>, now: &BTreeMap<String, InputDigest>) -> Vec<String> {
    let short =
        |d: &InputDigest| d.sha256.as_deref().map_or("unreadable".to_string(), |h| h[..12.min(h.len())].to_string());
    let mut out = vec![];
    for (role, d) in now {
        let what = d.path.as_deref().map_or(role.clone(), |p| format!("{role} {p}"));
        match stored.get(role) {
            Some(s) if s == d => {}
            Some(s) => out.push(format!("{what} (sha256 {} -> {})", short(s), short(d))),
            None => out.push(format!("{what} (not an input before)")),
        }
    }
    for (role, s) in stored {
        if !now.contains_key(role) {
            let what = s.path.as_deref().map_or(role.clone(), |p| format!("{role} {p}"));
            out.push(format!("{what} (no longer an input)"));
        }
    }
    out
}

/// The budget a target claims, in a JSON-safe form (infinite epsilons as "inf").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRecord {
    pub privacy_unit: PrivacyUnit,
    pub target_epsilon: Option<Epsilon>,
    pub delta: f64,
    pub epsilon_rdp: Epsilon,
    pub rdp_order: Option<f64>,
    pub epsilon_pld: Option<Epsilon>,
    /// Why the PLD accountant gave no epsilon (its grid would not fit the memory budget); the
    /// claim is then the RDP epsilon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pld_fallback: Option<String>,
    /// The mechanism the claim was computed from, for recomputing it ([`super::claim`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// The claim: the tighter of RDP and PLD.
    pub epsilon_claimed: Epsilon,
    pub noise: Vec<(String, f64)>,
    pub components: Vec<BudgetComponentRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetComponentRecord {
    pub name: String,
    pub mechanism: String,
    #[serde(with = "f64_or_inf")]
    pub epsilon: f64,
}

impl From<&Budget> for BudgetRecord {
    fn from(b: &Budget) -> Self {
        BudgetRecord {
            privacy_unit: b.privacy_unit,
            target_epsilon: b.target_epsilon.map(Epsilon::from_f64),
            delta: b.delta,
            epsilon_rdp: Epsilon::from_f64(b.epsilon_rdp),
            rdp_order: b.rdp_order,
            epsilon_pld: b.epsilon_pld.map(Epsilon::from_f64),
            pld_fallback: b.pld_fallback.clone(),
            event: b.event.clone(),
            epsilon_claimed: Epsilon::from_f64(b.claimed_epsilon()),
            noise: b.noise.clone(),
            components: b
                .components
                .iter()
                .map(|c| BudgetComponentRecord {
                    name: c.name.clone(),
                    mechanism: c.mechanism.clone(),
                    epsilon: c.epsilon,
                })
                .collect(),
        }
    }
}

/// TPR at fixed low false-positive rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TprAtFpr {
    #[serde(rename = "0.001")]
    pub fpr_0_1pct: f64,
    #[serde(rename = "0.01")]
    pub fpr_1pct: f64,
}

/// One attack's outcome on one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttackRecord {
    /// The attack's config label.
    pub attack: String,
    /// The attack's kind (mia, link-stealing, ...).
    pub kind: String,
    /// The game in words: the adversary's knowledge and what tells a positive from a negative.
    pub game: String,
    pub auc: f64,
    pub tpr_at_fpr: TprAtFpr,
    pub balanced_accuracy: f64,
    /// Empirical epsilon lower bound (details.certificate names its test, confidence and trials),
    /// only where the game matches the claimed privacy unit; None otherwise.
    pub eps_lb: Option<f64>,
    /// violated / not refuted / inconclusive / not comparable / no claim (see attacks::stats).
    #[serde(default)]
    pub verdict: Option<String>,
    /// The same attack, at the same settings, on the target's positive control; `not refuted`
    /// needs it to have refuted the target's claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlRecord>,
    /// eps_lb exceeds the claimed epsilon in a matching game: the claim is broken.
    pub violation: bool,
    /// ROC curve as (fpr, tpr) points, thinned to at most `ROC_POINTS` on a log FPR grid.
    pub roc: Vec<(f64, f64)>,
    /// Attack-specific figures (per-distance AUCs, number of samples, notes).
    #[serde(default)]
    pub details: serde_json::Value,
}

/// What an attack reached on the positive control of its target (the target's method with its
/// noise switched off, or its non-private variant), judged against the target's claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ControlRecord {
    /// The control's method (or external target).
    pub method: String,
    /// The control's bound (None for the sensitivity replay, which certifies no epsilon).
    pub eps_lb: Option<f64>,
    /// The control's result refutes the target's claim: the attack has shown its power.
    pub caught: bool,
}

/// Upper bound on stored ROC points per attack and cell.
pub const ROC_POINTS: usize = 200;

/// Thins a ROC curve (sorted by FPR) to at most `max` points, keeping the endpoints and, at
/// log-spaced FPR levels, the highest TPR reached at or below the level, so that the low-FPR
/// region that matters for privacy keeps its resolution. Deterministic.
pub fn thin_roc(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = points.iter().copied().filter(|(f, t)| f.is_finite() && t.is_finite()).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    if pts.len() <= max || max < 3 {
        return pts;
    }
    let min_pos = pts.iter().map(|p| p.0).find(|&f| f > 0.0).unwrap_or(1e-6).max(1e-9);
    let levels = max - 2;
    let (lo, hi) = (min_pos.ln(), 0f64);
    let mut out = vec![pts[0]];
    let mut j = 0;
    for i in 0..levels {
        let level = (lo + (hi - lo) * i as f64 / (levels - 1) as f64).exp();
        while j + 1 < pts.len() && pts[j + 1].0 <= level * (1.0 + 1e-12) {
            j += 1;
        }
        if *out.last().unwrap() != pts[j] {
            out.push(pts[j]);
        }
    }
    let last = *pts.last().unwrap();
    if *out.last().unwrap() != last {
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct Grid {
        eps: Vec<Epsilon>,
    }

    #[test]
    fn toml_accepts_numbers_native_inf_and_the_string() {
        let g: Grid = toml::from_str(r#"eps = [1, 0.5, inf, "inf", "8"]"#).unwrap();
        assert_eq!(
            g.eps,
            vec![
                Epsilon::Finite(1.0),
                Epsilon::Finite(0.5),
                Epsilon::Infinite,
                Epsilon::Infinite,
                Epsilon::Finite(8.0)
            ]
        );
    }

    #[test]
    fn minus_infinity_and_nan_are_refused_not_run_as_no_privacy() {
        for text in [r#"eps = [-inf]"#, r#"eps = [nan]"#, r#"eps = ["-inf"]"#, r#"eps = ["NaN"]"#, r#"eps = [1, -inf]"#]
        {
            let err = toml::from_str::<Grid>(text).err().unwrap_or_else(|| panic!("{text} accepted"));
            assert!(err.to_string().contains("not a privacy level"), "{text}: {err}");
        }
        assert!(serde_json::from_str::<Grid>(r#"{"eps":["-inf"]}"#).is_err());
    }

    #[test]
    fn json_round_trip_keeps_infinity_as_a_string() {
        let g = Grid { eps: vec![Epsilon::Finite(2.0), Epsilon::Infinite] };
        let s = serde_json::to_string(&g).unwrap();
        assert_eq!(s, r#"{"eps":[2.0,"inf"]}"#);
        let back: Grid = serde_json::from_str(&s).unwrap();
        assert_eq!(back.eps, g.eps);
        assert!(toml::from_str::<Grid>(r#"eps = ["lots"]"#).is_err());
    }

    #[test]
    fn thin_roc_keeps_endpoints_monotone_and_bounded() {
        let n = 5000;
        let pts: Vec<(f64, f64)> = (0..=n).map(|i| i as f64 / n as f64).map(|f| (f, f.sqrt())).collect();
        let thin = thin_roc(&pts, 50);
        assert!(thin.len() <= 50, "{}", thin.len());
        assert_eq!(thin[0], (0.0, 0.0));
        assert_eq!(*thin.last().unwrap(), (1.0, 1.0));
        assert!(thin.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        // the low-FPR region keeps points (log grid)
        assert!(thin.iter().filter(|p| p.0 > 0.0 && p.0 < 0.01).count() >= 10);
        let few = [(0.0, 0.0), (0.5, 0.7), (1.0, 1.0)];
        assert_eq!(thin_roc(&few, 50), few.to_vec());
    }

    #[test]
    fn budget_record_survives_json_with_infinite_epsilon() {
        let rec = BudgetRecord::from(&Budget::non_private());
        let s = serde_json::to_string(&rec).unwrap();
        assert!(s.contains(r#""epsilon_rdp":"inf""#), "{s}");
        let back: BudgetRecord = serde_json::from_str(&s).unwrap();
        assert_eq!(back, rec);
    }

    #[test]
    fn cell_file_names_are_distinct_per_key() {
        let k = |e, s| CellKey { dataset: "cora".into(), method: "gap-edp".into(), epsilon: e, seed: s };
        let names: std::collections::BTreeSet<_> = [
            k(Epsilon::Finite(1.0), 0),
            k(Epsilon::Finite(1.0), 1),
            k(Epsilon::Infinite, 0),
            k(Epsilon::Finite(0.5), 0),
        ]
        .iter()
        .map(CellKey::file_name)
        .collect();
        assert_eq!(names.len(), 4);
        assert!(names.contains("cora__gap-edp__eps-inf__seed-0.json"));
    }
}
