//! Attribute inference: infer a held-out sensitive node attribute (e.g. gender in Facebook100,
//! carved out of the features before training) from the model's released posteriors or
//! embeddings, with the attack MLP trained on nodes whose attribute the adversary knows; compared
//! with the majority baseline.
use crate::classifier::{AttackMlp, MlpConfig};
use crate::error::{check, Error, Result};
use crate::metrics::partition;
use crate::threat::{Access, AdversaryKnowledge, Attack, Game, GameUnit, Outcome, Target};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AttributeParams {
    /// Fraction of nodes whose attribute the adversary knows (its training set).
    pub known_fraction: f64,
    pub use_embeddings: bool,
    pub mlp: MlpConfig,
}

impl Default for AttributeParams {
    fn default() -> Self {
        AttributeParams { known_fraction: 0.5, use_embeddings: false, mlp: MlpConfig::default() }
    }
}

impl Attack for AttributeParams {
    fn game(&self) -> GameUnit {
        GameUnit::Practical
    }
    fn requires(&self) -> Access {
        Access { black_box: true, carved_attribute: true, ..Access::default() }
    }
    fn apply_knowledge(&mut self, knowledge: &AdversaryKnowledge) -> Result<()> {
        if let Some(f) = knowledge.known_attribute_fraction {
            self.known_fraction = f;
        }
        Ok(())
    }
    fn check(&self) -> Result<()> {
        let f = self.known_fraction;
        check!(f > 0.0 && f < 1.0, "known_fraction", "{f} not in (0, 1)");
        Ok(())
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        attribute_inference(target, self, seed)
    }
}

pub fn attribute_inference(target: &Target, params: &AttributeParams, seed: u64) -> Result<Outcome> {
    check!(
        params.known_fraction > 0.0 && params.known_fraction < 1.0,
        "known fraction",
        "{} not in (0, 1)",
        params.known_fraction
    );
    let g = target.graph;
    let attr =
        g.sensitive.as_ref().ok_or_else(|| Error::invalid("sensitive", "the graph has no sensitive attribute"))?;
    // Binary game: the two most frequent values; the majority value is the negative class.
    let mut counts = std::collections::BTreeMap::new();
    for &a in attr {
        *counts.entry(a).or_insert(0usize) += 1;
    }
    let mut by_count: Vec<(usize, usize)> = counts.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    check!(by_count.len() >= 2, "sensitive", "the attribute takes a single value");
    let (major, minor) = (by_count[0].0, by_count[1].0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut nodes: Vec<usize> = (0..g.num_nodes).filter(|&v| attr[v] == major || attr[v] == minor).collect();
    nodes.shuffle(&mut rng);
    let released = if params.use_embeddings {
        target
            .black_box
            .embeddings(&nodes)?
            .ok_or_else(|| Error::Unsupported("the target releases no embeddings".into()))?
    } else {
        target.black_box.posteriors(&nodes)?
    };
    let y: Vec<i64> = nodes.iter().map(|&v| (attr[v] == minor) as i64).collect();
    let n_known = ((params.known_fraction * nodes.len() as f64) as usize).clamp(2, nodes.len() - 2);
    let n_val = (n_known / 7).max(1);
    let n_fit = n_known - n_val;
    let x = released.to_kind(tch::Kind::Float);
    let rows = |a: usize, b: usize| x.narrow(0, a as i64, (b - a) as i64);
    let mlp = AttackMlp::fit(
        &rows(0, n_fit),
        &y[..n_fit],
        Some((&rows(n_fit, n_known), &y[n_fit..n_known])),
        2,
        params.mlp,
        seed,
    )?;
    let scores = mlp.positive_scores(&rows(n_known, nodes.len()));
    let truth: Vec<bool> = y[n_known..].iter().map(|&v| v == 1).collect();
    let accuracy =
        scores.iter().zip(&truth).filter(|(&s, &t)| (s >= 0.5) == t).count() as f64 / truth.len().max(1) as f64;
    let majority = truth.iter().filter(|&&t| !t).count() as f64 / truth.len().max(1) as f64;
    let (pos, neg) = partition(&scores, &truth);
    let game = Game {
        unit: GameUnit::Practical,
        positive: format!("a node whose sensitive attribute is value {minor}"),
        negative: format!("a node whose sensitive attribute is value {major} (the majority)"),
        statement: format!(
            "The adversary knows the sensitive attribute of {:.0}% of the nodes, queries the {} of all nodes, and \
             infers the attribute of the others; the attribute was removed from the model's input features.",
            100.0 * params.known_fraction,
            if params.use_embeddings { "embeddings" } else { "posteriors" }
        ),
    };
    let knowledge = AdversaryKnowledge {
        black_box: true,
        known_attribute_fraction: Some(params.known_fraction),
        ..Default::default()
    };
    let mut out = Outcome::new(pos, neg, Some(0.5), game, knowledge);
    out.details.insert("accuracy".into(), accuracy.into());
    out.details.insert("majority_baseline".into(), majority.into());
    out.details.insert("values".into(), serde_json::json!({"negative": major, "positive": minor}));
    Ok(out)
}
