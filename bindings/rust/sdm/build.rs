// This crate's tests and examples run against the libsdm that sdm-sys linked: give them its
// directory as an rpath (sdm-sys passes it on as DEP_SDM_LIB_DIR; a link argument of sdm-sys's
// build script reaches only sdm-sys's own binaries). Crates that depend on this one pass it on
// their own way (README.md, "Linking").
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SDM_LIB_DIR");
    if let Some(dir) = std::env::var_os("DEP_SDM_LIB_DIR") {
        let dir = dir.to_string_lossy();
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
