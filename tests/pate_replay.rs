//! Sensitivity replay of graph-pate's teacher votes on cora: removing one private node retrains
//! one teacher, so every query's vote histogram moves by at most sqrt(2) and its top count by at
//! most 1 (the accountant's sensitivities); a round-robin partition by position, under which one
//! removal shifts every later node to another teacher, is flagged.
mod common_cora;

use gnnaudit::methods::{Method, Recipe};
use gnnaudit::replay::{pate_votes, replay, verdict, ReplayOptions, TOLERANCE};

/// The planted bug: teacher = position in the private list mod the teacher count.
fn round_robin(train: &[usize], teachers: usize, _seed: u64) -> Vec<usize> {
    (0..train.len()).map(|i| i % teachers).collect()
}

#[test]
fn one_node_moves_one_vote_and_a_positional_partition_is_flagged() {
    let data = common_cora::load("cora", 0.75, 0.1, 0);
    let mut r = Recipe::new(Method::GraphPate, Some(8.0));
    r.train.epochs = Some(10);
    r.knobs.set("teachers", 5);
    let opts = ReplayOptions { seed: 0, random_units: 1 };
    let rep = replay(&r, &data, &opts).unwrap();
    assert_eq!(rep.verdict, "not refuted", "{:?}", rep.releases);
    assert_eq!(rep.releases.len(), 2 * 2);
    for rel in &rep.releases {
        assert!(rel.unit.contains("1 teacher(s) retrained"), "{rel:?}");
        assert!(rel.ratio <= 1.0 + TOLERANCE, "{rel:?}");
        // A changed vote moves a histogram by exactly sqrt(2) (one count down, one up).
        let k = rel.observed_change * rel.observed_change;
        assert!(rel.name.starts_with("largest") || k == 0.0 || (k - 2.0).abs() < 1e-12, "{rel:?}");
    }
    let one = ReplayOptions { seed: 0, random_units: 0 };
    let (_, planted) = pate_votes::replay_with(&r, &data, &one, round_robin).unwrap();
    let max = planted.iter().map(|x| x.ratio).fold(0.0, f64::max);
    eprintln!("shipped max ratio {}, planted max ratio {max}", rep.max_ratio);
    assert!(max > 1.0 + TOLERANCE && verdict(max) == "violated", "{planted:?}");
}
