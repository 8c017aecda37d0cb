//! `gnnaudit doctor [--device D]`: what this machine's libtorch can do, checked rather than
//! assumed: version, threads, CUDA devices, and one forward/backward pass plus a sparse
//! aggregation on the chosen device compared with the same computation on the CPU.
use crate::device::DeviceSpec;
use crate::error::{Error, Result};
use tch::{Device, Kind, Tensor};

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Device to check: cpu | cuda | cuda:N | auto. A CUDA device this machine lacks: exit 2.
    #[arg(long, default_value = "cpu", value_parser = crate::device::parse_device)]
    pub device: DeviceSpec,
}

pub fn run(a: DoctorArgs) -> Result<()> {
    let count = crate::device::cuda_device_count();
    println!("libtorch {}", crate::libtorch::version());
    println!("torch threads: {} (inter-op {})", tch::get_num_threads(), tch::get_num_interop_threads());
    println!(
        "cuda: {} device(s){}; cudnn: {}",
        count,
        if tch::Cuda::is_available() { "" } else { " (libtorch built without CUDA, or no driver/GPU)" },
        tch::Cuda::cudnn_is_available()
    );
    let device = crate::device::select(a.device)?;
    println!("device {} -> {:?}", a.device, device);
    let grad = autograd_ok(device);
    let spmm = sparse_mm_ok(device);
    println!("autograd on {device:?}: {}", verdict(&grad));
    println!("sparse COO mm on {device:?} (same as CPU): {}", verdict(&spmm));
    match (grad, spmm) {
        (Ok(true), Ok(true)) => Ok(()),
        _ => Err(Error::Other(format!("libtorch fails its checks on {device:?} (see above)"))),
    }
}

fn verdict(r: &std::result::Result<bool, tch::TchError>) -> String {
    match r {
        Ok(true) => "ok".into(),
        Ok(false) => "WRONG RESULT".into(),
        Err(e) => format!("FAILED ({e})"),
    }
}

/// d(sum x^2)/dx = 2x on the device.
fn autograd_ok(d: Device) -> std::result::Result<bool, tch::TchError> {
    let x = Tensor::f_randn([4, 3], (Kind::Float, d))?.set_requires_grad(true);
    let y = (&x * &x).f_sum(Kind::Float)?;
    y.f_backward()?;
    x.grad().f_allclose(&(&x * 2.0), 1e-6, 1e-6, false)
}

/// The aggregation every GNN here runs (sparse A times dense X), against the CPU's result.
fn sparse_mm_ok(d: Device) -> std::result::Result<bool, tch::TchError> {
    let idx = Tensor::from_slice(&[0i64, 1, 2, 2, 1, 0, 0, 1]).reshape([2, 4]);
    let vals = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]);
    let a = Tensor::f_sparse_coo_tensor_indices_size(&idx, &vals, [3, 3], (Kind::Float, Device::Cpu), true)?;
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).reshape([3, 2]);
    let cpu = a.f_mm(&x)?;
    let on = a.f_to_device(d)?.f_mm(&x.f_to_device(d)?)?.f_to_device(Device::Cpu)?;
    on.f_allclose(&cpu, 1e-5, 1e-5, false)
}
