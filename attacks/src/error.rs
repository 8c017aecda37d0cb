//! The attacks crate's error type. The main crate maps `Invalid` to its own bad-input error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An attack parameter or input is out of its domain; names the field.
    #[error("invalid {field}: {message}")]
    Invalid { field: String, message: String },
    /// The target does not expose what this attack's threat model needs (e.g. no white-box forward).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The shadow oracle or the target failed (message from the main crate).
    #[error("target: {0}")]
    Target(String),
    #[error(transparent)]
    Torch(#[from] tch::TchError),
    #[error("classifier: {0}")]
    Classifier(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn invalid(field: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::Invalid { field: field.into(), message: message.to_string() }
    }
}

/// Returns `Error::invalid(field, msg)` when the condition fails.
macro_rules! check {
    ($cond:expr, $field:expr, $($msg:tt)+) => {
        // Bound first: `!(x > y)` on floats reads as `x <= y` but is also true for NaN.
        {
            let holds: bool = $cond;
            if !holds {
                return Err($crate::error::Error::invalid($field, format!($($msg)+)));
            }
        }
    };
}
pub(crate) use check;
