//! What every attack returns (`AttackResult`) and the one entry point that runs an attack from
//! the registry and certifies its result (`run_attack`).
use crate::attack::{AttackKind, AttackParams};
use crate::error::Result;
use crate::metrics::ScoreSummary;
use crate::stats::{certify, AuditSpec, Certificate, Verdict};
use crate::threat::{AdversaryKnowledge, Claim, ClaimUnit, Game, GameUnit, Outcome, PlannedTest, Target};
use serde::{Deserialize, Serialize};

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
    /// violated / inconclusive against the claim (not refuted once a positive control shows the
    /// attack's power, see [`AttackResult::judge_with_control`]); not comparable where the game
    /// does not match it; no claim for a non-private target.
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
    /// The attack's planned test, which pooled runs certify as the run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_test: Option<PlannedTest>,
}

/// One certificate over the scores of every run pooled (each run is an independent draw of the
/// game, so their trials add up), never a maximum over runs: `bound` and `strategy` at the first
/// run's confidence, for a claim at `delta`. `gnnaudit attack` and external targets share it.
pub fn certify_pooled(
    runs: &[AttackResult],
    bound: crate::stats::BoundKind,
    strategy: crate::stats::ThresholdStrategy,
    delta: f64,
    seed: u64,
    assumption: &str,
) -> Result<Certificate> {
    let first = runs.first().ok_or_else(|| crate::Error::invalid("repeats", "no attack run to certify"))?;
    let pos: Vec<f64> = runs.iter().flat_map(|r| r.scores.0.iter().copied()).collect();
    let neg: Vec<f64> = runs.iter().flat_map(|r| r.scores.1.iter().copied()).collect();
    let strategy = PlannedTest::strategy_for(first.planned_test, strategy, bound);
    let spec = AuditSpec { bound, strategy, confidence: first.eps_lb_confidence, delta, seed };
    certify(&pos, &neg, &spec, assumption)
}

impl AttackResult {
    /// Summarises an outcome; certifies eps_lb (through `stats`) only when the game's unit matches
    /// the claim's.
    pub fn from_outcome(
        attack: AttackKind,
        mut out: Outcome,
        claim: Claim,
        spec: AuditSpec,
        seed: u64,
    ) -> Result<Self> {
        let claim = match out.component_claim {
            Some(component) => {
                let total = claim.epsilon.map_or(serde_json::Value::Null, Into::into);
                out.details.insert("method_claimed_epsilon".into(), total);
                component
            }
            None => claim,
        };
        let summary = ScoreSummary::new(&out.pos, &out.neg, out.threshold);
        let scores = (out.pos.clone(), out.neg.clone());
        let assumption = match out.game.unit {
            GameUnit::NodeMembership => crate::stats::SPLIT_ASSUMPTION,
            _ => crate::stats::COIN_ASSUMPTION,
        };
        let strategy = PlannedTest::strategy_for(out.planned_test, spec.strategy, spec.bound);
        let certificate = if claim.matches(out.game.unit) {
            Some(certify(&out.pos, &out.neg, &AuditSpec { delta: claim.delta, strategy, ..spec }, assumption)?)
        } else {
            None
        };
        let claimed = if claim.unit == ClaimUnit::None { None } else { claim.epsilon.or(Some(f64::INFINITY)) };
        // Judged without a control here; the caller that runs one calls `judge_with_control`.
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
            planned_test: out.planned_test,
        })
    }

    /// The claim this result is judged against (None: the target claims no privacy).
    pub fn claimed(&self) -> Option<f64> {
        if self.privacy_unit == ClaimUnit::None {
            None
        } else {
            self.epsilon.or(Some(f64::INFINITY))
        }
    }

    /// Re-judges the verdict with the eps_lb the same attack, at the same settings, reached on a
    /// positive control (the target with its noise switched off): `not refuted` needs the control
    /// above the claim, else a bound below the claim stays `inconclusive`.
    pub fn judge_with_control(&mut self, control_eps_lb: Option<f64>) {
        if let Some(c) = &self.certificate {
            self.verdict = c.verdict_with_control(self.claimed(), control_eps_lb);
            self.violation = self.verdict == Verdict::Violated;
        }
    }
}

/// Runs one attack against one target: `knowledge` overrides the attack's parameters where it
/// sets them (shadow graph size, known edge/attribute fraction), the parameters are checked, the
/// attack plays its game, and the outcome is summarised and certified.
pub fn run_attack(
    target: &Target,
    knowledge: &AdversaryKnowledge,
    params: &AttackParams,
    seed: u64,
) -> Result<AttackResult> {
    let mut attack = params.attack.clone();
    attack.apply_knowledge(knowledge)?;
    let params = AttackParams { attack, ..params.clone() };
    params.check()?;
    let confidence = params.confidence.unwrap_or(0.95);
    let spec = AuditSpec { bound: params.bound, strategy: params.strategy, confidence, delta: 0.0, seed };
    let out = params.attack.run(target, seed)?;
    debug_assert_eq!(out.game.unit, params.attack.game(), "{}: the registry's game is the one played", params.kind());
    AttackResult::from_outcome(params.kind(), out, target.claim, spec, seed)
}
