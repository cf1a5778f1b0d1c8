// The tests of this crate run against the libsdm that sdm-sys linked: give them its
// directory as an rpath (sdm-sys passes it on as DEP_SDM_LIB_DIR). Libraries and binaries that
// depend on this crate choose their own way to find libsdm.so at run time.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SDM_LIB_DIR");
    if let Some(dir) = std::env::var_os("DEP_SDM_LIB_DIR") {
        let dir = dir.to_string_lossy();
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
    }
}
