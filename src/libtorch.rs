//! What tch does not expose about the libtorch we run on: its version, a way to keep its
//! warnings (e.g. "Sparse CSR tensor support is in beta") off stderr in normal runs, an exit
//! that skips its static destructors, and our fused CPU kernels (csrc/) as autograd nodes.
use std::ffi::CStr;
use std::os::raw::c_char;

extern "C" {
    fn gnnaudit_silence_torch_warnings();
    fn gnnaudit_torch_version() -> *const c_char;
    fn gnnaudit_normalized_concat(xs: *const *const torch_sys::C_tensor, count: i64) -> *mut torch_sys::C_tensor;
    fn gnnaudit_normalized_concat_kernels(
        xs: *const *const torch_sys::C_tensor,
        count: i64,
        grad: *const torch_sys::C_tensor,
    ) -> bool;
}

/// Row-wise L2 normalisation of the column-wise concatenation of `xs` (2-D float CPU tensors with
/// equal row counts) as one autograd node with a fused forward and backward (csrc/row_norm.cpp);
/// None for any other input.
pub fn fused_normalized_concat(xs: &[&tch::Tensor]) -> Option<tch::Tensor> {
    if !fused_kernel_fits(xs) {
        return None;
    }
    let ptrs: Vec<*const torch_sys::C_tensor> = xs.iter().map(|x| x.as_ptr()).collect();
    // SAFETY: the pointers are live tensor handles of the kind the kernel accepts, borrowed for
    // the call; the shim returns a new heap-allocated tensor (or null if libtorch threw), whose
    // ownership passes to the wrapper.
    let out = unsafe { gnnaudit_normalized_concat(ptrs.as_ptr(), ptrs.len() as i64) };
    (!out.is_null()).then(|| unsafe { tch::Tensor::from_ptr(out) })
}

/// The kernels of [`fused_normalized_concat`] alone, outside autograd (for the compute floor of
/// `gnnaudit-bench methods`): the forward over `xs` and, given the output's gradient, the backward.
/// False where the kernels do not apply.
pub fn normalized_concat_kernels(xs: &[&tch::Tensor], grad: Option<&tch::Tensor>) -> bool {
    if !fused_kernel_fits(xs) {
        return false;
    }
    let ptrs: Vec<*const torch_sys::C_tensor> = xs.iter().map(|x| x.as_ptr()).collect();
    let grad = grad.map_or(std::ptr::null(), |g| g.as_ptr());
    // SAFETY: live tensor handles borrowed for the call (the gradient, if given, is a float CPU
    // matrix of the output's shape, which the caller builds); nothing is returned to own.
    unsafe { gnnaudit_normalized_concat_kernels(ptrs.as_ptr(), ptrs.len() as i64, grad) }
}

/// Whether `xs` are 2-D float CPU tensors with equal row counts (what the fused kernels take).
fn fused_kernel_fits(xs: &[&tch::Tensor]) -> bool {
    let Some(rows) = xs.first().map(|x| x.size().first().copied()) else { return false };
    xs.iter().all(|x| {
        x.device() == tch::Device::Cpu
            && x.kind() == tch::Kind::Float
            && x.dim() == 2
            && !x.is_sparse()
            && x.size().first().copied() == rows
    })
}

/// The libtorch version the binary was built against (and, through the embedded rpath, runs on).
pub fn version() -> &'static str {
    // SAFETY: the shim returns a pointer to a static NUL-terminated string literal.
    unsafe { CStr::from_ptr(gnnaudit_torch_version()) }.to_str().unwrap_or("unknown")
}

/// The folder libtorch is loaded from (embedded as the binary's rpath at build time).
pub const LIB_DIR: &str = env!("GNNAUDIT_LIBTORCH_LIB");

/// `gnnaudit --version`: the crate version and the libtorch it runs on.
pub fn version_line() -> String {
    format!("{} (libtorch {} from {})", env!("CARGO_PKG_VERSION"), version(), LIB_DIR)
}

/// Drops libtorch's warnings on the calling thread (c10 keeps one handler per thread). Called at
/// start-up unless `-v` is given; a worker thread that runs torch code calls it too.
pub fn silence_warnings() {
    // SAFETY: installs a handler object with static lifetime; no arguments.
    unsafe { gnnaudit_silence_torch_warnings() }
}

/// OpenMP's wait policy variable. libtorch's OpenMP (libgomp) spin-waits between parallel
/// regions by default: two gnnaudit processes on one machine then each ran about 80x slower,
/// their idle threads burning the cores the other needed.
pub const WAIT_POLICY_ENV: &str = "OMP_WAIT_POLICY";

/// Makes OpenMP's threads sleep instead of spin when idle, unless the user chose a policy.
/// libgomp reads the variable once, when it is loaded, before `main` runs; so when it is unset
/// the process sets it and re-executes itself (same arguments, same pid), which costs one more
/// start-up. Call first thing in `main`.
pub fn passive_openmp_wait() {
    if std::env::var_os(WAIT_POLICY_ENV).is_some() || one_thread_requested() {
        return;
    }
    std::env::set_var(WAIT_POLICY_ENV, "passive");
    let Ok(exe) = std::env::current_exe() else { return };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(&exe).arg0(arg0).args(args).exec();
    // Only returns on failure (e.g. the binary was replaced on disk): run on, spinning.
    tracing::debug!("could not re-execute with {WAIT_POLICY_ENV}=passive: {err}");
}

/// Whether this process runs torch on one thread (`--threads 1`, or `OMP_NUM_THREADS=1`): no
/// OpenMP team is then left idle between regions, so spinning costs nothing and the re-execution
/// (a second load of libtorch, about 0.2 CPU s, most of a Cornell5 GAP run's start-up) is skipped.
fn one_thread_requested() -> bool {
    if std::env::var("OMP_NUM_THREADS").is_ok_and(|v| v.trim() == "1") {
        return true;
    }
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--threads=1") || args.windows(2).any(|w| w[0] == "--threads" && w[1] == "1")
}

/// The wait policy this process's OpenMP runs with.
pub fn wait_policy() -> String {
    std::env::var(WAIT_POLICY_ENV).unwrap_or_else(|_| "unset (spin)".into())
}

/// Ends the process with `code` without running C++ static destructors: at exit, libtorch's
/// deregister every operator it registered at start-up, about 0.1 CPU s per process (a third of
/// a one-epoch Cora run, and of every `gnnaudit` process a test or a bench launches). Call it
/// only when everything the run wrote is flushed or closed; C stdio buffers are flushed here.
pub fn quick_exit(code: i32) -> ! {
    // SAFETY: fflush(NULL) flushes every C output stream; `_exit` ends the process at once.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(code)
    }
}
