// Shared by the integration tests of this crate's GNN methods: finds the datasets directory and
// reads a gnn-benchmark .npz with a fixed random split.
#![allow(dead_code)]
use gnnaudit::data::{Dataset, Features, Graph, Split};
use ndarray::{Array1, IxDyn, OwnedRepr};
use ndarray_npy::NpzReader;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::path::PathBuf;

pub fn data_dir() -> PathBuf {
    std::env::var_os("GNNAUDIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets")))
}

fn read_i64(z: &mut NpzReader<std::fs::File>, key: &str) -> Vec<i64> {
    let a: ndarray::ArrayD<i64> = z.by_name::<OwnedRepr<i64>, IxDyn>(key).unwrap();
    a.iter().copied().collect()
}

/// Loads `<name>.npz` and splits its nodes uniformly at random into the given fractions.
pub fn load(name: &str, train: f64, val: f64, seed: u64) -> Dataset {
    let path = data_dir().join(format!("{name}.npz"));
    let mut z = NpzReader::new(std::fs::File::open(&path).expect("dataset file")).unwrap();
    let n = read_i64(&mut z, "adj_shape")[0] as usize;
    let indptr: Vec<usize> = read_i64(&mut z, "adj_indptr").into_iter().map(|x| x as usize).collect();
    let indices: Vec<usize> = read_i64(&mut z, "adj_indices").into_iter().map(|x| x as usize).collect();
    let edges = (0..n).flat_map(|u| indices[indptr[u]..indptr[u + 1]].iter().map(move |&v| (u, v)).collect::<Vec<_>>());
    let graph = Graph::from_edges(n, edges).unwrap();
    let shape = read_i64(&mut z, "attr_shape");
    let fptr: Vec<usize> = read_i64(&mut z, "attr_indptr").into_iter().map(|x| x as usize).collect();
    let fidx: Vec<usize> = read_i64(&mut z, "attr_indices").into_iter().map(|x| x as usize).collect();
    let fdat: Array1<f32> = z.by_name("attr_data").unwrap();
    let features = Features::Sparse {
        rows: n,
        cols: shape[1] as usize,
        indptr: fptr,
        indices: fidx,
        data: fdat.to_vec(),
    };
    let labels: Vec<usize> = read_i64(&mut z, "labels").into_iter().map(|x| x as usize).collect();
    let num_classes = labels.iter().max().unwrap() + 1;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    let (a, b) = ((train * n as f64) as usize, ((train + val) * n as f64) as usize);
    let split = Split { train: order[..a].to_vec(), val: order[a..b].to_vec(), test: order[b..].to_vec() };
    let ds = Dataset {
        name: name.into(),
        graph,
        features,
        labels,
        num_classes,
        split: Some(split),
        class_names: None,
        attr_names: None,
    };
    ds.validate(name).unwrap();
    ds
}
