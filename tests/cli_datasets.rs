//! `gnnaudit datasets` end to end, the polars table loader, and every bad-input case: each must
//! fail with an error naming the file and the problem, exit code 2, and no panic — through the
//! library and through the CLI binary.
use gnnaudit::data::{self, table, Dataset, DatasetStats};
use gnnaudit::Error;
use ndarray::arr1;
use ndarray_npy::NpzWriter;
use polars::prelude::*;
use std::path::PathBuf;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/npz.rs"]
mod npz;
use cli::{command, data_dir, gnnaudit};
use npz::{valid_arrays, with, write_npz, Arr};

/// A bad input: the spec given, the file the error must name, and a phrase it must contain.
struct Bad {
    spec: PathBuf,
    culprit: PathBuf,
    problem: &'static str,
    /// Also run it through the CLI binary (one case per kind of problem, to keep the test fast).
    cli: bool,
}

fn bad(spec: PathBuf, problem: &'static str, cli: bool) -> Bad {
    Bad { culprit: spec.clone(), spec, problem, cli }
}

/// Checks the library error of each case, then runs the CLI cases concurrently and checks exit
/// code 2, an empty stdout, a message naming the file and the problem, and no panic.
fn check_bad(cases: &[Bad]) {
    for b in cases {
        let shown = b.spec.display().to_string();
        let culprit = b.culprit.display().to_string();
        match data::load_dataset(&shown, None) {
            Err(e @ Error::BadFile { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(&culprit), "library error names the file: {msg}");
                assert!(msg.to_lowercase().contains(b.problem), "library error says '{}': {msg}", b.problem);
                assert_eq!(e.exit_code(), 2);
            }
            other => panic!("{shown}: expected a BadFile error, got {other:?}"),
        }
    }
    let children: Vec<_> = cases
        .iter()
        .filter(|b| b.cli)
        .map(|b| {
            let child = command(&["datasets", "describe"])
                .arg(&b.spec)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("run gnnaudit");
            (b, child)
        })
        .collect();
    for (b, child) in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let culprit = b.culprit.display().to_string();
        assert_eq!(out.status.code(), Some(2), "exit code for {}: {stderr}", b.spec.display());
        assert!(out.stdout.is_empty());
        assert!(stderr.contains(&culprit) && stderr.to_lowercase().contains(b.problem), "CLI message: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn tolerant_npz_variants_load() {
    let dir = tempfile::tempdir().unwrap();
    // The reference layout.
    let p = dir.path().join("ok.npz");
    write_npz(&p, &valid_arrays());
    let ds = data::load_dataset(p.to_str().unwrap(), None).unwrap();
    assert_eq!((ds.num_nodes(), ds.graph.num_directed_edges(), ds.num_features(), ds.num_classes), (4, 6, 3, 2));
    assert!(ds.graph.has_edge(0, 1) && ds.graph.has_edge(1, 0) && !ds.graph.has_edge(0, 2));
    assert_eq!(ds.features.to_dense(), vec![1., 0., 1., 0., 0.5, 0., 0., 0., 0., 2., 0., 0.]);

    // Upstream variants: int32 indices, int8 labels, one-hot CSR labels, a directed adjacency,
    // an extra key, a dense attribute matrix.
    let p = dir.path().join("upstream.npz");
    let mut arrays = with(valid_arrays(), "adj_indices", Some(Arr::I32(arr1(&[1, 2, 3]))));
    arrays = with(arrays, "adj_indptr", Some(Arr::I32(arr1(&[0, 1, 2, 3, 3]))));
    arrays = with(arrays, "adj_data", Some(Arr::F(arr1(&[1., 1., 1.]))));
    arrays = with(arrays, "labels", Some(Arr::I8(arr1(&[0, 1, 1, 0]))));
    arrays = with(arrays, "node_names", Some(Arr::I(arr1(&[7, 8, 9, 10]))));
    write_npz(&p, &arrays);
    let d = data::load_dataset(p.to_str().unwrap(), None).unwrap();
    // CSR row u, column v is the edge u -> v: node v's in-neighbour list holds u.
    assert_eq!(d.graph.edges().collect::<Vec<_>>(), vec![(0, 1), (1, 2), (2, 3)]);
    assert_eq!(d.graph.in_neighbors(1), &[0]);
    assert_eq!(d.labels, vec![0, 1, 1, 0]);
    assert_eq!(data::to_undirected(&d).graph, ds.graph);

    let p = dir.path().join("onehot.npz");
    let mut arrays = with(valid_arrays(), "labels", None);
    arrays.push(("labels_data", Arr::F(arr1(&[1., 1., 1., 1.]))));
    arrays.push(("labels_indices", Arr::I(arr1(&[2, 0, 0, 1]))));
    arrays.push(("labels_indptr", Arr::I(arr1(&[0, 1, 2, 3, 4]))));
    arrays.push(("labels_shape", Arr::I(arr1(&[4, 3]))));
    write_npz(&p, &arrays);
    let d = data::load_dataset(p.to_str().unwrap(), None).unwrap();
    assert_eq!((d.labels.clone(), d.num_classes), (vec![2, 0, 0, 1], 3));

    let p = dir.path().join("dense.npz");
    let mut w = NpzWriter::new(std::fs::File::create(&p).unwrap());
    // Only labels from the CSR layout; dense features and adjacency.
    w.add_array("labels", &arr1(&[0i64, 1, 1, 0])).unwrap();
    w.add_array("attr_matrix", &ndarray::Array2::<f64>::eye(4).slice(ndarray::s![.., ..3]).to_owned()).unwrap();
    // A dense adjacency too: the directed path 0 -> 1 -> 2 -> 3.
    let mut adj = ndarray::Array2::<f32>::zeros((4, 4));
    (0..3).for_each(|u| adj[[u, u + 1]] = 1.0);
    w.add_array("adj_matrix", &adj).unwrap();
    w.finish().unwrap();
    let d = data::load_dataset(p.to_str().unwrap(), None).unwrap();
    assert_eq!(d.graph.edges().collect::<Vec<_>>(), vec![(0, 1), (1, 2), (2, 3)]);
    assert_eq!(d.num_features(), 3);
    assert!(matches!(d.features, data::Features::Dense { .. }));
    assert_eq!(d.features.to_dense()[..4], [1., 0., 0., 0.]);
}

#[test]
fn bad_inputs_name_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut cases = vec![bad(d.join("missing.npz"), "no such file", true)];

    let cora = std::fs::read(data_dir().join("cora.npz")).unwrap();
    std::fs::write(d.join("truncated.npz"), &cora[..cora.len() / 2]).unwrap();
    cases.push(bad(d.join("truncated.npz"), "npz", true));
    std::fs::write(d.join("text.npz"), "this is not an archive\n").unwrap();
    cases.push(bad(d.join("text.npz"), "not a readable .npz", true));

    type Case = (&'static str, Vec<(&'static str, Arr)>, &'static str, bool);
    let npz_cases: Vec<Case> = vec![
        ("nokey.npz", with(valid_arrays(), "adj_indices", None), "missing key 'adj_indices'", true),
        ("nolabels.npz", with(valid_arrays(), "labels", None), "missing key 'labels'", false),
        ("shape.npz", with(valid_arrays(), "labels", Some(Arr::I(arr1(&[0, 1, 1])))), "shape mismatch", true),
        ("indptr.npz", with(valid_arrays(), "attr_indptr", Some(Arr::I(arr1(&[0, 2, 4])))), "shape mismatch", false),
        (
            "range.npz",
            with(valid_arrays(), "adj_indices", Some(Arr::I(arr1(&[1, 0, 2, 1, 4, 2])))),
            "out of range",
            true,
        ),
        (
            "attrange.npz",
            with(valid_arrays(), "attr_indices", Some(Arr::I(arr1(&[0, 2, 1, 3])))),
            "out of range",
            false,
        ),
        (
            "nan.npz",
            with(valid_arrays(), "attr_data", Some(Arr::F(arr1(&[1., f32::NAN, 0.5, 2.])))),
            "non-finite",
            true,
        ),
        (
            "inf.npz",
            with(valid_arrays(), "attr_data", Some(Arr::F(arr1(&[1., 1., f32::INFINITY, 2.])))),
            "non-finite",
            false,
        ),
        ("neg.npz", with(valid_arrays(), "labels", Some(Arr::I(arr1(&[0, -1, 1, 0])))), "negative label", true),
        (
            "negidx.npz",
            with(valid_arrays(), "adj_indices", Some(Arr::I(arr1(&[1, 0, -2, 1, 3, 2])))),
            "negative",
            false,
        ),
        ("ragged.npz", with(valid_arrays(), "adj_data", Some(Arr::F(arr1(&[1., 1.])))), "shape mismatch", false),
    ];
    for (file, arrays, problem, cli) in npz_cases {
        let p = d.join(file);
        write_npz(&p, &arrays);
        cases.push(bad(p, problem, cli));
    }

    // Tables: a missing column, an unknown node id, a negative label, NaN, a missing node table.
    let tables = d.join("tbl");
    std::fs::create_dir(&tables).unwrap();
    let t = |name: &str, text: &str| std::fs::write(tables.join(name), text).unwrap();
    t("g.edges.csv", "source,dst\n10,11\n");
    t("g.nodes.csv", "id,label,f0\n10,0,1.0\n11,1,0.0\n");
    cases.push(bad(tables.join("g.edges.csv"), "missing column 'target'", true));
    t("h.edges.csv", "source,target\n10,99\n");
    t("h.nodes.csv", "id,label,f0\n10,0,1.0\n11,1,0.0\n");
    cases.push(bad(tables.join("h.edges.csv"), "node id 99 is not in the node table", false));
    t("k.edges.csv", "source,target\n10,11\n");
    t("k.nodes.csv", "id,label,f0\n10,0,1.0\n11,-3,0.0\n");
    cases.push(Bad { culprit: tables.join("k.nodes.csv"), ..bad(tables.join("k.edges.csv"), "negative label", true) });
    t("m.edges.csv", "source,target\n10,11\n");
    t("m.nodes.csv", "id,label,f0\n10,0,1.0\n11,1,NaN\n");
    cases.push(Bad { culprit: tables.join("m.nodes.csv"), ..bad(tables.join("m.edges.csv"), "non-finite", false) });
    t("n.edges.csv", "source,target\n10,11\n");
    t("n.nodes.csv", "id,f0\n10,1.0\n11,0.0\n");
    cases.push(Bad {
        culprit: tables.join("n.nodes.csv"),
        ..bad(tables.join("n.edges.csv"), "missing column 'label'", false)
    });
    t("lonely.edges.csv", "source,target\n10,11\n");
    cases.push(bad(tables.join("lonely.edges.csv"), "no node table", false));
    t("bad.toml", "edges = 3\n");
    cases.push(bad(tables.join("bad.toml"), "invalid manifest", false));
    check_bad(&cases);

    // Unknown names and bad parameters are bad input too (exit 2).
    let (code, _, stderr) = gnnaudit(&["datasets", "describe", "no-such-dataset", "--data-dir", d.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no-such-dataset") && stderr.contains(&d.display().to_string()), "{stderr}");
    let (code, _, stderr) = gnnaudit(&["datasets", "describe", "synthetic:homophily=2"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("homophily"));
}

/// Writes Caltech36 (a real dataset) as tables and checks the table loader gives it back.
#[test]
fn table_loader_reads_real_data_from_csv_and_parquet() {
    let test = "table_loader_reads_real_data_from_csv_and_parquet";
    let Some(caltech) = cli::need(test, "facebook100-Caltech36") else { return };
    let ds = data::load_dataset("facebook100-Caltech36", Some(&caltech)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = ds.num_nodes();
    let x = ds.features.to_dense();
    let f = ds.num_features();

    // Edge table: each undirected edge once (the loader symmetrises); ids offset by 1000, node rows
    // in reverse order, so the id mapping is exercised.
    let und = ds.graph.undirected_edges();
    let mut edges = df!(
        "source" => und.iter().map(|e| e.0 as i64 + 1000).collect::<Vec<_>>(),
        "target" => und.iter().map(|e| e.1 as i64 + 1000).collect::<Vec<_>>()
    )
    .unwrap();
    let order: Vec<usize> = (0..n).rev().collect();
    let mut cols = vec![
        Column::new("id".into(), order.iter().map(|&v| v as i64 + 1000).collect::<Vec<_>>()),
        Column::new("label".into(), order.iter().map(|&v| ds.labels[v] as i64).collect::<Vec<_>>()),
    ];
    for k in 0..f {
        cols.push(Column::new(format!("x{k}").into(), order.iter().map(|&v| x[v * f + k]).collect::<Vec<f32>>()));
    }
    let mut nodes = DataFrame::new(cols).unwrap();
    let csv_dir = dir.path().join("caltech");
    std::fs::create_dir(&csv_dir).unwrap();
    CsvWriter::new(std::fs::File::create(csv_dir.join("edges.csv")).unwrap()).finish(&mut edges).unwrap();
    CsvWriter::new(std::fs::File::create(csv_dir.join("nodes.csv")).unwrap()).finish(&mut nodes).unwrap();

    let back = data::load_dataset(csv_dir.to_str().unwrap(), None).unwrap();
    let same = |b: &Dataset| {
        // Row r of the table is node order[r].
        let inv: Vec<usize> = order.clone();
        assert_eq!(b.num_nodes(), n);
        assert_eq!(b.graph.num_directed_edges(), ds.graph.num_directed_edges());
        assert!(b.graph.edges().all(|(u, v)| ds.graph.has_edge(inv[u], inv[v])));
        assert_eq!(b.labels, inv.iter().map(|&v| ds.labels[v]).collect::<Vec<_>>());
        assert_eq!(b.features.to_dense(), ds.features.select_rows(&inv).to_dense());
        assert_eq!(DatasetStats::of(b).edges, DatasetStats::of(&ds).edges);
    };
    same(&back);
    assert_eq!(back.name, "caltech");

    // Parquet: string ids and string labels, features as one list column; a manifest names them.
    let mut edges_pq = df!(
        "a" => und.iter().map(|e| format!("n{}", e.0)).collect::<Vec<_>>(),
        "b" => und.iter().map(|e| format!("n{}", e.1)).collect::<Vec<_>>()
    )
    .unwrap();
    let rows: Vec<Series> = order.iter().map(|&v| Series::new("".into(), x[v * f..(v + 1) * f].to_vec())).collect();
    let mut nodes_pq = df!(
        "node" => order.iter().map(|&v| format!("n{v}")).collect::<Vec<_>>(),
        "year" => order.iter().map(|&v| format!("y{:02}", ds.labels[v])).collect::<Vec<_>>(),
        "emb" => rows
    )
    .unwrap();
    ParquetWriter::new(std::fs::File::create(dir.path().join("e.parquet")).unwrap()).finish(&mut edges_pq).unwrap();
    ParquetWriter::new(std::fs::File::create(dir.path().join("n.parquet")).unwrap()).finish(&mut nodes_pq).unwrap();
    std::fs::write(
        dir.path().join("cal.toml"),
        "edges = \"e.parquet\"\nnodes = \"n.parquet\"\nsource = \"a\"\ntarget = \"b\"\nid = \"node\"\nlabel = \"year\"\n",
    )
    .unwrap();
    let pq = data::load_dataset("cal", Some(dir.path())).unwrap();
    same(&pq);
    assert_eq!(pq.name, "cal");
    assert_eq!(pq.class_names.as_ref().unwrap()[0], "y00");

    // Direct API with options: a directed edge list stays directed.
    let opts = table::TableOptions {
        source: "a".into(),
        target: "b".into(),
        id: "node".into(),
        label: "year".into(),
        undirected: false,
        ..Default::default()
    };
    let directed = table::load(&dir.path().join("e.parquet"), &dir.path().join("n.parquet"), &opts).unwrap();
    assert_eq!(directed.graph.num_directed_edges(), und.len());

    // `datasets list` finds the manifest; `describe` agrees with the library.
    let (code, stdout, _) = gnnaudit(&["datasets", "list", "--data-dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(stdout.lines().any(|l| l.starts_with("cal ")), "{stdout}");
}

#[test]
fn cli_lists_and_describes() {
    let (code, stdout, stderr) = gnnaudit(&["datasets", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.lines().next().unwrap().starts_with("synthetic"));
    // Every .npz of the data directory is listed by name (cora at least: the fixtures hold it).
    let npz: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".npz").map(String::from))
        .collect();
    assert!(npz.iter().any(|n| n == "cora"), "{npz:?}");
    for name in &npz {
        assert!(stdout.lines().any(|l| l.split_whitespace().next() == Some(name.as_str())), "{name} in {stdout}");
    }
    let (code, stdout, _) = gnnaudit(&["datasets", "list", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v.as_array().unwrap().len() > npz.len());

    let (code, stdout, stderr) = gnnaudit(&["datasets", "describe", "cora", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let lib = DatasetStats::of(&data::load_dataset("cora", Some(&data_dir())).unwrap());
    assert_eq!(stdout.trim(), serde_json::to_string_pretty(&lib).unwrap());
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["nodes"], 2708);
    assert_eq!(v["edges"], 5278);

    let (code, stdout, _) = gnnaudit(&["datasets", "describe", "cora"]);
    assert_eq!(code, 0);
    for needle in ["nodes              2708", "5278", "1433", "isolated nodes     0", "30.21%", "2=Neural_Networks:818"]
    {
        assert!(stdout.contains(needle), "'{needle}' in {stdout}");
    }

    let (code, stdout, stderr) = gnnaudit(&["datasets", "describe", "synthetic", "--like-gap", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["classes"], 5);
    assert_eq!(
        v["split"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum::<u64>(),
        v["nodes"].as_u64().unwrap()
    );

    for args in [&["datasets", "--help"][..], &["datasets", "list", "--help"], &["datasets", "describe", "--help"]] {
        let (code, stdout, _) = gnnaudit(args);
        assert_eq!(code, 0);
        assert!(stdout.contains("GNNAUDIT_DATA") && stdout.contains("manifest"), "{stdout}");
    }

    let Some(dd) = cli::need("cli_lists_and_describes", "facebook100-Caltech36") else { return };
    let (code, stdout, _) = gnnaudit(&[
        "datasets",
        "describe",
        "facebook100-Caltech36",
        "--data-dir",
        dd.to_str().unwrap(),
        "--min-class-count",
        "100",
        "--json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["classes"], 4);
    assert_eq!(v["nodes"], 105 + 153 + 133 + 173);
}
