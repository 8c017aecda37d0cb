//! The documentation lists derive from the registry: every attack of `AttackKind::NAMES` has a
//! row in README.md's attack table, and an entry in configs/quick.toml's field reference that
//! names each of its parameters. A new attack without docs, or a renamed parameter, fails here.
use gnnaudit_attacks::AttackKind;
use std::path::Path;

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The attack names of README.md's attack table (rows starting with "| `name` |").
fn readme_rows() -> Vec<String> {
    let readme = repo_file("README.md");
    let start = readme.find("| attack | game").expect("README.md has the attack table");
    readme[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `").and_then(|r| r.split_once('`')).map(|(n, _)| n.to_string()))
        .collect()
}

/// configs/quick.toml's per-attack field reference: "#   name[, name]: text" with continuation
/// lines "#     text"; returns (names, text).
fn quick_entries() -> Vec<(Vec<String>, String)> {
    let quick = repo_file("configs/quick.toml");
    let mut out: Vec<(Vec<String>, String)> = Vec::new();
    for line in quick.lines() {
        if let Some(rest) = line.strip_prefix("#     ") {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(rest);
            }
        } else if let Some(rest) = line.strip_prefix("#   ") {
            if let Some((head, text)) = rest.split_once(':') {
                let head = head.split(" (").next().unwrap_or(head);
                let names = head.split(", ").map(|n| n.trim().to_string()).collect();
                out.push((names, text.to_string()));
            }
        }
    }
    out
}

#[test]
fn readme_attack_table_lists_exactly_the_registry() {
    let rows = readme_rows();
    for name in AttackKind::NAMES {
        assert!(rows.iter().any(|r| r == name), "README.md's attack table has no row for `{name}`: add one");
    }
    for row in &rows {
        assert!(AttackKind::parse(row).is_some(), "README.md's attack table lists `{row}`, not in the registry");
    }
}

#[test]
fn quick_toml_names_every_attack_and_each_of_its_parameters() {
    let entries = quick_entries();
    for &kind in AttackKind::ALL {
        let name = kind.name();
        let (_, text) = entries
            .iter()
            .find(|(names, _)| names.iter().any(|n| n == name))
            .unwrap_or_else(|| panic!("configs/quick.toml's field reference has no entry for {name}: add one"));
        for key in kind.default_config().to_table().keys() {
            assert!(
                text.contains(key.as_str()),
                "configs/quick.toml's entry for {name} does not name its parameter `{key}`: {text}"
            );
        }
    }
}
