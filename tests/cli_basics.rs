//! The binary's own surface: the version line names libtorch, completions are generated from the
//! real command tree, and normal runs keep libtorch's warnings off stderr (`-v` shows them).
#[path = "common/cli.rs"]
mod cli;
use cli::gnnaudit;

#[test]
fn version_names_the_libtorch_it_runs_on() {
    let (code, out, _) = gnnaudit(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("gnnaudit {} (libtorch 2.", env!("CARGO_PKG_VERSION"))), "{out}");
    assert!(out.contains("/lib"), "names the library folder: {out}");
}

#[test]
fn completions_cover_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, err) = gnnaudit(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for sub in ["audit", "attack", "train", "account", "check", "datasets", "report"] {
            assert!(out.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let (code, _, err) = gnnaudit(&["completions", "tcsh"]);
    assert_eq!(code, 2, "unknown shell is a usage error: {err}");
}

#[test]
fn libtorch_warnings_only_with_verbose() {
    // GraphSAGE builds sparse CSR matrices, which makes libtorch warn that CSR support is in beta.
    let args = ["train", "--dataset", "synthetic:nodes=300", "--method", "sage", "--epochs", "2"];
    let (code, _, err) = gnnaudit(&args);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("Warning"), "a normal run printed libtorch warnings: {err}");
    let verbose: Vec<&str> = std::iter::once("-v").chain(args).collect();
    let (code, _, err) = gnnaudit(&verbose);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Sparse CSR"), "-v keeps libtorch's warnings: {err}");
}
