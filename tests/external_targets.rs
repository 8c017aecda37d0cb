//! Several external deployments in one config, and the positive control that gives their rows
//! power: a `[control]` lets a row say `not refuted` only when the same attack refutes the claim
//! on it (its eps_lb beside the row); named `[[target]]`s get their own rows, which `report diff`
//! pairs by name; a dataset found through `--data-dir` is keyed on its bytes.
#[path = "common/external.rs"]
mod common;
use common::*;
use ndarray_npy::WriteNpyExt;
use std::path::{Path, PathBuf};

/// The first 500 node ids trained the deployment.
const MEMBERS: usize = 500;

/// Posteriors with 0.9 on the true label of every node (`leaky = false`: a model that
/// generalises, so membership does not show), or only of the members, the other nodes getting
/// 0.9 on a wrong class (`leaky = true`: membership shows in every row).
fn write_posteriors(path: &Path, labels: &[usize], leaky: bool) {
    let c = labels.iter().max().unwrap() + 1;
    let mut a = ndarray::Array2::<f32>::from_elem((labels.len(), c), 0.1 / (c - 1) as f32);
    for (v, &y) in labels.iter().enumerate() {
        let wrong = leaky && v >= MEMBERS;
        a[[v, if wrong { (y + 1) % c } else { y }]] = 0.9;
    }
    a.write_npy(std::fs::File::create(path).unwrap()).unwrap();
}

fn write_members(path: &Path) {
    std::fs::write(path, (0..MEMBERS).map(|v| format!("{v}\n")).collect::<String>()).unwrap();
}

/// In `dir`: a deployment that generalises (`{general}.npy`), a leaky one (`leaky.npy`), and
/// their members file; returns the three paths.
fn deployments(dir: &Path, general: &str) -> (PathBuf, PathBuf, PathBuf) {
    let labels = cora_labels();
    let (general, leaky, members) =
        (dir.join(format!("{general}.npy")), dir.join("leaky.npy"), dir.join("members.txt"));
    write_posteriors(&general, &labels, false);
    write_posteriors(&leaky, &labels, true);
    write_members(&members);
    (general, leaky, members)
}

/// A node-level DP-SGD claim at a stated eps 0.5 (delta below 1/nodes).
const CLAIM: &str = "[claim]\nmechanism = \"dp-sgd\"\nunit = \"node\"\nepsilon = 0.5\ndelta = 1e-4\n\
                     sample_rate = 0.05\nnoise_multiplier = 1.0\nsteps = 200\nclip = 1.0\nsampling = \"poisson\"\n";

const ATTACK: &str = "[[attacks]]\nkind = \"mia-metric\"\nparams = { source = \"target-split\" }\n";

/// The stored record of the attack in the one cell of a report.
fn attack_of(r: &serde_json::Value, method: &str) -> serde_json::Value {
    let cell = r["cells"].as_array().unwrap().iter().find(|c| c["method"] == method).expect(method);
    cell["attacks"][0].clone()
}

