//! The native half of the `gnnaudit` Python package: thin entry points over the same functions the
//! CLI runs (`gnnaudit certify`, `gnnaudit account`), so that Python and the CLI cannot disagree.
//! Results cross as the CLI's JSON; the Python half turns them into typed objects.
//!
//! Every call releases the GIL while Rust works, and every error or panic becomes a Python
//! exception: bad input (the CLI's exit code 2) a `ValueError` with the CLI's message, anything
//! else a `RuntimeError`.
use gnnaudit::cli::account::{budget_json, calibrated_budget, epsilon_budget, AccountArgs, AccountCommand};
use gnnaudit::cli::certify::{certificate_json, certify_scores, CertifyOptions};
use gnnaudit::error::{humanize_numbers, Error};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod audit;
mod report;
mod train;

/// The CLI's error message; input errors (exit code 2) become `ValueError`.
fn to_py(e: Error) -> PyErr {
    let message = humanize_numbers(&e.to_string());
    if e.exit_code() == 2 {
        PyValueError::new_err(message)
    } else {
        PyRuntimeError::new_err(message)
    }
}

/// Runs `work` without the GIL; an error or a panic comes back as a Python exception.
fn without_gil<T: Send>(py: Python<'_>, work: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    interruptible(py, work)?.map_err(panic_to_py)?.map_err(to_py)
}

/// The exception Python's signal handlers raised while Rust worked (a Ctrl-C's KeyboardInterrupt).
static SIGNALLED: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);

