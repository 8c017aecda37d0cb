//! Which claim an attack's game is compared with. Every game is compared with the model's
//! record-level claim (`target::claim_of`) except the one-feature LDP canary, whose unit is one
//! scalar feature: it is compared with the per-feature epsilon the budget records as
//! `epsilon_per_feature` (PGC: the chapter's eps per feature; RGNN: eps_x of one coordinate's
//! GRR). Without one, the record claim is kept: it also covers a one-feature change, only loosely.
use crate::privacy::accountant::Budget;
use crate::target::claim_of;
use gnnaudit_attacks::{AttackKind, Claim};

/// The per-feature epsilon a budget records, if any.
pub fn feature_epsilon(budget: &Budget) -> Option<f64> {
    budget.noise.iter().find(|(k, _)| k == "epsilon_per_feature").map(|(_, e)| *e)
}

/// The claim `kind`'s game is compared with.
pub fn claim_for(kind: AttackKind, budget: &Budget) -> Claim {
    let record = claim_of(budget);
    match (kind, record.epsilon, feature_epsilon(budget)) {
        (AttackKind::CanaryLdpFeature, Some(_), Some(e)) => Claim { epsilon: Some(e), ..record },
        _ => record,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::mechanisms::feature_ldp::FeatureMechanismKind;

    /// PGC at eps 0.5 per feature on 10 features: the record games see 5, the one-feature game 0.5.
    #[test]
    fn one_feature_game_gets_the_per_feature_claim() {
        let cfg = crate::methods::pgc::PgcConfig {
            mechanism: FeatureMechanismKind::Onebit,
            epsilon: Some(0.5),
            ..Default::default()
        };
        let b = cfg.budget(10).unwrap();
        assert_eq!(claim_for(AttackKind::CanaryLdpFeatures, &b).epsilon, Some(5.0));
        assert_eq!(claim_for(AttackKind::CanaryLdp, &b).epsilon, Some(5.0));
        assert_eq!(claim_for(AttackKind::CanaryLdpFeature, &b).epsilon, Some(0.5));
        let open = crate::privacy::accountant::Budget::non_private();
        assert_eq!(claim_for(AttackKind::CanaryLdpFeature, &open).epsilon, None);
    }
}
