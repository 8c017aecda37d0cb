//! Accountant, mechanisms and DP-SGD.
pub mod accountant;
pub mod dpsgd;
