//! Accountant, mechanisms and DP-SGD.
pub mod accountant;
pub mod claim_rules;
pub mod dpsgd;
pub mod mechanisms;
