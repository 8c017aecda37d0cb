//! Fixed sparse propagation matrices (a graph's aggregation operator) and a backward pass that
//! forms `A^T g` from a transpose built once.
//!
//! Why: libtorch's autograd for `A x` with a sparse `A` either dispatches one axpy per non-zero
//! (COO) or re-sorts the transpose of `A` on every backward (CSR); on Cornell5's 1.3M edges that
//! made GraphSAGE three times slower than the reference, whose sparse library caches the
//! transpose. Here a training forward records each product as a leaf of the autograd graph, and
//! [`backward`] carries gradients across the products with the stored CSR of `A^T`.
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use tch::{nn, Kind, Tensor};

/// Anything that can aggregate node rows: a sparse [`SparseMatrix`], or a plain tensor (dense or
/// sparse) multiplied under ordinary autograd (the white-box attacks' relaxed adjacencies).
pub trait Propagate {
    /// `A x` for node rows `x` [N, d] (rows of `A` = targets).
    fn propagate(&self, x: &Tensor) -> Tensor;
}

impl Propagate for Tensor {
    fn propagate(&self, x: &Tensor) -> Tensor {
        self.mm(x)
    }
}

/// One recorded product `out = A input`, `out` a leaf that autograd stops at.
pub struct Product {
    /// Creation order across all matrices: the backward visits products latest first.
    seq: u64,
    input: Tensor,
    out: Tensor,
    transpose: Tensor,
}

static NEXT_PRODUCT: AtomicU64 = AtomicU64::new(0);

/// A constant sparse [N, M] matrix in COO (for inspection and densifying), CSR (for `A x`) and
/// CSR of its transpose (for the backward).
pub struct SparseMatrix {
    pub coo: Tensor,
    csr: Tensor,
    csr_t: Tensor,
    recording: RefCell<Option<Vec<Product>>>,
}

impl std::fmt::Debug for SparseMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SparseMatrix({:?}, nnz {})", self.coo.size(), self.coo.values().size()[0])
    }
}

impl SparseMatrix {
    /// From a sparse COO tensor.
    pub fn new(coo: Tensor) -> Self {
        let coo = coo.coalesce();
        let (csr, csr_t) = match csr_pair_by_counting(&coo) {
            Some(pair) => pair,
            None => (csr_i32(&coo), csr_i32(&coo.tr().coalesce())),
        };
        SparseMatrix { coo, csr, csr_t, recording: RefCell::new(None) }
    }
    /// CSR of the matrix (`A x`) and of its transpose (`A^T g`).
    pub fn csr(&self) -> &Tensor {
        &self.csr
    }
    pub fn csr_t(&self) -> &Tensor {
        &self.csr_t
    }
    /// Is `x` this matrix's own COO tensor (the same index storage)? A model that hands the COO
    /// form around finds the CSR forms again this way.
    pub fn is_coo(&self, x: &Tensor) -> bool {
        x.is_sparse()
            && x.is_coalesced()
            && x.size() == self.coo.size()
            && x.indices().data_ptr() == self.coo.indices().data_ptr()
    }
    pub fn to_dense(&self) -> Tensor {
        self.coo.to_dense(None, false)
    }
    /// From now until [`SparseMatrix::take_products`], products with an input that requires grad
    /// are computed outside autograd and recorded for [`backward`]. Every product recorded must
    /// be handed to [`backward`]: until then autograd sees its output as a constant.
    pub fn record(&self) {
        *self.recording.borrow_mut() = Some(Vec::new());
    }
    /// The products recorded since [`SparseMatrix::record`], in the order they were formed.
    pub fn take_products(&self) -> Vec<Product> {
        self.recording.borrow_mut().take().unwrap_or_default()
    }
}

/// CSR with int32 indices: MKL's sparse kernels take 32-bit indices, and libtorch converts int64
/// ones on every product (on Cornell5, 5.7 ms instead of 3.5 ms per product).
fn csr_i32(coo: &Tensor) -> Tensor {
    let csr = coo.to_sparse_csr(None::<i64>);
    let int = |t: Tensor| t.to_kind(Kind::Int);
    Tensor::sparse_csr_tensor_crow_col_value_size(
        &int(csr.crow_indices()),
        &int(csr.col_indices()),
        &csr.values(),
        csr.size(),
        (csr.kind(), csr.device()),
    )
}

