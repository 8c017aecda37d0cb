//! The threat model: what an adversary can do to a target. Every attack takes only the access its
//! game assumes, so a result can say exactly what the adversary had.
use crate::error::Result;
use crate::graph::{AttackGraph, NodeSplit};
use serde::{Deserialize, Serialize};
use tch::Tensor;

/// Black-box access: the deployment answers queries about nodes of the graph it was trained on.
pub trait BlackBox {
    fn num_classes(&self) -> usize;
    /// Softmax posteriors [nodes.len(), C] of the queried nodes.
    fn posteriors(&self, nodes: &[usize]) -> Result<Tensor>;
    /// Node embeddings [nodes.len(), h], where the deployment releases them.
    fn embeddings(&self, _nodes: &[usize]) -> Result<Option<Tensor>> {
        Ok(None)
    }
    /// The embeddings the deployment computed for the nodes it trained on: (node ids, [n, h]),
    /// where it has them (DPAR's private-row outputs); the degree-inference attack reads them.
    fn training_embeddings(&self) -> Result<Option<(Vec<usize>, Tensor)>> {
        Ok(None)
    }
}

/// White-box access: parameters and a differentiable forward pass.
pub trait WhiteBox {
    fn num_classes(&self) -> usize;
    /// The trained parameters.
    fn parameters(&self) -> Vec<Tensor>;
    /// Posteriors [N, C] of the target graph's nodes as a differentiable function of a feature
    /// tensor [N, d] (the graph structure fixed to the training graph).
    fn forward_features(&self, x: &Tensor) -> Result<Tensor>;
    /// Posteriors [n, C] as a differentiable function of features [n, d] and a dense relaxed
    /// adjacency [n, n] with entries in [0, 1]; `None` when the model has no such form.
    fn forward_dense(&self, _x: &Tensor, _adj: &Tensor) -> Option<Result<Tensor>> {
        None
    }
    /// The private aggregation pipeline, re-runnable on a crafted graph (GAP, ProGAP); `None`
    /// for models without aggregation perturbation.
    fn aggregation(&self) -> Option<&dyn AggregationRelease> {
        None
    }
}

/// White-box access to a deployment's private aggregation pipeline, run on a graph the auditor
/// builds. Implementations must use the deployment's own noise code, so that a bug in it shows.
pub trait AggregationRelease {
    /// Number of noisy aggregations (GAP: hops K; ProGAP: stages K).
    fn hops(&self) -> usize;
    /// Runs the pipeline on `features` [n, d] of crafted nodes joined by directed `edges`
    /// (source, destination). Returns per hop k = 1..K the pair (inputs [n, h], the row-normalised
    /// vectors aggregated at hop k; sums [n, h], the noisy sums released at hop k).
    fn release(&self, features: &Tensor, edges: &[(usize, usize)], seed: u64) -> Result<Vec<(Tensor, Tensor)>>;
}

/// "Train a fresh model with the target's recipe (method, hyper-parameters, privacy level,
/// epsilon) on this graph and split": shadow models, LiRA and canary audits use it.
pub trait ShadowOracle {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> Result<Box<dyn BlackBox>>;
    /// As `train`, with `units` (node groups) declared as units of the target's partition: a
    /// class/subclass-level trainer samples and clips each as one unit; record-level trainers
    /// ignore them (the default trains as `train` does).
    fn train_with_units(
        &self,
        graph: &AttackGraph,
        split: &NodeSplit,
        units: &[Vec<usize>],
        seed: u64,
    ) -> Result<Box<dyn BlackBox>> {
        let _ = units;
        self.train(graph, split, seed)
    }
    /// Trains the target's recipe on this graph and split with the gradient canaries of `plan`
    /// planted in every DP-SGD step it takes, and returns what the auditor read: white box on the
    /// training loop. Refuses (Unsupported, naming the method) a recipe that runs no DP-SGD.
    fn train_with_gradient_canaries(
        &self,
        graph: &AttackGraph,
        split: &NodeSplit,
        plan: &GradientCanaryPlan,
        seed: u64,
    ) -> Result<GradientCanaryReadings> {
        let _ = (graph, split, plan, seed);
        Err(crate::error::Error::Unsupported("this target cannot plant gradient canaries in its training".into()))
    }
}

