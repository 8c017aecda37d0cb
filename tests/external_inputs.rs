//! Results are keyed on the content of every external input: a posteriors file replaced at the
//! same path, or a changed script that a command target names, gives the new result (and
//! `audit status` names the input that changed), never the stored one; a command run reused from
//! the work folder is said so. A target whose utility was never measured shows "-" and `check`
//! skips its utility floor with a note.
#[path = "common/external.rs"]
mod common;
use common::*;
use ndarray_npy::WriteNpyExt;
use std::path::Path;

/// Posteriors that put `confidence` on the true label of every node and spread the rest (a
/// model that is right everywhere), or on class 0 everywhere when `right` is false.
fn write_posteriors(path: &Path, labels: &[usize], right: bool) {
    let c = labels.iter().max().unwrap() + 1;
    let mut a = ndarray::Array2::<f32>::from_elem((labels.len(), c), 0.1 / (c - 1) as f32);
    for (v, &y) in labels.iter().enumerate() {
        a[[v, if right { y } else { 0 }]] = 0.9;
    }
    a.write_npy(std::fs::File::create(path).unwrap()).unwrap();
}

fn audit(args: &[&str]) -> std::process::Output {
    let mut all = vec!["audit"];
    all.extend(args);
    gnnaudit(&all)
}

fn test_accuracy(r: &serde_json::Value) -> f64 {
    r["cells"][0]["utility"]["test"].as_f64().unwrap()
}

#[test]
fn a_posteriors_file_replaced_at_the_same_path_gives_the_new_result() {
    let labels = cora_labels();
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("posteriors.npy");
    let members = write_file(dir.path(), "members.txt", &(0..500).map(|v| format!("{v}\n")).collect::<String>());
    write_posteriors(&post, &labels, true);
    let cfg = dir.path().join("post.toml");
    let attack = "[[attacks]]\nkind = \"mia-metric\"\nparams = { source = \"target-split\" }\n";
    std::fs::write(&cfg, posteriors_config("post", "cora", &post, &members, attack)).unwrap();
    let out_dir = dir.path().join("report");
    let (cfg, out) = (cfg.to_str().unwrap(), out_dir.to_str().unwrap());
    ok(&audit(&[cfg, "--out", out]));
    let first = report_of(&out_dir);
    assert_eq!(test_accuracy(&first), 1.0, "posteriors right on every node");
    let inputs = &first["cells"][0]["inputs"];
    assert_eq!(inputs["posteriors"]["sha256"].as_str(), Some(gnnaudit::data::file_sha256(&post).unwrap().as_str()));
    assert_eq!(inputs["members"]["path"].as_str(), Some(members.to_str().unwrap()));
    assert!(inputs["dataset"]["sha256"].is_string(), "{inputs}");
    assert_eq!(first["cells"][0]["recipe"]["members"], 500);

    // Unchanged inputs: the stored cell is reused.
    let text = ok(&audit(&[cfg, "--out", out]));
    assert!(text.contains("0 cells computed, 1 reused"), "{text}");

    // Another model's posteriors at the same path.
    write_posteriors(&post, &labels, false);
    let status = ok(&gnnaudit(&["audit", "status", out]));
    assert!(status.contains("stale 1") && status.contains(&format!("posteriors {}", post.display())), "{status}");
    let text = ok(&audit(&[cfg, "--out", out]));
    assert!(text.contains("1 cells computed, 0 reused"), "{text}");
    let second = report_of(&out_dir);
    let class0 = labels.iter().filter(|&&y| y == 0).count() as f64;
    let rest: Vec<usize> = (500..labels.len()).collect();
    let want = rest.iter().filter(|&&v| labels[v] == 0).count() as f64 / rest.len() as f64;
    eprintln!(
        "test accuracy: {} before, {} after (class 0 holds {class0} nodes)",
        test_accuracy(&first),
        test_accuracy(&second)
    );
    assert!((test_accuracy(&second) - want).abs() < 1e-9, "{} vs {want}", test_accuracy(&second));
    let status = ok(&gnnaudit(&["audit", "status", out]));
    assert!(status.contains("stale 0"), "{status}");
}

/// A command target whose pipeline is a shell script that releases a prepared posteriors file.
fn command_config(dir: &Path, script: &Path, attacks: &str) -> std::path::PathBuf {
    let cfg = dir.join("cmd.toml");
    std::fs::write(
        &cfg,
        format!(
            "name = \"cmd\"\n[[datasets]]\nname = \"cora\"\n[target]\nkind = \"command\"\n\
             command = \"sh {} {{graph}} {{out}}\"\nwork_dir = \"{}\"\n{attacks}",
            script.display(),
            dir.join("work").display()
        ),
    )
    .unwrap();
    cfg
}

