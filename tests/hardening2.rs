//! The second hostile sweep: a command target that cannot be turned into shell code, sizes
//! refused before anything is allocated, Ctrl-C and SIGKILL that stop every process an audit
//! started, and exit codes as the README states them (2: bad input, 1: a failed check).
//! Every case runs the real binary.
use ndarray_npy::WriteNpyExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/cli.rs"]
mod cli;
use cli::{command, data_dir, gnnaudit, refused, walk};
// Both helpers include tests/common/data.rs for the tests that load only one of them.
#[allow(clippy::duplicate_mod)]
#[path = "common/external.rs"]
mod external;
use external::python;

/// Cora's 2708 nodes with one fixed 7-class posterior each, as a CSV any pipeline can copy.
fn cora_posteriors_csv(dir: &Path) -> PathBuf {
    let p = dir.join("fixed.csv");
    let mut text = String::from("node,c0,c1,c2,c3,c4,c5,c6\n");
    for i in 0..2708 {
        text += &format!("{i},0.1,0.1,0.1,0.1,0.1,0.1,0.4\n");
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// Cora's 2708 nodes with a uniform 7-class posterior each, as a .npy release.
fn uniform_cora_posteriors(dir: &Path) -> PathBuf {
    let p = dir.join("p.npy");
    ndarray::Array2::<f32>::from_elem((2708, 7), 1.0 / 7.0).write_npy(std::fs::File::create(&p).unwrap()).unwrap();
    p
}

/// Whether process `pid` still runs (a zombie has exited).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits (up to a bound far above what the step needs) until `cond` holds.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(120), "never happened: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn read_pid(path: &Path) -> u32 {
    let mut pid = None;
    eventually(&format!("{} written", path.display()), || {
        pid = pids_written(path).first().copied();
        pid.is_some()
    });
    pid.unwrap()
}

/// `attack --dataset cora` followed by `args`.
fn attack_on_cora<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [&["attack", "--dataset", "cora"][..], args].concat()
}

fn wait_exit(child: &mut Child) -> i32 {
    let mut code = None;
    eventually("gnnaudit exits", || {
        code = child.try_wait().unwrap().map(|s| s.code().unwrap_or(-1));
        code.is_some()
    });
    code.unwrap()
}

/// Sends Ctrl-C (SIGINT) to a gnnaudit this test started with stderr piped; returns its exit
/// code and stderr.
fn ctrl_c(child: &mut Child) -> (i32, String) {
    // SAFETY: signals a child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let code = wait_exit(child);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (code, err)
}

/// How many temporary work folders of command targets stand in `tmp` (the children's TMPDIR).
fn command_work_folders(tmp: &Path) -> usize {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("gnnaudit-command-"))
        .count()
}

/// An audit config of cora attacked by link stealing through the command target `template`,
/// after the top-level keys `top`.
fn command_audit(top: &str, template: &str) -> String {
    format!(
        "{top}\n[[datasets]]\nname = \"cora\"\n[target]\nkind = \"command\"\ncommand = \"{}\"\n\
         [[attacks]]\nkind = \"link-stealing\"\n",
        template.replace('"', "\\\"")
    )
}

// ------------------------------------------------------------------ the command target

#[test]
fn hostile_work_dirs_run_no_shell_code_and_reach_the_pipeline_whole() {
    let root = tempfile::tempdir().unwrap();
    let fixed = cora_posteriors_csv(root.path());
    for hostile in ["x;touch PWNED;{out}", "\"$(touch PWNED)\"", "{seed} `touch PWNED`"] {
        let work = root.path().join(hostile);
        // The pipeline records the folder it was given, then releases the fixed posteriors there.
        let given = root.path().join("given");
        let template = format!(
            "sh -c 'printf %s \"$3\" > \"$1\"; cp \"$0\" \"$3/posteriors.csv\"' {} {} {{graph}} {{out}}",
            fixed.display(),
            given.display()
        );
        let (code, out, err) = gnnaudit(&attack_on_cora(&[
            "--command",
            &template,
            "--work-dir",
            work.to_str().unwrap(),
            "--attack",
            "link-stealing",
            "--json",
        ]));
        assert_eq!(code, 0, "{hostile}: {out}{err}");
        let given = std::fs::read_to_string(&given).unwrap();
        assert!(given.starts_with(work.to_str().unwrap()) && given.ends_with("/out"), "{hostile}: {given}");
        assert!(Path::new(&given).is_dir(), "the pipeline got the run's folder: {given}");
    }
    let pwned = walk(root.path()).into_iter().filter(|p| p.file_name().is_some_and(|n| n == "PWNED")).count();
    assert_eq!(pwned, 0, "a path ran as shell code");
    assert!(!Path::new("PWNED").exists());
}