/// Where gradient canaries sit: any coordinate, or those of one-dimensional parameters (biases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GradientCanarySites {
    #[default]
    All,
    Biases,
}

/// How gradient canaries that outnumber a stage's coordinates share them: `coded` (every
/// sharer reads every step under its own orthogonal sign code), `phases` (sharers take turns), or
/// `auto`: per stage, codes where a sharer expects enough draws per code cycle, else only as
/// many canaries as the stage has coordinates, each on its own (chosen from the recipe alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GradientCanaryLayout {
    #[default]
    Auto,
    Coded,
    Phases,
}

/// Gradient canaries to plant in a training run: one fair coin each, their sites and raw norm.
#[derive(Debug, Clone, PartialEq)]
pub struct GradientCanaryPlan {
    pub included: Vec<bool>,
    pub sites: GradientCanarySites,
    /// Raw gradient norm over the clipping bound (>= 1).
    pub raw_norm: f64,
    pub seed: u64,
    /// The positive control: the same training with every DP-SGD step's noise left out.
    pub noise_off: bool,
    pub layout: GradientCanaryLayout,
    /// The trainer chooses how many of `included` to audit, before training, from its DP-SGD
    /// stages and the claim (false: all of them).
    pub choose_count: bool,
}

/// What the auditor read from the DP-SGD steps of one training run, and the claim of the DP-SGD
/// component alone (the canaries face nothing else).
#[derive(Debug, Clone, PartialEq)]
pub struct GradientCanaryReadings {
    /// Per canary: the log-likelihood ratio of its reads (the released noisy sums at its
    /// coordinate), included against left out, under the mechanism the accountant claims.
    pub scores: Vec<f64>,
    pub stages: usize,
    pub steps: usize,
    pub period: usize,
    /// Most canaries on one coordinate of a stage (coded layout; 1: none share).
    pub sharing: usize,
    /// Steps after a coded stage's last complete code cycle, left out of the scores.
    pub unscored_steps: usize,
    /// Eligible coordinates of the smallest DP-SGD stage (the most canaries that all read
    /// every step).
    pub fewest_coordinates: usize,
    /// Canaries audited: the plan's first ones (`auto` may keep fewer); `scores` has this length.
    pub canaries: usize,
    /// The layout the stages ran: `own coordinates`, `coded` or `phases`.
    pub layout: String,
    /// Why the audit kept `canaries` canaries (decided before training, from the recipe).
    pub count_reason: String,
    /// Under a chosen count: (canaries, mu, predicted gdp eps_lb) at each candidate count.
    pub count_predictions: Vec<(usize, f64, f64)>,
    pub sampled: usize,
    /// The DP-SGD component's claim (its epsilon at the method's delta).
    pub component: Claim,
    /// The accountant's description of that component.
    pub component_event: String,
    /// Wall time of the training with the canaries in it (to compare with an untouched one).
    pub training_seconds: f64,
    /// Some(K+1): the claim is node-level DP-SGD, and each canary entered as a node does, in up
    /// to K+1 terms of a batch, at +C when included and -C (the node it replaced) when not.
    pub node_terms: Option<u64>,
}

/// What the adversary is assumed to hold, recorded in every result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdversaryKnowledge {
    /// Black-box queries of posteriors for target-graph nodes.
    pub black_box: bool,
    /// Parameters and a differentiable forward.
    pub white_box: bool,
    /// Shadow models trained with the target's recipe.
    pub shadow_training: bool,
    /// Shadow graph: this many nodes per class, drawn uniformly from the target dataset.
    pub shadow_nodes_per_class: Option<usize>,
    /// Fraction of the target's edges the adversary knows (for supervised link attacks).
    pub known_edge_fraction: Option<f64>,
    /// Node features and labels of the target graph are public.
    pub public_features: bool,
    /// Fraction of nodes whose sensitive attribute the adversary knows (attribute inference).
    pub known_attribute_fraction: Option<f64>,
    /// Free-text assumptions beyond the fields above.
    pub notes: Vec<String>,
}

