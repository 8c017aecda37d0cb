//! Privacy mechanisms that randomise data (as opposed to the accountant, which prices them).
//! Each mechanism also builds its own worst-case neighbouring pair for the mechanism-level audit
//! ([`audit`]), because it knows its sensitivity.
pub mod audit;
pub mod dp_sgd_step;
pub mod edge_rand;
pub mod feature_ldp;
pub mod gaussian;
pub mod grr_fs;
pub mod multibit;
pub mod pgc;
pub mod randomized_response;
pub mod record_noise;
pub mod spec;
