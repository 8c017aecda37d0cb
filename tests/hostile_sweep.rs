//! The hostile sweep as a table: inputs a new user or an attacker would try, each with the exit
//! code the README promises (2: bad input, 1: a failed check, 0: fine, 130: Ctrl-C) and the words
//! the message must hold to name the culprit (flag, key, file) and the fix. Every row runs the
//! real binary; the test prints how many inputs it tried, how many were handled well and how
//! many were defects, and fails on any defect, listing them all.
//!
//! The rows cover both sweeps: the first (sizes, seeds, threads, accountant refusals, data
//! errors, configs) and the second (the command target, absurd sizes, exit codes, messages).
//! Cases that need signals, a full disk or processes watched over time live in
//! tests/hardening2.rs.
use ndarray_npy::WriteNpyExt;
use std::path::PathBuf;
use std::process::Command;

#[path = "common/data.rs"]
mod data;
use data::data_dir;

/// One hostile input and what a good answer to it is.
struct Case {
    /// What the input tries, as the sweep's note would list it.
    what: String,
    args: Vec<String>,
    code: i32,
    /// Phrases stderr (or stdout, for exit 0 and 1) must hold.
    says: Vec<String>,
    /// Phrases the output must not hold (a wrong reason, a misleading number).
    never: Vec<String>,
}

fn case(what: &str, args: &[&str], code: i32, says: &[&str]) -> Case {
    Case {
        what: what.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        code,
        says: says.iter().map(|s| s.to_string()).collect(),
        never: vec![],
    }
}

impl Case {
    fn never(mut self, phrases: &[&str]) -> Case {
        self.never.extend(phrases.iter().map(|s| s.to_string()));
        self
    }

    /// None when the answer is right, else what is wrong with it.
    fn defect(&self) -> Option<String> {
        let out = Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
            .args(&self.args)
            .env("GNNAUDIT_DATA", data_dir())
            .env_remove("RUST_BACKTRACE")
            .output()
            .expect("run gnnaudit");
        let code = out.status.code().unwrap_or(-1);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let mut wrong = vec![];
        if code != self.code {
            wrong.push(format!("exit {code}, expected {}", self.code));
        }
        for p in &self.says {
            if !text.contains(p.as_str()) {
                wrong.push(format!("lacks '{p}'"));
            }
        }
        let crash = ["panicked", "RUST_BACKTRACE", "frame #", "Exception raised from", "internal error"];
        for p in self.never.iter().map(String::as_str).chain(crash) {
            if text.contains(p) {
                wrong.push(format!("shows '{p}'"));
            }
        }
        (!wrong.is_empty()).then(|| {
            let tail: String =
                text.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n    ");
            format!("{}: {}\n  gnnaudit {}\n    {tail}", self.what, wrong.join("; "), self.args.join(" "))
        })
    }
}

/// Cora's 2708 nodes with one fixed 7-class posterior each.
fn cora_csv() -> String {
    let mut text = String::from("node,c0,c1,c2,c3,c4,c5,c6\n");
    for i in 0..2708 {
        text += &format!("{i},0.1,0.1,0.1,0.1,0.1,0.1,0.4\n");
    }
    text
}

/// The files the cases read, written once.
struct Fixtures {
    dir: tempfile::TempDir,
}

impl Fixtures {
    fn new() -> Fixtures {
        let f = Fixtures { dir: tempfile::tempdir().unwrap() };
        std::fs::write(f.path("fixed.csv"), cora_csv()).unwrap();
        let short = cora_csv().replace("\n5,0.1,0.1,0.1,0.1,0.1,0.1,0.4\n", "\n5,0.1,0.1\n");
        std::fs::write(f.path("short.csv"), short).unwrap();
        let uniform = ndarray::Array2::<f32>::from_elem((2708, 7), 1.0 / 7.0);
        uniform.write_npy(std::fs::File::create(f.path("uniform.npy")).unwrap()).unwrap();
        std::fs::write(f.path("big-endian.npy"), big_endian_npy(2708, 7, 1.0 / 7.0)).unwrap();
        for (name, n) in [("three.txt", 3), ("six.txt", 6), ("many.txt", 1000)] {
            std::fs::write(f.path(name), (0..n).map(|i| format!("{i}\n")).collect::<String>()).unwrap();
        }
        for (name, claim) in
            [("hops.toml", "sigma = 1.0\nhops = 1000000000000000"), ("sigma.toml", "sigma = 1e-9\nhops = 1")]
        {
            let text = format!(
                "[claim]\nmechanism = \"aggregation\"\nepsilon = 1.0\ndelta = 1e-5\n{claim}\nsensitivity = 1.0\n"
            );
            std::fs::write(f.path(name), text).unwrap();
        }
        f.write_reports();
        f
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `path(name)` as a string for argv.
    fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }

