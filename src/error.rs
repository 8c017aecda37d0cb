//! One error type for the crate. Every variant that stems from user input maps to exit code 2, so
//! scripts can tell bad input apart from a failed check (1) or success (0).
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or has the wrong content; names the file and what is wrong.
    #[error("{}: {message}", path.display())]
    BadFile { path: PathBuf, message: String },
    /// A parameter or config field is out of its domain; names the field.
    #[error("invalid {field}: {message}")]
    InvalidParam { field: String, message: String },
    /// A named dataset that is neither embedded nor found in the data directory.
    #[error("{}", not_found_message(name, searched))]
    DatasetNotFound { name: String, searched: Vec<PathBuf> },
    /// The accountant cannot meet a requested privacy target.
    #[error("privacy target unreachable: {0}")]
    Unreachable(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Torch(#[from] tch::TchError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Other(String),
    /// The user asked to stop (see `interrupt::check`); nothing after the interruption was kept.
    #[error("interrupted")]
    Interrupted,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// "dataset not found": every path tried, the state of `GNNAUDIT_DATA`, and how to get the data.
fn not_found_message(name: &str, searched: &[PathBuf]) -> String {
    let tried = searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let env = match std::env::var_os("GNNAUDIT_DATA").filter(|v| !v.is_empty()) {
        Some(v) => format!("GNNAUDIT_DATA is {}", PathBuf::from(v).display()),
        None => "GNNAUDIT_DATA is not set".to_string(),
    };
    format!(
        "dataset '{name}' not found (looked in {tried}; {env}): run `gnnaudit datasets fetch {name}` (it lists \
         the datasets it knows), or set GNNAUDIT_DATA (or --data-dir) to a directory holding {name}.npz"
    )
}

impl Error {
    pub fn bad_file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        Error::BadFile { path: path.into(), message: message.to_string() }
    }
    pub fn invalid(field: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::InvalidParam { field: field.into(), message: message.to_string() }
    }
    /// Process exit code: 2 for bad input, 1 for anything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadFile { .. }
            | Error::InvalidParam { .. }
            | Error::DatasetNotFound { .. }
            | Error::Unreachable(_)
            | Error::Json(_) => 2,
            Error::Io(e) if e.kind() == std::io::ErrorKind::NotFound => 2,
            Error::Interrupted => 128 + libc::SIGINT,
            _ => 1,
        }
    }
}

/// `ensure!(cond, Error::invalid(...))`: return the error when the condition fails.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $err:expr) => {
        // Bound first: `!(x > 0.0)` is meant (it also refuses NaN), and a negated comparison
        // written by the macro would read to clippy as a mistake at every call site.
        let holds: bool = $cond;
        if !holds {
            return Err($err.into());
        }
    };
}

/// A word read through a type's serde names (the words configs and checkpoints spell), so that a
/// flag and a config key take the same words; any other word is an error naming `knob` and the
/// words it takes.
pub fn parse_word<T: serde::de::DeserializeOwned>(word: &str, knob: &str, expected: &str) -> Result<T> {
    use serde::de::IntoDeserializer;
    T::deserialize(IntoDeserializer::<serde::de::value::Error>::into_deserializer(word))
        .map_err(|_| Error::invalid(knob, format!("expected {expected}, got '{word}'")))
}

/// `FromStr` for an enum of words through [`parse_word`] (clap's flags read it).
#[macro_export]
macro_rules! from_serde_word {
    ($ty:ty, $knob:literal, $expected:literal) => {
        impl std::str::FromStr for $ty {
            type Err = $crate::error::Error;
            fn from_str(s: &str) -> $crate::error::Result<Self> {
                $crate::error::parse_word(s, $knob, $expected)
            }
        }
    };
}

/// A number as a person writes it: plain for everyday magnitudes, scientific otherwise (Rust's
/// `{}` prints 1e-300 as a 302-character decimal).
pub fn num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// Rewrites every decimal longer than 24 characters in `text` (a message formatted with `{}`
/// somewhere below us, e.g. "delta = 0.000…0001" for 1e-300) in scientific notation, so that no
/// error message carries a 300-digit number.
pub fn humanize_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let (before, from) = rest.split_at(start);
        let len = from.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(from.len());
        let token = from[..len].trim_end_matches('.');
        out.push_str(before);
        match token.parse::<f64>() {
            Ok(x) if token.len() > 24 => out.push_str(&format!("{x:e}")),
            _ => out.push_str(token),
        }
        rest = &from[token.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_decimals_become_scientific() {
        let tiny = format!("delta = {}", 1e-300);
        assert!(tiny.len() > 300);
        assert_eq!(humanize_numbers(&tiny), "delta = 1e-300");
        assert_eq!(humanize_numbers("eps 8 at order 1.5, file a.npz"), "eps 8 at order 1.5, file a.npz");
        assert_eq!(num(1e-300), "1e-300");
        assert_eq!(num(0.25), "0.25");
    }
}
