//! Which claim an attack's game is compared with. Every game is compared with the model's
//! record-level claim (`target::claim_of`) except the one-feature LDP canary, whose unit is one
//! scalar feature: it is compared with the per-feature epsilon the budget records as
//! `epsilon_per_feature` (PGC: the chapter's eps per feature; RGNN: eps_x of one coordinate's
//! GRR). Without one, the record claim is kept: it also covers a one-feature change, only loosely.
use crate::privacy::accountant::{Budget, PrivacyUnit};
use crate::target::claim_of;
use gnnaudit_attacks::{AttackKind, Claim};

/// The per-feature epsilon a budget records, if any.
pub fn feature_epsilon(budget: &Budget) -> Option<f64> {
    budget.noise.iter().find(|(k, _)| k == "epsilon_per_feature").map(|(_, e)| *e)
}

/// The claim `kind`'s game is compared with. `canary-ldp` changes a record's label as well as its
/// features, so it is refused where the local claim covers features only (PGC keeps labels in the
/// clear): its "record" is then outside the claim and any eps_lb would be a false accusation.
pub fn claim_for(kind: AttackKind, budget: &Budget) -> crate::Result<Claim> {
    let record = claim_of(budget);
    let labels_claimed = budget.components.iter().any(|c| c.name == "labels");
    if kind == AttackKind::CanaryLdp && budget.privacy_unit == PrivacyUnit::Local && !labels_claimed {
        return Err(crate::Error::invalid(
            "attack",
            "canary-ldp changes a record's label, which this method's local claim does not cover (its \
             labels are public): use canary-ldp-features (same record claim, label fixed) or canary-ldp-feature",
        ));
    }
    Ok(match (kind, record.epsilon, feature_epsilon(budget)) {
        (AttackKind::CanaryLdpFeature, Some(_), Some(e)) => Claim { epsilon: Some(e), ..record },
        _ => record,
    })
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
        assert_eq!(claim_for(AttackKind::CanaryLdpFeatures, &b).unwrap().epsilon, Some(5.0));
        assert_eq!(claim_for(AttackKind::CanaryLdpFeature, &b).unwrap().epsilon, Some(0.5));
        let open = crate::privacy::accountant::Budget::non_private();
        assert_eq!(claim_for(AttackKind::CanaryLdpFeature, &open).unwrap().epsilon, None);
    }

    /// PGC's labels are public: the label-flipping record game is refused there, not on LPGNN,
    /// whose claim covers its labels.
    #[test]
    fn label_canaries_are_refused_where_labels_are_public() {
        let pgc = crate::methods::pgc::PgcConfig { epsilon: Some(0.5), ..Default::default() }.budget(10).unwrap();
        let err = claim_for(AttackKind::CanaryLdp, &pgc).unwrap_err().to_string();
        assert!(err.contains("canary-ldp-features"), "{err}");
        let lpgnn = crate::methods::lpgnn::LpgnnConfig {
            own: crate::methods::lpgnn::LpgnnKnobs { epsilon_x: 1.0, epsilon_y: 1.0, ..Default::default() },
            ..Default::default()
        };
        let b = lpgnn.budget(10).unwrap();
        assert_eq!(claim_for(AttackKind::CanaryLdp, &b).unwrap().epsilon, Some(b.claimed_epsilon()));
    }
}
