// Links libsdm. Where from, first found wins:
//   1. $SDM_LIB_DIR, the directory holding libsdm.so: an explicit choice, so it beats whatever is
//      installed (and an SDM_LIB_DIR without libsdm.so is an error, not a reason to look elsewhere);
//   2. pkg-config: `pkg-config --libs-only-L --libs-only-l sdm`, run as the program (`$PKG_CONFIG`,
//      else `pkg-config`), so PKG_CONFIG_PATH, PKG_CONFIG_LIBDIR and PKG_CONFIG_SYSROOT_DIR work as
//      they do for C hosts;
//   3. the Meson build of this checkout (build/capi at the repository root), for development.
// The directory is an rpath of this crate's own tests and examples, and is handed to crates that
// depend on this one directly as DEP_SDM_LIB_DIR (the `links = "sdm"` key): a link argument from a
// build script reaches only its own package's binaries, so a host that wants the rpath in its
// binary passes it on in its build.rs (README.md, "Linking").
use std::env;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

// The program to run, and the variables that change what it says.
const PKG_CONFIG_VARIABLES: [&str; 4] =
    ["PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR"];

/// Where libsdm is: the -L directories and -l names to link with.
struct Found {
    dirs: Vec<PathBuf>,
    libs: Vec<String>,
}

fn has_libsdm(dir: &Path) -> bool {
    dir.join("libsdm.so").exists()
}

/// `dir`, made absolute so that the rpath works from wherever a binary runs.
fn directory(dir: PathBuf) -> Found {
    Found { dirs: vec![dir.canonicalize().unwrap_or(dir)], libs: vec!["sdm".into()] }
}

/// What pkg-config says, or why it says nothing.
fn pkg_config() -> Result<Found, String> {
    let program = env::var_os("PKG_CONFIG").unwrap_or_else(|| "pkg-config".into());
    let args = ["--libs-only-L", "--libs-only-l", "sdm"];
    let shown = format!("{} {}", Path::new(&program).display(), args.join(" "));
    let output =
        Command::new(&program).args(args).output().map_err(|error| format!("could not run `{shown}`: {error}"))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        return Err(format!("`{shown}` failed ({}): {}", output.status, said.trim().replace('\n', "\n    ")));
    }
    let mut found = Found { dirs: Vec::new(), libs: Vec::new() };
    for word in String::from_utf8_lossy(&output.stdout).split_whitespace() {
        if let Some(dir) = word.strip_prefix("-L") {
            found.dirs.push(PathBuf::from(dir));
        } else if let Some(lib) = word.strip_prefix("-l") {
            found.libs.push(lib.into());
        }
    }
    // Rebuild when the .pc file changes (a reinstall into another prefix).
    if let Ok(output) = Command::new(&program).args(["--variable=pcfiledir", "sdm"]).output() {
        let pc = Path::new(String::from_utf8_lossy(&output.stdout).trim()).join("sdm.pc");
        if pc.exists() {
            println!("cargo:rerun-if-changed={}", pc.display());
        }
    }
    Ok(found)
}

fn find() -> Found {
    if let Some(dir) = env::var_os("SDM_LIB_DIR") {
        let dir = PathBuf::from(dir);
        if !has_libsdm(&dir) {
            eprintln!(
                "sdm-sys: SDM_LIB_DIR is {}, which holds no libsdm.so: point it at the directory that does \
                 (BUILD_DIR/capi of a Meson build, PREFIX/lib/<triplet> of an install), or unset it to use pkg-config",
                dir.display()
            );
            exit(1);
        }
        return directory(dir);
    }
    let pkg_config_said = match pkg_config() {
        Ok(found) => return found,
        Err(why) => why,
    };
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let checkout = manifest.join("../../../build/capi");
    if has_libsdm(&checkout) {
        return directory(checkout);
    }
    eprintln!(
        "sdm-sys: libsdm not found.\n  \
         pkg-config: {pkg_config_said}\n  \
         SDM_LIB_DIR: not set\n  \
         this checkout's build: no libsdm.so in {}\n\
         Install sdm so that pkg-config finds sdm.pc (`meson install -C BUILD_DIR`; into a staging tree, \
         `meson install -C BUILD_DIR --destdir STAGE` with PKG_CONFIG_PATH=STAGE/PREFIX/lib/<triplet>/pkgconfig and \
         PKG_CONFIG_SYSROOT_DIR=STAGE), or set SDM_LIB_DIR to the directory holding libsdm.so.",
        checkout.display()
    );
    exit(1);
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SDM_LIB_DIR");
    for variable in PKG_CONFIG_VARIABLES {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    let found = find();
    for dir in &found.dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in &found.libs {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
    // pkg-config leaves out a system directory, which the loader searches anyway: no rpath needed.
    if let Some(dir) = found.dirs.iter().find(|dir| has_libsdm(dir)) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        println!("cargo:lib_dir={}", dir.display());
    }
}
