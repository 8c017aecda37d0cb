//! `--device` / config `device` and `gnnaudit doctor`: every form parses or is refused with exit
//! 2 naming the device, a CUDA device this machine lacks is exit 2 before any work, and choosing
//! the CPU explicitly changes no figure. (No GPU here: CUDA itself is checked by the README's
//! one-command GPU check.)
#[path = "common/cli.rs"]
mod cli;
use cli::{gnnaudit, json_of};

/// A device index no machine has: refused whether or not CUDA exists.
const MISSING: &str = "cuda:99";

#[test]
fn doctor_checks_autograd_and_sparse_aggregation_on_the_device() {
    for dev in ["cpu", "auto"] {
        let (code, out, err) = gnnaudit(&["doctor", "--device", dev]);
        assert_eq!(code, 0, "{dev}: {err}");
        assert!(out.contains("libtorch 2."), "{out}");
        assert!(out.contains("torch threads:"), "{out}");
        assert!(out.contains("cuda:"), "{out}");
        assert!(out.contains("autograd on") && out.contains(": ok"), "{out}");
        assert!(out.contains("sparse COO mm on") && !out.contains("FAILED"), "{out}");
    }
    let (code, out, err) = gnnaudit(&["doctor", "--device", MISSING]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("libtorch 2."), "still reports what works: {out}");
    assert!(err.contains("invalid device") && err.contains(MISSING), "{err}");
}

#[test]
fn unknown_or_missing_devices_exit_2_in_every_command() {
    let train = ["train", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--epochs", "2"];
    let attack = ["attack", "--dataset", "synthetic:nodes=200", "--method", "mlp", "--attack", "mia"];
    for base in [&train[..], &attack[..]] {
        for dev in ["gpu", "cuda:x", MISSING] {
            let mut args = base.to_vec();
            args.extend(["--device", dev]);
            let (code, out, err) = gnnaudit(&args);
            assert_eq!(code, 2, "{args:?}: {out}{err}");
            assert!(err.contains("device") && err.contains(dev), "{args:?}: {err}");
            assert!(out.is_empty(), "nothing ran: {out}");
        }
    }
}

#[test]
fn audit_reads_device_from_config_and_flag() {
    let dir = tempfile::tempdir().unwrap();
    let quick = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/configs/quick.toml")).unwrap();
    let with = |dev: &str| {
        let p = dir.path().join(format!("quick-{}.toml", dev.replace(':', "_")));
        std::fs::write(&p, quick.replacen("seed = 1\n", &format!("seed = 1\ndevice = \"{dev}\"\n"), 1)).unwrap();
        p.to_string_lossy().into_owned()
    };
    let (code, out, err) = gnnaudit(&["audit", &with("cpu"), "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("is valid"), "{out}");
    for dev in ["gpu", MISSING] {
        let (code, _, err) = gnnaudit(&["audit", &with(dev), "--dry-run"]);
        assert_eq!(code, 2, "config device {dev}: {err}");
        assert!(err.contains("device") && err.contains(dev), "{err}");
    }
    // The flag overrides the config's field, both ways.
    let (code, _, err) = gnnaudit(&["audit", &with(MISSING), "--dry-run", "--device", "cpu"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = gnnaudit(&["audit", &with("cpu"), "--dry-run", "--device", MISSING]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn explicit_cpu_changes_no_figure() {
    let accuracy = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "--dataset",
            "synthetic:nodes=300",
            "--method",
            "gap-edp",
            "--epsilon",
            "8",
            "--epochs",
            "5",
            "--json",
            "--no-pld",
            "--threads",
            "1",
        ];
        args.extend(extra);
        let v = json_of(&args);
        (v["test_accuracy"].clone(), v["val_accuracy"].clone(), v["budget"].clone())
    };
    let default = accuracy(&[]);
    assert!(default.0["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(accuracy(&["--device", "cpu"]), default);
}
