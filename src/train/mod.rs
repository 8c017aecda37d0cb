//! Training without a method in mind: the one fit loop (batching x selection variants), the one
//! accuracy, and the pairing of a method's privacy expression with its calibration. `crate::methods` builds every method on these.
pub mod accounting;
pub mod baseline;
pub mod evaluate;
pub mod fit;

pub use evaluate::Accuracy;