#[test]
fn a_control_that_is_caught_gives_the_row_its_power() {
    let dir = tempfile::tempdir().unwrap();
    let (target, leaky, members) = deployments(dir.path(), "target");
    let config = |control: Option<&Path>| {
        let cfg = dir.path().join("c.toml");
        let control = control.map_or(String::new(), |p| posteriors_table("[control]", p, &members));
        std::fs::write(&cfg, posteriors_config("c", "cora", &target, &members, &format!("{control}{CLAIM}{ATTACK}")))
            .unwrap();
        cfg
    };
    // Without a control, nothing shows the attack could have refuted the claim.
    let out_dir = dir.path().join("none");
    let (cfg, out) = (config(None), out_dir.to_str().unwrap());
    ok(&gnnaudit(&["audit", cfg.to_str().unwrap(), "--out", out]));
    let a = attack_of(&report_of(&out_dir), "posteriors");
    assert_eq!(a["verdict"], "inconclusive", "{a}");
    assert!(a["eps_lb"].as_f64().unwrap() <= 0.5, "{a}");

    // A leaky control: the same attack refutes the claim on it, so the row is `not refuted`.
    let out_dir = dir.path().join("leaky");
    let (cfg, out) = (config(Some(&leaky)), out_dir.to_str().unwrap());
    ok(&gnnaudit(&["audit", cfg.to_str().unwrap(), "--out", out]));
    let r = report_of(&out_dir);
    let a = attack_of(&r, "posteriors");
    let control = &a["control"];
    eprintln!("target eps_lb {}, control eps_lb {}", a["eps_lb"], control["eps_lb"]);
    assert_eq!(a["verdict"], "not refuted", "{a}");
    assert!(control["eps_lb"].as_f64().unwrap() > 0.5 && control["caught"] == true, "{control}");
    assert_eq!(control["method"], format!("posteriors:{}", leaky.display()));
    let inputs = &r["cells"][0]["inputs"];
    assert_eq!(
        inputs["control posteriors"]["sha256"].as_str(),
        Some(gnnaudit::data::file_sha256(&leaky).unwrap().as_str()),
        "{inputs}"
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    let shown = format!("{:.2}", control["eps_lb"].as_f64().unwrap());
    assert!(
        md.lines().any(|l| l.contains("not refuted") && l.contains(&shown)),
        "control eps_lb beside the row:\n{md}"
    );

    // The control's file is an input: replaced by a model that does not leak, the cell is
    // recomputed and the row loses its power.
    write_posteriors(&leaky, &cora_labels(), false);
    let status = ok(&gnnaudit(&["audit", "status", out]));
    assert!(status.contains(&format!("control posteriors {}", leaky.display())), "{status}");
    let text = ok(&gnnaudit(&["audit", cfg.to_str().unwrap(), "--out", out]));
    assert!(text.contains("1 cells computed, 0 reused"), "{text}");
    let a = attack_of(&report_of(&out_dir), "posteriors");
    assert_eq!(a["verdict"], "inconclusive", "{a}");
    assert!(a["control"]["eps_lb"].as_f64().unwrap() <= 0.5 && a["control"]["caught"] == false, "{a}");
}

#[test]
fn a_control_table_needs_a_target_and_names_its_bad_field() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_file(
        dir.path(),
        "c.toml",
        "name = \"c\"\n[[datasets]]\nname = \"cora\"\n[[methods]]\nmethod = \"mlp\"\n\
         [control]\nkind = \"posteriors\"\nposteriors = \"p.npy\"\n",
    );
    let out = gnnaudit(&["audit", cfg.to_str().unwrap(), "--dry-run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("control") && err.contains("needs [target]"), "{err}");

    let members = dir.path().join("members.txt");
    write_members(&members);
    std::fs::write(
        &cfg,
        format!(
            "name = \"c\"\n[[datasets]]\nname = \"cora\"\n[target]\nkind = \"posteriors\"\nposteriors = \"{m}\"\n\
             [control]\nkind = \"posteriors\"\nposteriors = \"{}\"\n{ATTACK}",
            dir.path().join("missing.npy").display(),
            m = members.display()
        ),
    )
    .unwrap();
    let out = gnnaudit(&["audit", cfg.to_str().unwrap(), "--dry-run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("control.posteriors") && err.contains("missing.npy"), "{err}");
}

/// Two `[[target]]` tables, `v1` and `v2`, in the given order.
fn two_targets(dir: &Path, name: &str, order: [(&str, &Path); 2], members: &Path) -> std::path::PathBuf {
    let cfg = dir.join(format!("{name}.toml"));
    let tables: String =
        order.iter().map(|(n, p)| posteriors_table(&format!("[[target]]\nname = \"{n}\""), p, members)).collect();
    std::fs::write(&cfg, format!("name = \"{name}\"\n[[datasets]]\nname = \"cora\"\n{tables}{ATTACK}")).unwrap();
    cfg
}

#[test]
fn named_targets_get_their_own_rows_and_report_diff_pairs_them_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (general, leaky, members) = deployments(dir.path(), "general");

    // The deployed model v1 and a second version v2 that leaks.
    let old_dir = dir.path().join("old");
    let cfg = two_targets(dir.path(), "old", [("v1", &general), ("v2", &leaky)], &members);
    ok(&gnnaudit(&["audit", cfg.to_str().unwrap(), "--out", old_dir.to_str().unwrap()]));
    let old = report_of(&old_dir);
    let methods: Vec<&str> = old["summary"].as_array().unwrap().iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, vec!["v1", "v2"]);
    let (v1, v2) = (attack_of(&old, "v1"), attack_of(&old, "v2"));
    eprintln!("AUC v1 {}, v2 {}", v1["auc"], v2["auc"]);
    assert!(v2["auc"].as_f64().unwrap() > 0.9 && v1["auc"].as_f64().unwrap() < 0.6, "{v1}\n{v2}");
    assert_eq!(old["cells"][1]["inputs"]["posteriors"]["path"].as_str(), Some(leaky.to_str().unwrap()));

    // The new audit lists them the other way round, and v1 now leaks: the diff pairs rows by
    // name, so it flags v1 and finds v2 unchanged.
    let new_dir = dir.path().join("new");
    let cfg = two_targets(dir.path(), "new", [("v2", &leaky), ("v1", &leaky)], &members);
    ok(&gnnaudit(&["audit", cfg.to_str().unwrap(), "--out", new_dir.to_str().unwrap()]));
    let out = gnnaudit(&["report", "diff", old_dir.to_str().unwrap(), new_dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "v1 leaks more: {text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("over 2 (dataset, method, ε) rows"), "{text}");
    let changed: Vec<&str> = text.lines().filter(|l| l.contains("cora / ")).collect();
    assert!(changed.iter().any(|l| l.contains("cora / v1 /")), "{text}");
    assert!(!changed.iter().any(|l| l.contains("cora / v2 /")), "v2 did not change: {text}");

    // Two targets whose rows would carry the same name are refused, naming the table.
    std::fs::write(
        &cfg,
        format!(
            "name = \"dup\"\n[[datasets]]\nname = \"cora\"\n[[target]]\nkind = \"posteriors\"\nposteriors = \"{p}\"\n\
             [[target]]\nkind = \"posteriors\"\nposteriors = \"{p}\"\n{ATTACK}",
            p = general.display()
        ),
    )
    .unwrap();
    let out = gnnaudit(&["audit", cfg.to_str().unwrap(), "--dry-run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("target[1].name") && err.contains("'posteriors'"), "{err}");
}

#[test]
fn a_dataset_found_through_data_dir_is_keyed_on_its_bytes() {
    let labels = cora_labels();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let graph = data.join("mygraph.npz");
    std::fs::copy(Path::new(&data_dir()).join("cora.npz"), &graph).unwrap();
    let (post, members) = (dir.path().join("post.npy"), dir.path().join("members.txt"));
    write_posteriors(&post, &labels, false);
    write_members(&members);
    let cfg = write_file(dir.path(), "d.toml", &posteriors_config("d", "mygraph", &post, &members, ATTACK));
    let out_dir = dir.path().join("report");
    let args =
        ["audit", cfg.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    ok(&gnnaudit(&args));
    let r = report_of(&out_dir);
    let sha = gnnaudit::data::file_sha256(&graph).unwrap();
    assert_eq!(r["cells"][0]["inputs"]["dataset"]["sha256"].as_str(), Some(sha.as_str()));
    let status = ok(&gnnaudit(&["audit", "status", out_dir.to_str().unwrap()]));
    assert!(status.contains("done 1") && status.contains("stale 0"), "{status}");
    assert!(ok(&gnnaudit(&args)).contains("0 cells computed, 1 reused"));

    // The same graph stored anew (its arrays recompressed): other bytes under the same name.
    let script = "import sys, zipfile\nsrc = zipfile.ZipFile(sys.argv[1])\nitems = [(i.filename, src.read(i)) for i in src.infolist()]\n\
                  src.close()\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_STORED) as z:\n    for n, b in items:\n        z.writestr(n, b)\n";
    let py = write_file(dir.path(), "restore.py", script);
    let out = std::process::Command::new(python()).arg(&py).arg(&graph).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ne!(gnnaudit::data::file_sha256(&graph).unwrap(), sha);
    let status = ok(&gnnaudit(&["audit", "status", out_dir.to_str().unwrap()]));
    assert!(status.contains("stale 1") && status.contains(&format!("dataset {}", graph.display())), "{status}");
    let text = ok(&gnnaudit(&args));
    assert!(text.contains("1 cells computed, 0 reused"), "{text}");
}
