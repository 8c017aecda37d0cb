// Shared by the tests that hand the loaders broken gnn-benchmark files: arrays of the dtypes such
// a file may carry, written as one .npz, and a small valid graph to break one key of.
#![allow(dead_code)]
use ndarray::{arr1, Array1, Array2};
use ndarray_npy::NpzWriter;
use std::path::Path;

/// One array of a .npz, in any dtype a test needs to feed the loader.
pub enum Arr {
    F(Array1<f32>),
    I(Array1<i64>),
    I32(Array1<i32>),
    I8(Array1<i8>),
    U(Array1<u64>),
    I2(Array2<i64>),
}

/// Writes `arrays` to `path` as one compressed .npz (as `numpy.savez_compressed` does).
pub fn write_npz(path: &Path, arrays: &[(&str, Arr)]) {
    let mut w = NpzWriter::new_compressed(std::fs::File::create(path).unwrap());
    for (name, a) in arrays {
        match a {
            Arr::F(a) => w.add_array(*name, a).unwrap(),
            Arr::I(a) => w.add_array(*name, a).unwrap(),
            Arr::I32(a) => w.add_array(*name, a).unwrap(),
            Arr::I8(a) => w.add_array(*name, a).unwrap(),
            Arr::U(a) => w.add_array(*name, a).unwrap(),
            Arr::I2(a) => w.add_array(*name, a).unwrap(),
        }
    }
    w.finish().unwrap();
}

/// Arrays of a small valid gnn-benchmark file: 4 nodes on a path 0-1-2-3, 3 features, 2 classes.
pub fn valid_arrays() -> Vec<(&'static str, Arr)> {
    vec![
        ("adj_data", Arr::F(arr1(&[1f32; 6]))),
        ("adj_indices", Arr::I(arr1(&[1, 0, 2, 1, 3, 2]))),
        ("adj_indptr", Arr::I(arr1(&[0, 1, 3, 5, 6]))),
        ("adj_shape", Arr::I(arr1(&[4, 4]))),
        ("attr_data", Arr::F(arr1(&[1f32, 1., 0.5, 2.]))),
        ("attr_indices", Arr::I(arr1(&[0, 2, 1, 0]))),
        ("attr_indptr", Arr::I(arr1(&[0, 2, 3, 3, 4]))),
        ("attr_shape", Arr::I(arr1(&[4, 3]))),
        ("labels", Arr::I(arr1(&[0, 1, 1, 0]))),
    ]
}

/// `arrays` without `key`, and with `value` under it when there is one.
pub fn with(arrays: Vec<(&'static str, Arr)>, key: &str, value: Option<Arr>) -> Vec<(&'static str, Arr)> {
    let mut out: Vec<_> = arrays.into_iter().filter(|(k, _)| *k != key).collect();
    if let Some(v) = value {
        let k: &'static str = Box::leak(key.to_string().into_boxed_str());
        out.push((k, v));
    }
    out
}
