//! The main package's build: embeds libtorch's rpath (shared with the attacks crate) and compiles
//! the small C++ shim and fused kernels in csrc/ against the same libtorch headers.
#[path = "build_rpath.rs"]
mod rpath;

fn main() {
    rpath::main();
    println!("cargo:rerun-if-changed=csrc/torch_shim.cpp");
    println!("cargo:rerun-if-changed=csrc/row_norm.cpp");
    let lib = std::env::var("DEP_TCH_LIBTORCH_LIB").expect("torch-sys publishes libtorch's lib folder");
    let root = std::path::Path::new(&lib).parent().expect("libtorch's lib folder has a parent").to_path_buf();
    println!("cargo:rustc-env=GNNAUDIT_LIBTORCH_LIB={lib}");
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(root.join("include"))
        // libtorch 2.13's headers use C++20 features (bit-field initialisers in autograd state).
        .flag("-std=c++20")
        .flag("-DGLOG_USE_GLOG_EXPORT")
        // The vector kernels pass 32-byte vectors between inlined helpers; GCC notes the ABI.
        .flag("-Wno-psabi")
        .file("csrc/torch_shim.cpp")
        .file("csrc/row_norm.cpp")
        .compile("gnnaudit_torch_shim");
    // After the shim in link order: the fused kernels' autograd node lives in torch_cpu.
    println!("cargo:rustc-link-lib=torch_cpu");
    println!("cargo:rustc-link-lib=c10");
}
