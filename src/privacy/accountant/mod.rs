//! Privacy accounting: events, RDP and PLD accountants, calibration, method budgets.
pub mod budget;

pub use budget::{Budget, BudgetComponent, PrivacyUnit};