/// CSR of a coalesced CPU float matrix and of its transpose, both with int32 indices, built by
/// counting sort in O(nnz). libtorch sorts the transposed indices instead, which took about 0.1 s
/// of every GraphSAGE run on Cornell5's 1.3M edges. The entries and their order are those of
/// `csr_i32` (a coalesced transpose lists each row's entries by column), so products keep their
/// bits. `None` where that does not apply (another device or kind, or indices beyond int32).
fn csr_pair_by_counting(coo: &Tensor) -> Option<(Tensor, Tensor)> {
    let size = coo.size();
    let fits = |n: i64| n < i32::MAX as i64;
    if coo.device() != tch::Device::Cpu || coo.kind() != Kind::Float || size.len() != 2 || !coo.is_coalesced() {
        return None;
    }
    let (rows, cols) = (size[0], size[1]);
    let values: Vec<f32> = Vec::try_from(coo.values().contiguous()).ok()?;
    let nnz = values.len();
    if !fits(rows) || !fits(cols) || !fits(nnz as i64) {
        return None;
    }
    let indices: Vec<i64> = Vec::try_from(coo.indices().contiguous().view(-1)).ok()?;
    let (r, c) = indices.split_at(nnz);
    // Row pointers from counts, then (for the transpose) each entry placed at its column's next
    // free slot, visiting entries in row-major order.
    let pointers = |keys: &[i64], n: i64| {
        let mut ptr = vec![0i32; n as usize + 1];
        for &k in keys {
            ptr[k as usize + 1] += 1;
        }
        for i in 0..n as usize {
            ptr[i + 1] += ptr[i];
        }
        ptr
    };
    let crow = pointers(r, rows);
    let crow_t = pointers(c, cols);
    let (mut col_t, mut val_t) = (vec![0i32; nnz], vec![0f32; nnz]);
    let mut next: Vec<i32> = crow_t[..cols as usize].to_vec();
    for k in 0..nnz {
        let slot = &mut next[c[k] as usize];
        col_t[*slot as usize] = r[k] as i32;
        val_t[*slot as usize] = values[k];
        *slot += 1;
    }
    let col: Vec<i32> = c.iter().map(|&j| j as i32).collect();
    let csr = |crow: &[i32], col: &[i32], val: &[f32], shape: [i64; 2]| {
        Tensor::sparse_csr_tensor_crow_col_value_size(
            &Tensor::from_slice(crow),
            &Tensor::from_slice(col),
            &Tensor::from_slice(val),
            shape,
            (Kind::Float, tch::Device::Cpu),
        )
    };
    Some((csr(&crow, &col, &values, [rows, cols]), csr(&crow_t, &col_t, &val_t, [cols, rows])))
}

impl Propagate for SparseMatrix {
    fn propagate(&self, x: &Tensor) -> Tensor {
        let mut recording = self.recording.borrow_mut();
        match recording.as_mut() {
            Some(products) if x.requires_grad() => {
                let out = tch::no_grad(|| mm(&self.csr, x)).set_requires_grad(true);
                let transpose = self.csr_t.shallow_clone();
                let seq = NEXT_PRODUCT.fetch_add(1, Ordering::Relaxed);
                products.push(Product { seq, input: x.shallow_clone(), out: out.shallow_clone(), transpose });
                out
            }
            // Autograd must see a product whose input requires grad.
            _ if x.requires_grad() => self.csr.mm(x),
            _ => mm(&self.csr, x),
        }
    }
}

/// `csr x` by [`super::spmm::csr_mm`], or by libtorch where that kernel does not apply.
pub fn mm(csr: &Tensor, x: &Tensor) -> Tensor {
    super::spmm::csr_mm(csr, x).unwrap_or_else(|| csr.mm(x))
}