#[test]
fn quoted_placeholders_and_absurd_timeouts_are_refused() {
    let quoted = attack_on_cora(&["--command", "ok.sh \"{graph}\" \"{out}\"", "--attack", "link-stealing"]);
    refused(&quoted, &["invalid --command", "quotes the placeholder {graph}", "without a shell"]);
    let args = attack_on_cora(&["--command", "ok.sh {graph} {out}", "--attack", "link-stealing", "--timeout", "1e300"]);
    refused(&args, &["invalid --timeout", "1e300"]);
}

#[test]
fn dry_run_and_report_md_show_the_command_and_escape_the_description() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = cora_posteriors_csv(dir.path());
    let config = dir.path().join("c.toml");
    let template = format!("sh -c 'cp \"$0\" \"$2/posteriors.csv\"' {} {{graph}} {{out}}", fixed.display());
    let top = "name = \"cmd\"\ndescription = \"<script>alert(1)</script>\"\nseed = 0";
    std::fs::write(&config, command_audit(top, &template)).unwrap();
    let (code, out, err) = gnnaudit(&["audit", config.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("target command") && out.contains("sh -c 'cp"), "the dry run shows the command: {out}");
    let report = dir.path().join("report");
    let (code, out, err) =
        gnnaudit(&["audit", config.to_str().unwrap(), "--out", report.to_str().unwrap(), "--jobs", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(!md.contains("<script>") && md.contains("&lt;script&gt;"), "{md}");
    assert!(md.contains("target command") && md.contains("sh -c 'cp"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["config"]["target"]["command"], template);
}

// ------------------------------------------------------------ sizes refused before work

#[test]
fn absurd_sizes_are_refused_naming_the_flag() {
    let mech = |extra: &[&str], phrases: &[&str]| {
        let mut args = vec!["mechanism", "audit", "--epsilon", "1"];
        args.extend(extra);
        refused(&args, phrases);
    };
    mech(&["--mechanism", "rr", "--trials", "1000000000000"], &["invalid --trials", "of memory"]);
    mech(&["--mechanism", "edge-rand", "--nodes", "10000000000"], &["invalid --nodes", "10000000000"]);
    mech(&["--mechanism", "gaussian", "--hops", "4000000000"], &["invalid --hops", "random draws"]);
    mech(&["--mechanism", "pgc", "--features", "100000000000"], &["invalid --features", "random draws"]);
    refused(
        &["mechanism", "audit", "--mechanism", "gaussian", "--epsilon", "1e300"],
        &["does not converge", "invalid --epsilon"],
    );
    refused(
        &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--repeats", "1000000000000"],
        &["invalid --repeats", "100000"],
    );
    refused(
        &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--epochs", "1000000000000"],
        &["invalid epochs", "1000000"],
    );
}

fn grid(extra_top: &str, method_extra: &str) -> String {
    format!(
        "name = \"g\"\n{extra_top}\n[privacy]\nepsilons = [inf]\n[[datasets]]\nname = \"synthetic\"\n\
         [[methods]]\nmethod = \"mlp\"\n{method_extra}\n"
    )
}

#[test]
fn huge_grids_and_epochs_are_refused_by_the_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.toml");
    let dry = |text: String, extra: &[&str]| {
        std::fs::write(&p, text).unwrap();
        let mut args = vec!["audit", p.to_str().unwrap(), "--dry-run"];
        args.extend(extra);
        gnnaudit(&args)
    };
    let (code, _, err) = dry(grid("repeats = 1000000000", ""), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid repeats") && err.contains("1000000000"), "{err}");
    // 1 dataset x 1 (method, epsilon) pair x 50000 seeds: within the default, past --max-cells 1000.
    let (code, out, err) = dry(grid("repeats = 50000", "epochs = 2"), &["--max-cells", "1000"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("invalid --max-cells")
            && err.contains("1 dataset(s) x 1 (method, epsilon) pair(s) x 50000 seed(s) = 50000 cells"),
        "{err}"
    );
    let (code, _, err) = dry(grid("repeats = 3", "epochs = 2"), &["--max-cells", "3"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = dry(grid("", "epochs = 1000000000000"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("epochs") && err.contains("1000000000000"), "{err}");
}

// ------------------------------------------------------------------------ exit codes

#[test]
fn unsupported_attacks_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let post = uniform_cora_posteriors(dir.path());
    refused(&attack_on_cora(&["--posteriors", post.to_str().unwrap(), "--attack", "inversion"]), &["unsupported"]);
}

// ------------------------------------------------------------------- signals, processes

/// A pipeline that appends its pid to `pid` and then sleeps for 10 minutes.
fn sleeper(pid: &Path) -> String {
    format!("sh -c 'echo $$ >> \"$0\"; exec sleep 600' {} {{graph}} {{out}}", pid.display())
}

/// Every pid the sleepers have written to `path` so far (one a line).
fn pids_written(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[test]
fn ctrl_c_during_a_command_kills_its_pipeline_and_removes_the_temporary_folder() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let pid_file = dir.path().join("pid");
    let template = sleeper(&pid_file);
    let mut child = command(&attack_on_cora(&["--command", &template, "--attack", "link-stealing"]))
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipeline = read_pid(&pid_file);
    assert!(alive(pipeline));
    assert_eq!(command_work_folders(&tmp), 1, "one temporary work folder");
    assert_eq!(ctrl_c(&mut child).0, 130);
    eventually("the pipeline is killed", || !alive(pipeline));
    assert_eq!(command_work_folders(&tmp), 0, "the temporary work folder is removed");
}

#[test]
fn workers_and_their_pipelines_die_with_a_killed_audit() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let config = dir.path().join("c.toml");
    std::fs::write(&config, command_audit("name = \"k\"\nrepeats = 2", &sleeper(&pid_file))).unwrap();
    let report = dir.path().join("report");
    let mut parent = command(&["audit", config.to_str().unwrap(), "--out", report.to_str().unwrap(), "--jobs", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pipeline = read_pid(&pid_file);
    // The pipeline's parent: the worker that runs it (not the audit's parent process).
    let stat = std::fs::read_to_string(format!("/proc/{pipeline}/stat")).unwrap();
    let worker: u32 = stat.rsplit(')').next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_ne!(worker, parent.id(), "cells run in --jobs workers");
    assert!(alive(worker) && alive(pipeline));
    parent.kill().unwrap();
    parent.wait().unwrap();
    eventually("the worker dies with its parent", || !alive(worker));
    eventually("the worker's pipeline is killed", || !alive(pipeline));
    // The other worker may have been starting its pipeline as its parent died (this once leaked
    // one): give a pipeline started then the time to write its pid, and check that every
    // pipeline is gone, not only the first.
    std::thread::sleep(Duration::from_secs(1));
    for pid in pids_written(&pid_file) {
        eventually(&format!("pipeline {pid} is killed"), || !alive(pid));
    }
}

// ----------------------------------------------------------------- report diff, render

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("reports/example/report.json")
}

fn write_report(r: &gnnaudit::report::Report) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.json"), r.to_json()).unwrap();
    dir
}

#[test]
fn report_diff_counts_dropped_rows_and_refuses_reports_with_nothing_in_common() {
    use gnnaudit::report::{summarize, Report};
    let ex = example();
    let old = ex.to_str().unwrap();
    let full = Report::load(&ex).unwrap();
    // The new audit dropped one method (its cells and rows): a trimmed grid.
    let mut trimmed = full.clone();
    let dropped = trimmed.cells.last().unwrap().method.clone();
    trimmed.cells.retain(|c| c.method != dropped);
    trimmed.summary = summarize(&trimmed.cells);
    let dir = write_report(&trimmed);
    let new = dir.path().to_str().unwrap();
    let (code, out, err) = gnnaudit(&["report", "diff", old, new]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.lines().any(|l| l.starts_with('!') && l.contains(&dropped) && l.contains("row dropped")), "{out}");
    let (code, out, err) = gnnaudit(&["report", "diff", old, new, "--allow-dropped"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("row dropped") && out.contains("0 regression(s)"), "{out}");
    // No row in common: nothing was compared, which is not a pass.
    let mut other = full.clone();
    for c in &mut other.cells {
        c.dataset = format!("{}-other", c.dataset);
    }
    other.summary = summarize(&other.cells);
    let dir = write_report(&other);
    let err = refused(&["report", "diff", old, dir.path().to_str().unwrap(), "--allow-dropped"], &["shares no"]);
    assert!(err.contains(dir.path().to_str().unwrap()), "{err}");
}

#[test]
fn render_refuses_a_tampered_report_and_writes_nothing() {
    use gnnaudit::report::Report;
    let mut r = Report::load(&example()).unwrap();
    r.cells[0].utility.test = 7.5;
    let dir = write_report(&r);
    let path = dir.path().join("report.json");
    let (code, _, err) = gnnaudit(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 2, "check refuses it: {err}");
    refused(&["render", path.to_str().unwrap()], &["report.json", "outside [0, 1]"]);
    assert!(!dir.path().join("report.md").exists() && !dir.path().join("report.html").exists());
}

// ------------------------------------------------------------------------- messages

#[test]
fn malformed_outputs_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = cora_posteriors_csv(dir.path());
    // A short row: the message says so instead of reporting NaN.
    let text = std::fs::read_to_string(&fixed).unwrap().replace("\n5,0.1,0.1,0.1,0.1,0.1,0.1,0.4\n", "\n5,0.1,0.1\n");
    let short = dir.path().join("short.csv");
    std::fs::write(&short, text).unwrap();
    let err = refused(
        &attack_on_cora(&["--posteriors", short.to_str().unwrap(), "--attack", "link-stealing"]),
        &["short.csv", "row 5 has no value", "short or empty row"],
    );
    assert!(!err.contains("NaN"), "{err}");
    // Two releases in the output folder: ambiguous, refused.
    let both = format!(
        "sh -c 'cp \"$0\" \"$2/posteriors.csv\"; printf x > \"$2/posteriors.npy\"' {} {{graph}} {{out}}",
        fixed.display()
    );
    refused(
        &attack_on_cora(&["--command", &both, "--attack", "link-stealing"]),
        &["posteriors.npy and posteriors.csv", "ambiguous"],
    );
}

#[test]
fn noise_scales_are_quoted_as_given() {
    for (s, why) in [("1e-300", "underflow"), ("1e300", "overflow")] {
        refused(&["mechanism", "audit", "--mechanism", "gaussian", "--sigma", s], &["invalid --sigma", s, why]);
        refused(
            &["account", "epsilon", "--method", "gap-edp", "--sigma", s, "--delta", "1e-5"],
            &["invalid --sigma", s, why],
        );
    }
}

#[test]
fn labels_get_the_right_reason_and_any_script() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.toml");
    let dry = |label: &str| {
        std::fs::write(&p, grid("seed = 0", &format!("epochs = 2\nlabel = \"{label}\""))).unwrap();
        gnnaudit(&["audit", p.to_str().unwrap(), "--dry-run"])
    };
    let (code, _, err) = dry("..");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("methods[0].label") && err.contains("names a folder"), "{err}");
    let (code, _, err) = dry("a/b");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'/'") && err.contains("letters (any script)"), "{err}");
    let (code, out, err) = dry("mlp-naïve-模型");
    assert_eq!(code, 0, "Unicode letters are letters: {out}{err}");
    assert!(out.contains("mlp-naïve-模型"), "{out}");
}

#[test]
fn a_label_past_the_class_names_is_refused_naming_the_file() {
    // cora.npz with node 0 labelled 100: cora names 7 classes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cora-100.npz");
    let mut src = zip::ZipArchive::new(std::fs::File::open(data_dir().join("cora.npz")).unwrap()).unwrap();
    let mut dst = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let mut labels: Option<ndarray::Array1<i64>> = None;
    for i in 0..src.len() {
        let f = src.by_index(i).unwrap();
        if f.name() == "labels.npy" {
            labels = Some(ndarray_npy::ReadNpyExt::read_npy(f).unwrap());
        } else {
            dst.raw_copy_file(f).unwrap();
        }
    }
    let mut labels = labels.expect("cora has labels");
    labels[0] = 100;
    let mut bytes = vec![];
    labels.write_npy(&mut bytes).unwrap();
    dst.start_file("labels.npy", zip::write::SimpleFileOptions::default()).unwrap();
    std::io::Write::write_all(&mut dst, &bytes).unwrap();
    dst.finish().unwrap();
    refused(
        &["datasets", "describe", path.to_str().unwrap()],
        &["cora-100.npz", "label 100 of node 0", "names 7 classes"],
    );
}

#[test]
fn a_torchscript_init_of_the_wrong_width_is_refused_before_libtorch_aborts() {
    let dir = tempfile::tempdir().unwrap();
    // A linear model on cora's 1433 features: the target with 7 classes, the init with 1.
    let script = "import sys, torch\n\
        class M(torch.nn.Module):\n\
        \x20   def __init__(self, c):\n\
        \x20       super().__init__()\n\
        \x20       self.lin = torch.nn.Linear(1433, c)\n\
        \x20   def forward(self, x, edge_index):\n\
        \x20       return self.lin(x)\n\
        torch.jit.script(M(7)).save(sys.argv[1] + '/model.pt')\n\
        torch.jit.script(M(1)).save(sys.argv[1] + '/one.pt')\n";
    // From a file: TorchScript compiles the class from its source.
    let make = dir.path().join("make.py");
    std::fs::write(&make, script).unwrap();
    let out = Command::new(python()).arg(&make).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (model, one) = (dir.path().join("model.pt"), dir.path().join("one.pt"));
    let members = dir.path().join("members.txt");
    std::fs::write(&members, (0..500).map(|i| format!("{i}\n")).collect::<String>()).unwrap();
    refused(
        &attack_on_cora(&[
            "--torchscript",
            model.to_str().unwrap(),
            "--init",
            one.to_str().unwrap(),
            "--members",
            members.to_str().unwrap(),
            "--attack",
            "lira",
            "--shadows",
            "2",
            "--epochs",
            "2",
        ]),
        &["one.pt", "forward returned shape [2708, 1], expected [2708, 7]"],
    );
}

// ------------------------------------------------------- TorchScript forwards: timeout, Ctrl-C

/// A TorchScript module on cora whose forward never returns (a scripted loop the interpreter
/// runs for ever). Before the loop it sets the byte in `dir/started` to 1 through a shared
/// memory map of the file (`torch.from_file`; TorchScript has no other way to write): the test
/// then knows the forward is running.
fn endless_module(dir: &Path) -> (PathBuf, PathBuf) {
    let script = "import sys, torch\n\
        class Endless(torch.nn.Module):\n\
        \x20   def __init__(self, marker: str):\n\
        \x20       super().__init__()\n\
        \x20       self.lin = torch.nn.Linear(1433, 7)\n\
        \x20       self.marker = marker\n\
        \x20   def forward(self, x, edge_index):\n\
        \x20       started = torch.from_file(self.marker, shared=True, size=1, dtype=torch.uint8)\n\
        \x20       started.fill_(1)\n\
        \x20       i = 0\n\
        \x20       while i >= 0:\n\
        \x20           i = (i + 1) % 1000\n\
        \x20       return self.lin(x) + started.sum() * 0\n\
        torch.jit.script(Endless(sys.argv[2])).save(sys.argv[1])\n";
    let make = dir.join("make_endless.py");
    std::fs::write(&make, script).unwrap();
    let (model, started) = (dir.join("endless.pt"), dir.join("started"));
    std::fs::write(&started, [0u8]).unwrap();
    let out = Command::new(python()).arg(&make).arg(&model).arg(&started).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (model, started)
}

#[test]
fn a_torchscript_forward_that_never_returns_times_out_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (model, _) = endless_module(dir.path());
    refused(
        &attack_on_cora(&["--torchscript", model.to_str().unwrap(), "--attack", "link-stealing", "--timeout", "2"]),
        &["endless.pt", "did not return within 2 s", "--timeout"],
    );
    refused(
        &attack_on_cora(&["--torchscript", model.to_str().unwrap(), "--attack", "link-stealing", "--timeout", "1e300"]),
        &["invalid --timeout", "1e300"],
    );
}

#[test]
fn ctrl_c_stops_a_torchscript_forward_that_never_returns() {
    let dir = tempfile::tempdir().unwrap();
    let (model, started) = endless_module(dir.path());
    let mut child = command(&attack_on_cora(&["--torchscript", model.to_str().unwrap(), "--attack", "link-stealing"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the forward starts", || std::fs::read(&started).unwrap() == [1]);
    let (code, err) = ctrl_c(&mut child);
    assert_eq!(code, 130);
    assert!(err.contains("interrupted (Ctrl-C)") && err.contains("nothing was reported"), "{err}");
}

// ----------------------------------------------------- Ctrl-C of an audit with a command target

#[test]
fn ctrl_c_of_an_audit_kills_the_commands_process_group_and_removes_its_folders() {
    for jobs in ["1", "2"] {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let pid_file = dir.path().join("pid");
        // The pipeline starts a grandchild in its group: the whole group must go.
        let template = format!("sh -c 'sleep 600 & echo $$ > \"$0\"; wait' {} {{graph}} {{out}}", pid_file.display());
        let config = dir.path().join("c.toml");
        std::fs::write(&config, command_audit("name = \"i\"\nrepeats = 1", &template)).unwrap();
        let report = dir.path().join("report");
        let mut audit =
            command(&["audit", config.to_str().unwrap(), "--out", report.to_str().unwrap(), "--jobs", jobs])
                .env("TMPDIR", &tmp)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
        let pipeline = read_pid(&pid_file);
        let group: Vec<u32> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                    s.rsplit(')').next().and_then(|r| r.split_whitespace().nth(2)) == Some(&pipeline.to_string())
                })
            })
            .collect();
        assert!(group.len() >= 2, "the pipeline and its sleep share a process group: {group:?}");
        assert_eq!(command_work_folders(&tmp), 1, "jobs {jobs}: one temporary work folder");
        // Ctrl-C reaches the audit's parent.
        let (code, err) = ctrl_c(&mut audit);
        assert_eq!(code, 130, "jobs {jobs}");
        assert!(err.contains("interrupted (Ctrl-C)"), "jobs {jobs}: {err}");
        for pid in &group {
            eventually(&format!("jobs {jobs}: process {pid} of the pipeline's group is killed"), || !alive(*pid));
        }
        eventually(&format!("jobs {jobs}: the temporary work folder is removed"), || command_work_folders(&tmp) == 0);
    }
}

// ---------------------------------------------------------------------------- full disk

/// Runs gnnaudit with `args` in a private mount namespace where `full` is a small tmpfs that
/// `setup` (a shell snippet, `$1` = the mount point) has filled; `ls -A` of the mount point is
/// appended to stdout after a `--- left:` line. None (after a SKIPPED line) when this machine
/// does not let an unprivileged user namespace mount a tmpfs.
fn on_a_full_disk(full: &Path, setup: &str, args: &[&str]) -> Option<(i32, String, String)> {
    std::fs::create_dir_all(full).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=256k tmpfs \"$1\" || exit 77\n{setup}\n\
         dd if=/dev/zero of=\"$1/fill\" bs=4096 2>/dev/null\n\
         shift\n\"$@\"; rc=$?\necho '--- left:'; ls -A \"$GNNAUDIT_FULL\"; exit $rc"
    );
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script, "sh"])
        .arg(full)
        .arg(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(args)
        .env("GNNAUDIT_DATA", data_dir())
        .env("GNNAUDIT_FULL", full)
        .env_remove("RUST_BACKTRACE")
        .output();
    match out {
        Ok(o) if o.status.code() != Some(77) && !String::from_utf8_lossy(&o.stderr).starts_with("unshare:") => Some((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )),
        _ => {
            println!("SKIPPED: full-disk tests need `unshare -rm` (user and mount namespaces) to mount a tmpfs");
            None
        }
    }
}

