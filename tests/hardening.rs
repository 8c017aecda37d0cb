//! Hostile but realistic input. Every case builds its bad input here and runs the real
//! binary; each must end with exit 2 (bad input) and a message naming the culprit, never a Rust
//! panic, an abort or a C++ frame, and never a silently wrong result.
use ndarray::{arr1, arr2};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "common/cli.rs"]
mod cli;
#[path = "common/npz.rs"]
mod npz;
use cli::{assert_clean, command, data_dir, decode, gnnaudit, json_of, refused};
use npz::{valid_arrays, with, write_npz, Arr};

/// A table dataset: the folder `dir/name` with `edges` as edges.csv and `nodes` as nodes.csv.
fn table_dataset(dir: &Path, name: &str, edges: &str, nodes: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("edges.csv"), edges).unwrap();
    std::fs::write(folder.join("nodes.csv"), nodes).unwrap();
    folder
}

/// The small valid graph of [`valid_arrays`] with `key` replaced, written to `path`.
fn npz_with(path: &Path, key: &str, value: Option<Arr>) -> String {
    write_npz(path, &with(valid_arrays(), key, value));
    path.display().to_string()
}

// ---------------------------------------------------------------- crashes instead of exit 2

#[test]
fn huge_labels_are_refused_naming_the_label() {
    let dir = tempfile::tempdir().unwrap();
    for (file, label) in [("e6.npz", 1_000_000i64), ("e9.npz", 1_000_000_000), ("e62.npz", 1 << 62)] {
        let p = npz_with(&dir.path().join(file), "labels", Some(Arr::I(arr1(&[0, label, 1, 0]))));
        refused(&["datasets", "describe", &p], &[&p, &format!("label {label} of node 1 is not a class id")]);
    }
    // uint64 labels beyond i64 would wrap to negative numbers.
    let p = npz_with(&dir.path().join("u64.npz"), "labels", Some(Arr::U(arr1(&[0, u64::MAX, 1, 0]))));
    refused(&["datasets", "describe", &p], &[&p, "'labels'[1] = 18446744073709551615 is above the largest"]);
    // The same bound in a node table.
    let t = table_dataset(dir.path(), "t", "source,target\n0,1\n1,2\n", "label,f0\n0,1.0\n1000000000,0.5\n1,0.0\n");
    refused(&["datasets", "describe", t.to_str().unwrap()], &["nodes.csv", "label 1000000000 of node 1"]);
}

#[test]
fn seed_overflow_is_refused_naming_the_flags() {
    let max = u64::MAX.to_string();
    refused(
        &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--seed", &max, "--repeats", "2"],
        &["invalid --seed", "--repeats 2"],
    );
    // One run at the largest seed is fine.
    let (code, _, err) =
        gnnaudit(&["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--epochs", "2", "--seed", &max]);
    assert_eq!(code, 0, "{err}");
    refused(
        &["account", "epsilon", "--method", "dp-sgd", "--sigma", "1", "--delta", "1e-5", "--steps", &max],
        &["invalid --steps"],
    );
}

#[test]
fn huge_model_sizes_are_refused_before_allocating() {
    refused(
        &["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--hidden", "1000000000"],
        &["invalid hidden", "hidden = 1000000000", "of memory"],
    );
    refused(
        &["train", "--dataset", "synthetic:nodes=200", "--method", "gap-inf", "--hidden", "4000000000000"],
        &["invalid hidden"],
    );
}

/// A size the estimate lets through but libtorch cannot allocate (a 2.5 GB address-space limit):
/// the allocation failure is reported in one line, exit 2, without C++ frames.
#[test]
fn a_libtorch_allocation_failure_is_a_clean_error() {
    let bin = env!("CARGO_BIN_EXE_gnnaudit");
    let script = format!("ulimit -v 2500000; exec {bin} train --dataset cora --method mlp --hidden 200000 --epochs 1");
    let out = Command::new("sh").args(["-c", &script]).env("GNNAUDIT_DATA", data_dir()).output().unwrap();
    let (code, _, err) = decode(out);
    assert_eq!(code, 2, "{err}");
    assert_clean(&err);
    // Where less than ~6 GB are available the estimate refuses it first; either way --hidden is named.
    assert!(err.contains("not enough memory") || err.contains("invalid hidden"), "{err}");
    assert!(err.contains("--hidden") || err.contains("invalid hidden"), "{err}");
}

#[test]
fn absurd_thread_counts_are_refused() {
    refused(&["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--threads", "100000"], &["threads"]);
    refused(&["attack", "--attack", "mia", "--method", "mlp", "--threads", "100000"], &["threads"]);
}

