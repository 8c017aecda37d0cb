//! `A x` for a CSR matrix `A` and a dense row-major `x`, outside autograd.
//!
//! Why not libtorch's: on CPU it hands CSR products to MKL, whose sparse kernels take a generic
//! code path on AMD processors (`mkl_sparse_s_csr_ng_n_mm_c_ker_i4_def`). That path was 36% of a
//! GraphSAGE run on Cornell5, at about 2.6 ns per edge for 16 columns; this kernel takes about
//! 2 ns there. It walks each row's non-zeros in order and adds `a_ij x_j` into the row with AVX2
//! FMAs when the CPU has them, split over torch's intra-op threads by rows of equal non-zero
//! counts.
use tch::{Device, Kind, Tensor};

/// `csr @ x` when this kernel applies (a CPU CSR matrix with int32 or int64 indices and float
/// values, a float matrix `x` on the CPU); `None` otherwise, for the caller to fall back on
/// libtorch. Gradients do not flow through the result.
pub fn csr_mm(csr: &Tensor, x: &Tensor) -> Option<Tensor> {
    let applies = csr.device() == Device::Cpu
        && x.device() == Device::Cpu
        && csr.kind() == Kind::Float
        && x.kind() == Kind::Float
        && x.dim() == 2
        && csr.size()[1] == x.size()[0];
    if !applies {
        return None;
    }
    let x = x.contiguous();
    let (rows, width) = (csr.size()[0], x.size()[1]);
    let out = Tensor::zeros([rows, width], (Kind::Float, Device::Cpu));
    // Only a CSR tensor has row pointers (a dense or COO matrix is refused here).
    let (Ok(crow), Ok(col)) = (csr.f_crow_indices(), csr.f_col_indices()) else { return None };
    let (crow, col, val) = (crow.contiguous(), col.contiguous(), csr.values().contiguous());
    let nnz = val.numel();
    if crow.numel() != rows as usize + 1 || col.numel() != nnz {
        return None;
    }
    if rows == 0 || width == 0 || nnz == 0 {
        return Some(out);
    }
    // SAFETY: each slice covers exactly its tensor's elements (contiguous, on the CPU, of the
    // kind read), and the tensors live to the end of this function. Indexing through the
    // slices is bounds-checked, so malformed indices panic rather than read astray.
    unsafe {
        let val = std::slice::from_raw_parts(val.data_ptr() as *const f32, nnz);
        let xs = std::slice::from_raw_parts(x.data_ptr() as *const f32, x.numel());
        let outs = std::slice::from_raw_parts_mut(out.data_ptr() as *mut f32, out.numel());
        match crow.kind() {
            Kind::Int => {
                let crow = std::slice::from_raw_parts(crow.data_ptr() as *const i32, crow.numel());
                let col = std::slice::from_raw_parts(col.data_ptr() as *const i32, nnz);
                product(crow, col, val, xs, width as usize, outs);
            }
            Kind::Int64 => {
                let crow = std::slice::from_raw_parts(crow.data_ptr() as *const i64, crow.numel());
                let col = std::slice::from_raw_parts(col.data_ptr() as *const i64, nnz);
                product(crow, col, val, xs, width as usize, outs);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A CSR index type.
trait Index: Copy + Send + Sync {
    fn at(self) -> usize;
}
impl Index for i32 {
    fn at(self) -> usize {
        self as usize
    }
}
impl Index for i64 {
    fn at(self) -> usize {
        self as usize
    }
}

/// Fills `out` [rows, width] with the product, over torch's thread count.
fn product<I: Index>(crow: &[I], col: &[I], val: &[f32], x: &[f32], width: usize, out: &mut [f32]) {
    let rows = crow.len() - 1;
    let threads = (tch::get_num_threads().max(1) as usize).min(rows);
    if threads <= 1 || val.len() < 1 << 16 {
        return rows_into(crow, col, val, x, width, 0, out);
    }
    // Row ranges of about equal non-zero counts.
    let mut bounds = vec![0usize];
    for t in 1..threads {
        let target = val.len() * t / threads;
        let r = crow.partition_point(|p| p.at() < target).min(rows);
        bounds.push(r.max(*bounds.last().unwrap()));
    }
    bounds.push(rows);
    std::thread::scope(|s| {
        let mut rest = out;
        for w in bounds.windows(2) {
            let (mine, tail) = rest.split_at_mut((w[1] - w[0]) * width);
            rest = tail;
            let start = w[0];
            s.spawn(move || rows_into(&crow[..w[1] + 1], col, val, x, width, start, mine));
        }
    });
}

/// Rows `start..crow.len() - 1` of the product into `out` (those rows only).
fn rows_into<I: Index>(crow: &[I], col: &[I], val: &[f32], x: &[f32], width: usize, start: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { rows_into_fma(crow, col, val, x, width, start, out) };
    }
    rows_into_portable::<I, false>(crow, col, val, x, width, start, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_into_fma<I: Index>(
    crow: &[I],
    col: &[I],
    val: &[f32],
    x: &[f32],
    width: usize,
    start: usize,
    out: &mut [f32],
) {
    rows_into_portable::<I, true>(crow, col, val, x, width, start, out)
}

/// `a * v + o`, fused where the CPU has FMA (elsewhere `mul_add` would be a libm call).
#[inline(always)]
fn madd<const FMA: bool>(a: f32, v: f32, o: f32) -> f32 {
    if FMA {
        a.mul_add(v, o)
    } else {
        o + a * v
    }
}

/// The loop itself; inlined into the FMA copy above, where LLVM vectorises it with AVX2 FMAs.
#[inline(always)]
fn rows_into_portable<I: Index, const FMA: bool>(
    crow: &[I],
    col: &[I],
    val: &[f32],
    x: &[f32],
    width: usize,
    start: usize,
    out: &mut [f32],
) {
    match width {
        16 => rows_fixed::<I, 16, FMA>(crow, col, val, x, start, out),
        32 => rows_fixed::<I, 32, FMA>(crow, col, val, x, start, out),
        _ => {
            for (r, acc) in out.chunks_exact_mut(width).enumerate() {
                let (lo, hi) = (crow[start + r].at(), crow[start + r + 1].at());
                for (c, &a) in col[lo..hi].iter().zip(&val[lo..hi]) {
                    let xr = &x[c.at() * width..][..width];
                    for (o, &v) in acc.iter_mut().zip(xr) {
                        *o = madd::<FMA>(a, v, *o);
                    }
                }
            }
        }
    }
}

/// A width known at compile time: the row's accumulator stays in registers. The non-zeros are
/// taken in order, one FMA after another, as MKL does: the product has the same bits as
/// libtorch's (Cornell5's GraphSAGE scores the same to the last digit). Four accumulators taking
/// turns, and prefetching the rows of `x` 16 non-zeros ahead, were no faster: the gathers of
/// `x` rows bound the loop. LLVM's vectorisation of the `j` loop is fragile: with the operands
/// passed as one struct it emitted 16 scalar FMAs per non-zero and GraphSAGE ran 2.3x slower, so
/// check `objdump` for `vfmadd...ps ymm` in `rows_into_fma` after touching this.
#[inline(always)]
fn rows_fixed<I: Index, const W: usize, const FMA: bool>(
    crow: &[I],
    col: &[I],
    val: &[f32],
    x: &[f32],
    start: usize,
    out: &mut [f32],
) {
    for (r, dst) in out.chunks_exact_mut(W).enumerate() {
        let (lo, hi) = (crow[start + r].at(), crow[start + r + 1].at());
        let mut acc = [0f32; W];
        for (c, &a) in col[lo..hi].iter().zip(&val[lo..hi]) {
            let xr: &[f32; W] = x[c.at() * W..][..W].try_into().expect("row of x");
            for j in 0..W {
                acc[j] = madd::<FMA>(a, xr[j], acc[j]);
            }
        }
        dst.copy_from_slice(&acc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_csr(rows: i64, cols: i64, density: f64, int32: bool) -> Tensor {
        let dense = Tensor::rand([rows, cols], (Kind::Float, Device::Cpu));
        let mask = Tensor::rand([rows, cols], (Kind::Float, Device::Cpu)).lt(density);
        let sparse = (dense * mask).to_sparse_csr(None::<i64>);
        if !int32 {
            return sparse;
        }
        Tensor::sparse_csr_tensor_crow_col_value_size(
            &sparse.crow_indices().to_kind(Kind::Int),
            &sparse.col_indices().to_kind(Kind::Int),
            &sparse.values(),
            sparse.size(),
            (Kind::Float, Device::Cpu),
        )
    }

    #[test]
    fn agrees_with_libtorch_at_every_width_index_type_and_thread_count() {
        tch::manual_seed(2);
        for threads in [1, 2, 3] {
            tch::set_num_threads(threads);
            for (rows, cols, density) in [(300, 200, 0.05), (1000, 1200, 0.1), (5, 7, 0.0), (40, 3, 1.0)] {
                for width in [1, 7, 16, 32, 48] {
                    for int32 in [true, false] {
                        let a = random_csr(rows, cols, density, int32);
                        // A transposed x too: the kernel reads it through a contiguous copy.
                        let x = Tensor::randn([width, cols], (Kind::Float, Device::Cpu)).tr();
                        let ours = csr_mm(&a, &x).expect("applies");
                        let theirs = a.to_dense(None, false).mm(&x);
                        let err = (&ours - &theirs).abs().max().double_value(&[]);
                        assert!(err < 1e-4, "{rows}x{cols} d {density} w {width} i32 {int32} t {threads}: {err}");
                    }
                }
            }
        }
        tch::set_num_threads(1);
    }

    #[test]
    fn declines_what_it_does_not_handle() {
        let a = random_csr(4, 4, 0.5, true);
        let x64 = Tensor::randn([4, 2], (Kind::Double, Device::Cpu));
        assert!(csr_mm(&a, &x64).is_none());
        assert!(csr_mm(&a.to_dense(None, false), &Tensor::randn([4, 2], (Kind::Float, Device::Cpu))).is_none());
        assert!(csr_mm(&a, &Tensor::randn([5, 2], (Kind::Float, Device::Cpu))).is_none());
    }
}
