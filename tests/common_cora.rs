// Shared by the integration tests of the GNN methods: finds the datasets directory and loads a
// dataset with a seeded random split.
#![allow(dead_code)]
use gnnaudit::data::{load_dataset, random_split, Dataset, SplitRatios};

#[path = "common/data.rs"]
mod test_data;
pub use test_data::*;

/// Loads `name` and splits its nodes uniformly at random (the rest of the nodes go to test).
pub fn load(name: &str, train: f64, val: f64, seed: u64) -> Dataset {
    let ds = load_dataset(name, Some(&data_dir())).unwrap();
    random_split(&ds, SplitRatios::new(train, val, 1.0 - train - val).unwrap(), seed).unwrap()
}