/// Gradients of the scalar `loss` with respect to `params` (`None` where `loss` does not depend
/// on one), where the forward pass recorded `products` (from any number of matrices). Autograd runs from the loss, stopping at
/// the products' outputs; then, latest product first, each output's gradient `g` becomes
/// `A^T g` at its input and autograd runs on from there (through `sum(input * A^T g)`, whose
/// gradient is exactly that vector-Jacobian product).
pub fn backward(loss: &Tensor, params: &[Tensor], mut products: Vec<Product>) -> Vec<Option<Tensor>> {
    products.sort_by_key(|p| p.seq);
    let products = products.as_slice();
    let mut grads: Vec<Option<Tensor>> = (0..params.len() + products.len()).map(|_| None).collect();
    let run = |root: &Tensor, upto: usize, keep: bool, grads: &mut Vec<Option<Tensor>>| {
        let inputs: Vec<&Tensor> = params.iter().chain(products[..upto].iter().map(|p| &p.out)).collect();
        let outs = Tensor::run_backward(&[root], &inputs, keep, false);
        for (slot, g) in grads.iter_mut().zip(outs) {
            if g.defined() {
                *slot = Some(match slot.take() {
                    Some(acc) => acc + g,
                    None => g,
                });
            }
        }
    };
    run(loss, products.len(), !products.is_empty(), &mut grads);
    for i in (0..products.len()).rev() {
        let (Some(g), p) = (grads[params.len() + i].take(), &products[i]) else { continue };
        let g_in = mm(&p.transpose, &g);
        let root = (&p.input * &g_in).sum(Kind::Float);
        run(&root, i, i > 0, &mut grads);
    }
    grads.truncate(params.len());
    grads
}

/// Node features of a full-batch network: dense, or sparse when mostly zeros (one-hot or
/// bag-of-words columns), so that the first layer is a sparse product with the weights whose
/// backward is the stored transpose (`x^T g`) instead of a dense [N, F] pass.
pub enum FeatureMatrix {
    Dense(Tensor),
    Sparse(SparseMatrix),
}

/// Inputs at most this dense are stored sparse (Cora's bag of words 1.3%, Cornell5's one-hot 2%).
const SPARSE_DENSITY: f64 = 0.05;

/// Is `x` a matrix with at most 5% non-zero entries? Then a first layer over a sparse copy costs
/// nnz x hidden instead of rows x cols x hidden.
pub fn mostly_zeros(x: &Tensor) -> bool {
    x.dim() == 2 && few_enough(x.count_nonzero(None::<i64>).int64_value(&[]) as usize, x.numel())
}

/// Are `nonzeros` of `entries` at most 5%? ([`mostly_zeros`] for a count known beforehand.)
pub fn few_enough(nonzeros: usize, entries: usize) -> bool {
    nonzeros as f64 <= SPARSE_DENSITY * entries.max(1) as f64
}