/// Runs `work` without the GIL, with a Ctrl-C noticed between the steps of its long loops: Python
/// runs signal handlers only in its main thread under the GIL, so gnnaudit's interrupt poll takes
/// the GIL back briefly (at most every 50 ms) and runs them. Their exception (KeyboardInterrupt)
/// is returned in place of the work's result, which is then `Error::Interrupted`.
fn interruptible<T: Send>(py: Python<'_>, work: impl FnOnce() -> T + Send) -> PyResult<std::thread::Result<T>> {
    use gnnaudit::interrupt;
    let last = std::sync::Mutex::new(std::time::Instant::now());
    let poll: interrupt::Poll = std::sync::Arc::new(move || {
        let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() < std::time::Duration::from_millis(50) {
            return false;
        }
        *last = std::time::Instant::now();
        Python::with_gil(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                SIGNALLED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                true
            }
        })
    });
    let outer = interrupt::set_poll(Some(poll));
    let result = py.allow_threads(|| catch_unwind(AssertUnwindSafe(work)));
    interrupt::set_poll(outer);
    match SIGNALLED.lock().unwrap_or_else(|p| p.into_inner()).take() {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

fn panic_to_py(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".to_string());
    PyRuntimeError::new_err(format!("gnnaudit internal error (a bug, please report it): {what}"))
}

/// `gnnaudit certify` on in-memory scores: the certificate as the CLI's `--json` prints it.
#[pyfunction]
#[pyo3(signature = (positives, negatives, bound, strategy, confidence, delta, claim, seed))]
#[allow(clippy::too_many_arguments)]
fn certify_json(
    py: Python<'_>,
    positives: Vec<f64>,
    negatives: Vec<f64>,
    bound: String,
    strategy: String,
    confidence: f64,
    delta: f64,
    claim: Option<f64>,
    seed: u64,
) -> PyResult<String> {
    let options = CertifyOptions { bound, strategy, confidence, delta, claim, seed };
    without_gil(py, move || {
        let (cert, verdict) = certify_scores(&positives, &negatives, &options)?;
        Ok(certificate_json(&cert, verdict, options.claim).to_string())
    })
}

/// `gnnaudit account epsilon|calibrate ARGS...`: the budget as the CLI's `--json` prints it. The
/// arguments are parsed by the CLI's own parser, so flags, defaults and messages are the CLI's.
#[pyfunction]
fn account_json(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    use clap::Parser;
    #[derive(Parser)]
    #[command(name = "gnnaudit account", no_binary_name = true)]
    struct Account {
        #[command(flatten)]
        args: AccountArgs,
    }
    let parsed = Account::try_parse_from(&args).map_err(|e| PyValueError::new_err(e.render().to_string()))?;
    without_gil(py, move || {
        let (name, budget) = match &parsed.args.command {
            AccountCommand::Epsilon(a) => epsilon_budget(a)?,
            AccountCommand::Calibrate(a) => calibrated_budget(a)?,
            AccountCommand::Budget(_) => {
                return Err(Error::invalid("event", "a method's budget on a dataset is `gnnaudit.train`'s"))
            }
        };
        Ok(budget_json(&name, &budget).to_string())
    })
}

/// An in-process audit of a Python model: `predict(x, edge_index) -> posteriors` and, for attacks
/// with shadow models, `shadow(x, edge_index, y, train_mask, seed) -> posteriors`. `attacks` is a
/// list of (name, params as JSON); `claim` the `[claim]` table as JSON; `controls` the pooled
/// eps_lb of each attack on the positive control. Returns the results as JSON.
#[pyfunction]
#[pyo3(signature = (predict, shadow, x, edge_index, y, members, attacks, seeds, claim, controls))]
#[allow(clippy::too_many_arguments)]
fn audit_json(
    py: Python<'_>,
    predict: PyObject,
    shadow: Option<PyObject>,
    x: pyo3_tch::PyTensor,
    edge_index: pyo3_tch::PyTensor,
    y: Vec<i64>,
    members: Vec<usize>,
    attacks: Vec<(String, String)>,
    seeds: Vec<u64>,
    claim: Option<String>,
    controls: Option<Vec<Option<f64>>>,
) -> PyResult<String> {
    let parse = |what: &str, s: &str| {
        serde_json::from_str::<serde_json::Value>(s).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
    };
    let mut entries = vec![];
    for (kind, params) in attacks {
        let params = match parse(&format!("attack {kind} params"), &params)? {
            serde_json::Value::Object(m) => m,
            _ => return Err(PyValueError::new_err(format!("attack {kind}: params must be a dict"))),
        };
        entries.push(audit::AttackEntry { kind, params });
    }
    let claim = claim.map(|c| parse("claim", &c)).transpose()?;
    let target = audit::PythonTarget { predict, shadow, failure: Default::default() };
    let inputs = audit::AuditInputs {
        x: x.0,
        edge_index: edge_index.0,
        labels: y,
        members,
        attacks: entries,
        seeds,
        claim,
        controls,
    };
    // The target holds Python objects and is only touched with the GIL (taken back per call).
    let shared = AssertSend(&target);
    let result = interruptible(py, move || {
        let shared = shared;
        audit::run(shared.0, inputs)
    })?;
    if let Some(e) = target.failure.borrow_mut().take() {
        return Err(e);
    }
    Ok(result.map_err(panic_to_py)?.map_err(to_py)?.to_string())
}

/// `gnnaudit train ARGS...` (the CLI's flags): accuracy per seed and the budget, as JSON.
#[pyfunction]
fn train_json(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    use clap::Parser;
    #[derive(Parser)]
    #[command(name = "gnnaudit train", no_binary_name = true)]
    struct Train {
        #[command(flatten)]
        args: gnnaudit::cli::train::TrainArgs,
    }
    let parsed = Train::try_parse_from(&args).map_err(|e| PyValueError::new_err(e.render().to_string()))?;
    without_gil(py, move || Ok(train::run(&parsed.args)?.to_string()))
}

/// Writes a report an audit returned (its "report" JSON) as report.json, report.md and report.html.
#[pyfunction]
fn save_report(py: Python<'_>, report: String, dir: std::path::PathBuf) -> PyResult<()> {
    without_gil(py, move || report::save(&report, &dir))
}

/// The audit's target crosses into the GIL-free closure; it reaches Python only under `with_gil`.
struct AssertSend<T>(T);
unsafe impl<T> Send for AssertSend<T> {}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(certify_json, m)?)?;
    m.add_function(wrap_pyfunction!(account_json, m)?)?;
    m.add_function(wrap_pyfunction!(audit_json, m)?)?;
    m.add_function(wrap_pyfunction!(save_report, m)?)?;
    m.add_function(wrap_pyfunction!(train_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
