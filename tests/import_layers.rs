//! The crate's import layering, read from the source files (no torch, no build of anything).
//!
//! Every `crate::<module>` reference under `src/` (`use crate::x::..`, `crate::x::` inside paths,
//! grouped `use crate::{a, b}`) is an edge from the top-level module (folder or file) that holds
//! it. The folder graph must have no cycle, and no edge may point up the layer order in
//! [`LAYERS`]. Inside `src/audit`, the graph of files (`super::x`, `crate::audit::x`) must have no
//! cycle either, nor inside `src/methods`.
//!
//! Test-only code (`#[cfg(test)]` modules, inline or in their own file) is left out: like a
//! dev-dependency, a unit test may build its fixtures from a higher layer.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may import from its own layer or any lower one; within a
/// layer the only rule is "no cycle". `models` (networks) sits below `train` (the fit loop and
/// accounting), which sits below `methods` (the registry and every method).
const LAYERS: &[&[&str]] = &[
    // Foundation: errors, process-level helpers, file writes.
    &["error", "fatal", "libtorch", "device", "fsutil", "interrupt"],
    &["data"],
    &["privacy"],
    &["models"],
    &["train"],
    &["methods"],
    // What a trained model, a deployment or a replay exposes to the attacks.
    &["target", "replay", "external"],
    // report.json's schema (records, the audit config it embeds, recomputed claims), its
    // renderings and `check`. It sits below `audit`: the audit writes reports, so `audit` imports
    // `report` and never the reverse (the data flows audit -> report; the import goes the other way,
    // because the records live in report/record.rs).
    &["report"],
    &["audit"],
    &["cli"],
];