fn release_script(script: &Path, posteriors: &Path) {
    std::fs::write(script, format!("cp '{}' \"$2/posteriors.npy\"\n", posteriors.display())).unwrap();
}

#[test]
fn a_changed_command_script_is_run_again_and_reused_runs_are_said() {
    let labels = cora_labels();
    let dir = tempfile::tempdir().unwrap();
    let (right, wrong) = (dir.path().join("right.npy"), dir.path().join("wrong.npy"));
    write_posteriors(&right, &labels, true);
    write_posteriors(&wrong, &labels, false);
    let script = dir.path().join("release.sh");
    release_script(&script, &right);
    let cfg = command_config(
        dir.path(),
        &script,
        "[[attacks]]\nkind = \"mia-metric\"\nparams = { source = \"target-split\" }\n",
    );
    let out_dir = dir.path().join("report");
    let (cfg, out) = (cfg.to_str().unwrap(), out_dir.to_str().unwrap());
    ok(&audit(&[cfg, "--out", out]));
    let first = report_of(&out_dir);
    assert_eq!(test_accuracy(&first), 1.0);
    assert_eq!(first["cells"][0]["recipe"]["command_runs"], 1);
    let role = format!("script {}", script.display());
    assert!(first["cells"][0]["inputs"][&role]["sha256"].is_string(), "{}", first["cells"][0]["inputs"]);

    // Recomputed from scratch with the same script: the finished run in work_dir is reused, and said.
    let text = ok(&audit(&[cfg, "--out", out, "--fresh"]));
    assert!(text.contains("reusing finished runs in"), "{text}");
    let again = report_of(&out_dir);
    assert_eq!((again["cells"][0]["recipe"]["command_runs"].as_u64(), test_accuracy(&again)), (Some(0), 1.0));
    assert_eq!(again["cells"][0]["recipe"]["command_runs_reused"], 1);

    // The script now releases another model: the cell and the run are computed again.
    release_script(&script, &wrong);
    let status = ok(&gnnaudit(&["audit", "status", out]));
    assert!(status.contains(&role), "{status}");
    let text = ok(&audit(&[cfg, "--out", out]));
    assert!(text.contains("1 cells computed, 0 reused") && !text.contains("reusing finished runs"), "{text}");
    let second = report_of(&out_dir);
    assert_eq!(second["cells"][0]["recipe"]["command_runs"], 1);
    assert!(test_accuracy(&second) < 0.5, "the new script's posteriors: {}", test_accuracy(&second));
}

#[test]
fn unmeasured_utility_shows_a_dash_and_check_skips_its_floor_with_a_note() {
    let labels = cora_labels();
    let dir = tempfile::tempdir().unwrap();
    let post = dir.path().join("right.npy");
    write_posteriors(&post, &labels, true);
    let script = dir.path().join("release.sh");
    release_script(&script, &post);
    // A canary audit trains its own models through the command and never queries the deployment.
    let cfg = command_config(dir.path(), &script, "[[attacks]]\nkind = \"canary-edge\"\nparams = { canaries = 50 }\n");
    let out_dir = dir.path().join("report");
    ok(&audit(&[cfg.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]));
    let r = report_of(&out_dir);
    assert_eq!(r["cells"][0]["recipe"]["utility_measured"], false);
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    let row = md.lines().find(|l| l.starts_with("| cora | command |") && l.contains("| - | - |"));
    assert!(row.is_some(), "no utility row with '-' in:\n{md}");
    let thresholds = write_file(dir.path(), "t.toml", "min_test_accuracy = 0.5\n");
    let out = gnnaudit(&["check", out_dir.to_str().unwrap(), "--thresholds", thresholds.to_str().unwrap()]);
    let text = ok(&out);
    assert!(text.contains("note:") && text.contains("min_test_accuracy 0.500 not checked"), "{text}");
    // A measured utility below the floor still fails.
    std::fs::write(&thresholds, "min_test_accuracy = 0.5\n").unwrap();
    let measured = command_config(
        dir.path(),
        &script,
        "[[attacks]]\nkind = \"mia-metric\"\nparams = { source = \"target-split\" }\n",
    );
    let wrong = dir.path().join("wrong.npy");
    write_posteriors(&wrong, &labels, false);
    release_script(&script, &wrong);
    let out_dir = dir.path().join("measured");
    ok(&audit(&[measured.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]));
    let out = gnnaudit(&["check", out_dir.to_str().unwrap(), "--thresholds", thresholds.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("< min_test_accuracy"));
}