#[test]
fn synthetic_sizes_beyond_memory_are_refused() {
    refused(&["datasets", "describe", "synthetic:nodes=9223372036854775807"], &["invalid csbm.nodes", "of memory"]);
    refused(&["datasets", "describe", "synthetic:features=1000000000"], &["invalid csbm.features", "of memory"]);
}

#[test]
fn closed_pipe_ends_quietly_and_a_full_disk_names_stdout() {
    // The reader is gone before gnnaudit writes: every write fails with EPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = command(&["completions", "bash"]).stdout(writer).stderr(Stdio::piped()).output().unwrap();
    let (code, _, err) = decode(out);
    assert_eq!(code, 0, "a closed pipe ends quietly: {err}");
    assert!(err.is_empty(), "{err}");

    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for args in [&["completions", "bash"][..], &["datasets", "list"][..]] {
        let out = command(args).stdout(full.try_clone().unwrap()).stderr(Stdio::piped()).output().unwrap();
        let (code, _, err) = decode(out);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("cannot write to stdout") && err.contains("No space left"), "{err}");
        assert_clean(&err);
    }
}

#[test]
fn accountant_non_convergence_is_exit_2_naming_the_flag() {
    refused(
        &["train", "--dataset", "synthetic:nodes=200", "--method", "gap-edp", "--epsilon", "1e8", "--epochs", "1"],
        &["invalid epsilon", "does not converge", "--epsilon 100000000"],
    );
    refused(
        &["account", "epsilon", "--method", "gap-edp", "--sigma", "1e-6", "--delta", "1e-5"],
        &["invalid --sigma", "does not converge"],
    );
    refused(
        &["account", "calibrate", "--method", "gap-edp", "--epsilon", "1e8", "--delta", "1e-5"],
        &["invalid --epsilon", "does not converge"],
    );
}

// ------------------------------------------------------------------ wrong results, silently

/// `attack --target` attacks the split the model was trained on (from the checkpoint), and
/// refuses another dataset, another class filter, and a checkpoint without provenance.
#[test]
fn attack_target_uses_the_checkpoint_split_and_refuses_other_data() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let m = model.to_str().unwrap();
    let ds = "synthetic:nodes=400,seed=3";
    let trained = json_of(&[
        "train",
        "--dataset",
        ds,
        "--method",
        "mlp",
        "--epochs",
        "30",
        "--split-seed",
        "7",
        "--seed",
        "2",
        "--save",
        m,
        "--json",
    ]);
    let test_acc = trained["test_accuracy"]["runs"][0].as_f64().unwrap();

    // The attack's view of the target: its accuracy on the split must be the one train measured.
    let attacked =
        json_of(&["attack", "--dataset", ds, "--target", m, "--attack", "mia-metric", "--seed", "11", "--json"]);
    let seen = attacked["utility"]["test"].as_f64().unwrap_or_else(|| panic!("no target accuracy in {attacked}"));
    assert!((seen - test_acc).abs() < 1e-6, "attack sees test accuracy {seen}, train measured {test_acc}");

    refused(
        &["attack", "--dataset", "synthetic:nodes=400,seed=4", "--target", m, "--attack", "mia-metric"],
        &["invalid dataset", "is not the dataset the target", "sha256"],
    );
    refused(
        &["attack", "--dataset", ds, "--min-class-count", "5", "--target", m, "--attack", "mia-metric"],
        &["invalid min-class-count", "--min-class-count 1"],
    );
    // A checkpoint from before provenance: refused with how to re-create it.
    let meta = model.join("model.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("data");
    std::fs::write(&meta, serde_json::to_string(&v).unwrap()).unwrap();
    refused(&["attack", "--dataset", ds, "--target", m, "--attack", "mia-metric"], &["model.json", "--save"]);
}

