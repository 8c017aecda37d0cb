//! Tools for reviewers of a finished audit: the published JSON Schema of report.json, `report
//! diff` as a leakage regression gate, and rows that say what an MLP's ε = 0 means. All run on
//! the checked-in example report (a real `gnnaudit audit configs/quick.toml` output).
use gnnaudit::privacy::accountant::PrivacyUnit;
use gnnaudit::report::record::Epsilon;
use gnnaudit::report::{schema::report_schema_json, summarize, Report};
use serde_json::Value;
use std::path::PathBuf;
#[path = "common/cli.rs"]
mod cli;
use cli::gnnaudit;

fn repo() -> PathBuf {
    PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
}

fn example() -> PathBuf {
    repo().join("reports/example/report.json")
}

/// A JSON Schema checker for the keywords schemars emits here ($ref into $defs, type, properties,
/// required, additionalProperties, items, prefixItems, anyOf, oneOf, enum, const, minimum).
/// Returns the first mismatch with its JSON pointer.
fn validate(root: &Value, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else { return Ok(()) };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").ok_or_else(|| format!("unsupported $ref {r}"))?;
        validate(root, &root["$defs"][name], v, at)?;
    }
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(x) => vec![x.as_str()],
            Value::Array(xs) => xs.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "number" => v.is_number(),
            "integer" => v.is_u64() || v.is_i64(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            _ => false,
        });
        if !ok {
            return Err(format!("{at}: {v} is not of type {t}"));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{at}: {v} is not {c}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            return Err(format!("{at}: {v} is not one of {e:?}"));
        }
    }
    if let (Some(m), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < m {
            return Err(format!("{at}: {x} < minimum {m}"));
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            let passing = alts.iter().filter(|a| validate(root, a, v, at).is_ok()).count();
            if passing == 0 || (key == "oneOf" && passing > 1) {
                return Err(format!("{at}: {v} matches {passing} of the {key} alternatives"));
            }
        }
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            let r = r.as_str().unwrap_or_default();
            if !obj.contains_key(r) {
                return Err(format!("{at}: required field '{r}' missing"));
            }
        }
        for (k, x) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(root, ps, x, &format!("{at}/{k}"))?,
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at}: unknown field '{k}'"))
                }
                None => {}
            }
        }
    }
    if let Some(xs) = v.as_array() {
        let prefix = s.get("prefixItems").and_then(Value::as_array);
        for (i, x) in xs.iter().enumerate() {
            let item_schema = prefix.and_then(|p| p.get(i)).or_else(|| s.get("items"));
            if let Some(is) = item_schema {
                validate(root, is, x, &format!("{at}/{i}"))?;
            }
        }
    }
    Ok(())
}

#[test]
fn published_schema_is_the_generated_one() {
    let file = std::fs::read_to_string(repo().join("docs/report.schema.json")).expect("docs/report.schema.json");
    assert!(
        file == report_schema_json(),
        "docs/report.schema.json is stale: regenerate it with `gnnaudit report schema > docs/report.schema.json`"
    );
    let (code, out, err) = gnnaudit(&["report", "schema"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, file);
}

#[test]
fn real_report_validates_and_broken_ones_do_not() {
    let schema: Value = serde_json::from_str(&report_schema_json()).unwrap();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(example()).unwrap()).unwrap();
    validate(&schema, &schema, &report, "").unwrap_or_else(|e| panic!("the example report fails its schema: {e}"));
    // The checker is not vacuous: a missing field, a wrong type, an unknown field and a bad
    // epsilon are each caught.
    let mut missing = report.clone();
    missing["summary"][0].as_object_mut().unwrap().remove("test_accuracy");
    let mut wrong_type = report.clone();
    wrong_type["cells"][0]["seed"] = Value::String("one".into());
    let mut unknown = report.clone();
    unknown["run"]["extra"] = Value::Bool(true);
    let mut bad_eps = report.clone();
    bad_eps["summary"][0]["epsilon"] = Value::String("lots".into());
    let mut bad_unit = report.clone();
    bad_unit["cells"][0]["privacy_unit"] = Value::String("graph".into());
    for (name, bad) in
        [("missing", missing), ("wrong type", wrong_type), ("unknown", unknown), ("eps", bad_eps), ("unit", bad_unit)]
    {
        assert!(validate(&schema, &schema, &bad, "").is_err(), "{name}: a broken report passed the schema");
    }
}