    /// An audit config (dry run only) with `top` lines and `method` lines for one MLP.
    fn config(&self, name: &str, top: &str, method: &str) -> String {
        let text = format!(
            "name = \"g\"\n{top}\n[privacy]\nepsilons = [inf]\n[[datasets]]\nname = \"synthetic\"\n\
             [[methods]]\nmethod = \"mlp\"\n{method}\n"
        );
        std::fs::write(self.path(name), text).unwrap();
        self.arg(name)
    }

    /// The example report trimmed of one method, with no row in common, and tampered.
    fn write_reports(&self) {
        use gnnaudit::report::{summarize, Report};
        let full = Report::load(&example()).unwrap();
        let mut trimmed = full.clone();
        let dropped = trimmed.cells.last().unwrap().method.clone();
        trimmed.cells.retain(|c| c.method != dropped);
        trimmed.summary = summarize(&trimmed.cells);
        let mut other = full.clone();
        for c in &mut other.cells {
            c.dataset = format!("{}-other", c.dataset);
        }
        other.summary = summarize(&other.cells);
        let mut tampered = full.clone();
        tampered.cells[0].utility.test = 7.5;
        for (name, r) in [("trimmed", trimmed), ("other", other), ("tampered", tampered)] {
            std::fs::create_dir(self.path(name)).unwrap();
            std::fs::write(self.path(name).join("report.json"), r.to_json()).unwrap();
        }
    }
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("reports/example/report.json")
}

/// A big-endian float32 `.npy` of shape [rows, cols] (what NumPy writes for dtype '>f4').
fn big_endian_npy(rows: usize, cols: usize, value: f32) -> Vec<u8> {
    let mut header = format!("{{'descr': '>f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    for _ in 0..rows * cols {
        bytes.extend(value.to_be_bytes());
    }
    bytes
}

