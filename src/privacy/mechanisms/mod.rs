//! Privacy mechanisms that randomise data (as opposed to the accountant, which prices them).
pub mod edge_rand;
pub mod multibit;
pub mod randomized_response;
