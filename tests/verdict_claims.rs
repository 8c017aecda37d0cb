//! One claim checker: `attack --claim` (a deployment's `DeclaredClaim::check`) and an audit's
//! report (`report::claim::check_claim` on the cell's budget, with the declared claim's own
//! findings) count the same private units and apply the same rules, so they raise the same
//! flags. On an undirected graph the edge-level unit is one undirected edge, and a stated
//! epsilon within 1e-3 relative of the recomputed one is reproduced.
use gnnaudit::audit::execute::RealRunner;
use gnnaudit::audit::CellRunner;
use gnnaudit::external::DeclaredClaim;
use gnnaudit::privacy::accountant::PrivacyUnit;
use gnnaudit::report::claim::{check_claim, private_units};
use gnnaudit::report::config::DatasetSpec;
use gnnaudit::report::record::BudgetRecord;
use std::path::PathBuf;

#[path = "common/data.rs"]
mod data;
use data::data_dir;

/// The flags of the CLI's checker (as `attack --claim` computes them on the attack graph) and of
/// the audit's (on the report's dataset statistics), for one declared claim on cora.
fn both_flags(claim: &DeclaredClaim) -> (Vec<String>, Vec<String>, u64, u64) {
    let raw = gnnaudit::data::load_dataset("cora", Some(&data_dir())).unwrap();
    let graph = gnnaudit::target::attack_graph(&raw).unwrap();
    let cli_units = private_units(claim.unit(), graph.num_nodes as u64, graph.edges.len() as u64);
    let report = claim.check(cli_units as usize).unwrap();

    let spec: DatasetSpec = toml::from_str("name = \"cora\"").unwrap();
    let info = RealRunner::new(Some(data_dir())).dataset_info(&spec).unwrap();
    let audit_units = private_units(claim.unit(), info.nodes as u64, info.undirected_edges as u64);
    // The budget an audit records for a declared claim: the recomputation, the stated target.
    let mut budget = report.budget.clone().expect("a Gaussian claim has a budget");
    budget.target_epsilon = report.stated_epsilon;
    let mut audit = check_claim(&BudgetRecord::from(&budget), Some(audit_units)).flags;
    for f in &report.flags {
        if !audit.contains(f) {
            audit.push(f.clone());
        }
    }
    (report.flags, audit, cli_units, audit_units)
}

fn shipped_claim() -> DeclaredClaim {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs/external-command.toml");
    DeclaredClaim::from_file(&path).unwrap()
}

#[test]
fn cli_and_audit_flag_the_same_claim_the_same_way() {
    let claim = shipped_claim();
    assert_eq!(claim.unit(), PrivacyUnit::Edge);
    let (cli, audit, cli_units, audit_units) = both_flags(&claim);
    // Cora's 5,278 undirected edges, counted once by both.
    assert_eq!((cli_units, audit_units), (5278, 5278));
    // The shipped config states 1.7 at delta 1e-4 < 1/5278: nothing to flag.
    assert!(cli.is_empty() && audit.is_empty(), "cli {cli:?}, audit {audit:?}");

    // 1.698 against the recomputed 1.69807 is reproduced (1e-3 relative), by both.
    let mut rounded = claim.clone();
    rounded.epsilon = Some(1.698);
    let recomputed = rounded.check(5278).unwrap().recomputed_epsilon;
    assert!(recomputed > 1.698 && recomputed < 1.698 * 1.001, "{recomputed}");
    let (cli, audit, ..) = both_flags(&rounded);
    assert!(cli.is_empty() && audit.is_empty(), "cli {cli:?}, audit {audit:?}");

    // A delta above 1/N and an epsilon the mechanism does not reproduce: the same flags.
    let mut wrong = claim.clone();
    wrong.delta = Some(1e-3);
    wrong.epsilon = Some(1.0);
    let (cli, audit, ..) = both_flags(&wrong);
    assert_eq!(cli.len(), 2, "{cli:?}");
    assert!(cli.iter().any(|f| f.contains("not below 1/N") && f.contains("N = 5278 undirected edges")), "{cli:?}");
    assert!(cli.iter().any(|f| f.starts_with("not reproduced")), "{cli:?}");
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(sorted(cli), sorted(audit));
}
