//! DPAR (Zhang thesis ch.5): ISTA APPR against power iteration, the DP-APPR mechanisms'
//! defining properties, and where the thesis's accounting and gnnaudit's sound budget disagree.
use gnnaudit::data::{load_dataset, Graph};
use gnnaudit::models::dpar::{
    cap_referenced_rows, clip_columns_l1, clip_l2, max_column_count, private_row, ApprMechanism,
};
use gnnaudit::models::ppr::{appr_ista, ppr_power_iteration, propagate, ApprParams};
use gnnaudit::privacy::accountant::analytic::gaussian_epsilon;
use gnnaudit::privacy::accountant::dpar::*;
use gnnaudit::privacy::accountant::rdp_epsilon;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

#[path = "common/data.rs"]
mod test_data;

fn undirected(n: usize, edges: &[(usize, usize)]) -> Graph {
    Graph::from_edges(n, edges.iter().flat_map(|&(u, v)| [(u, v), (v, u)])).unwrap()
}

/// 400 nodes, 1,000 random undirected edges among the first 390; the last 10 are isolated.
fn random_graph() -> Graph {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let edges: Vec<(usize, usize)> =
        (0..1000).map(|_| (rng.gen_range(0..390), rng.gen_range(0..390))).filter(|(u, v)| u != v).collect();
    undirected(400, &edges)
}

/// Fountoulakis et al.'s guarantee, which the KKT conditions and PPR reversibility give:
/// |p_i - p*_i| <= (1 + gamma) rho d_i at ISTA's stopping rule.
fn check_against_power_iteration(g: &Graph, source: usize, params: &ApprParams) -> usize {
    let p = appr_ista(g, source, params).unwrap();
    let exact = ppr_power_iteration(g, source, params.alpha, 400);
    let total: f64 = exact.iter().sum();
    assert!((total - 1.0).abs() < 1e-9, "power iteration mass {total}");
    let mut dense = vec![0.0; g.num_nodes()];
    for &(i, v) in &p {
        assert!(v > 0.0, "APPR entry {v} at {i} not positive");
        dense[i] = v;
    }
    assert!(dense.iter().sum::<f64>() <= 1.0 + 1e-12);
    for i in 0..g.num_nodes() {
        let d = g.in_degree(i) as f64;
        let err = (dense[i] - exact[i]).abs();
        if d > 0.0 {
            assert!(
                err <= (1.0 + params.gamma) * params.rho * d * (1.0 + 1e-9) + 1e-15,
                "source {source}, node {i}: |p - p*| = {err:e} > rho d = {:e}",
                params.rho * d
            );
        } else {
            assert!(err < 1e-12, "isolated node {i} gets mass {err:e}");
        }
    }
    p.len()
}

#[test]
fn ista_meets_its_tolerance_against_power_iteration() {
    let g = random_graph();
    for rho in [1e-4, 1e-3, 1e-8] {
        let params = ApprParams { rho, ..ApprParams::default() };
        for source in [0, 5, 17, 100, 389] {
            check_against_power_iteration(&g, source, &params);
        }
    }
    // An isolated source is its own row (self-loop convention), as power iteration gives.
    let params = ApprParams::default();
    assert_eq!(appr_ista(&g, 395, &params).unwrap(), vec![(395, 1.0)]);
    check_against_power_iteration(&g, 395, &params);
    // Bad input names the field.
    let err = appr_ista(&g, 0, &ApprParams { alpha: 1.5, ..params }).unwrap_err();
    assert!(err.to_string().contains("alpha_ppr"), "{err}");
}

#[test]
fn ista_is_local_on_cora_ml() {
    let Some(dir) = test_data::need("ista_is_local_on_cora_ml", "cora-ml") else { return };
    let ds = load_dataset("cora-ml", Some(&dir)).unwrap();
    let g = undirected(ds.graph.num_nodes(), &ds.graph.edges().collect::<Vec<_>>());
    let params = ApprParams::default();
    let mut support = Vec::new();
    for source in [0, 100, 1000, 2000] {
        if g.in_degree(source) > 0 {
            support.push(check_against_power_iteration(&g, source, &params));
        }
    }
    assert!(!support.is_empty());
    // rho = 1e-4 keeps the rows sparse: well under the 2,995 nodes.
    assert!(support.iter().all(|&s| s < g.num_nodes() / 2), "supports {support:?}");
}

