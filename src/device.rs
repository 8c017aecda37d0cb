//! The torch device every tensor of a run lives on: `cpu`, `cuda`, `cuda:N` or `auto`.
//!
//! One choice per process (`--device` or the audit config's `device`), set once by the command
//! before any tensor exists and read by every site that creates a tensor (`current()`), so model
//! code stays free of device plumbing. Tensors built from Rust slices (`Tensor::from_slice` is
//! always on the CPU) go through `place`.
//!
//! Fallbacks, where a computation deliberately stays on the CPU whatever the device:
//! - the privacy accountants (RDP, PLD, analytic Gaussian) and the statistics of the attacks
//!   (`attacks/src/stats.rs`) are pure Rust on f64 and never touch torch;
//! - the datasets are parsed and split in Rust; the resulting tensors (features, labels, masks,
//!   sparse adjacency) are assembled on the CPU and moved once to the device;
//! - random draws that fix a run's seeds-to-figures mapping (split permutations, `randperm` of
//!   the mini-batches) are drawn on the CPU generator and moved, so a seed gives the same
//!   batches on every device (CUDA's generator differs from the CPU's);
//! - anything copied out to Rust (`Vec::try_from`, `double_value`) passes through the CPU;
//! - the attacks (`attack`, `audit`): target and shadow models train and answer on the device,
//!   and the adversary's side (the attacks crate's index, score, crafted-graph and classifier
//!   tensors) runs on the CPU; `target::ModelBlackBox` and `target::CpuWhiteBox` move what
//!   crosses between the two (posteriors, embeddings, one crafted graph's aggregations, the
//!   differentiable forwards of inversion and reconstruction);
//! - external targets (`[target]` TorchScript modules and `command` pipelines) run where their
//!   own code puts them: gnnaudit loads TorchScript modules on the CPU.
//!
//! The ops gnnaudit uses (sparse COO `mm`, dense layers, `index_select`, `scatter_add`,
//! `log_softmax`, `randn`) all have CUDA kernels in libtorch 2.x: no other fallback is needed.
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicI64, Ordering};
use tch::{Device, Tensor};

/// What a user asks for; `resolve` turns it into a device this machine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum DeviceSpec {
    #[default]
    Cpu,
    /// `cuda` (device 0) or `cuda:N`.
    Cuda(usize),
    /// The first CUDA device when there is one, else the CPU.
    Auto,
}

impl std::str::FromStr for DeviceSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::invalid("device", format!("'{s}' is not one of cpu, cuda, cuda:N, auto"));
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(DeviceSpec::Cpu),
            "cuda" => Ok(DeviceSpec::Cuda(0)),
            "auto" => Ok(DeviceSpec::Auto),
            other => match other.strip_prefix("cuda:") {
                Some(n) => n.parse::<usize>().map(DeviceSpec::Cuda).map_err(|_| bad()),
                None => Err(bad()),
            },
        }
    }
}

impl TryFrom<String> for DeviceSpec {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<DeviceSpec> for String {
    fn from(d: DeviceSpec) -> String {
        d.to_string()
    }
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceSpec::Cpu => write!(f, "cpu"),
            DeviceSpec::Cuda(n) => write!(f, "cuda:{n}"),
            DeviceSpec::Auto => write!(f, "auto"),
        }
    }
}

/// clap value parser: the same message as a config file's `device`.
pub fn parse_device(s: &str) -> std::result::Result<DeviceSpec, String> {
    s.parse::<DeviceSpec>().map_err(|e| e.to_string())
}

impl DeviceSpec {
    pub fn is_cpu(&self) -> bool {
        *self == DeviceSpec::Cpu
    }
    /// The device on this machine; a CUDA device that does not exist is bad input (exit 2).
    pub fn resolve(self) -> Result<Device> {
        let count = cuda_device_count();
        match self {
            DeviceSpec::Cpu => Ok(Device::Cpu),
            DeviceSpec::Auto => Ok(if count > 0 { Device::Cuda(0) } else { Device::Cpu }),
            DeviceSpec::Cuda(n) if n < count => Ok(Device::Cuda(n)),
            DeviceSpec::Cuda(n) if count == 0 => Err(Error::invalid(
                "device",
                format!(
                    "cuda:{n} requested but this machine has no CUDA device usable by libtorch {} \
                     (no GPU, no driver, or a CPU-only libtorch); use --device cpu or auto",
                    crate::libtorch::version()
                ),
            )),
            DeviceSpec::Cuda(n) => Err(Error::invalid(
                "device",
                format!("cuda:{n} requested but this machine has {count} CUDA device(s): cuda:0..cuda:{}", count - 1),
            )),
        }
    }
}

/// CUDA devices libtorch can use (0 with a CPU-only libtorch).
pub fn cuda_device_count() -> usize {
    if tch::Cuda::is_available() {
        tch::Cuda::device_count().max(0) as usize
    } else {
        0
    }
}

/// -1 = CPU, N >= 0 = cuda:N.
static CURRENT: AtomicI64 = AtomicI64::new(-1);

/// Resolves `spec` and makes it the device of every tensor created from now on.
pub fn select(spec: DeviceSpec) -> Result<Device> {
    let d = spec.resolve()?;
    CURRENT.store(
        match d {
            Device::Cuda(n) => n as i64,
            _ => -1,
        },
        Ordering::SeqCst,
    );
    Ok(d)
}

/// The device chosen by `select` (the CPU until then).
pub fn current() -> Device {
    match CURRENT.load(Ordering::SeqCst) {
        n if n >= 0 => Device::Cuda(n as usize),
        _ => Device::Cpu,
    }
}

/// The current device as a `--device` value (for worker processes).
pub fn current_spec() -> DeviceSpec {
    match current() {
        Device::Cuda(n) => DeviceSpec::Cuda(n),
        _ => DeviceSpec::Cpu,
    }
}

/// Moves a tensor built on the CPU (from a Rust slice, or a seeded CPU draw) to the current
/// device; free on the CPU.
pub fn place(t: Tensor) -> Tensor {
    match current() {
        Device::Cpu => t,
        d => t.to_device(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_names_the_culprit() {
        assert_eq!("cpu".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cpu);
        assert_eq!("CUDA".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda(0));
        assert_eq!("cuda:3".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda(3));
        assert_eq!("auto".parse::<DeviceSpec>().unwrap(), DeviceSpec::Auto);
        for bad in ["gpu", "cuda:", "cuda:-1", "cuda:x", "mps", ""] {
            let e = bad.parse::<DeviceSpec>().unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains("device"), "{e}");
        }
        for s in ["cpu", "cuda:0", "cuda:2", "auto"] {
            assert_eq!(s.parse::<DeviceSpec>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn resolves_against_the_devices_this_machine_has() {
        let count = cuda_device_count();
        assert_eq!(DeviceSpec::Cpu.resolve().unwrap(), Device::Cpu);
        let auto = DeviceSpec::Auto.resolve().unwrap();
        assert_eq!(auto, if count > 0 { Device::Cuda(0) } else { Device::Cpu });
        let missing = DeviceSpec::Cuda(count).resolve().unwrap_err();
        assert_eq!(missing.exit_code(), 2);
        assert!(missing.to_string().contains(&format!("cuda:{count}")), "{missing}");
    }
}
