//! `gnnaudit certify --positives FILE --negatives FILE`: a lower bound on epsilon from the scores
//! of any tool's attack, through the same `stats::certify` every built-in attack uses. The Python
//! package's `gnnaudit.certify` calls [`certify_scores`] and [`certificate_json`] too, so the two
//! cannot disagree.
use crate::ensure;
use crate::error::{Error, Result};
use crate::target::from_attack;
use gnnaudit_attacks::stats::{self, AuditSpec, BoundKind, Certificate, ThresholdStrategy};
use std::path::{Path, PathBuf};

/// The independence assumption stated on a certificate of scores the auditor did not produce.
pub const USER_ASSUMPTION: &str = "scores supplied by the user: each positive and negative an independent trial";

#[derive(Debug, clap::Args)]
pub struct CertifyArgs {
    /// Scores of the positives (the private unit present), higher = more likely present: a 1-D
    /// float .npy, or a text/CSV file with one score per line (a CSV may start with a header).
    #[arg(long)]
    pub positives: PathBuf,
    /// Scores of the negatives (the unit absent), in the same format.
    #[arg(long)]
    pub negatives: PathBuf,
    #[command(flatten)]
    pub options: CertifyOptions,
    /// Machine-readable output (the certificate and verdict as JSON).
    #[arg(long)]
    pub json: bool,
}

/// The test and its parameters, as flags here and keyword arguments in Python.
#[derive(Debug, Clone, clap::Args)]
pub struct CertifyOptions {
    /// clopper-pearson, gdp, one-run or one-run-fdp.
    #[arg(long, default_value = "clopper-pearson")]
    pub bound: String,
    /// split, split:FRACTION, bonferroni, explicit:THRESHOLD or planned:THRESHOLD.
    #[arg(long, default_value = "split")]
    pub strategy: String,
    /// 1 - alpha of the one-sided test.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// The claim's delta, at which the bound is computed.
    #[arg(long, default_value_t = 0.0)]
    pub delta: f64,
    /// The claimed epsilon the verdict is about (none: the verdict is "no claim").
    #[arg(long)]
    pub claim: Option<f64>,
    /// Seeds the random split of the `split` strategy.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl CertifyOptions {
    /// The `AuditSpec` the options name; unknown names are bad input naming the flag.
    pub fn spec(&self) -> Result<AuditSpec> {
        let bound = BoundKind::parse(&self.bound).ok_or_else(|| {
            let names: Vec<&str> = BoundKind::ALL.iter().map(|b| b.name()).collect();
            Error::invalid("--bound", format!("unknown bound '{}': use one of {}", self.bound, names.join(", ")))
        })?;
        let strategy = ThresholdStrategy::parse(&self.strategy).ok_or_else(|| {
            Error::invalid(
                "--strategy",
                format!(
                    "unknown strategy '{}': use split, split:FRACTION, bonferroni, explicit:THRESHOLD or planned:THRESHOLD",
                    self.strategy
                ),
            )
        })?;
        if let Some(c) = self.claim {
            ensure!(c >= 0.0, Error::invalid("--claim", format!("a claimed epsilon must be >= 0, got {c}")));
        }
        let spec = AuditSpec { bound, strategy, confidence: self.confidence, delta: self.delta, seed: self.seed };
        spec.validate().map_err(flag_error)?;
        Ok(spec)
    }
}

/// The certificate of `pos` against `neg` and its verdict against the options' claim.
pub fn certify_scores(pos: &[f64], neg: &[f64], options: &CertifyOptions) -> Result<(Certificate, stats::Verdict)> {
    let spec = options.spec()?;
    let cert = stats::certify(pos, neg, &spec, USER_ASSUMPTION).map_err(flag_error)?;
    let verdict = cert.verdict(options.claim);
    Ok((cert, verdict))
}

/// The certificate with its claim and verdict: what `--json` prints and Python's `Certificate` holds.
pub fn certificate_json(cert: &Certificate, verdict: stats::Verdict, claim: Option<f64>) -> serde_json::Value {
    let mut v = serde_json::to_value(cert).expect("a certificate serializes");
    v["claim"] = serde_json::json!(claim);
    v["verdict"] = serde_json::json!(verdict.name());
    v
}

