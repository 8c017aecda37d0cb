//! The one entry point (`run_attack`) and what every attack returns (`AttackResult`).
use crate::aggregation_canary::AggregationCanaryParams;
use crate::attribute::AttributeParams;
use crate::canary::CanaryParams;
use crate::error::Result;
use crate::graph::{AttackGraph, NodeSplit};
use crate::inversion::InversionParams;
use crate::link_stealing::LinkStealingParams;
use crate::lira::LiraParams;
use crate::membership::{MembershipMetric, MiaParams};
use crate::metrics::ScoreSummary;
use crate::reconstruction::ReconstructionParams;
use crate::stats::{certify, AuditSpec, BoundKind, Certificate, ThresholdStrategy, Verdict};
use crate::threat::{AdversaryKnowledge, BlackBox, Claim, ClaimUnit, Game, GameUnit, ShadowOracle, WhiteBox};
use serde::{Deserialize, Serialize};

/// Everything an attack may be handed about one target. Each attack uses only what its threat
/// model allows and records that in its `AdversaryKnowledge`; `split` is the ground truth the
/// scorer uses (membership attacks in the reference set-up also learn part of it, and say so).
pub struct Target<'a> {
    /// The target's training graph (the adversary's copy; public features and labels).
    pub graph: &'a AttackGraph,
    pub split: &'a NodeSplit,
    pub black_box: &'a dyn BlackBox,
    pub white_box: Option<&'a dyn WhiteBox>,
    pub oracle: Option<&'a dyn ShadowOracle>,
    pub claim: Claim,
}

/// Scores of one attack on its positives and negatives, before the common summary.
pub struct Outcome {
    pub pos: Vec<f64>,
    pub neg: Vec<f64>,
    /// The attack's own decision threshold (None: the median score).
    pub threshold: Option<f64>,
    pub game: Game,
    pub knowledge: AdversaryKnowledge,
    pub details: serde_json::Map<String, serde_json::Value>,
    pub note: Option<String>,
}

