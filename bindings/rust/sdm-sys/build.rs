// Links libsdm. The directory holding libsdm.so comes from $SDM_LIB_DIR, else the Meson build of
// this checkout (build/capi at the repository root). It is also baked in as an rpath of
// this crate's tests, and handed to dependents as DEP_SDM_LIB_DIR (the `links = "sdm"` key) so
// that their tests can do the same.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=SDM_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let dir = match env::var_os("SDM_LIB_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("../../../build/capi"),
    };
    // An absolute path, so that the rpath works from wherever the test binary runs.
    let dir = dir.canonicalize().unwrap_or(dir);
    if !dir.join("libsdm.so").exists() {
        println!(
            "cargo:warning=no libsdm.so in {}: build sdm (meson) or set SDM_LIB_DIR to the directory holding it",
            dir.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=sdm");
    println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", dir.display());
    println!("cargo:lib_dir={}", dir.display());
}
