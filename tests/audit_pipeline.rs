//! The audit pipeline with a fake cell runner: resume, reproducible report.json, the HTML report's
//! plots (well-formed, non-empty SVG; rendered in headless Chromium when it is installed), and
//! bad configs failing before any work through the binary.
mod common;
#[path = "common/data.rs"]
mod test_data;

use common::*;
use gnnaudit::audit::{run_audit, AuditConfig, OutputOptions};
use gnnaudit::report::Report;
use std::path::{Path, PathBuf};
use std::process::Command;

fn audit(out: &Path, runner: &mut FakeRunner) -> gnnaudit::audit::runner::AuditSummary {
    let opts = OutputOptions { out: Some(out.to_path_buf()), fresh: false };
    run_audit(&fake_config(), Path::new("fake.toml"), runner, &opts).unwrap()
}

/// report.json up to its `run` object (the last field): everything that must be reproducible.
fn reproducible_part(json: &str) -> &str {
    let p = json.find("\n  \"run\": {").expect("report.json has a run object");
    &json[..p]
}

#[test]
fn interrupted_audit_resumes_without_recomputing_finished_cells() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    let mut first = FakeRunner::default();
    let s1 = audit(&out, &mut first);
    assert_eq!(first.computed.len(), FAKE_CELLS);
    assert_eq!(s1.reused, 0);
    let json1 = std::fs::read_to_string(out.join("report.json")).unwrap();

    // Simulate an interruption: three cells never finished.
    let cells: Vec<PathBuf> = {
        let mut v: Vec<_> = std::fs::read_dir(out.join("cells")).unwrap().map(|e| e.unwrap().path()).collect();
        v.sort();
        v
    };
    assert_eq!(cells.len(), FAKE_CELLS);
    let removed = [&cells[0], &cells[5], &cells[13]];
    for p in removed {
        std::fs::remove_file(p).unwrap();
    }
    std::fs::remove_file(out.join("report.json")).unwrap();

    let mut second = FakeRunner::default();
    let s2 = audit(&out, &mut second);
    let mut recomputed: Vec<String> = second.computed.iter().map(|k| k.file_name()).collect();
    recomputed.sort();
    let mut expected: Vec<String> =
        removed.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    expected.sort();
    assert_eq!(recomputed, expected, "only the missing cells are recomputed");
    assert_eq!(s2.reused, FAKE_CELLS - 3);
    assert_eq!(s2.report.run.cells_computed, 3);
    let json2 = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert_same_text(reproducible_part(&json1), reproducible_part(&json2), "report.json before and after resume");

    // A changed config (other hyper-parameter) invalidates exactly that method's cells.
    let changed = FAKE_CONFIG.replace("hops = 2", "hops = 3");
    let c = AuditConfig::parse(&changed).unwrap();
    let mut third = FakeRunner::default();
    let opts = OutputOptions { out: Some(out.clone()), fresh: false };
    run_audit(&c, Path::new("fake.toml"), &mut third, &opts).unwrap();
    assert_eq!(third.computed.len(), 6);
    assert!(third.computed.iter().all(|k| k.method == "gap-edp"));
}

#[test]
fn same_config_and_seed_give_identical_report_json_outside_run() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    audit(&a, &mut FakeRunner::default());
    audit(&b, &mut FakeRunner::default());
    let ja = std::fs::read_to_string(a.join("report.json")).unwrap();
    let jb = std::fs::read_to_string(b.join("report.json")).unwrap();
    assert_ne!(ja, jb, "the run objects differ (folders)");
    assert_same_text(reproducible_part(&ja), reproducible_part(&jb), "two runs' report.json");
    // The canonical JSON reads back, and re-rendering from it is stable.
    let r = Report::load(&a.join("report.json")).unwrap();
    assert_eq!(r.cells.len(), FAKE_CELLS);
    assert_eq!(r.summary.len(), 7);
    assert_same_text(&r.to_json(), &ja, "re-serialised report.json");
    let md = std::fs::read_to_string(a.join("report.md")).unwrap();
    assert_same_text(&gnnaudit::report::markdown::render(&r), &md, "re-rendered report.md");
    assert!(md.contains("| synthetic | gap-ndp | node | 1 |"), "{md}");
    // Timestamps live only in `run`.
    assert!(!reproducible_part(&ja).contains(&r.run.started_at));
}