/// Upward edges that still exist, each with the reason it is tolerated. Remove a line when its
/// edge is gone (the test fails on a listed edge that no longer exists, so the list cannot rot).
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// Edges inside `src/audit` that are tolerated, as (from file, to file, why). Empty: none.
const AUDIT_EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// Edges inside `src/methods` that are tolerated, as (from file, to file, why). Empty: none.
const METHODS_EXCEPTIONS: &[(&str, &str, &str)] = &[];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The source with comments, string and char literals blanked out (same length, newlines kept),
/// so that braces and paths in them do not count.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if !ident_before && matches!(b.get(i + 1), Some(b'"' | b'#')) => {
                // Raw string r"..", r#".."#: ends at a quote followed by as many hashes.
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + 2 + hashes;
                let end = src[start..].find(&close).map_or(b.len(), |n| start + n + close.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i, j + 1);
                i = j + 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    src[i + 2..].find('\'').map(|n| i + 2 + n + 1)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 3)
                } else {
                    src[i + 1..].chars().next().filter(|c| c.len_utf8() > 1).and_then(|c| {
                        let j = i + 1 + c.len_utf8();
                        (b.get(j) == Some(&b'\'')).then_some(j + 1)
                    })
                };
                match end {
                    Some(e) => {
                        blank(&mut out, i, e);
                        i = e;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 (only ASCII bytes replaced in whole chars)")
}

/// Index of the `}` matching the `{` at `open`.
fn matching_brace(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Blanks `#[cfg(test)]` items; returns the names of `#[cfg(test)] mod name;` files it declares.
fn drop_test_code(code: &mut String) -> Vec<String> {
    let mut test_files = vec![];
    let mut from = 0;
    while let Some(pos) = code[from..].find("#[cfg(test)]").map(|p| from + p) {
        let rest = &code[pos..];
        let item_end = match (rest.find('{'), rest.find(';')) {
            (open, Some(s)) if open.is_none_or(|o| s < o) => {
                let decl = rest[..s].split_whitespace().collect::<Vec<_>>();
                if let [.., "mod", name] = decl.as_slice() {
                    test_files.push(name.to_string());
                }
                pos + s + 1
            }
            (Some(o), _) => matching_brace(code.as_bytes(), pos + o) + 1,
            (None, _) => code.len(),
        };
        let blanked: String = code[pos..item_end].chars().map(|c| if c == '\n' { c } else { ' ' }).collect();
        code.replace_range(pos..item_end, &blanked);
        from = item_end;
    }
    test_files
}

/// The library code of every file under `src/` (test-only files and modules dropped), by path
/// relative to `src/`.
fn library_sources() -> BTreeMap<String, String> {
    let src = src_dir();
    let mut code: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut test_only: BTreeSet<PathBuf> = BTreeSet::new();
    for path in rust_files(&src) {
        let mut c = code_only(&std::fs::read_to_string(&path).unwrap());
        for name in drop_test_code(&mut c) {
            // `mod name;` in `x/mod.rs` or `x.rs` names `x/name.rs` or `x/name/mod.rs`.
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let dir = if ["mod", "lib", "main"].contains(&stem.as_str()) {
                path.parent().unwrap().to_path_buf()
            } else {
                path.with_extension("")
            };
            test_only.insert(dir.join(format!("{name}.rs")));
            test_only.insert(dir.join(&name).join("mod.rs"));
        }
        code.insert(path, c);
    }
    code.into_iter()
        .filter(|(p, _)| !test_only.contains(p))
        .map(|(p, c)| (p.strip_prefix(&src).unwrap().to_string_lossy().into_owned(), c))
        .collect()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The first segments after every `<prefix>::` in `code` (`prefix::{a, b::c}` gives a and b).
fn first_segments(code: &str, prefix: &str) -> Vec<String> {
    let b = code.as_bytes();
    let needle = format!("{prefix}::");
    let mut out = vec![];
    let mut from = 0;
    while let Some(pos) = code[from..].find(&needle).map(|p| from + p) {
        from = pos + needle.len();
        if pos > 0 && (is_ident(b[pos - 1]) || b[pos - 1] == b':') {
            continue; // `x::crate::` or `my_crate::`: not this prefix
        }
        let mut j = from;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if b.get(j) == Some(&b'{') {
            let close = matching_brace(b, j);
            let (mut depth, mut start) = (0, j + 1);
            for k in j + 1..=close {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' if depth > 0 => depth -= 1,
                    b',' | b'}' if depth == 0 => {
                        let item = code[start..k].trim();
                        let name: String = item.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if !name.is_empty() {
                            out.push(name);
                        }
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = code[j..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// Top-level module of a path relative to `src/`: its folder, or its file stem.
fn top_module(rel: &str) -> String {
    let first = rel.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// (from, to) -> files holding such a reference.
type Graph = BTreeMap<(String, String), BTreeSet<String>>;

fn folder_graph(sources: &BTreeMap<String, String>) -> (BTreeSet<String>, Graph) {
    let modules: BTreeSet<String> =
        sources.keys().map(|r| top_module(r)).filter(|m| m != "lib" && m != "main").collect();
    let mut g = Graph::new();
    for (rel, code) in sources {
        let from = top_module(rel);
        if from == "lib" || from == "main" {
            continue;
        }
        for to in first_segments(code, "crate") {
            if to != from && modules.contains(&to) {
                g.entry((from.clone(), to)).or_default().insert(rel.clone());
            }
        }
    }
    (modules, g)
}

/// One cycle of `edges` if there is one (as a closed walk a -> .. -> a).
fn find_cycle(nodes: &BTreeSet<String>, edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeSet<(String, String)>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for (_, to) in edges.iter().filter(|(f, _)| f == n) {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == to).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(to.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(to, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in nodes {
        if !state.contains_key(n) {
            if let Some(c) = visit(n, edges, &mut state, &mut vec![]) {
                return Some(c);
            }
        }
    }
    None
}

fn describe(cycle: &[String], g: &Graph) -> String {
    cycle
        .windows(2)
        .map(|w| {
            let files = &g[&(w[0].clone(), w[1].clone())];
            format!("  {} -> {}  ({})", w[0], w[1], files.iter().cloned().collect::<Vec<_>>().join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&m))
}

#[test]
fn every_top_level_module_has_a_layer() {
    let (modules, _) = folder_graph(&library_sources());
    let missing: Vec<&String> = modules.iter().filter(|m| layer_of(m).is_none()).collect();
    assert!(missing.is_empty(), "modules without a layer in LAYERS: {missing:?}");
}

#[test]
fn no_cycle_between_folders() {
    let (modules, g) = folder_graph(&library_sources());
    let excepted = |f: &str, t: &str| EXCEPTIONS.iter().any(|(a, b, _)| *a == f && *b == t);
    let edges: BTreeSet<(String, String)> = g.keys().filter(|(f, t)| !excepted(f, t)).cloned().collect();
    if let Some(c) = find_cycle(&modules, &edges) {
        panic!("import cycle between src/ modules:\n{}", describe(&c, &g));
    }
}

#[test]
fn no_import_against_the_layer_order() {
    let (_, g) = folder_graph(&library_sources());
    let mut bad = vec![];
    for ((from, to), files) in &g {
        let (Some(lf), Some(lt)) = (layer_of(from), layer_of(to)) else { continue };
        if lt > lf && !EXCEPTIONS.iter().any(|(a, b, _)| a == from && b == to) {
            bad.push(format!("  {from} -> {to}  ({})", files.iter().cloned().collect::<Vec<_>>().join(", ")));
        }
    }
    assert!(bad.is_empty(), "imports from a higher layer (see LAYERS):\n{}", bad.join("\n"));
    let stale: Vec<_> =
        EXCEPTIONS.iter().filter(|(a, b, _)| !g.contains_key(&(a.to_string(), b.to_string()))).collect();
    assert!(stale.is_empty(), "EXCEPTIONS lists edges that no longer exist; remove them: {stale:?}");
}

/// The graph of the files (and sub-folders) directly under `src/<folder>`: `super::x` and
/// `crate::<folder>::x` references, a re-exported item of `<folder>/mod.rs` counting as an edge to
/// the file it comes from; `exceptions` are tolerated edges (from file, to file, why). Panics
/// naming the files of a cycle if there is one.
fn assert_no_cycle_between_files_of(folder: &str, exceptions: &[(&str, &str, &str)]) {
    let sources = library_sources();
    let prefix = format!("{folder}/");
    // Files and folders directly under src/<folder>, as module names.
    let files: BTreeMap<String, String> = sources
        .iter()
        .filter_map(|(rel, code)| {
            let rest = rel.strip_prefix(&prefix)?;
            let first = rest.split('/').next().unwrap();
            Some((first.strip_suffix(".rs").unwrap_or(first).to_string(), code.clone()))
        })
        .filter(|(m, _)| m != "mod")
        .fold(BTreeMap::new(), |mut all, (m, code)| {
            all.entry(m).and_modify(|c: &mut String| c.push_str(&code)).or_insert(code);
            all
        });
    // `crate::<folder>::Name` of a re-exported item counts as an edge to the file it comes from.
    let reexports: BTreeMap<String, String> = sources[&format!("{folder}/mod.rs")]
        .split(';')
        .filter_map(|stmt| stmt.trim().strip_prefix("pub use ").map(str::to_string))
        .filter_map(|u| {
            let (file, items) = u.split_once("::")?;
            Some(
                items
                    .trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace())
                    .split(',')
                    .map(|i| (i.trim().rsplit(' ').next().unwrap().to_string(), file.trim().to_string()))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .collect();
    let names: BTreeSet<String> = files.keys().cloned().collect();
    let mut g = Graph::new();
    for (from, code) in &files {
        let mut targets = first_segments(code, "super");
        targets.extend(first_segments(code, &format!("crate::{folder}")));
        for t in targets {
            let to = reexports.get(&t).cloned().unwrap_or(t);
            let allowed = exceptions.iter().any(|(a, b, _)| a == from && *b == to);
            if &to != from && names.contains(&to) && !allowed {
                g.entry((from.clone(), to)).or_default().insert(format!("{folder}/{from}"));
            }
        }
    }
    let edges: BTreeSet<(String, String)> = g.keys().cloned().collect();
    if let Some(c) = find_cycle(&names, &edges) {
        panic!("import cycle between files of src/{folder}:\n{}", describe(&c, &g));
    }
}

#[test]
fn no_cycle_between_files_of_audit() {
    assert_no_cycle_between_files_of("audit", AUDIT_EXCEPTIONS);
}

/// The method types (`method`, `spec`, `recipe`, `knobs`, `checkpoint`) import no method, and each
/// method imports only them and the families below it; `registry` alone imports every method.
#[test]
fn no_cycle_between_files_of_methods() {
    assert_no_cycle_between_files_of("methods", METHODS_EXCEPTIONS);
}

/// The reader itself: grouped uses, paths in expressions, comments and strings.
#[test]
fn references_are_read_from_code_only() {
    let src = r##"
        use crate::{data::Dataset, privacy::{self, accountant}};
        use crate::error::Result; // crate::cli in a comment
        /* crate::audit in a block comment */
        fn f() { let s = "crate::report in a string"; let r = r#"crate::target"#; crate::train::fit(); }
        #[cfg(test)]
        mod tests { use crate::models::Mlp; }
        #[cfg(test)]
        mod more;
        fn g<'a>(x: &'a str) -> char { let _ = '{'; crate::external::run(x) }
    "##;
    let mut code = code_only(src);
    assert_eq!(drop_test_code(&mut code), vec!["more".to_string()]);
    let mut got = first_segments(&code, "crate");
    got.sort();
    assert_eq!(got, ["data", "error", "external", "privacy", "train"]);
    let edges: BTreeSet<(String, String)> =
        [("a", "b"), ("b", "c"), ("c", "a")].iter().map(|(x, y)| (x.to_string(), y.to_string())).collect();
    let nodes = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    assert_eq!(find_cycle(&nodes, &edges).unwrap().len(), 4);
}