#[test]
fn empty_graphs_zero_features_and_single_classes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Every edge a self loop: nothing is left after removing isolated nodes.
    let loops = table_dataset(d, "loops", "source,target\n0,0\n1,1\n", "label,f0\n0,1.0\n1,0.5\n");
    refused(&["train", "--dataset", loops.to_str().unwrap(), "--method", "mlp"], &["no nodes left"]);
    // 0 feature columns.
    let p = npz_with(&d.join("nofeat.npz"), "attr_shape", Some(Arr::I(arr1(&[4, 0]))));
    let p = {
        // indices must be in range for 0 columns: no stored entries at all.
        write_npz(
            Path::new(&p),
            &[
                ("adj_data", Arr::F(arr1(&[1f32; 6]))),
                ("adj_indices", Arr::I(arr1(&[1, 0, 2, 1, 3, 2]))),
                ("adj_indptr", Arr::I(arr1(&[0, 1, 3, 5, 6]))),
                ("adj_shape", Arr::I(arr1(&[4, 4]))),
                ("attr_data", Arr::F(arr1(&[]))),
                ("attr_indices", Arr::I(arr1(&[]))),
                ("attr_indptr", Arr::I(arr1(&[0, 0, 0, 0, 0]))),
                ("attr_shape", Arr::I(arr1(&[4, 0]))),
                ("labels", Arr::I(arr1(&[0, 1, 1, 0]))),
            ],
        );
        p
    };
    refused(&["train", "--dataset", &p, "--method", "mlp"], &[&p, "0 columns"]);
    // A single class in the file, and a class filter that leaves one class of cora.
    let one = table_dataset(d, "one", "source,target\n0,1\n1,2\n2,3\n", "label,f0\n0,1.0\n0,0.5\n0,0.2\n0,0.1\n");
    refused(&["train", "--dataset", one.to_str().unwrap(), "--method", "mlp"], &["invalid dataset", "single class"]);
    refused(
        &["train", "--dataset", "cora", "--method", "mlp", "--min-class-count", "500"],
        &["invalid min_class_count", "single class", "--min-class-count 500"],
    );
    refused(
        &["train", "--dataset", "cora", "--method", "mlp", "--min-class-count", "100000"],
        &["invalid min_class_count", "removes every class", "largest has 818"],
    );
}

#[test]
fn divergence_is_detected_in_training_and_in_checkpoints() {
    refused(
        &["train", "--dataset", "synthetic:nodes=300", "--method", "mlp", "--lr", "1e300", "--epochs", "5"],
        &["invalid lr", "diverged", "lower --lr (was 1e300)"],
    );
    // Methods with their own training loop (GraphSAGE) are checked on their outputs.
    refused(
        &["train", "--dataset", "synthetic:nodes=300", "--method", "sage", "--lr", "1e300", "--epochs", "3"],
        &["invalid lr", "training sage diverged"],
    );
    // A checkpoint whose weights were NaN: refused on load.
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m");
    let m = model.to_str().unwrap();
    let ds = "synthetic:nodes=300";
    let (code, _, err) = gnnaudit(&["train", "--dataset", ds, "--method", "mlp", "--epochs", "3", "--save", m]);
    assert_eq!(code, 0, "{err}");
    let params = model.join("params.safetensors");
    let tensors = tch::Tensor::read_safetensors(&params).unwrap();
    let poisoned: Vec<(String, tch::Tensor)> = tensors.into_iter().map(|(k, t)| (k, t.fill(f64::NAN))).collect();
    let named: Vec<(&str, &tch::Tensor)> = poisoned.iter().map(|(k, t)| (k.as_str(), t)).collect();
    tch::Tensor::write_safetensors(&named, &params).unwrap();
    refused(
        &["attack", "--dataset", ds, "--target", m, "--attack", "mia-metric"],
        &["params.safetensors", "NaN or infinite", "--lr"],
    );
}

#[test]
fn ambiguous_inputs_are_refused_naming_the_ambiguity() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A one-hot label row with two ones.
    let p = npz_with(&d.join("twohot.npz"), "labels", Some(Arr::I2(arr2(&[[1, 0], [1, 1], [0, 1], [1, 0]]))));
    refused(&["datasets", "describe", &p], &[&p, "row 1 is ambiguous", "2 classes"]);
    // NaN and negative adjacency weights.
    for (file, w) in [("nanw.npz", f32::NAN), ("negw.npz", -1.0)] {
        let p = npz_with(&d.join(file), "adj_data", Some(Arr::F(arr1(&[1., 1., w, 1., 1., 1.]))));
        refused(&["datasets", "describe", &p], &[&p, "'adj_data'", "edge (1, 2)", "weights must be >= 0"]);
    }
    // Both edges.csv and edges.parquet.
    let both = table_dataset(d, "both", "source,target\n0,1\n", "label,f0\n0,1.0\n1,0.5\n");
    std::fs::write(both.join("edges.parquet"), b"PAR1").unwrap();
    refused(
        &["datasets", "describe", both.to_str().unwrap()],
        &["ambiguous edges table", "edges.csv", "edges.parquet"],
    );
    // Two list feature columns (Parquet holds lists).
    let lists = d.join("lists");
    std::fs::create_dir(&lists).unwrap();
    std::fs::write(lists.join("edges.csv"), "source,target\n0,1\n1,2\n").unwrap();
    write_two_list_columns(&lists.join("nodes.parquet"));
    refused(&["datasets", "describe", lists.to_str().unwrap()], &["ambiguous features", "emb_a, emb_b"]);
}

