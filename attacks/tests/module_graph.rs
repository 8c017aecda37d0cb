//! The attacks crate's module graph, read from its sources: no import cycles, and the attack
//! modules (those implementing `Attack`) are imported by the registry (`attack.rs`) alone, so
//! that adding an attack is its module plus one registry line. A failure prints the cycle or the
//! offending import.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level modules `text` refers to: `use crate::x`, `use crate::{x, y::z}` and inline
/// `crate::x::` paths, comments skipped.
fn references(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let preceded_by_ident = rest[..i].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if !preceded_by_ident {
            if let Some(group) = after.strip_prefix('{') {
                // A group: the identifiers at brace depth 0 that start an item.
                let (mut depth, mut start_of_item, mut ident) = (0usize, true, String::new());
                for c in group.chars() {
                    if c.is_alphanumeric() || c == '_' {
                        if depth == 0 && start_of_item {
                            ident.push(c);
                        }
                        continue;
                    }
                    if !ident.is_empty() {
                        out.insert(std::mem::take(&mut ident));
                        start_of_item = false;
                    }
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => start_of_item = true,
                        _ => {}
                    }
                }
                if !ident.is_empty() {
                    out.insert(ident);
                }
            } else {
                let ident: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !ident.is_empty() {
                    out.insert(ident);
                }
            }
        }
        rest = after;
    }
    out
}

/// Module name -> (modules it references, whether it implements `Attack`).
fn module_graph() -> BTreeMap<String, (BTreeSet<String>, bool)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(&src).expect("attacks/src") {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut refs = references(&text);
        refs.remove(&name);
        // An attack module implements `Attack`, by hand or through `record_canary_attack!`.
        let is_attack = text.contains("impl Attack for ") || text.contains("record_canary_attack!(");
        graph.insert(name, (refs, is_attack));
    }
    graph
}

/// Some cycle of the graph, if it has one (depth-first search with a path stack).
fn find_cycle(graph: &BTreeMap<String, (BTreeSet<String>, bool)>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, (BTreeSet<String>, bool)>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).map(|g| &g.0).into_iter().flatten() {
            if graph.contains_key(next) {
                if let Some(c) = visit(next, graph, done, path) {
                    return Some(c);
                }
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(c) = visit(node, graph, &mut done, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_reference_parser_reads_every_import_form() {
    let text = "use crate::error::{check, Result};\nuse crate::{attribute, canary::{A, B}, lira};\n\
                // use crate::commented;\nlet x = crate::stats::certify(1); a_crate::no;";
    let want: BTreeSet<String> =
        ["error", "attribute", "canary", "lira", "stats"].into_iter().map(String::from).collect();
    assert_eq!(references(text), want);
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), (["b".to_string()].into(), false));
    graph.insert("b".to_string(), (["a".to_string()].into(), false));
    assert_eq!(find_cycle(&graph), Some(vec!["a".into(), "b".into(), "a".into()]));
}

#[test]
fn attacks_crate_modules_have_no_import_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 10 && graph.contains_key("attack"), "read {} modules", graph.len());
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle in attacks/src: {}", cycle.join(" -> "));
    }
}

#[test]
fn only_the_registry_imports_the_attack_modules() {
    let graph = module_graph();
    let attacks: BTreeSet<&String> = graph.iter().filter(|(_, g)| g.1).map(|(n, _)| n).collect();
    assert!(attacks.len() >= 12, "attack modules found: {attacks:?}");
    let registry = &graph["attack"].0;
    for a in &attacks {
        assert!(registry.contains(*a), "the registry (attack.rs) does not import the attack module {a}");
    }
    for (name, (refs, _)) in &graph {
        // lib.rs declares the modules; the crate's attack tests exercise them.
        if name == "attack" || name == "lib" || name.ends_with("_tests") {
            continue;
        }
        for r in refs {
            assert!(!attacks.contains(r), "{name}.rs imports the attack module {r}: only attack.rs may");
        }
    }
}
