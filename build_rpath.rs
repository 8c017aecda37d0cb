//! Embeds libtorch's library folder as an rpath so that the binaries and test executables start
//! without LD_LIBRARY_PATH. torch-sys publishes the folder to its direct dependents (links = "tch").
pub fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    }
}
