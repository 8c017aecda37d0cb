//! `gnnaudit certify` through the binary: the certificate is exactly `stats::certify`'s on the same
//! scores for every bound and strategy, the file formats agree, and bad files exit 2 naming the
//! file and line.
use gnnaudit_attacks::stats::{self, AuditSpec, BoundKind, ThresholdStrategy};
use ndarray::Array1;
use ndarray_npy::WriteNpyExt;
use rand::{Rng, SeedableRng};
use std::path::Path;
#[path = "common/cli.rs"]
mod cli;
use cli::gnnaudit;

/// Positives shifted up by `shift` standard deviations: a leaky attack when shift > 0.
fn scores(n: usize, shift: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let normal = rand_distr::StandardNormal;
    let pos = (0..n).map(|_| shift + rng.sample::<f64, _>(normal)).collect();
    let neg = (0..n).map(|_| rng.sample::<f64, _>(normal)).collect();
    (pos, neg)
}

fn write_text(path: &Path, header: Option<&str>, xs: &[f64]) {
    let mut s = header.map(|h| format!("{h}\n")).unwrap_or_default();
    for x in xs {
        s.push_str(&format!("{x:?}\n"));
    }
    std::fs::write(path, s).unwrap();
}

fn write_npy(path: &Path, xs: &[f64]) {
    Array1::from(xs.to_vec()).write_npy(std::fs::File::create(path).unwrap()).unwrap();
}

fn certify_json(pos: &Path, neg: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["certify", "--positives", pos.to_str().unwrap(), "--negatives", neg.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("--json");
    let (code, out, err) = gnnaudit(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn equals_stats_certify_for_every_bound_and_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let (pos, neg) = scores(400, 1.5, 7);
    let (p, n) = (dir.path().join("pos.txt"), dir.path().join("neg.txt"));
    write_text(&p, None, &pos);
    write_text(&n, None, &neg);
    for bound in BoundKind::ALL {
        for strategy in ["split", "split:0.3", "bonferroni", "explicit:0.75"] {
            let delta = if matches!(bound, BoundKind::Gdp | BoundKind::OneRunFdp) { 1e-5 } else { 0.0 };
            let spec = AuditSpec {
                bound,
                strategy: ThresholdStrategy::parse(strategy).unwrap(),
                confidence: 0.9,
                delta,
                seed: 3,
            };
            let expected = stats::certify(&pos, &neg, &spec, gnnaudit::cli::certify::USER_ASSUMPTION).unwrap();
            let d = delta.to_string();
            let got = certify_json(
                &p,
                &n,
                &["--bound", bound.name(), "--strategy", strategy, "--confidence", "0.9", "--delta", &d, "--seed", "3"],
            );
            let want = serde_json::to_value(&expected).unwrap();
            for (k, v) in want.as_object().unwrap() {
                assert_eq!(&got[k], v, "{} {strategy}: field {k}", bound.name());
            }
            assert!(expected.eps_lb > 0.0, "{} {strategy}: a 1.5-sigma shift is detected", bound.name());
            assert_eq!(got["verdict"], "no claim");
        }
    }
}

#[test]
fn npy_text_and_csv_with_header_agree_and_claim_gives_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let (pos, neg) = scores(300, 3.0, 11);
    let d = dir.path();
    write_npy(&d.join("p.npy"), &pos);
    write_npy(&d.join("n.npy"), &neg);
    write_text(&d.join("p.csv"), Some("score"), &pos);
    write_text(&d.join("n.csv"), Some("score"), &neg);
    write_text(&d.join("p.txt"), Some("# member scores"), &pos);
    write_text(&d.join("n.txt"), None, &neg);
    let claim = ["--claim", "0.5"];
    let a = certify_json(&d.join("p.npy"), &d.join("n.npy"), &claim);
    let b = certify_json(&d.join("p.csv"), &d.join("n.csv"), &claim);
    let c = certify_json(&d.join("p.txt"), &d.join("n.txt"), &claim);
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a["positives"], 300);
    assert_eq!(a["claim"], 0.5);
    // A 3-sigma shift over 150 certified trials each refutes epsilon 0.5 at 95%.
    assert!(a["eps_lb"].as_f64().unwrap() > 0.5, "{a}");
    assert_eq!(a["verdict"], "violated");
    let high = certify_json(&d.join("p.npy"), &d.join("n.npy"), &["--claim", "50"]);
    assert_eq!(high["verdict"], "inconclusive");
}

#[test]
fn bad_files_and_flags_exit_2_naming_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, text) in [
        ("ok.txt", "0.1\n0.2\n0.3\n0.4\n"),
        ("word.txt", "0.1\n0.2\nabc\n"),
        ("wide.csv", "score\n0.1,0.2\n"),
        ("nan.txt", "0.1\nNaN\n"),
        ("empty.txt", "# nothing\n\n"),
    ] {
        std::fs::write(d.join(name), text).unwrap();
    }
    ndarray::Array2::<f64>::zeros((2, 3)).write_npy(std::fs::File::create(d.join("m.npy")).unwrap()).unwrap();
    let ok = d.join("ok.txt");
    let cases: [(&str, &[&str], &[&str]); 7] = [
        ("word.txt", &[], &["word.txt", "line 3", "'abc' is not a number"]),
        ("wide.csv", &[], &["wide.csv", "line 2", "one score per line"]),
        ("nan.txt", &[], &["nan.txt", "line 2", "not finite"]),
        ("empty.txt", &[], &["empty.txt", "holds no score"]),
        ("m.npy", &[], &["m.npy", "shape [2, 3]", "1-D"]),
        ("ok.txt", &["--bound", "exact"], &["--bound", "unknown bound 'exact'", "clopper-pearson"]),
        ("ok.txt", &["--confidence", "1.5"], &["--confidence", "outside (0, 1)"]),
    ];
    for (file, extra, needles) in cases {
        let p = d.join(file);
        let mut args = vec!["certify", "--positives", p.to_str().unwrap(), "--negatives", ok.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (code, out, err) = gnnaudit(&args);
        assert_eq!(code, 2, "{file} {extra:?}: {err}");
        assert!(out.is_empty(), "{file}: nothing on stdout for bad input: {out}");
        for n in needles {
            assert!(err.contains(n), "{file} {extra:?}: '{n}' missing from: {err}");
        }
    }
}