/// The private unit a game's positives and negatives differ in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GameUnit {
    /// Positives are training nodes, negatives nodes drawn from the same population but held out.
    NodeMembership,
    /// Positives are canary edges inserted into the training graph, negatives canaries left out.
    EdgeCanary,
    /// Positives are canary nodes trained on, negatives canary nodes left out (node-level DP).
    NodeCanary,
    /// Positives and negatives are one canary record holding one of two values, randomised
    /// locally before training (local DP).
    LdpCanary,
    /// Positives and negatives are one canary record differing in one scalar feature,
    /// randomised locally (a per-feature LDP claim, e.g. PGC's eps per feature).
    LdpFeatureCanary,
    /// Positives are canary subclasses (clusters of mislabelled records) trained on as one unit,
    /// negatives canary subclasses left out: subclass-level DP (and class-level DP, which
    /// implies it: adding a subclass to a class replaces that class).
    SubclassCanary,
    /// Positives are canary gradients planted in a DP-SGD step as one more per-example (or
    /// per-unit) gradient, negatives canaries left out: the unit of DP-SGD's own guarantee.
    GradientCanary,
    /// Positives and negatives differ in more than one private unit (e.g. natural edges vs
    /// non-edges, which also differ by homophily): practical leakage, no epsilon comparison.
    Practical,
}

/// The game an attack plays, in words and as a unit, recorded in every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Game {
    pub unit: GameUnit,
    pub positive: String,
    pub negative: String,
    /// One sentence: what the adversary knows and what tells positives from negatives.
    pub statement: String,
}

/// The privacy unit a target claims (mirrors the main crate's `PrivacyUnit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimUnit {
    None,
    Edge,
    Node,
    Local,
    /// Class-level DP (all records of one class).
    Class,
    /// Subclass-level DP (all records of one predefined subclass).
    Subclass,
}

/// What the target claims: the epsilon compared against the attack's lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub unit: ClaimUnit,
    /// None for non-private targets.
    pub epsilon: Option<f64>,
    pub delta: f64,
}

impl Claim {
    pub fn non_private() -> Self {
        Claim { unit: ClaimUnit::None, epsilon: None, delta: 0.0 }
    }
    /// Whether an attack in `game` can lower-bound this claim's epsilon. Non-private targets get a
    /// bound too, as evidence of leakage (never a violation).
    pub fn matches(&self, game: GameUnit) -> bool {
        matches!(
            (game, self.unit),
            (GameUnit::NodeMembership, ClaimUnit::Node | ClaimUnit::None)
                | (GameUnit::EdgeCanary, ClaimUnit::Edge | ClaimUnit::None)
                | (GameUnit::NodeCanary, ClaimUnit::Node | ClaimUnit::None)
                | (GameUnit::LdpCanary, ClaimUnit::Local | ClaimUnit::None)
                | (GameUnit::LdpFeatureCanary, ClaimUnit::Local | ClaimUnit::None)
                | (GameUnit::SubclassCanary, ClaimUnit::Subclass | ClaimUnit::Class | ClaimUnit::None)
                | (
                    GameUnit::GradientCanary,
                    ClaimUnit::Node | ClaimUnit::Class | ClaimUnit::Subclass | ClaimUnit::None
                )
        )
    }
}

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
    /// The claim of the one component the attack measured, when it measured one mechanism of
    /// the target and not the whole (gradient canaries face DP-SGD alone): the result is judged
    /// against it, and the target's total claim is kept in the details.
    pub component_claim: Option<Claim>,
    /// A test the attack fixed from the claim before its game, which the default split strategy
    /// gives way to (`ThresholdStrategy::Planned`): all trials certify it.
    pub planned_test: Option<PlannedTest>,
}