#[test]
fn test_graph_propagation_follows_eq_5_19() {
    // Path 0 - 1 plus isolated 2; H one column.
    let g = undirected(3, &[(0, 1)]);
    let h = [1.0f32, 3.0, 5.0];
    let q = propagate(&g, &h, 1, 0.25, 1).unwrap();
    // Q1 = 0.75 D^-1 A H + 0.25 H; the isolated node keeps only alpha H.
    let want = [0.75 * 3.0 + 0.25, 0.75 * 1.0 + 0.75, 0.25 * 5.0];
    for (a, b) in q.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{q:?}");
    }
    assert!(propagate(&g, &h[..2], 1, 0.25, 2).is_err());
}

#[test]
fn gm_sensitivity_is_sqrt2_c1_not_c1() {
    // Two non-negative rows with disjoint supports, clipped to C1: their distance is sqrt(2) C1,
    // above the C1 the thesis calibrates with; no pair of clipped non-negative rows exceeds it.
    let c1 = 0.01;
    let a = clip_l2(&[(0, 0.5), (1, 0.2)], c1);
    let b = clip_l2(&[(2, 0.3)], c1);
    let dist = |x: &[(usize, f64)], y: &[(usize, f64)]| {
        let mut d = [0.0; 3];
        x.iter().for_each(|&(i, v)| d[i] += v);
        y.iter().for_each(|&(i, v)| d[i] -= v);
        d.iter().map(|v| v * v).sum::<f64>().sqrt()
    };
    assert!((dist(&a, &b) - 2f64.sqrt() * c1).abs() < 1e-12);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..1000 {
        let x: Vec<(usize, f64)> = (0..3).map(|i| (i, rng.gen::<f64>())).collect();
        let y: Vec<(usize, f64)> = (0..3).map(|i| (i, rng.gen::<f64>())).collect();
        assert!(dist(&clip_l2(&x, c1), &clip_l2(&y, c1)) <= 2f64.sqrt() * c1 * (1.0 + 1e-12));
    }
    // With negligible noise GM keeps the clipped row's top K.
    let row =
        private_row(&[(1, 0.4), (3, 0.3), (7, 0.05)], 10, 2, &ApprMechanism::Gaussian { c1, sigma: 1e-12 }, &mut rng)
            .unwrap();
    assert_eq!(row.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 3]);
    assert!(row.iter().map(|r| r.1 * r.1).sum::<f64>().sqrt() <= c1 + 1e-9);
}

#[test]
fn gumbel_top1_is_the_exponential_mechanism() {
    // One-shot Gumbel at scale C2/eps picks j with probability prop. to exp(eps u_j / C2).
    let (c2, eps) = (0.001, 2.0);
    let appr = [(0, 0.5), (1, 0.0005), (3, 0.001)]; // entry 0 clipped to C2
    let w = [2f64.exp(), 1f64.exp(), 1.0, 2f64.exp()];
    let z: f64 = w.iter().sum();
    let mut counts = [0usize; 4];
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let trials = 20_000;
    for _ in 0..trials {
        let row = private_row(&appr, 4, 1, &ApprMechanism::ExponentialV0 { c2, epsilon: eps }, &mut rng).unwrap();
        assert_eq!(row.len(), 1);
        assert_eq!(row[0].1, 1.0);
        counts[row[0].0] += 1;
    }
    for j in 0..4 {
        let p = w[j] / z;
        let sd = (trials as f64 * p * (1.0 - p)).sqrt();
        assert!((counts[j] as f64 - trials as f64 * p).abs() < 4.5 * sd, "column {j}: {counts:?}");
    }
    // EM-v0 rows carry K entries of 1/K; EM-v1 rows K noisy clipped values.
    let v0 = private_row(&appr, 50, 4, &ApprMechanism::ExponentialV0 { c2, epsilon: eps }, &mut rng).unwrap();
    assert!(v0.len() == 4 && v0.iter().all(|r| r.1 == 0.25));
    let v1 =
        private_row(&appr, 50, 4, &ApprMechanism::ExponentialV1 { c2, epsilon: eps, epsilon2: 1e9 }, &mut rng).unwrap();
    assert_eq!(v1.len(), 4);
    for &(j, v) in &v1 {
        let clipped = appr.iter().find(|a| a.0 == j).map_or(0.0, |a| a.1.min(c2));
        assert!((v - clipped).abs() < 1e-9, "column {j}: {v} vs {clipped}");
    }
    assert!(private_row(&appr, 4, 5, &ApprMechanism::ExponentialV0 { c2, epsilon: eps }, &mut rng).is_err());
}

