//! Runs a cell's attacks against its trained target through the attacks crate's threat-model
//! interface, and turns each result into the report's `AttackRecord`.
use super::cell::{AttackRecord, CellSpec};
use super::progress::Progress;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::train::{Recipe, TrainedRun};

/// Every attack of the cell, in config order.
pub fn run_attacks(
    cell: &CellSpec,
    _recipe: &Recipe,
    _ds: &Dataset,
    _run: &TrainedRun,
    _progress: &Progress,
) -> Result<Vec<AttackRecord>> {
    if let Some(a) = cell.attacks.first() {
        return Err(Error::Other(format!(
            "attack '{}': the attacks crate is not wired into this build yet",
            a.label()
        )));
    }
    Ok(vec![])
}
