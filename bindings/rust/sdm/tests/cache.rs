// The JIT cache through the safe bindings, in a process of its own (cargo runs each file of
// tests/ as one): CUDA_FORCE_PTX_JIT=1 is set for the whole process, so every kernel is linked
// from PTX by nvJitLink, and a second runtime reads the links from the cache.
use sdm::{ImageKind, ImageSource, LogLevel, Runtime};
use std::path::{Path, PathBuf};

fn runtime(cache: &Path) -> Runtime {
    std::env::set_var("SDM_FAKE_CUDA_DEVICES", "NVIDIA H200,9.0,232448,132,62914560");
    std::env::set_var("SDM_FAKE_CUDA_VERSION", "13000");
    std::env::set_var("CUDA_FORCE_PTX_JIT", "1");
    let driver = std::env::var_os("SDM_CUDA_DRIVER")
        .expect("set SDM_CUDA_DRIVER to build/tests/fake_cuda/libcuda_fake.so (run_tests.sh does)");
    let rt = Runtime::builder()
        .cuda_driver(PathBuf::from(driver))
        .cache_dir(cache)
        .no_embedded_archive()
        .log_level(LogLevel::OFF)
        .build()
        .expect("a runtime on the fake driver");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/golden/kernels.sdma");
    rt.mount_file(golden).unwrap();
    rt
}

#[test]
fn the_cache_makes_a_warm_start() {
    let cache = std::env::temp_dir().join(format!("sdm-rust-cache-{}", std::process::id()));
    std::fs::create_dir_all(&cache).unwrap();
    // The first runtime links the PTX and keeps the cubins in the cache...
    let cold = runtime(&cache);
    cold.preload(0, &[]).unwrap();
    let stats = cold.cache_stats().unwrap();
    assert!(stats.builds >= 1 && stats.bytes_written > 0, "{stats:?}");
    assert_eq!(stats.hits, 0, "{stats:?}");
    let info = cold.kernel(0, "scale").unwrap().info().unwrap();
    assert_eq!((info.image_kind, info.source), (ImageKind::PTX, ImageSource::NVJITLINK), "{info:?}");
    drop(cold);
    // ...which the next one reads.
    let warm = runtime(&cache);
    warm.preload(0, &[]).unwrap();
    let stats = warm.cache_stats().unwrap();
    assert!(stats.hits >= 1, "{stats:?}");
    assert_eq!((stats.builds, stats.bytes_written), (0, 0), "{stats:?}");
    assert_eq!(warm.kernel(0, "scale").unwrap().info().unwrap().source, ImageSource::CACHE);
    drop(warm);
    let _ = std::fs::remove_dir_all(&cache);
}