#[test]
fn report_diff_passes_on_equal_reports_and_fails_when_leakage_rises() {
    let ex = example();
    let (code, out, err) = gnnaudit(&["report", "diff", ex.to_str().unwrap(), ex.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("0 change(s)") && out.contains("0 regression(s)"), "{out}");

    // A new report in which one non-private target's attack got 0.1 AUC better (cells changed,
    // summary recomputed, so that it is a consistent report) and utility fell.
    let mut new = Report::load(&ex).unwrap();
    let cell = new.cells.iter().position(|c| c.method == "gap-inf" && !c.attacks.is_empty()).expect("a gap-inf cell");
    let attack = new.cells[cell].attacks[0].attack.clone();
    new.cells[cell].attacks[0].auc = (new.cells[cell].attacks[0].auc + 0.1).min(1.0);
    new.cells[cell].utility.test -= 0.05;
    new.summary = summarize(&new.cells);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.json"), new.to_json()).unwrap();
    let newdir = dir.path().to_str().unwrap();

    let (code, out, err) = gnnaudit(&["report", "diff", ex.to_str().unwrap(), newdir]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.lines().any(|l| l.starts_with('!') && l.contains(&attack) && l.contains("AUC")), "{out}");
    assert!(out.contains("test accuracy"), "utility change not shown: {out}");
    // A tolerance above the change lets it pass, and still shows it.
    let (code, out, _) = gnnaudit(&["report", "diff", ex.to_str().unwrap(), newdir, "--max-auc-increase", "0.5"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("AUC") && out.contains("0 regression(s)"), "{out}");

    // Bad input: exit 2 naming the culprit.
    let (code, _, err) = gnnaudit(&["report", "diff", ex.to_str().unwrap(), "/nonexistent/report.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/nonexistent/report.json"), "{err}");
    let (code, _, err) = gnnaudit(&["report", "diff", ex.to_str().unwrap(), newdir, "--max-auc-increase=-1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-auc-increase"), "{err}");
}

#[test]
fn mlp_rows_say_they_use_no_edges_and_guard_no_nodes() {
    // An MLP row as the audit writes it: accounted at the edge unit with ε = 0 (it reads no
    // edges), target ε = ∞ (it guards nothing else).
    let mut report = Report::load(&example()).unwrap();
    let mut mlp = report.summary[0].clone();
    mlp.method = "mlp".into();
    mlp.privacy_unit = PrivacyUnit::Edge;
    mlp.epsilon = Epsilon::Infinite;
    mlp.epsilon_claimed = Epsilon::Finite(0.0);
    mlp.epsilon_rdp = Epsilon::Finite(0.0);
    report.summary.push(mlp);
    let md = gnnaudit::report::markdown::render(&report);
    let mlp_rows: Vec<&str> = md.lines().filter(|l| l.contains("| mlp |")).collect();
    assert!(mlp_rows.len() >= 2, "utility and attack tables: {mlp_rows:#?}");
    for row in &mlp_rows {
        assert!(row.contains("0 (edge) · ∞ (node)"), "{row}");
    }
    assert!(
        mlp_rows.iter().any(|l| l.contains("| edge: uses no edges (ε = 0) · node: not private |")),
        "{mlp_rows:#?}"
    );
    // Private rows keep their plain unit and number.
    assert!(md.lines().any(|l| l.contains("| gap-edp | edge | 1 |") && l.contains("| 0.897 |")), "{md}");
}
