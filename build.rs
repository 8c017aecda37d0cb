//! The main package's build: embeds libtorch's rpath (shared with the attacks crate) and compiles
//! the small C++ shim in csrc/ against the same libtorch headers.
#[path = "build_rpath.rs"]
mod rpath;

fn main() {
    rpath::main();
    println!("cargo:rerun-if-changed=csrc/torch_shim.cpp");
    let lib = std::env::var("DEP_TCH_LIBTORCH_LIB").expect("torch-sys publishes libtorch's lib folder");
    let root = std::path::Path::new(&lib).parent().expect("libtorch's lib folder has a parent").to_path_buf();
    println!("cargo:rustc-env=GNNAUDIT_LIBTORCH_LIB={lib}");
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(root.join("include"))
        .flag("-std=c++17")
        .flag("-DGLOG_USE_GLOG_EXPORT")
        .file("csrc/torch_shim.cpp")
        .compile("gnnaudit_torch_shim");
    println!("cargo:rustc-link-lib=c10");
}