pub fn run(args: CertifyArgs) -> Result<()> {
    // The options first: a bad flag is reported before any file is read.
    args.options.spec()?;
    let pos = read_scores(&args.positives)?;
    let neg = read_scores(&args.negatives)?;
    let (cert, verdict) = certify_scores(&pos, &neg, &args.options)?;
    if args.json {
        let v = certificate_json(&cert, verdict, args.options.claim);
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "eps_lb {} ({} bound, {} at confidence {})",
        cert.eps_lb,
        cert.bound.name(),
        cert.strategy,
        cert.confidence
    );
    println!("max_certifiable {} (a perfect attack with these trials)", cert.max_certifiable);
    match cert.threshold {
        Some(t) => println!("threshold {t} ({} means positive)", if cert.reversed { "score <" } else { "score >=" }),
        None => println!("threshold none (no test separated the selection trials)"),
    }
    println!(
        "trials {} positives, {} negatives; certified on {} and {}",
        cert.positives, cert.negatives, cert.certified_positives, cert.certified_negatives
    );
    match args.options.claim {
        Some(c) => println!("verdict {} (claimed epsilon {c}, delta {})", verdict.name(), cert.delta),
        None => println!("verdict {} (give --claim EPS for a verdict)", verdict.name()),
    }
    Ok(())
}

/// Scores from a 1-D float .npy (float32 or float64), or from text: one score per line, blank
/// lines and `#` comments skipped; a `.csv` may start with one header line.
pub fn read_scores(path: &Path) -> Result<Vec<f64>> {
    let is_npy = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    let scores = if is_npy { read_npy_scores(path)? } else { read_text_scores(path)? };
    ensure!(!scores.is_empty(), Error::bad_file(path, "holds no score: give one score per trial"));
    Ok(scores)
}

fn read_npy_scores(path: &Path) -> Result<Vec<f64>> {
    use ndarray::{Array1, ArrayD};
    use ndarray_npy::ReadNpyExt;
    let open = || std::fs::File::open(path).map_err(|e| Error::bad_file(path, e));
    let scores = if let Ok(a) = Array1::<f64>::read_npy(open()?) {
        a.to_vec()
    } else if let Ok(a) = Array1::<f32>::read_npy(open()?) {
        a.iter().map(|&x| f64::from(x)).collect()
    } else if let Ok(a) = ArrayD::<f64>::read_npy(open()?) {
        return Err(Error::bad_file(path, format!("array of shape {:?}: expected a 1-D array of scores", a.shape())));
    } else if let Ok(a) = ArrayD::<f32>::read_npy(open()?) {
        return Err(Error::bad_file(path, format!("array of shape {:?}: expected a 1-D array of scores", a.shape())));
    } else {
        return Err(Error::bad_file(path, "not a float32/float64 .npy array: save the scores with numpy.save"));
    };
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        return Err(Error::bad_file(path, format!("score {i} is {}: every score must be finite", scores[i])));
    }
    Ok(scores)
}

fn read_text_scores(path: &Path) -> Result<Vec<f64>> {
    let bytes = std::fs::read(path).map_err(|e| Error::bad_file(path, e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::bad_file(path, "is not UTF-8 text: give a .npy file or one score per line"))?;
    let csv = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let mut scores = Vec::new();
    let mut first = true;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let header_allowed = std::mem::take(&mut first) && csv;
        let field = line.trim_end_matches(',').trim();
        if field.contains([',', ' ', '\t', ';']) {
            return Err(Error::bad_file(
                path,
                format!("line {}: '{line}' holds more than one value: give one score per line", i + 1),
            ));
        }
        match field.parse::<f64>() {
            Ok(s) if s.is_finite() => scores.push(s),
            Ok(s) => {
                return Err(Error::bad_file(
                    path,
                    format!("line {}: score {s} is not finite: every score must be", i + 1),
                ))
            }
            Err(_) if header_allowed => {}
            Err(_) => {
                return Err(Error::bad_file(
                    path,
                    format!("line {}: '{field}' is not a number: give one score per line", i + 1),
                ))
            }
        }
    }
    Ok(scores)
}

/// The statistics name their parameters as the spec does (`confidence`); here they are flags.
fn flag_error(e: gnnaudit_attacks::Error) -> Error {
    match from_attack(e) {
        Error::InvalidParam { field, message } if ["confidence", "delta", "strategy"].contains(&field.as_str()) => {
            Error::InvalidParam { field: format!("--{field}"), message }
        }
        e => e,
    }
}