fn cases(f: &Fixtures) -> Vec<Case> {
    let cora = ["attack", "--dataset", "cora"];
    let attack = |extra: &[&str]| -> Vec<String> {
        cora.iter().copied().chain(extra.iter().copied()).map(str::to_string).collect()
    };
    let with = |what: &str, args: Vec<String>, code: i32, says: &[&str]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        case(what, &args, code, says)
    };
    let fixed = f.arg("fixed.csv");
    let copy_to_out = format!("sh -c 'cp \"$0\" \"$2/posteriors.csv\"' {fixed} {{graph}} {{out}}");
    let two_releases =
        format!("sh -c 'cp \"$0\" \"$2/posteriors.csv\"; printf x > \"$2/posteriors.npy\"' {fixed} {{graph}} {{out}}");
    let uniform = f.arg("uniform.npy");
    let max_u64 = u64::MAX.to_string();
    vec![
        // ---------------------------------------------------------- the command target (S1-S3)
        with(
            "a quoted placeholder",
            attack(&["--command", "ok.sh \"{graph}\" \"{out}\"", "--attack", "link-stealing"]),
            2,
            &["invalid --command", "quotes the placeholder {graph}", "without a shell"],
        ),
        with(
            "a template without {out}",
            attack(&["--command", "ok.sh {graph}", "--attack", "link-stealing"]),
            2,
            &["invalid --command", "has no {out} placeholder"],
        ),
        with(
            "a template with an unbalanced quote",
            attack(&["--command", "ok.sh {graph} {out} 'oops", "--attack", "link-stealing"]),
            2,
            &["invalid --command", "cannot split"],
        ),
        with(
            "a command that does not exist",
            attack(&["--command", "no-such-program-gnnaudit {graph} {out}", "--attack", "link-stealing"]),
            2,
            &["invalid --command", "cannot start", "no-such-program-gnnaudit"],
        ),
        with(
            "a failing command shows its log's tail",
            attack(&["--command", "sh -c 'echo boom-42 >&2; exit 3' {graph} {out}", "--attack", "link-stealing"]),
            2,
            &["failed", "exit status: 3", "| boom-42", "--work-dir"],
        ),
        with(
            "a command that writes no posteriors shows its log's tail",
            attack(&["--command", "sh -c 'echo quiet-7' {graph} {out}", "--attack", "link-stealing"]),
            2,
            &["wrote no posteriors.npy", "| quiet-7"],
        ),
        with(
            "a command that outlives its timeout shows its log's tail",
            attack(&[
                "--command",
                "sh -c 'echo slow-9; exec sleep 60' {graph} {out}",
                "--attack",
                "link-stealing",
                "--timeout",
                "1",
            ]),
            2,
            &["timed out after 1 s", "| slow-9"],
        ),
        with(
            "posteriors.npy and posteriors.csv both written",
            attack(&["--command", &two_releases, "--attack", "link-stealing"]),
            2,
            &["posteriors.npy and posteriors.csv", "ambiguous"],
        ),
        with("a well-formed command target", attack(&["--command", &copy_to_out, "--attack", "link-stealing"]), 0, &[]),
        // ------------------------------------------------------- sizes refused before work
        with(
            "--timeout 1e300",
            attack(&["--command", &copy_to_out, "--attack", "link-stealing", "--timeout", "1e300"]),
            2,
            &["invalid --timeout", "1e300"],
        ),
        with(
            "--timeout 0",
            attack(&["--command", &copy_to_out, "--attack", "link-stealing", "--timeout", "0"]),
            2,
            &["invalid --timeout"],
        ),
        with(
            "--timeout NaN",
            attack(&["--command", &copy_to_out, "--attack", "link-stealing", "--timeout", "NaN"]),
            2,
            &["invalid --timeout", "NaN"],
        ),
        case(
            "mechanism audit --trials 10^12",
            &["mechanism", "audit", "--mechanism", "rr", "--epsilon", "1", "--trials", "1000000000000"],
            2,
            &["invalid --trials", "of memory"],
        ),
        case(
            "mechanism audit --nodes 10^10",
            &["mechanism", "audit", "--mechanism", "edge-rand", "--epsilon", "1", "--nodes", "10000000000"],
            2,
            &["invalid --nodes", "10000000000"],
        ),
        case(
            "mechanism audit --hops 4e9",
            &["mechanism", "audit", "--mechanism", "gaussian", "--epsilon", "1", "--hops", "4000000000"],
            2,
            &["invalid --hops"],
        ),
        case(
            "mechanism audit --features 10^11",
            &["mechanism", "audit", "--mechanism", "pgc", "--epsilon", "1", "--features", "100000000000"],
            2,
            &["invalid --features"],
        ),
        case(
            "train --repeats 10^12",
            &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--repeats", "1000000000000"],
            2,
            &["invalid --repeats"],
        ),
        case(
            "train --epochs 10^12",
            &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--epochs", "1000000000000"],
            2,
            &["invalid epochs", "1000000000000"],
        ),
        case(
            "a config with repeats = 10^9",
            &["audit", &f.config("repeats.toml", "repeats = 1000000000", ""), "--dry-run"],
            2,
            &["invalid repeats", "1000000000"],
        ),
        case(
            "a grid past --max-cells",
            &["audit", &f.config("grid.toml", "repeats = 50000", "epochs = 2"), "--dry-run", "--max-cells", "1000"],
            2,
            &["invalid --max-cells", "= 50000 cells"],
        ),
        case(
            "a config with epochs = 10^12",
            &["audit", &f.config("epochs.toml", "", "epochs = 1000000000000"), "--dry-run"],
            2,
            &["epochs", "1000000000000"],
        ),
        case(
            "train --hidden 10^9",
            &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--hidden", "1000000000"],
            2,
            &["invalid hidden", "of memory"],
        ),
        case(
            "train --threads 100000",
            &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--threads", "100000"],
            2,
            &["threads"],
        ),
        case(
            "a synthetic graph of 2^63 nodes",
            &["datasets", "describe", "synthetic:nodes=9223372036854775807"],
            2,
            &["invalid csbm.nodes", "of memory"],
        ),
        case(
            "a synthetic graph of 10^9 features",
            &["datasets", "describe", "synthetic:features=1000000000"],
            2,
            &["invalid csbm.features", "of memory"],
        ),
        case("a synthetic graph of 1 class", &["datasets", "describe", "synthetic:classes=1"], 2, &["csbm.classes"]),
        case(
            "--seed at u64::MAX with --repeats 2",
            &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--seed", &max_u64, "--repeats", "2"],
            2,
            &["invalid --seed", "--repeats 2"],
        ),
        case(
            "account epsilon --steps u64::MAX",
            &["account", "epsilon", "--method", "dp-sgd", "--sigma", "1", "--delta", "1e-5", "--steps", &max_u64],
            2,
            &["invalid --steps"],
        ),
        // ---------------------------------------------------------------------- exit codes
        with(
            "inversion on a posteriors target",
            attack(&["--posteriors", &uniform, "--attack", "inversion"]),
            2,
            &["unsupported"],
        ),
        case(
            "mechanism audit --epsilon 1e300",
            &["mechanism", "audit", "--mechanism", "gaussian", "--epsilon", "1e300"],
            2,
            &["invalid --epsilon", "does not converge"],
        ),
        with(
            "a [claim] with 10^15 hops",
            attack(&["--posteriors", &uniform, "--attack", "link-stealing", "--claim", &f.arg("hops.toml")]),
            2,
            &["invalid claim.hops", "does not converge"],
        ),
        with(
            "a [claim] with sigma 1e-9",
            attack(&["--posteriors", &uniform, "--attack", "link-stealing", "--claim", &f.arg("sigma.toml")]),
            2,
            &["invalid claim.sigma", "does not converge"],
        ),
        case(
            "train gap-edp --epsilon 1e8",
            &["train", "--dataset", "synthetic:nodes=200", "--method", "gap-edp", "--epsilon", "1e8", "--epochs", "1"],
            2,
            &["invalid epsilon", "does not converge"],
        ),
        case(
            "account calibrate --epsilon 1e8",
            &["account", "calibrate", "--method", "gap-edp", "--epsilon", "1e8", "--delta", "1e-5"],
            2,
            &["invalid --epsilon", "does not converge"],
        ),
        case(
            "report diff against a trimmed report",
            &["report", "diff", example().to_str().unwrap(), &f.arg("trimmed")],
            1,
            &["row dropped"],
        ),
        case(
            "report diff of reports with no common row",
            &["report", "diff", example().to_str().unwrap(), &f.arg("other"), "--allow-dropped"],
            2,
            &["shares no"],
        ),
        case(
            "render of a tampered report",
            &["render", &format!("{}/report.json", f.arg("tampered"))],
            2,
            &["report.json", "outside [0, 1]"],
        ),
        // ------------------------------------------------------------------------ messages
        with(
            "a short CSV row",
            attack(&["--posteriors", &f.arg("short.csv"), "--attack", "link-stealing"]),
            2,
            &["short.csv", "row 5 has no value"],
        )
        .never(&["NaN"]),
        with(
            "a big-endian .npy",
            attack(&["--posteriors", &f.arg("big-endian.npy"), "--attack", "link-stealing", "--json"]),
            0,
            &["\"attack\""],
        )
        .never(&["NaN"]),
        with(
            "3 members",
            attack(&["--posteriors", &uniform, "--members", &f.arg("three.txt"), "--attack", "mia-metric"]),
            2,
            &["3 members", "members are needed"],
        ),
        with(
            "6 members",
            attack(&["--posteriors", &uniform, "--members", &f.arg("six.txt"), "--attack", "mia-metric"]),
            2,
            &["6 members", "members are needed"],
        ),
        with(
            "--torchscript of a missing file",
            attack(&["--torchscript", &f.arg("missing.pt"), "--attack", "link-stealing"]),
            2,
            &["invalid --torchscript", "missing.pt"],
        ),
        with(
            "--members of a missing file",
            attack(&["--posteriors", &uniform, "--members", &f.arg("missing.txt"), "--attack", "mia-metric"]),
            2,
            &["invalid --members", "missing.txt"],
        )
        .never(&["target.members"]),
        case(
            "mechanism audit --sigma 1e-300",
            &["mechanism", "audit", "--mechanism", "gaussian", "--sigma", "1e-300"],
            2,
            &["invalid --sigma", "1e-300", "underflow"],
        )
        .never(&["got 0"]),
        case(
            "mechanism audit --sigma 1e300",
            &["mechanism", "audit", "--mechanism", "gaussian", "--sigma", "1e300"],
            2,
            &["invalid --sigma", "1e300", "overflow"],
        )
        .never(&["got inf"]),
        case(
            "account epsilon --sigma 1e-300",
            &["account", "epsilon", "--method", "gap-edp", "--sigma", "1e-300", "--delta", "1e-5"],
            2,
            &["invalid --sigma", "1e-300"],
        ),
        case(
            "a method label '..'",
            &["audit", &f.config("dots.toml", "seed = 0", "epochs = 2\nlabel = \"..\""), "--dry-run"],
            2,
            &["methods[0].label", "names a folder"],
        ),
        case(
            "a method label with '/'",
            &["audit", &f.config("slash.toml", "seed = 0", "epochs = 2\nlabel = \"a/b\""), "--dry-run"],
            2,
            &["'/'", "letters (any script)"],
        ),
        case(
            "a non-ASCII method label",
            &["audit", &f.config("unicode.toml", "seed = 0", "epochs = 2\nlabel = \"mlp-naïve-模型\""), "--dry-run"],
            0,
            &["mlp-naïve-模型"],
        ),
        case(
            "train --epsilon -1",
            &["train", "--method", "gap-edp", "--epsilon", "-1"],
            2,
            &["invalid epsilon", "-1 must be > 0"],
        ),
        case(
            "train --lr 1e300",
            &["train", "--dataset", "synthetic:nodes=300", "--method", "mlp", "--lr", "1e300", "--epochs", "5"],
            2,
            &["invalid lr", "diverged"],
        ),
        case(
            "--min-class-count above every class",
            &["train", "--dataset", "cora", "--method", "mlp", "--min-class-count", "100000"],
            2,
            &["invalid min_class_count", "removes every class"],
        ),
        case(
            "a missing --data-dir",
            &["datasets", "list", "--data-dir", "/no/such/dir"],
            2,
            &["/no/such/dir", "--data-dir does not exist"],
        ),
        case(
            "a dataset nobody has",
            &["datasets", "describe", "no-such-graph"],
            2,
            &["no-such-graph", "not found", "datasets fetch"],
        ),
        with(
            "link-stealing on well-formed posteriors",
            attack(&["--posteriors", &uniform, "--attack", "link-stealing"]),
            0,
            &[],
        ),
    ]
}