#[test]
fn default_output_folder_is_resumed_when_unfinished() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = fake_config();
    c.output = dir.path().join("reports");
    let opts = OutputOptions::default();
    let s1 = run_audit(&c, Path::new("fake.toml"), &mut FakeRunner::default(), &opts).unwrap();
    let name = s1.dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("fake-") && name.ends_with('Z'), "{name}");
    // Finished: a rerun starts a new folder and recomputes.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut r2 = FakeRunner::default();
    let s2 = run_audit(&c, Path::new("fake.toml"), &mut r2, &opts).unwrap();
    assert_ne!(s1.dir, s2.dir);
    assert_eq!(r2.computed.len(), FAKE_CELLS);
    // Unfinished (no report.json): the next run picks it up.
    std::fs::remove_file(s2.dir.join("report.json")).unwrap();
    let mut r3 = FakeRunner::default();
    let s3 = run_audit(&c, Path::new("fake.toml"), &mut r3, &opts).unwrap();
    assert_eq!(s3.dir, s2.dir);
    assert!(r3.computed.is_empty());
}

fn expected_figures(r: &Report) -> usize {
    // per dataset: accuracy, AUC per attack, ROC per attack and method
    let d = r.datasets.len();
    let a = r.config.attacks.len();
    let m = r.config.methods.len();
    d * (1 + a + a * m)
}

#[test]
fn html_report_is_self_contained_with_every_plot_present_and_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    let s = audit(&out, &mut FakeRunner { violate: true, ..Default::default() });
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let svgs = svg_blocks(&html);
    assert_eq!(svgs.len(), expected_figures(&s.report), "one SVG per figure");
    for svg in &svgs {
        let n = check_well_formed(svg).unwrap_or_else(|e| panic!("malformed SVG: {e}\n{}", &svg[..svg.len().min(400)]));
        assert!(n > 20, "an SVG with only {n} elements");
        assert!(drawn_elements(svg) > 5, "an empty plot");
        assert!(svg.contains("viewBox="), "SVGs scale with the page");
    }
    // Titles of the three kinds of figures.
    assert!(html.contains("test accuracy vs ε"));
    assert!(html.contains("mia AUC vs ε") && html.contains("link-stealing AUC vs ε"));
    assert!(html.contains("mia ROC, gap-ndp"));
    // Self-contained: no scripts, no external resources.
    for bad in ["<script", "<link", "src=", "@import", "url("] {
        assert!(!html.contains(bad), "report.html contains {bad}");
    }
    assert!(!html.contains("href=\"http"), "report.html links outside");
    // The violations (fake eps_lb above the claim on node-level MIA) are highlighted.
    assert!(html.contains("<tr class=\"violation\">"));
    assert_eq!(
        html.matches("<tr class=\"violation\">").count(),
        2,
        "gap-ndp at eps 1 and 8 (eps_lb < inf at eps = inf)"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("**VIOLATION**"));
    chromium_renders_every_plot(&out.join("report.html"), svgs.len());
    // For looking at the fixture report by eye (scripts/render-report.sh makes a screenshot).
    if let Some(keep) = std::env::var_os("GNNAUDIT_KEEP_FIXTURE_REPORT") {
        std::fs::create_dir_all(&keep).unwrap();
        for f in ["report.json", "report.md", "report.html"] {
            std::fs::copy(out.join(f), Path::new(&keep).join(f)).unwrap();
        }
    }
}

/// Renders the report in headless Chromium and checks, in the browser's own layout, that every
/// SVG has a non-zero size and drawn children. Skipped with a notice when Chromium is absent.
fn chromium_renders_every_plot(html_path: &Path, expected: usize) {
    let Some(chrome) = ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|c| which(c)) else {
        eprintln!("NOTICE: chromium not found; skipping the headless-browser rendering check");
        return;
    };
    let dir = html_path.parent().unwrap();
    let probe = dir.join("probe.html");
    let html = std::fs::read_to_string(html_path).unwrap();
    let script = r#"<script>
window.addEventListener('load', () => {
  const rows = [...document.querySelectorAll('svg')].map(s => {
    const r = s.getBoundingClientRect();
    const drawn = s.querySelectorAll('polyline,path,circle,line,rect,polygon').length;
    const text = s.querySelectorAll('text').length;
    return [Math.round(r.width), Math.round(r.height), drawn, text].join(',');
  });
  const pre = document.createElement('pre');
  pre.id = 'svgcheck';
  pre.textContent = 'SVG' + 'CHECK ' + rows.join(';') + ' E' + 'ND';
  document.body.appendChild(pre);
});
</script></body>"#;
    std::fs::write(&probe, html.replace("</body>", script)).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", probe.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let line =
        dom.split("SVGCHECK ").nth(1).and_then(|s| s.split(" END").next()).unwrap_or_else(|| {
            panic!("no probe output from chromium; stderr: {}", String::from_utf8_lossy(&out.stderr))
        });
    let rows: Vec<Vec<f64>> = line
        .split(';')
        .map(|r| r.split(',').map(|x| x.parse().unwrap_or_else(|_| panic!("probe output {line:?}"))).collect())
        .collect();
    assert_eq!(rows.len(), expected, "chromium sees every SVG");
    for r in &rows {
        assert!(r[0] >= 300.0 && r[1] >= 150.0, "an SVG renders at {}x{}", r[0], r[1]);
        assert!(r[2] > 5.0 && r[3] > 3.0, "an SVG without drawn elements or text: {r:?}");
    }
    eprintln!("chromium rendered {} SVG plots", rows.len());
}

fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(cmd)).find(|p| p.is_file())
}

/// Runs the binary and returns (exit code, stdout, stderr).
fn gnnaudit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gnnaudit")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_configs_fail_before_any_work_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("method = \"gap-ndp\"", "method = \"gap-nope\"", "methods[2].method"),
        ("epsilons = [1, 8, inf]", "epsilons = [1, 0, inf]", "privacy.epsilons[1]"),
        ("epsilons = [1, 8, inf]", "epsilons = [-2]", "privacy.epsilons[0]"),
        ("name = \"synthetic\"", "name = \"no-such-dataset\"", "datasets[0].name"),
        ("repeats = 2", "repeats = 2\nrepeat = 3", "unknown field `repeat`"),
        ("hops = 2", "hopz = 2", "methods[1].hopz"),
    ];
    for (i, (from, to, needle)) in cases.iter().enumerate() {
        let text = FAKE_CONFIG.replace(from, to);
        assert_ne!(text, FAKE_CONFIG);
        let path = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = dir.path().join(format!("out{i}"));
        let (code, _, err) = gnnaudit(&["audit", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(code, 2, "case {needle}: {err}");
        assert!(err.contains(needle), "case {needle}: {err}");
        assert!(!out.exists(), "nothing is written for a bad config");
    }
    let (code, _, err) = gnnaudit(&["audit", "/no/such/config.toml"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/no/such/config.toml"), "{err}");
}

fn repo(path: &str) -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn shipped_configs_and_thresholds_are_valid() {
    let data = test_data::data_dir();
    for name in ["quick", "gap-paper", "progap-paper", "lpgnn-paper"] {
        let path = repo(&format!("configs/{name}.toml"));
        if !test_data::config_datasets_present("shipped_configs_and_thresholds_are_valid", &path) {
            continue;
        }
        let c = AuditConfig::load(&path, Some(&data)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(c.name, name);
        assert!(!gnnaudit::audit::cell::plan(&c).is_empty());
    }
    gnnaudit::report::check::Thresholds::load(&repo("configs/ci-thresholds.toml")).unwrap();
    let (code, out, err) = gnnaudit(&["audit", repo("configs/quick.toml").to_str().unwrap(), "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("config") && out.contains("cells"), "{out}");
}

/// A tiny audit with real training (no attacks): the same config and seeds give the same
/// report.json outside `run`.
#[test]
fn tiny_real_audit_is_reproducible() {
    let text = r#"
        name = "tiny"
        seeds = [3]
        [privacy]
        epsilons = [2, inf]
        [[datasets]]
        name = "synthetic"
        synthetic = { nodes = 200, classes = 3, mean_degree = 6, features = 8, seed = 5 }
        [[methods]]
        method = "gap-edp"
        epochs = 10
        hops = 1
    "#;
    let c = AuditConfig::parse(text).unwrap();
    c.validate(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut jsons = vec![];
    for sub in ["a", "b"] {
        let opts = OutputOptions { out: Some(dir.path().join(sub)), fresh: false };
        let mut runner = gnnaudit::audit::execute::RealRunner::new(None);
        let s = run_audit(&c, Path::new("tiny.toml"), &mut runner, &opts).unwrap();
        assert_eq!(s.computed.len(), 2);
        jsons.push(std::fs::read_to_string(dir.path().join(sub).join("report.json")).unwrap());
    }
    assert_same_text(reproducible_part(&jsons[0]), reproducible_part(&jsons[1]), "two real runs' report.json");
    let r = Report::load(&dir.path().join("a/report.json")).unwrap();
    let gap =
        r.summary.iter().find(|s| s.method == "gap-edp" && s.epsilon == gnnaudit::audit::Epsilon::Finite(2.0)).unwrap();
    // Calibrated by RDP to the target; the tight PLD claim can only be lower.
    assert!((gap.epsilon_rdp.as_f64() - 2.0).abs() < 1e-3, "calibrated to the target: {:?}", gap.epsilon_rdp);
    assert!(gap.epsilon_claimed.as_f64() <= 2.0 + 1e-9, "{:?}", gap.epsilon_claimed);
    assert!(r.summary.iter().all(|s| s.test_accuracy.n == 1 && s.test_accuracy.mean > 1.0 / 3.0), "beats chance");
    assert_eq!(r.datasets[0].source, "embedded");
}