fn write_two_list_columns(path: &Path) {
    use polars::prelude::*;
    let list = |name: &str| {
        let rows: Vec<Series> = (0..3).map(|i| Series::new("".into(), &[i as f32, 1.0])).collect();
        Series::new(name.into(), rows)
    };
    let mut df = DataFrame::new(vec![
        Series::new("label".into(), &[0i64, 1, 0]).into(),
        list("emb_a").into(),
        list("emb_b").into(),
    ])
    .unwrap();
    ParquetWriter::new(std::fs::File::create(path).unwrap()).finish(&mut df).unwrap();
}

#[test]
fn manifests_reject_unknown_keys() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("e.csv"), "source,target\n0,1\n1,2\n").unwrap();
    std::fs::write(d.join("n.csv"), "label,f0\n0,1.0\n1,0.5\n0,0.1\n").unwrap();
    std::fs::write(d.join("ok.toml"), "edges = \"e.csv\"\nnodes = \"n.csv\"\nundirected = false\n").unwrap();
    let (code, _, err) = gnnaudit(&["datasets", "describe", d.join("ok.toml").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(d.join("typo.toml"), "edges = \"e.csv\"\nnodes = \"n.csv\"\nundirectd = false\n").unwrap();
    let p = d.join("typo.toml").display().to_string();
    refused(&["datasets", "describe", &p], &[&p, "unknown field `undirectd`", "undirected"]);
}

#[test]
fn a_missing_data_dir_is_an_error() {
    refused(&["datasets", "list", "--data-dir", "/no/such/dir"], &["/no/such/dir", "--data-dir does not exist"]);
    refused(&["datasets", "describe", "cora", "--data-dir", "/no/such/dir"], &["/no/such/dir"]);
}

// ------------------------------------------------------------------- audit configs, dry runs

/// A small valid audit config; `extra` lines are appended to the matching table.
fn config(dataset: &str, method_extra: &str, attack: &str) -> String {
    format!(
        r#"
name = "h"
seeds = [1]
[privacy]
epsilons = [inf]
[[datasets]]
name = "{dataset}"
[[methods]]
method = "mlp"
epochs = 2
{method_extra}
{attack}
"#
    )
}

fn dry_run(dir: &Path, text: &str) -> (i32, String, String) {
    let p = dir.join("c.toml");
    std::fs::write(&p, text).unwrap();
    gnnaudit(&["audit", p.to_str().unwrap(), "--dry-run"])
}

fn dry_refused(dir: &Path, text: &str, phrases: &[&str]) {
    let (code, out, err) = dry_run(dir, text);
    assert_eq!(code, 2, "dry run of\n{text}\nstdout: {out}\nstderr: {err}");
    assert_clean(&err);
    for p in phrases {
        assert!(err.contains(p), "message lacks '{p}': {err}");
    }
}

#[test]
fn dry_run_catches_what_a_real_run_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (code, out, err) = dry_run(d, &config("synthetic", "", ""));
    assert_eq!(code, 0, "{out}{err}");
    let attack = |k: &str, p: &str| format!("[[attacks]]\nkind = \"{k}\"\nparams = {{ {p} }}");
    dry_refused(d, &config("synthetic", "", &attack("mia", "confidence = 1.5")), &["attacks[0].params.confidence"]);
    dry_refused(
        d,
        &config("synthetic", "", &attack("link-stealing", "num_samples = 0")),
        &["attacks[0].params.num_samples"],
    );
    dry_refused(
        d,
        &config("cora", "", "").replace("name = \"cora\"", "name = \"cora\"\nmin_class_count = 100000"),
        &["datasets[0].min_class_count", "removes every class"],
    );
    dry_refused(d, &config("cora", "hidden = 1000000000", ""), &["methods[0].hidden", "of memory"]);
    // A budget the accountant cannot evaluate (the analytic Gaussian does not converge): the dry
    // run calibrates every private cell's noise, as training would.
    let huge = config("synthetic", "", "")
        .replace("epsilons = [inf]", "epsilons = [1, 1e8]")
        .replace("method = \"mlp\"", "method = \"gap-edp\"");
    dry_refused(d, &huge, &["invalid methods[0].epsilon", "does not converge", "--epsilon 100000000"]);
    let (code, out, err) = dry_run(d, &huge.replace("[1, 1e8]", "[1, 8]"));
    assert_eq!(code, 0, "{out}{err}");
    // A corrupt dataset file: the dry run reads it.
    let cora = std::fs::read(data_dir().join("cora.npz")).unwrap();
    std::fs::write(d.join("broken.npz"), &cora[..cora.len() / 3]).unwrap();
    let broken = d.join("broken.npz").display().to_string();
    dry_refused(d, &config(&broken, "", ""), &[&broken]);
}

