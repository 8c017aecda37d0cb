//! `gnnaudit replay` over every method of the registry (iterated, not listed here): each one
//! either replays (exit 0, a report for that method carrying its own unsound note or none) or
//! refuses cleanly (exit 2, the method named with the reason its registry entry gives); never a
//! panic. Every centrally private method has a replay.
use gnnaudit::methods::spec::Replay;
use gnnaudit::methods::Method;
use gnnaudit::privacy::accountant::PrivacyUnit;
use std::process::Command;

/// A small graph: the replay's verdicts are covered elsewhere, this test covers reaching them.
const DATASET: &str = "synthetic:nodes=300,features=16";

#[test]
fn replay_of_every_registered_method_reports_or_refuses_cleanly() {
    let mut replayed = 0;
    for m in Method::ALL {
        let spec = m.spec();
        let out = Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
            .args(["replay", "--method", spec.name, "--dataset", DATASET, "--epochs", "2", "--random-units", "1"])
            .arg("--json")
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        match spec.replay {
            Replay::Releases(_) => {
                assert_eq!(out.status.code(), Some(0), "{}: {stderr}", spec.name);
                let rep: serde_json::Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(rep["method"], spec.name);
                assert!(rep["releases"].as_array().is_some_and(|r| !r.is_empty()), "{}: {rep}", spec.name);
                // A finite ratio, or a violation: the noise-off demo declares sensitivity 0, so its
                // ratios are infinite (null in JSON).
                match rep["verdict"].as_str() {
                    Some("not refuted") => {
                        assert!(rep["max_ratio"].as_f64().is_some_and(f64::is_finite), "{}: {rep}", spec.name)
                    }
                    Some("violated") => assert!(spec.unsound.is_some(), "{}: {rep}", spec.name),
                    v => panic!("{}: verdict {v:?}", spec.name),
                }
                // Each unsound method carries its own note, naming itself; a sound one none.
                match spec.unsound {
                    Some(note) => {
                        assert_eq!(rep["unsound"], note, "{}", spec.name);
                        assert!(note.contains(spec.name), "{}: {note}", spec.name);
                    }
                    None => assert!(rep["unsound"].is_null(), "{}: {rep}", spec.name),
                }
                replayed += 1;
            }
            Replay::Refused(why) => {
                assert_eq!(out.status.code(), Some(2), "{}: {stderr}", spec.name);
                assert!(stderr.contains(spec.name) && stderr.contains(why), "{}: {stderr}", spec.name);
                assert!(!stderr.contains("internal error"), "{}: {stderr}", spec.name);
            }
        }
    }
    assert!(replayed >= 15, "{replayed} methods replayed");
}

/// A method that calibrates noise to a central epsilon declares a sensitivity, so it must have a
/// replay; local-DP and non-private methods are refused with their unit's reason.
#[test]
fn every_centrally_private_method_has_a_replay() {
    for m in Method::ALL {
        let spec = m.spec();
        let central = spec.takes_epsilon && !matches!(spec.unit, PrivacyUnit::Local | PrivacyUnit::None);
        assert_eq!(matches!(spec.replay, Replay::Releases(_)), central, "{}: {:?}", spec.name, spec.replay);
    }
}
