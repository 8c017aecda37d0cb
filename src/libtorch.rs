//! What tch does not expose about the libtorch we run on: its version, and a way to keep its
//! warnings (e.g. "Sparse CSR tensor support is in beta") off stderr in normal runs.
use std::ffi::CStr;
use std::os::raw::c_char;

extern "C" {
    fn gnnaudit_silence_torch_warnings();
    fn gnnaudit_torch_version() -> *const c_char;
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