#[test]
fn column_clip_and_referenced_row_cap() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let n = 30;
    let mut rows: Vec<Vec<(usize, f64)>> = (0..70)
        .map(|_| {
            let mut cols: Vec<usize> = (0..4).map(|_| rng.gen_range(0..n)).collect();
            cols.sort_unstable();
            cols.dedup();
            cols.into_iter().map(|j| (j, rng.gen::<f64>())).collect()
        })
        .collect();
    assert!(max_column_count(&rows, n) > 4);
    clip_columns_l1(&mut rows, n, 1.0);
    let mut mass = vec![0.0; n];
    rows.iter().flatten().for_each(|&(j, v)| mass[j] += v.abs());
    assert!(mass.iter().all(|&m| m <= 1.0 + 1e-12));
    let dropped = cap_referenced_rows(&mut rows, n, 4);
    assert!(dropped > 0);
    assert!(max_column_count(&rows, n) <= 4);
}

#[test]
fn thesis_accounting_beside_the_sound_budget() {
    let (m, delta, c1) = (70u64, 1e-3, 1.0);
    // Thm 6's calibration (golden values): sigma / C1 = 216.1 / 59.20 / 30.81 at eps_pr 1 / 4 / 8.
    let mut sound = Vec::new();
    for (eps_pr, golden) in [(1.0, 216.14597), (4.0, 59.201740), (8.0, 30.812271)] {
        let sigma = thesis_gm_sigma(eps_pr, delta, m, c1).unwrap();
        assert!((sigma / golden - 1.0).abs() < 1e-6, "eps_pr {eps_pr}: sigma {sigma}");
        // The same noise at the sound sensitivity sqrt(2) C1: exact Gaussian composition over M
        // rows, the RDP accountant above it, the zCDP bound above that; all far below the claim.
        let s = sigma / (2f64.sqrt() * c1);
        let exact = gaussian_epsilon(s / (m as f64).sqrt(), delta).unwrap();
        let rdp = rdp_epsilon(&gm_event(sigma, c1, m), delta).unwrap().epsilon;
        let rho = m as f64 / (2.0 * s * s);
        let zcdp = rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt();
        assert!(exact <= rdp + 1e-9 && rdp <= zcdp + 1e-9, "{exact} {rdp} {zcdp}");
        assert!(eps_pr / exact > 4.0, "GM over-noised by {}x only", eps_pr / exact);
        sound.push(exact);
    }
    assert!(sound[0] < sound[1] && sound[1] < sound[2]);

    // EM (Cor. 3 + Kairouz): the per-pick eps and the sound zCDP account of the same noise.
    let (eps, eps2) = thesis_em_epsilons(4.0, delta, m, 4, false).unwrap();
    assert!(eps2.is_none() && (eps / 0.010375042594944657 - 1.0).abs() < 1e-6, "{eps}");
    let rho = em_rho(eps, 4, m, None);
    assert!((rho / 0.015069811238568234 - 1.0).abs() < 1e-6);
    let (e1, e2) = thesis_em_epsilons(4.0, delta, m, 4, true).unwrap();
    let (row, row_delta) = kairouz_row_budget(4.0, delta, m);
    assert!((gumbel_topk_epsilon(e1, 4, row_delta) + e2.unwrap() - row).abs() < 1e-12);

    // "Multiply by q'" against exact Poisson amplification: eps 8 at q' = 0.09 is 5.595, not 0.72.
    let (amp, amp_delta) = poisson_amplified(8.0, delta, 0.09);
    assert!((amp - 5.595440551734913).abs() < 1e-9 && (amp_delta - 0.09 * delta).abs() < 1e-18);
    assert!(amp > 7.0 * 0.09 * 8.0);

    // DP-SGD: Thm 8's proof mixture (rate B/M) against the sound DP-GNN event with the cap D_Pi = 4
    // (a node enters up to 5 per-row gradients): the paper reading under-states epsilon.
    let (batch, steps, sigma) = (60u64, 400u64, 20.0);
    let paper_sgd = dpsgd_paper_event(m, batch, sigma, 1.0, steps);
    let sound_sgd = dpsgd_sound_event(m, 4, batch, sigma, steps);
    let paper_eps = rdp_epsilon(&paper_sgd, delta / 2.0).unwrap().epsilon;
    let sound_eps = rdp_epsilon(&sound_sgd, delta / 2.0).unwrap().epsilon;
    assert!(sound_eps > 2.0 * paper_eps, "sound {sound_eps} vs paper {paper_eps}");

    // The whole of DPAR-GM at eps_pr = 4, q' = 0.09: sound total vs the thesis's total.
    let sigma_pr = thesis_gm_sigma(4.0, delta / 2.0, m, 0.01).unwrap();
    let whole = dpar_epsilon(ApprRelease::Gaussian { sigma: sigma_pr, c1: 0.01 }, m, &sound_sgd, delta, 0.09).unwrap();
    let sgd_only = dpar_epsilon(ApprRelease::None, m, &sound_sgd, delta, 0.09).unwrap();
    let thesis = thesis_dpar_epsilon(4.0, &paper_sgd, delta / 2.0, 0.09).unwrap();
    assert!(whole > sgd_only, "{whole} {sgd_only}");
    eprintln!(
        "DPAR-GM eps_pr 4, sigma_sgd {sigma}: sound {whole:.3} (DP-SGD alone {sgd_only:.3}), thesis {thesis:.3}; \
         DP-SGD sound {sound_eps:.3} vs paper {paper_eps:.3}; GM exact {sound:?}"
    );
    assert!(dpar_epsilon(ApprRelease::None, m, &sound_sgd, 0.5, 0.09).is_err());
}