#[test]
fn a_refused_real_run_creates_no_report_folder() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.toml");
    let text = config("cora", "", "").replace("name = \"cora\"", "name = \"cora\"\nmin_class_count = 100000");
    std::fs::write(&p, text).unwrap();
    let out = dir.path().join("out");
    let (code, _, err) = gnnaudit(&["audit", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(!out.exists(), "the report folder was created before validation failed");
}

#[test]
fn contradicting_config_fields_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    dry_refused(d, &config("synthetic", "", "").replace("seeds = [1]", "seeds = [1]\nrepeats = 1"), &["invalid seeds"]);
    dry_refused(d, &config("synthetic", "", "").replace("seeds = [1]", "seeds = [1]\nseed = 0"), &["`seed`"]);
    let grids = config("synthetic", "", "")
        .replace("epsilons = [inf]", "epsilons = [8]\nedge_epsilons = [1]")
        .replace("method = \"mlp\"", "method = \"gap-edp\"");
    dry_refused(d, &grids, &["invalid privacy.epsilons", "no method uses it"]);
    // Without the unused grid it is valid.
    let (code, out, err) = dry_run(d, &grids.replace("epsilons = [8]\n", ""));
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn relative_dataset_paths_resolve_against_the_config_folder() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("audits");
    std::fs::create_dir_all(sub.join("data")).unwrap();
    std::fs::copy(data_dir().join("cora.npz"), sub.join("data/mycora.npz")).unwrap();
    let p = sub.join("c.toml");
    std::fs::write(&p, config("data/mycora.npz", "", "")).unwrap();
    // Run from elsewhere: the path is found next to the config, not in the working directory.
    let out = command(&["audit", p.to_str().unwrap(), "--dry-run"]).current_dir(dir.path()).output().unwrap();
    let (code, out, err) = decode(out);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("mycora / mlp"), "label from the file name: {out}");
}

// ------------------------------------------------------------------------------- messages

#[test]
fn messages_say_what_is_wrong_in_the_users_terms() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A header-only edge table.
    let empty = table_dataset(d, "empty", "source,target\n", "label,f0\n0,1.0\n1,0.5\n");
    let err = refused(&["datasets", "describe", empty.to_str().unwrap()], &["edges.csv", "no rows"]);
    assert!(!err.contains("expected integers"), "{err}");
    // A uint64 node id above the i64 range.
    let big = d.join("big");
    std::fs::create_dir(&big).unwrap();
    write_u64_ids(&big);
    let err =
        refused(&["datasets", "describe", big.to_str().unwrap()], &["row 1", "above the largest supported integer"]);
    assert!(!err.contains("missing value"), "{err}");
    // A negative epsilon reaches our validation, not clap's "unexpected argument".
    refused(&["train", "--method", "gap-edp", "--epsilon", "-1"], &["invalid epsilon", "-1 must be > 0"]);
    // 1e-300 in scientific notation.
    let err = refused(
        &["train", "--dataset", "synthetic:nodes=200", "--method", "gap-edp", "--epsilon", "1e-300", "--epochs", "1"],
        &["1e-300"],
    );
    assert!(!err.contains("0.00000000000000000000"), "{err}");
    // One class: about classes, not about the mean degree.
    let err = refused(&["datasets", "describe", "synthetic:classes=1"], &["csbm.classes", "at least 2 classes"]);
    assert!(!err.contains("mean_degree"), "{err}");
}

fn write_u64_ids(dir: &Path) {
    use polars::prelude::*;
    let mut nodes = DataFrame::new(vec![
        Series::new("id".into(), &[1u64, u64::MAX]).into(),
        Series::new("label".into(), &[0i64, 1]).into(),
        Series::new("f0".into(), &[1.0f32, 0.5]).into(),
    ])
    .unwrap();
    ParquetWriter::new(std::fs::File::create(dir.join("nodes.parquet")).unwrap()).finish(&mut nodes).unwrap();
    std::fs::write(dir.join("edges.csv"), "source,target\n1,1\n").unwrap();
}

#[test]
fn no_colour_codes_when_stderr_is_not_a_terminal() {
    let (code, _, err) = gnnaudit(&["-vv", "train", "--dataset", "cora", "--method", "mlp", "--epochs", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("INFO") || err.contains("DEBUG"), "logging is on: {err}");
    assert!(!err.contains('\x1b'), "ANSI codes in a piped stderr: {err:?}");
}