impl Outcome {
    pub fn new(
        pos: Vec<f64>,
        neg: Vec<f64>,
        threshold: Option<f64>,
        game: Game,
        knowledge: AdversaryKnowledge,
    ) -> Self {
        Outcome { pos, neg, threshold, game, knowledge, details: Default::default(), note: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttackKind {
    Mia,
    MiaMetric,
    Lira,
    LinkStealing,
    CanaryEdge,
    CanaryNode,
    CanaryLdp,
    CanaryLdpFeatures,
    CanaryLdpFeature,
    CanaryAggregation,
    CanarySubclass,
    Inversion,
    GraphReconstruction,
    Attribute,
    DegreeInference,
}

impl AttackKind {
    pub fn name(self) -> &'static str {
        match self {
            AttackKind::Mia => "mia",
            AttackKind::MiaMetric => "mia-metric",
            AttackKind::Lira => "lira",
            AttackKind::LinkStealing => "link-stealing",
            AttackKind::CanaryEdge => "canary-edge",
            AttackKind::CanaryNode => "canary-node",
            AttackKind::CanaryLdp => "canary-ldp",
            AttackKind::CanaryLdpFeatures => "canary-ldp-features",
            AttackKind::CanaryLdpFeature => "canary-ldp-feature",
            AttackKind::CanaryAggregation => "canary-aggregation",
            AttackKind::CanarySubclass => "canary-subclass",
            AttackKind::Inversion => "inversion",
            AttackKind::GraphReconstruction => "graph-reconstruction",
            AttackKind::Attribute => "attribute",
            AttackKind::DegreeInference => "degree-inference",
        }
    }
    pub const ALL: [AttackKind; 15] = [
        AttackKind::Mia,
        AttackKind::MiaMetric,
        AttackKind::Lira,
        AttackKind::LinkStealing,
        AttackKind::CanaryEdge,
        AttackKind::CanaryNode,
        AttackKind::CanaryLdp,
        AttackKind::CanaryLdpFeatures,
        AttackKind::CanaryLdpFeature,
        AttackKind::CanaryAggregation,
        AttackKind::CanarySubclass,
        AttackKind::Inversion,
        AttackKind::GraphReconstruction,
        AttackKind::Attribute,
        AttackKind::DegreeInference,
    ];
    pub fn parse(s: &str) -> Option<AttackKind> {
        AttackKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Parameters of every attack (each attack reads its own part).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AttackParams {
    pub mia: MiaParams,
    pub metric: Option<MembershipMetric>,
    pub lira: LiraParams,
    pub link: LinkStealingParams,
    pub canary: CanaryParams,
    #[serde(default)]
    pub aggregation: AggregationCanaryParams,
    #[serde(default)]
    pub subclass_canary: crate::subclass_canary::SubclassCanaryParams,
    pub inversion: InversionParams,
    pub reconstruction: ReconstructionParams,
    pub attribute: AttributeParams,
    #[serde(default)]
    pub degree: crate::degree_inference::DegreeInferenceParams,
    /// Confidence level of the bound behind eps_lb (default 0.95).
    pub confidence: Option<f64>,
    /// The bound behind eps_lb (default clopper-pearson; see `stats`).
    #[serde(default)]
    pub bound: BoundKind,
    /// How its threshold is chosen (default split).
    #[serde(default)]
    pub strategy: ThresholdStrategy,
}

/// One attack's result: success, its game and knowledge, and the epsilon lower bound where the
/// game matches the claim.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttackResult {
    pub attack: AttackKind,
    pub game: Game,
    pub knowledge: AdversaryKnowledge,
    #[serde(flatten)]
    pub summary: ScoreSummary,
    pub epsilon: Option<f64>,
    pub delta: f64,
    pub privacy_unit: ClaimUnit,
    /// Empirical epsilon lower bound at `eps_lb_confidence`; None where the game does not match.
    pub eps_lb: Option<f64>,
    pub eps_lb_confidence: f64,
    /// The certificate behind eps_lb (bound, strategy, trials, threshold, assumption).
    pub certificate: Option<Certificate>,
    /// violated / holds / inconclusive against the claim; not comparable where the game does not
    /// match it; no claim for a non-private target.
    pub verdict: Verdict,
    /// eps_lb / claimed epsilon, where both are positive and finite.
    pub tightness: Option<f64>,
    /// verdict == violated.
    pub violation: bool,
    pub details: serde_json::Map<String, serde_json::Value>,
    pub note: Option<String>,
    pub seed: u64,
    /// The raw scores of positives and negatives, for pooling runs (not serialised).
    #[serde(skip)]
    pub scores: (Vec<f64>, Vec<f64>),
}

impl AttackResult {
    /// Summarises an outcome; certifies eps_lb (through `stats`) only when the game's unit matches
    /// the claim's.
    pub fn from_outcome(attack: AttackKind, out: Outcome, claim: Claim, spec: AuditSpec, seed: u64) -> Result<Self> {
        let summary = ScoreSummary::new(&out.pos, &out.neg, out.threshold);
        let scores = (out.pos.clone(), out.neg.clone());
        let assumption = match out.game.unit {
            GameUnit::NodeMembership => crate::stats::SPLIT_ASSUMPTION,
            _ => crate::stats::COIN_ASSUMPTION,
        };
        let certificate = if claim.matches(out.game.unit) {
            Some(certify(&out.pos, &out.neg, &AuditSpec { delta: claim.delta, ..spec }, assumption)?)
        } else {
            None
        };
        let claimed = if claim.unit == ClaimUnit::None { None } else { claim.epsilon.or(Some(f64::INFINITY)) };
        let verdict = certificate.as_ref().map_or(Verdict::NotComparable, |c| c.verdict(claimed));
        let tightness = certificate.as_ref().and_then(|c| c.tightness(claimed));
        let eps_lb = certificate.as_ref().map(|c| c.eps_lb);
        let violation = verdict == Verdict::Violated;
        let confidence = spec.confidence;
        let mut note = out.note;
        if out.game.unit == GameUnit::Practical && note.is_none() {
            note = Some(
                "Practical leakage: positives and negatives differ in more than one private unit, so this result \
                 is never compared with a claimed epsilon."
                    .into(),
            );
        }
        Ok(AttackResult {
            attack,
            game: out.game,
            knowledge: out.knowledge,
            summary,
            epsilon: claim.epsilon,
            delta: claim.delta,
            privacy_unit: claim.unit,
            eps_lb,
            eps_lb_confidence: confidence,
            certificate,
            verdict,
            tightness,
            violation,
            details: out.details,
            note,
            seed,
            scores,
        })
    }
}

/// Runs one attack against one target. `knowledge` overrides the attack's default assumptions
/// where it sets them (shadow graph size, known edge/attribute fraction).
pub fn run_attack(
    kind: AttackKind,
    target: &Target,
    knowledge: &AdversaryKnowledge,
    params: &AttackParams,
    seed: u64,
) -> Result<AttackResult> {
    let confidence = params.confidence.unwrap_or(0.95);
    crate::error::check!(confidence > 0.5 && confidence < 1.0, "confidence", "{confidence} is outside (0.5, 1)");
    let spec = AuditSpec { bound: params.bound, strategy: params.strategy, confidence, delta: 0.0, seed };
    let mut mia = params.mia;
    if let Some(k) = knowledge.shadow_nodes_per_class {
        mia.shadow_per_class = Some(k);
    }
    let out = match kind {
        AttackKind::Mia => crate::membership::shadow_mia(target, &mia, seed)?,
        AttackKind::MiaMetric => crate::membership::metric_mia(
            target,
            &mia,
            params.metric.unwrap_or(MembershipMetric::ModifiedEntropy),
            seed,
        )?,
        AttackKind::Lira => crate::lira::lira(target, &params.lira, seed)?,
        AttackKind::LinkStealing => {
            let mut p = params.link;
            if let Some(f) = knowledge.known_edge_fraction {
                p.train_fraction = f;
            }
            crate::link_stealing::link_stealing(target, &p, seed)?
        }
        AttackKind::CanaryEdge => crate::canary::canary_edge_audit(target, &params.canary, seed)?,
        AttackKind::CanaryNode => crate::record_canary::node_canary_audit(target, &params.canary, seed)?,
        AttackKind::CanaryLdp => crate::record_canary::ldp_canary_audit(target, &params.canary, seed)?,
        AttackKind::CanaryLdpFeatures => {
            crate::feature_canary::ldp_features_canary_audit(target, &params.canary, seed)?
        }
        AttackKind::CanaryLdpFeature => crate::feature_canary::ldp_feature_canary_audit(target, &params.canary, seed)?,
        AttackKind::CanaryAggregation => {
            crate::aggregation_canary::aggregation_canary_audit(target, &params.aggregation, seed)?
        }
        AttackKind::CanarySubclass => {
            crate::subclass_canary::subclass_canary_audit(target, &params.subclass_canary, seed)?
        }
        AttackKind::Inversion => crate::inversion::class_inversion(target, &params.inversion, seed)?,
        AttackKind::GraphReconstruction => {
            crate::reconstruction::graph_reconstruction(target, &params.reconstruction, seed)?
        }
        AttackKind::Attribute => {
            let mut p = params.attribute;
            if let Some(f) = knowledge.known_attribute_fraction {
                p.known_fraction = f;
            }
            crate::attribute::attribute_inference(target, &p, seed)?
        }
        AttackKind::DegreeInference => crate::degree_inference::degree_attack(target, &params.degree, seed)?,
    };
    AttackResult::from_outcome(kind, out, target.claim, spec, seed)
}