#[test]
fn spec_goldens_for_the_dpar_budgets() {
    // Spec §3.4: the thesis's GM noise for eps_pr = 1 / 4 / 8 (M = 70, delta_pr = 1e-3) spends, at
    // the sound sensitivity sqrt(2) C1, at most 0.21 / 0.76 / 1.50 by the zCDP bound.
    let (m, delta) = (70u64, 1e-3);
    for (eps_pr, zcdp_golden) in [(1.0, 0.2049683), (4.0, 0.7628427), (8.0, 1.5010591)] {
        let sigma = thesis_gm_sigma(eps_pr, delta, m, 0.01).unwrap();
        let s = sigma / (2f64.sqrt() * 0.01);
        let rho = m as f64 / (2.0 * s * s);
        assert!((rho + 2.0 * (rho * (1.0f64 / delta).ln()).sqrt() - zcdp_golden).abs() < 1e-6);
        let rdp = rdp_epsilon(&gm_event(sigma, 0.01, m), delta).unwrap().epsilon;
        assert!(rdp <= zcdp_golden && rdp > 0.5 * zcdp_golden, "eps_pr {eps_pr}: {rdp}");
    }
    // The event a run records gives the same number as the hand composition (RDP sum, then q').
    let sgd = dpsgd_sound_event(70, 4, 60, 20.0, 400);
    for (appr, q) in [
        (ApprRelease::Gaussian { sigma: 0.1, c1: 0.01 }, 0.09),
        (ApprRelease::Exponential { eps: 0.01, k: 4, eps2: Some(0.02) }, 0.5),
        (ApprRelease::None, 1.0),
    ] {
        let by_hand = dpar_epsilon(appr, 70, &sgd, 2e-3, q).unwrap();
        let event = dpar_event(appr_event(appr, 70), sgd.clone(), q);
        let recorded = rdp_epsilon(&event, 2e-3).unwrap().epsilon;
        assert!((by_hand - recorded).abs() < 1e-9 * by_hand.max(1.0), "{appr:?}: {by_hand} vs {recorded}");
    }
    // Node subsampling outermost only; delta must stay below q'.
    let e = dpar_event(None, sgd.clone(), 0.09);
    assert!(rdp_epsilon(&e, 0.1).is_err());
    let twice = gnnaudit::privacy::accountant::Event::NodeSubsampled { rate: 0.5, event: Box::new(e) };
    assert!(twice.validate().is_err());
}