#[test]
fn the_hostile_sweep_finds_no_defect() {
    let f = Fixtures::new();
    let all = cases(&f);
    // Each case is a process of its own: a few at a time, in the table's order.
    let lanes = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let per_lane = all.len().div_ceil(lanes);
    let defects: Vec<String> = std::thread::scope(|s| {
        let lanes: Vec<_> = all
            .chunks(per_lane)
            .map(|chunk| s.spawn(move || chunk.iter().filter_map(Case::defect).collect::<Vec<_>>()))
            .collect();
        lanes.into_iter().flat_map(|l| l.join().unwrap()).collect()
    });
    let tried = all.len();
    println!("hostile sweep: {tried} inputs tried, {} ok, {} defects", tried - defects.len(), defects.len());
    assert!(defects.is_empty(), "{} defect(s):\n{}", defects.len(), defects.join("\n"));
}

#[test]
fn big_endian_npy_is_well_formed() {
    // The fixture itself: NumPy's header layout (magic, version 1.0, header padded to 64 bytes).
    let bytes = big_endian_npy(2, 3, 0.5);
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + header_len) % 64, 0);
    assert_eq!(bytes.len(), 10 + header_len + 2 * 3 * 4);
    assert_eq!(&bytes[10 + header_len..10 + header_len + 4], &0.5f32.to_be_bytes());
}
