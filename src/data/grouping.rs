//! RGNN's feature grouping (Bhaila et al., App. E; reference `preprocess_features`):
//! replace each block of g consecutive columns by its sum and binarise (sum > 0 -> 1), giving
//! d' = ceil(d/g) binary features. It turns sparse bag-of-words vectors into a few categorical
//! features that GRR-FS can randomise; RGNN and its baselines all see the grouped features.
use crate::data::Features;
use crate::error::{Error, Result};
use tch::{Kind, Tensor};

/// The paper's group size for a dataset with `d` raw features (Citeseer 70, Cora 25, DBLP 50,
/// Facebook 100), or None for a dataset the paper did not use.
pub fn paper_group_size(d: usize) -> Option<usize> {
    match d {
        3703 => Some(70),
        1433 => Some(25),
        1639 => Some(50),
        4714 => Some(100),
        _ => None,
    }
}

/// Grouped binary features [N, ceil(d/g)] as float 0/1. Group size 1 keeps the columns and
/// requires them to be binary already (GRR-FS needs categories).
pub fn group_features(features: &Features, group_size: usize) -> Result<Tensor> {
    if group_size == 0 {
        return Err(Error::invalid("group_size", "must be at least 1"));
    }
    let x = features.to_tensor().to_kind(Kind::Float);
    let (n, d) = (x.size()[0], x.size()[1]);
    if d == 0 {
        return Err(Error::invalid("features", "the dataset has no feature columns"));
    }
    let negatives = x.lt(0.0).sum(Kind::Int64).int64_value(&[]);
    if negatives > 0 {
        return Err(Error::invalid(
            "features",
            format!("{negatives} entries are negative; grouping sums counts (bag-of-words), so features must be >= 0"),
        ));
    }
    if group_size == 1 {
        let non_binary = x.ne(0.0).logical_and(&x.ne(1.0)).sum(Kind::Int64).int64_value(&[]);
        if non_binary > 0 {
            return Err(Error::invalid(
                "features",
                format!("{non_binary} entries are neither 0 nor 1; GRR-FS needs binary categories: set group_size > 1 to group and binarise"),
            ));
        }
        return Ok(x);
    }
    let g = group_size as i64;
    let groups = (d + g - 1) / g;
    let pad = groups * g - d;
    let x = if pad > 0 { Tensor::cat(&[x, Tensor::zeros([n, pad], (Kind::Float, tch::Device::Cpu))], 1) } else { x };
    Ok(x.reshape([n, groups, g]).sum_dim_intlist([2i64].as_slice(), false, Kind::Float).gt(0.0).to_kind(Kind::Float))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_summed_then_binarised() {
        let f = Features::Dense { rows: 2, cols: 5, data: vec![0., 2., 0., 0., 0., 0., 0., 0., 0., 1.] };
        let x = group_features(&f, 2).unwrap();
        assert_eq!(x.size(), vec![2, 3]);
        assert_eq!(Vec::<f32>::try_from(x.reshape([-1])).unwrap(), vec![1., 0., 0., 0., 0., 1.]);
        assert!(group_features(&f, 1).is_err(), "a 2 is not binary");
        assert!(group_features(&f, 0).is_err());
        let neg = Features::Dense { rows: 1, cols: 2, data: vec![-1., 1.] };
        assert!(group_features(&neg, 2).unwrap_err().to_string().contains("negative"));
    }
}
