//! The README's "Audit your PyTorch / PyG model" section, run end to end: a GCNConv model trained
//! with PyTorch Geometric (tests/python/pyg_gcn.py), exported by torch.jit.trace, its members
//! saved as a boolean .npy mask, audited with the README's config. The same model with
//! GCNConv(cached=True) ignores edge_index: its edge-level rows are inconclusive with a warning.
//! The other files a PyG user may hand over (torch.save pickles, a state_dict, a torch.export
//! archive, a members file from torch.save) are each refused with their own message.
#[path = "common/external.rs"]
mod common;
use common::*;
use std::path::Path;
use std::process::Command;

/// tests/python/pyg_gcn.py on cora into a fresh folder.
fn export(flags: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("gnnaudit-pyg-").tempdir().unwrap();
    let cora = Path::new(&data_dir()).join("cora.npz");
    let mut args = vec![
        script("pyg_gcn.py").into_os_string(),
        "--graph".into(),
        cora.into_os_string(),
        "--out".into(),
        dir.path().as_os_str().to_owned(),
    ];
    args.extend(flags.iter().map(|f| f.into()));
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run_python(&refs);
    dir
}

/// The config of the README's section (the ```toml block under "Audit your PyTorch / PyG model").
fn readme_config() -> String {
    let readme = std::fs::read_to_string(
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("README.md"),
    )
    .unwrap();
    let section = readme.split("### Audit your PyTorch / PyG model").nth(1).expect("the README has the section");
    let block = section.split("```toml").nth(1).expect("a toml block").split("```").next().unwrap();
    block.lines().map(str::trim_start).collect::<Vec<_>>().join("\n")
}

/// `gnnaudit ARGS` run in `dir` (where the README's config finds its files).
fn gnnaudit_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(args)
        .current_dir(dir)
        .env("GNNAUDIT_DATA", data_dir())
        .output()
        .expect("gnnaudit runs")
}

fn attack_row<'a>(report: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
    report["cells"][0]["attacks"].as_array().unwrap().iter().find(|a| a["kind"] == kind).expect(kind)
}

fn audit_readme_config(dir: &Path) -> (serde_json::Value, String) {
    std::fs::write(dir.join("my-pyg-gcn.toml"), readme_config()).unwrap();
    let out = gnnaudit_in(dir, &["audit", "my-pyg-gcn.toml", "--out", "report"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let report = serde_json::from_str(&std::fs::read_to_string(dir.join("report/report.json")).unwrap()).unwrap();
    (report, text)
}

#[test]
fn a_traced_pyg_gcn_with_a_mask_is_audited_as_the_readme_says() {
    let dir = export(&[]);
    let (report, _) = audit_readme_config(dir.path());
    let cell = &report["cells"][0];
    let count: u64 = std::fs::read_to_string(dir.path().join("members.count")).unwrap().trim().parse().unwrap();
    assert_eq!(cell["recipe"]["members"].as_u64(), Some(count), "every member of the mask is kept");
    assert_eq!(cell["recipe"]["edge_probe"]["depends_on_edges"], true, "{}", cell["recipe"]["edge_probe"]);
    assert!(cell["inputs"]["model"]["sha256"].is_string() && cell["inputs"]["members"]["sha256"].is_string());
    let auc = |kind: &str| attack_row(&report, kind)["auc"].as_f64().unwrap();
    eprintln!(
        "PyG GCNConv, traced: mia-metric AUC {:.4}, link stealing AUC {:.4}, canary-edge AUC {:.4} (eps_lb {})",
        auc("mia-metric"),
        auc("link-stealing"),
        auc("canary-edge"),
        attack_row(&report, "canary-edge")["eps_lb"]
    );
    assert!(auc("mia-metric") > 0.6, "the non-private GCN leaks membership");
    assert!(auc("link-stealing") > 0.8, "and its edges");
    assert!(auc("canary-edge") > 0.6, "its shadow copies train from the traced init");
    for kind in ["link-stealing", "canary-edge"] {
        assert_ne!(attack_row(&report, kind)["verdict"], "inconclusive", "{kind}");
    }
}

#[test]
fn a_cached_adjacency_gets_a_warning_and_inconclusive_edge_rows_and_wrong_formats_are_named() {
    let dir = export(&["--cached", "--wrong-formats"]);
    let (report, text) = audit_readme_config(dir.path());
    assert!(text.contains("cached=True") && text.contains("uses no graph"), "{text}");
    let probe = &report["cells"][0]["recipe"]["edge_probe"];
    assert_eq!(probe["depends_on_edges"], false, "{probe}");
    for kind in ["link-stealing", "canary-edge"] {
        let row = attack_row(&report, kind);
        assert_eq!(row["verdict"], "inconclusive", "{kind}: {row}");
        assert!(row["details"]["note"].as_str().unwrap().contains("cached=True"), "{kind}");
    }
    assert_ne!(attack_row(&report, "mia-metric")["verdict"], "inconclusive", "node-level rows keep their verdict");

    // The same through `gnnaudit attack`.
    let out = gnnaudit_in(
        dir.path(),
        &["attack", "--dataset", "cora", "--torchscript", "model.pt", "--attack", "link-stealing", "--json"],
    );
    let v = json_of(&out);
    assert_eq!(v["verdict"], "inconclusive");
    assert_eq!(v["edge_probe"]["depends_on_edges"], false);
    assert!(String::from_utf8_lossy(&out.stderr).contains("re-export without cached=True"));

    let refused = |model: &str, members: Option<&str>, what: &str| {
        let mut args = vec!["attack", "--dataset", "cora", "--torchscript", model, "--attack", "mia-metric"];
        if let Some(m) = members {
            args.extend(["--members", m]);
        }
        let out = gnnaudit_in(dir.path(), &args);
        assert_bad_input(&out, members.unwrap_or(model), what)
    };
    let e = refused("pickled.pt", None, "torch.save(model) pickle");
    assert!(e.contains("torch.jit.trace"), "{e}");
    refused("state_dict.pt", None, "state_dict");
    refused("exported.pt2", None, "torch.export archive");
    let e = refused("model.pt", Some("members.pt"), "torch.save pickle");
    assert!(e.contains("numpy.save"), "{e}");
}