/// A threshold on an attack's scores fixed before its game, and the bound it is the planned
/// test of (the midpoint of a trade-off curve suits `gdp`, not the tails `clopper-pearson` needs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlannedTest {
    pub threshold: f64,
    pub bound: crate::stats::BoundKind,
}

impl PlannedTest {
    /// The strategy that certifies `bound` for an attack that planned `this`: the default split
    /// gives way to the planned test where it was planned for `bound`; any other is kept.
    pub fn strategy_for(
        this: Option<PlannedTest>,
        strategy: crate::stats::ThresholdStrategy,
        bound: crate::stats::BoundKind,
    ) -> crate::stats::ThresholdStrategy {
        strategy.with_planned(this.filter(|p| p.bound == bound).map(|p| p.threshold))
    }
}

impl Outcome {
    pub fn new(
        pos: Vec<f64>,
        neg: Vec<f64>,
        threshold: Option<f64>,
        game: Game,
        knowledge: AdversaryKnowledge,
    ) -> Self {
        Outcome {
            pos,
            neg,
            threshold,
            game,
            knowledge,
            details: Default::default(),
            note: None,
            component_claim: None,
            planned_test: None,
        }
    }
}

/// What an attack needs from its target, derived from its parameters: the front ends read it
/// (which attacks a released-posteriors file can face, whether a shadow oracle is needed, whether
/// the attribute must be carved out before training); an attack still refuses a target that
/// lacks what it needs, with its own message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// Queries the deployed model (posteriors or embeddings).
    pub black_box: bool,
    /// Needs parameters and a differentiable forward (`Target::white_box`).
    pub white_box: bool,
    /// Trains models with the target's recipe (`Target::oracle`).
    pub oracle: bool,
    /// Needs the target trained with a sensitive attribute carved out of its features (the
    /// attacker's graph carries it as `AttackGraph::sensitive`).
    pub carved_attribute: bool,
}

/// One attack: its parameters (`Self`, with their defaults and `deny_unknown_fields`), the game
/// it plays, the access it needs, and how it runs. Every attack module implements it on its own
/// parameter struct; the registry (`attack.rs`) lists each implementation once.
pub trait Attack: Clone + std::fmt::Debug + PartialEq + Default + Serialize + serde::de::DeserializeOwned {
    /// The unit its positives and negatives differ in (compared with the claim's unit).
    fn game(&self) -> GameUnit;
    /// What it needs from the target with these parameters.
    fn requires(&self) -> Access;
    /// Takes the adversary knowledge a config states (shadow graph size, known edge or attribute
    /// fraction) into the parameters: the one place where knowledge overrides a parameter.
    fn apply_knowledge(&mut self, _knowledge: &AdversaryKnowledge) -> Result<()> {
        Ok(())
    }
    /// Parameter bounds, checked before any training; errors name the parameter.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// Plays the game once against `target`.
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each game bounds exactly the claims whose unit its positives and negatives differ in.
    #[test]
    fn games_match_only_their_own_privacy_unit() {
        use ClaimUnit::*;
        use GameUnit::*;
        let table = [
            (NodeMembership, [true, false, true, false, false, false]),
            (EdgeCanary, [true, true, false, false, false, false]),
            (NodeCanary, [true, false, true, false, false, false]),
            (LdpCanary, [true, false, false, true, false, false]),
            (LdpFeatureCanary, [true, false, false, true, false, false]),
            (SubclassCanary, [true, false, false, false, true, true]),
            (Practical, [false, false, false, false, false, false]),
        ];
        for (game, want) in table {
            for (unit, &w) in [None, Edge, Node, Local, Class, Subclass].into_iter().zip(&want) {
                let claim = Claim { unit, epsilon: (unit != None).then_some(1.0), delta: 1e-5 };
                assert_eq!(claim.matches(game), w, "{game:?} vs {unit:?}");
            }
        }
    }
}
