// Bakes libsdm's directory, as sdm-sys found it (SDM_LIB_DIR or pkg-config), into this binary as
// an rpath, so that it runs without LD_LIBRARY_PATH. sdm-sys's own link arguments reach only its
// own binaries; its DEP_SDM_LIB_DIR is how it tells a dependent. Absent when libsdm is in a
// directory the loader searches anyway.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SDM_LIB_DIR");
    if let Some(dir) = std::env::var_os("DEP_SDM_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.to_string_lossy());
    }
}
