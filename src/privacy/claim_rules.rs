//! The rules every claim check shares, a built-in method's recorded claim and a deployment's
//! declared one alike: when a stated epsilon is reproduced, how many private units a delta is
//! judged against, and when a delta protects nobody.
use crate::privacy::accountant::{default_delta, PrivacyUnit};

/// Relative slack within which a stated epsilon is reproduced by the recomputed one: a claim
/// stated to four significant digits (1.698 for 1.69807) is reproduced.
pub const REPRODUCED_RTOL: f64 = 1e-3;

/// Whether the recomputed epsilon reproduces the stated one: it is not above it by more than
/// [`REPRODUCED_RTOL`] relative.
pub fn reproduces(stated: f64, recomputed: f64) -> bool {
    recomputed <= stated * (1.0 + REPRODUCED_RTOL) + 1e-12
}

/// The flag of a stated epsilon the mechanism does not reproduce (None: reproduced).
pub fn not_reproduced_flag(stated: f64, recomputed: f64, delta: f64) -> Option<String> {
    (!reproduces(stated, recomputed)).then(|| {
        format!(
            "not reproduced: the mechanism spends epsilon = {recomputed:.6} at delta = {delta}, above the stated \
             {stated} (by more than {REPRODUCED_RTOL} relative)"
        )
    })
}

/// The number N of private units a delta is judged against. On an undirected graph the
/// edge-level unit is one undirected edge (both of its directions), so N is the number of
/// undirected edges; every other unit counts nodes.
pub fn private_units(unit: PrivacyUnit, nodes: u64, undirected_edges: u64) -> u64 {
    match unit {
        PrivacyUnit::Edge => undirected_edges,
        _ => nodes,
    }
}

/// The flag of a delta not below 1/N (None: it is below), with the epsilon the same mechanism
/// spends at the default delta for N when known.
pub fn delta_flag(delta: f64, n: u64, unit: PrivacyUnit, at_default: Option<f64>) -> Option<String> {
    if delta == 0.0 || delta < 1.0 / n.max(1) as f64 {
        return None;
    }
    let word = unit_word(unit);
    let d0 = default_delta(n as usize);
    let at_d0 =
        at_default.map_or(String::new(), |e| format!("; at delta = {d0:e} the same mechanism spends epsilon = {e:.4}"));
    Some(format!(
        "delta = {delta} is not below 1/N = {:.3e} (N = {n} {word}): publishing a random {}% of the {word} in the \
         clear meets it, so the claim protects nobody (the GAP/ProGAP reference code runs edge-level experiments at \
         delta = 0.1 because it reads the edge count as 0){at_d0}",
        1.0 / n as f64,
        100.0 * delta
    ))
}

pub(crate) fn unit_word(u: PrivacyUnit) -> &'static str {
    match u {
        PrivacyUnit::Edge => "undirected edges",
        PrivacyUnit::Node | PrivacyUnit::Local => "nodes",
        PrivacyUnit::Class => "classes",
        PrivacyUnit::Subclass => "subclasses",
        PrivacyUnit::None => "units",
    }
}