#[test]
fn a_full_disk_names_the_file_and_leaves_nothing_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    // render: the report fits, its report.md does not.
    let example = example();
    let setup = format!("cp '{}' \"$1/report.json\"", example.display());
    let report = full.join("report.json");
    let Some((code, out, err)) = on_a_full_disk(&full, &setup, &["render", report.to_str().unwrap()]) else {
        return;
    };
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(full.to_str().unwrap()) && err.contains("No space left on device"), "{err}");
    let left: Vec<&str> = out.split("--- left:").nth(1).unwrap().split_whitespace().collect();
    assert_eq!(left, ["fill", "report.json"], "no half-written report.md or temporary file");
    // audit: the cells and the report go to a full disk.
    let config = dir.path().join("c.toml");
    std::fs::write(&config, grid("seed = 0", "epochs = 2")).unwrap();
    let out_dir = full.join("report");
    let (code, out, err) =
        on_a_full_disk(&full, "", &["audit", config.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]).unwrap();
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(out_dir.to_str().unwrap()) && err.contains("No space left on device"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

// --------------------------------------------------------------------------- claims

#[test]
fn a_claim_whose_hops_exhaust_the_noise_names_claim_hops() {
    let dir = tempfile::tempdir().unwrap();
    let post = uniform_cora_posteriors(dir.path());
    let claim = dir.path().join("claim.toml");
    let args = attack_on_cora(&[
        "--posteriors",
        post.to_str().unwrap(),
        "--attack",
        "link-stealing",
        "--claim",
        claim.to_str().unwrap(),
    ]);
    let claim_of = |sigma: &str, hops: &str| {
        format!(
            "[claim]\nmechanism = \"aggregation\"\nepsilon = 1.0\ndelta = 1e-5\nsigma = {sigma}\nhops = {hops}\n\
             sensitivity = 1.0\n"
        )
    };
    std::fs::write(&claim, claim_of("1.0", "1000000000000000")).unwrap();
    refused(&args, &["invalid claim.hops", "does not converge"]);
    std::fs::write(&claim, claim_of("1e-9", "1")).unwrap();
    refused(&args, &["invalid claim.sigma", "does not converge"]);
}

// ------------------------------------------------------------------------ flags as flags

#[test]
fn command_line_targets_name_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pt");
    refused(
        &attack_on_cora(&["--torchscript", missing.to_str().unwrap(), "--attack", "link-stealing"]),
        &["invalid --torchscript", "missing.pt"],
    );
    let post = uniform_cora_posteriors(dir.path());
    let err = refused(
        &attack_on_cora(&[
            "--posteriors",
            post.to_str().unwrap(),
            "--members",
            missing.to_str().unwrap(),
            "--attack",
            "mia-metric",
        ]),
        &["invalid --members"],
    );
    assert!(!err.contains("target.members"), "{err}");
}