impl FeatureMatrix {
    /// Sparse when at most 5% of the entries are non-zero.
    pub fn new(x: &Tensor) -> Self {
        let x = x.to_kind(Kind::Float);
        if mostly_zeros(&x) {
            FeatureMatrix::Sparse(SparseMatrix::new(x.to_sparse_sparse_dim(2)))
        } else {
            FeatureMatrix::Dense(x)
        }
    }
    /// `x W^T + b` for a Linear layer.
    pub fn linear(&self, lin: &nn::Linear) -> Tensor {
        match self {
            FeatureMatrix::Dense(x) => x.apply(lin),
            FeatureMatrix::Sparse(m) => {
                let y = m.propagate(&lin.ws.tr());
                match &lin.bs {
                    Some(b) => y + b,
                    None => y,
                }
            }
        }
    }
    pub fn dense(&self) -> Tensor {
        match self {
            FeatureMatrix::Dense(x) => x.shallow_clone(),
            FeatureMatrix::Sparse(m) => m.to_dense(),
        }
    }
    /// The sparse matrix whose products a training forward records, if any.
    pub fn sparse(&self) -> Option<&SparseMatrix> {
        match self {
            FeatureMatrix::Sparse(m) => Some(m),
            FeatureMatrix::Dense(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    /// The counting-sort CSR pair has the entries, in the order, of libtorch's conversions (so
    /// products keep their bits), for a rectangular matrix with empty rows and columns.
    #[test]
    fn counting_csr_pair_equals_libtorch_conversion() {
        tch::manual_seed(3);
        let opts = (Kind::Float, Device::Cpu);
        let a = Tensor::rand([40, 23], opts).lt(0.15).to_kind(Kind::Float) * Tensor::randn([40, 23], opts);
        let _ = a.narrow(0, 5, 3).fill_(0.0);
        let _ = a.narrow(1, 7, 2).fill_(0.0);
        let coo = a.to_sparse_sparse_dim(2).coalesce();
        let (csr, csr_t) = csr_pair_by_counting(&coo).expect("a CPU float matrix");
        for (ours, theirs) in [(csr, csr_i32(&coo)), (csr_t, csr_i32(&coo.tr().coalesce()))] {
            assert_eq!(ours.size(), theirs.size());
            assert!(ours.crow_indices().equal(&theirs.crow_indices()));
            assert!(ours.col_indices().equal(&theirs.col_indices()));
            assert!(ours.values().equal(&theirs.values()));
        }
        // Not applicable: a double matrix takes libtorch's route.
        assert!(csr_pair_by_counting(&coo.to_kind(Kind::Double)).is_none());
    }

    /// A sparse feature product (`F w1`, as a first layer) and two chained adjacency products, with
    /// parameters before, between and after them: the recorded backward gives the gradients of
    /// dense autograd, whatever order the matrices hand their products back in.
    #[test]
    fn recorded_backward_matches_dense_autograd() {
        tch::manual_seed(5);
        let opts = (Kind::Float, Device::Cpu);
        let a = Tensor::rand([30, 30], opts).lt(0.2).to_kind(Kind::Float) * Tensor::rand([30, 30], opts);
        let feats = Tensor::rand([30, 4], opts).lt(0.3).to_kind(Kind::Float);
        let m = SparseMatrix::new(a.to_sparse_sparse_dim(2));
        let fm = SparseMatrix::new(feats.to_sparse_sparse_dim(2));
        let w1 = Tensor::randn([4, 5], opts).set_requires_grad(true);
        let w2 = Tensor::randn([5, 3], opts).set_requires_grad(true);
        let unused = Tensor::randn([2], opts).set_requires_grad(true);
        let c = Tensor::randn([30, 3], opts);
        let net = |prop: &dyn Fn(&Tensor) -> Tensor, first: &dyn Fn(&Tensor) -> Tensor| {
            let x1 = first(&w1);
            let h = prop(&x1).tanh() + &x1;
            (prop(&h).mm(&w2) * &c).sum(Kind::Float)
        };
        let params = [w1.shallow_clone(), w2.shallow_clone(), unused.shallow_clone()];

        m.record();
        fm.record();
        let loss = net(&|t: &Tensor| m.propagate(t), &|t: &Tensor| fm.propagate(t));
        let mut products = m.take_products();
        assert_eq!(products.len(), 2);
        products.extend(fm.take_products());
        assert_eq!(products.len(), 3);
        let ours = backward(&loss, &params, products);

        let dense_loss = net(&|t: &Tensor| a.mm(t), &|t: &Tensor| feats.mm(t));
        let want = Tensor::run_backward(&[&dense_loss], &[&w1, &w2], false, false);
        assert!((loss.double_value(&[]) - dense_loss.double_value(&[])).abs() < 1e-3);
        for (o, w) in ours.iter().zip(&want) {
            let o = o.as_ref().expect("used parameters get a gradient");
            assert!((o - w).abs().max().double_value(&[]) < 1e-4, "{o:?} vs {w:?}");
        }
        assert!(ours[2].is_none());
        let x = Tensor::randn([30, 4], opts);
        // Outside recording (and for inputs without grad) products are plain CSR products.
        assert!(m.take_products().is_empty());
        assert!((m.propagate(&x) - a.mm(&x)).abs().max().double_value(&[]) < 1e-5);
    }
}
