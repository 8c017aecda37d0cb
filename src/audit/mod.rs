//! The audit: config -> cells -> train -> attack -> report.
pub mod adapters;