/// gnnaudit with `data` (where cora-ml was found) as its data directory.
fn gnnaudit_cmd(data: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(args)
        .env("GNNAUDIT_DATA", data)
        .output()
        .expect("run gnnaudit")
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The thesis set-up shrunk (q' = 0.09, M = 30 rows, 5 epochs) on cora-ml.
const SMALL: &[&str] = &[
    "--dataset",
    "cora-ml",
    "--delta",
    "2e-3",
    "--q-prime",
    "0.09",
    "--m-rows",
    "30",
    "--ref-cap",
    "4",
    "--epochs",
    "5",
    "--threads",
    "1",
];

#[test]
fn account_and_train_give_the_same_epsilon() {
    let Some(data) = test_data::need("account_and_train_give_the_same_epsilon", "cora-ml") else { return };
    for (method, appr_flag) in [("dpar-gm", "sigma_pr"), ("dpar-em0", "em_epsilon_per_pick")] {
        let mut args = vec!["train", "--method", method, "--epsilon", "6", "--json", "--no-pld"];
        args.extend_from_slice(SMALL);
        let run = json_of(&gnnaudit_cmd(&data, &args));
        let b = &run["budget"];
        let noise = |k: &str| -> String {
            let v = b["noise"].as_array().unwrap().iter().find(|p| p[0] == k).unwrap_or_else(|| panic!("{k}"))[1]
                .as_f64()
                .unwrap();
            format!("{v:e}")
        };
        let trained = b["epsilon_rdp"].as_f64().unwrap();
        assert!((trained - 6.0).abs() < 1e-3, "calibrated to the target: {trained}");
        let rows = noise("rows");
        let batch = format!("{}", (rows.parse::<f64>().unwrap() as u64).min(60));
        let (sigma, appr, steps) = (noise("sigma_sgd"), noise(appr_flag), noise("steps"));
        let mut acc = vec!["account", "epsilon", "--json", "--delta", "2e-3", "--q-prime", "0.09", "--degree", "4"];
        let steps_int = format!("{}", steps.parse::<f64>().unwrap() as u64);
        let rows_int = format!("{}", rows.parse::<f64>().unwrap() as u64);
        acc.extend(["--sigma", &sigma, "--num-nodes", &rows_int, "--batch-size", &batch, "--steps", &steps_int]);
        if method == "dpar-gm" {
            acc.extend(["--method", "dpar-gm", "--sigma-pr", &appr]);
        } else {
            acc.extend(["--method", "dpar-em", "--em-epsilon", &appr]);
        }
        let accounted = json_of(&gnnaudit_cmd(&data, &acc))["budget"]["epsilon_rdp"].as_f64().unwrap();
        assert!((accounted - trained).abs() < 1e-6 * trained, "{method}: account {accounted} vs train {trained}");
        // The thesis's own total for the same noise is far below the sound one.
        let paper =
            b["noise"].as_array().unwrap().iter().find(|p| p[0] == "paper_epsilon").unwrap()[1].as_f64().unwrap();
        assert!(paper < trained, "{method}: paper {paper} vs sound {trained}");
    }
}

#[test]
fn bad_dpar_input_exits_2_naming_the_field() {
    let Some(data) = test_data::need("bad_dpar_input_exits_2_naming_the_field", "cora-ml") else { return };
    for (extra, field) in [
        (vec!["--method", "dpar-gm", "--epsilon", "0"], "epsilon"),
        (vec!["--method", "dpar-gm", "--epsilon", "-1"], "epsilon"),
        (vec!["--method", "dpar-em0", "--epsilon", "1", "--top-k", "0"], "top_k"),
        (vec!["--method", "dpar-gm", "--epsilon", "1", "--alpha-ppr", "1.5"], "alpha_ppr"),
        (vec!["--method", "dpar-gm", "--epsilon", "1", "--alpha-ppr", "0"], "alpha_ppr"),
        (vec!["--method", "dpar-gm", "--epsilon", "1", "--c2", "0.01"], "c2"),
        (vec!["--method", "dpar-features", "--epsilon", "1", "--ref-cap", "3"], "ref_cap"),
        (vec!["--method", "dpar-dpsgd", "--epsilon", "1", "--epsilon-pr-fraction", "0.5"], "epsilon_pr_fraction"),
        (vec!["--method", "dpar-gm", "--epsilon", "1", "--q-prime", "1.5"], "q_prime"),
        (vec!["--method", "gap-edp", "--epsilon", "1", "--top-k", "4"], "top_k"),
        (vec!["--method", "dpar-inf", "--epsilon", "1"], "epsilon"),
    ] {
        let mut args = vec!["train", "--dataset", "cora-ml"];
        args.extend(extra.iter());
        let out = gnnaudit_cmd(&data, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(field), "{extra:?} should name {field}: {err}");
    }
}

#[test]
fn vanilla_dpar_learns_and_leaks_degrees_through_a_checkpoint() {
    let Some(data) = test_data::need("vanilla_dpar_learns_and_leaks_degrees_through_a_checkpoint", "cora-ml") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("gnnaudit-dpar-{}", std::process::id()));
    let base = ["--dataset", "cora-ml", "--m-rows", "400", "--epochs", "30", "--threads", "1"];
    let mut args = vec!["train", "--method", "dpar-inf", "--json", "--lr", "0.01", "--save", dir.to_str().unwrap()];
    args.extend_from_slice(&base);
    let run = json_of(&gnnaudit_cmd(&data, &args));
    let acc = run["test_accuracy"]["mean"].as_f64().unwrap();
    // 7 classes, the largest ~30%: PPRGo on 400 labelled rows, inferred on the disjoint test graph.
    assert!(acc > 0.6, "dpar-inf test accuracy {acc}");
    let attack = json_of(&gnnaudit_cmd(
        &data,
        &[
            "attack",
            "--attack",
            "degree-inference",
            "--target",
            dir.to_str().unwrap(),
            "--dataset",
            "cora-ml",
            "--json",
        ],
    ));
    let d = &attack["runs"][0]["details"];
    let ratio = d["rmse_ratio"].as_f64().unwrap();
    assert_eq!(d["nodes"].as_u64(), Some(400));
    assert!(ratio < 0.95, "the non-private rows' outputs should reveal degrees: {d}");
    assert_eq!(attack["game_detail"]["unit"], "practical");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dpar-dpsgd`'s step, written as DP-GNN's event with every node in all B terms of every batch
/// (so that gradient canaries enter as such a node), is the unamplified Gaussian of sensitivity
/// 2BC: the same epsilon at every setting, to rounding.
#[test]
fn the_unsampled_dpsgd_event_is_the_gaussian_of_sensitivity_2b() {
    use gnnaudit::privacy::accountant::Event;
    for (batch, sigma, steps) in [(60u64, 200.0, 400u64), (256, 900.0, 160), (2, 3.0, 10), (1, 3.0, 10)] {
        let gaussian = Event::gaussian(sigma).scaled(2.0 * batch as f64).times(steps);
        let node = dpsgd_unsampled_event(batch, sigma, steps);
        for delta in [1e-4, 1e-6] {
            let (a, b) = (rdp_epsilon(&gaussian, delta).unwrap().epsilon, rdp_epsilon(&node, delta).unwrap().epsilon);
            assert!((a - b).abs() <= 1e-9 * a, "B {batch} sigma {sigma} T {steps}: {a} vs {b}");
        }
    }
}
