//! Privacy accounting: events, RDP and PLD accountants, calibration, method budgets.
//!
//! | piece | module | source |
//! |---|---|---|
//! | event algebra (Gaussian, Poisson/without-replacement subsampling, composition, sensitivity scaling, pure DP, DP-GNN) | [`event`] | dp_accounting's `DpEvent` design |
//! | RDP curves and conversions | [`rdp`] | Mironov 2017; Mironov, Talwar, Zhang 2019; Balle et al. 2020 |
//! | tight PLD accountant | [`pld`] | Koskela et al. 2020; Doroshenko et al. 2022 |
//! | exact Gaussian | [`analytic`] | Balle & Wang 2018 |
//! | calibration | [`calibrate`] | Brent 1973 on a doubling bracket |
//! | method budgets | [`methods`] | thesis ch.3-5, Daigavane et al. 2021 |
//! | what a model claims | [`budget`] | |
//! | reference-library conventions (for cross-checks only) | [`compat`] | Opacus, dp_accounting, autodp, prv_accountant |
pub mod analytic;
pub mod budget;
pub mod calibrate;
pub mod class_dp;
pub mod compat;
pub mod dpar;
pub mod event;
pub mod ldp;
pub mod methods;
pub mod pate;
pub mod pld;
pub mod rdp;
pub mod special;

pub use budget::{budget, default_delta, pure_budget, Budget, BudgetComponent, PrivacyUnit};
pub use calibrate::{calibrate, calibrate_by, calibrate_with, Accountant};
pub use event::Event;
pub use methods::SgdSchedule;
pub use pld::{pld_delta, pld_epsilon, pld_epsilons};
pub use rdp::{rdp_epsilon, rdp_epsilon_classic, RdpEpsilon};
