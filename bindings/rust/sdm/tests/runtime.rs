// The safe bindings through the fake CUDA driver (tests/fake_cuda): runtime, devices, archives,
// kernels, plans and launches. run_tests.sh sets $SDM_CUDA_DRIVER to the fake; the devices are
// set here, once, before any runtime reads them.
use sdm::{
    DeviceClass, ImageKind, ImageSource, Kernel, KernelHandle, LogLevel, OwnedKernel, Plan, Runtime, RuntimeBuilder,
    SignaturePolicy, Status,
};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once};

const DEVICES: &str = "NVIDIA H200,9.0,232448,132,62914560;\
                       NVIDIA A100-SXM4-80GB,8.0,166912,108,41943040;\
                       NVIDIA GeForce RTX 4090,8.9,101376,128,75497472;\
                       Tesla V100-SXM2-16GB,7.0,98304,80,6291456";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..").canonicalize().unwrap()
}

fn golden() -> PathBuf {
    repo().join("tests/golden/kernels.sdma")
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("sdm-rust-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fake_driver() -> PathBuf {
    static ONCE: Once = Once::new();
    // Every test calls this before it creates a runtime, so no libsdm or fake call reads the
    // environment while it changes.
    ONCE.call_once(|| {
        std::env::set_var("SDM_FAKE_CUDA_DEVICES", DEVICES);
        std::env::set_var("SDM_FAKE_CUDA_VERSION", "13000");
        std::env::set_var("SDM_FAKE_CUDA_FAIL", "");
        std::env::set_var("SDM_FAKE_CUDA_MISSING", "");
    });
    let driver = std::env::var_os("SDM_CUDA_DRIVER")
        .expect("set SDM_CUDA_DRIVER to build/tests/fake_cuda/libcuda_fake.so (run_tests.sh does)");
    PathBuf::from(driver)
}

/// A runtime on the fake driver, without the embedded archive, its cache in `cache`, quiet.
fn runtime(cache: &TempDir) -> Runtime {
    Runtime::builder()
        .cuda_driver(fake_driver())
        .cache_dir(&cache.0)
        .no_embedded_archive()
        .log_level(LogLevel::OFF)
        .build()
        .expect("a runtime on the fake driver")
}

fn mounted(cache: &TempDir) -> Runtime {
    let rt = runtime(cache);
    rt.mount_file(golden()).unwrap();
    rt
}

#[test]
fn versions_and_names() {
    sdm::check_abi().unwrap();
    let (major, minor) = sdm::abi_version();
    assert_eq!(major, 1);
    assert!(minor >= 1);
    assert!(!sdm::version().is_empty());
    assert_eq!(Status::NO_DRIVER.name(), "SDM_ERROR_NO_DRIVER");
    assert_eq!(Status(4242).name(), "SDM_ERROR_UNKNOWN");
    assert_eq!(DeviceClass::A100.name(), "a100");
    assert_eq!(DeviceClass(77).name(), "unsupported");
}

#[test]
fn devices_of_the_fake_driver() {
    let cache = TempDir::new();
    let rt = runtime(&cache);
    assert_eq!(rt.driver_version().unwrap(), 13000);
    assert_eq!(rt.device_count().unwrap(), 4);
    let devices = rt.devices().unwrap();
    let h200 = &devices[0];
    assert_eq!(h200.name, "NVIDIA H200");
    assert_eq!(h200.ordinal, 0);
    assert_eq!(h200.capability, (9, 0));
    assert_eq!(h200.device_class, DeviceClass::MODERN);
    assert_eq!(h200.sm_count, 132);
    assert_eq!(h200.l2_bytes, 62914560);
    assert_eq!(h200.smem_optin_bytes, 232448);
    assert_eq!(h200.smem_per_sm_bytes, h200.smem_cap_bytes + 1024);
    assert!(h200.pdl_allowed && h200.clusters_allowed && !h200.untested);

    let a100 = &devices[1];
    assert_eq!((a100.name.as_str(), a100.capability), ("NVIDIA A100-SXM4-80GB", (8, 0)));
    assert_eq!(a100.device_class, DeviceClass::A100);
    assert!(!a100.pdl_allowed && !a100.clusters_allowed);

    assert_eq!(devices[2].device_class, DeviceClass::RTX);
    assert!(devices[2].untested, "rtx is untested in this release");

    let v100 = &devices[3];
    assert_eq!(v100.device_class, DeviceClass::UNSUPPORTED);
    assert_eq!(v100.smem_cap_bytes, 0);
    assert_eq!(rt.device_class(1).unwrap(), DeviceClass::A100);
    let error = rt.device_class(3).unwrap_err();
    assert_eq!(error.status(), Status::UNSUPPORTED_DEVICE);
    assert!(error.message().contains("Tesla V100-SXM2-16GB"), "{error}");

    let error = rt.device_info(4).unwrap_err();
    assert_eq!(error.status(), Status::NO_DEVICE, "{error}");
    // The runtime keeps its last error for hosts that cannot take one per call.
    assert_eq!(rt.last_error().unwrap().status(), Status::NO_DEVICE);
}

#[test]
fn without_a_driver_archives_still_work() {
    fake_driver();
    let cache = TempDir::new();
    let rt = Runtime::builder()
        .cuda_driver("/nonexistent/libcuda.so.1")
        .cache_dir(&cache.0)
        .no_embedded_archive()
        .log_level(LogLevel::OFF)
        .build()
        .unwrap();
    let error = rt.device_count().unwrap_err();
    assert_eq!(error.status(), Status::NO_DRIVER);
    assert!(error.message().contains("/nonexistent/libcuda.so.1"), "{error}");
    assert!(error.to_string().starts_with("SDM_ERROR_NO_DRIVER: "), "{error}");
    rt.mount_file(golden()).unwrap();
    assert_eq!(rt.archives().unwrap().len(), 1);
}

#[test]
fn mount_the_golden_archive() {
    let cache = TempDir::new();
    let rt = runtime(&cache);
    assert!(rt.archives().unwrap().is_empty());
    rt.mount_file(golden()).unwrap();
    let archives = rt.archives().unwrap();
    assert_eq!(archives.len(), 1);
    let a = &archives[0];
    assert!(a.label.ends_with("tests/golden/kernels.sdma"), "{}", a.label);
    assert_eq!(a.content_version, "tests.1");
    assert_eq!((a.entry_count, a.kernel_count), (11, 2));
    assert_eq!(a.kernel_abi, (1, 2));
    assert_eq!(a.format, (1, 0));
    assert!(!a.embedded);
    assert_eq!(a.size_bytes, std::fs::metadata(golden()).unwrap().len());
    assert_eq!(rt.archive(1).unwrap_err().status(), Status::NOT_FOUND);

    // From memory, with a label; later mounts come later in the list.
    let bytes = std::fs::read(golden()).unwrap();
    rt.mount_memory(&bytes, Some("in-memory copy")).unwrap();
    assert_eq!(rt.archives().unwrap()[1].label, "in-memory copy");
}

#[test]
fn the_kernels_of_the_golden_archive() {
    let cache = TempDir::new();
    let rt = mounted(&cache);
    let scale = rt.kernel(0, "scale").unwrap();
    let info = scale.info().unwrap();
    assert_eq!((info.name.as_str(), info.module.as_str()), ("scale", "kernels"));
    assert_eq!(info.signature, "ptr,f32,i32");
    assert!(info.archive.ends_with("kernels.sdma"), "{}", info.archive);
    assert_eq!(info.ordinal, 0);
    // The H200 (9.0) gets the sm_90 cubin as it is.
    assert_eq!(
        (info.image_kind, info.image_sm, info.loaded_sm, info.source),
        (ImageKind::CUBIN, 90, 90, ImageSource::ARCHIVE_CUBIN)
    );
    assert_eq!((info.image_kind.to_string(), info.source.to_string()), ("cubin".into(), "archive cubin".into()));
    // Numbers a newer libsdm may add survive, by name "unknown".
    assert_eq!((ImageKind(9).name(), ImageSource(9).name()), ("unknown", "unknown"));
    // Debug shows the names, not the numbers.
    assert_eq!(format!("{:?} {:?}", info.image_kind, info.source), "ImageKind(cubin) ImageSource(archive cubin)");
    assert_eq!(format!("{:?}", ImageKind(9)), "ImageKind(unknown 9)");
    assert!(!scale.function().unwrap().is_null());

    let axpy = rt.kernel(0, "axpy").unwrap();
    assert_eq!(axpy.info().unwrap().signature, "ptr,ptr,f32,i32");
    // The A100 gets its own cubin.
    assert_eq!(rt.kernel(1, "scale").unwrap().info().unwrap().image_sm, 80);

    let error = rt.kernel(0, "no_such_kernel").unwrap_err();
    assert_eq!(error.status(), Status::NOT_FOUND);
    assert!(error.message().contains("no_such_kernel"), "{error}");
    let error = rt.kernel(0, "nul\0inside").unwrap_err();
    assert_eq!(error.status(), Status::INVALID_ARGUMENT);

    rt.preload(0, &[]).unwrap();
    rt.preload(1, &["scale", "axpy"]).unwrap();
    assert_eq!(rt.preload(0, &["no_such_kernel"]).unwrap_err().status(), Status::NOT_FOUND);
}

#[test]
fn compressed_cubins_are_decoded_not_cached() {
    // Cubins under 64 KiB are decoded at each load, not cached (tests/cache.rs shows it serving a warm start).
    let cache = TempDir::new();
    let rt = mounted(&cache);
    rt.preload(0, &[]).unwrap();
    let stats = rt.cache_stats().unwrap();
    assert_eq!((stats.builds, stats.bytes_written, stats.hits), (0, 0, 0), "{stats:?}");
}

#[test]
fn the_signature_check() {
    let cache = TempDir::new();
    let rt = mounted(&cache);
    rt.kernel_checked(0, "scale", "ptr, f32, i32").unwrap();
    let error = rt.kernel_checked(0, "scale", "ptr,i32").unwrap_err();
    assert_eq!(error.status(), Status::MISMATCH);
    assert!(error.message().contains("ptr,f32,i32") && error.message().contains("ptr,i32"), "{error}");
}

#[test]
fn a_corrupt_archive_file_is_an_error_naming_the_file() {
    let cache = TempDir::new();
    let rt = runtime(&cache);
    let corrupt = repo().join("tests/golden/corrupt");
    // Damage to the header, index or framing is found at mount; damage inside one payload only
    // when that image loads (each file's .expect holds the words its error must contain).
    let found_at_mount = [
        ("header-flip", Status::ARCHIVE_CORRUPT),
        ("index-flip", Status::ARCHIVE_CORRUPT),
        ("truncated", Status::ARCHIVE_CORRUPT),
        ("trailing-bytes", Status::ARCHIVE_CORRUPT),
        ("text-mode", Status::ARCHIVE_CORRUPT),
        ("duplicate", Status::ARCHIVE_CORRUPT),
        ("newer-major", Status::ARCHIVE_UNSUPPORTED),
        ("unknown-feature", Status::ARCHIVE_UNSUPPORTED),
    ];
    for (name, status) in found_at_mount {
        let path = corrupt.join(format!("{name}.sdma"));
        let expect = std::fs::read_to_string(corrupt.join(format!("{name}.expect"))).unwrap();
        let error = rt.mount_file(&path).unwrap_err();
        assert_eq!(error.status(), status, "{error}");
        assert!(error.message().contains(path.to_str().unwrap()), "the message names the file: {error}");
        assert!(error.message().contains(expect.trim()), "{error} lacks {expect:?}");
        assert_eq!(error.native(), 0);
    }
    assert!(rt.archives().unwrap().is_empty(), "nothing damaged was mounted");

    let missing = repo().join("tests/golden/no-such-archive.sdma");
    let error = rt.mount_file(&missing).unwrap_err();
    assert_eq!(error.status(), Status::IO);
    assert!(error.message().contains("no-such-archive.sdma"), "{error}");
    // From memory the label names it.
    let bytes = std::fs::read(corrupt.join("header-flip.sdma")).unwrap();
    let error = rt.mount_memory(&bytes, Some("my-label")).unwrap_err();
    assert_eq!(error.status(), Status::ARCHIVE_CORRUPT);
    assert!(error.message().contains("my-label"), "{error}");
}

#[test]
fn a_kernel_abi_major_the_archive_does_not_declare_is_refused() {
    fake_driver();
    let cache = TempDir::new();
    let rt = Runtime::builder().cache_dir(&cache.0).no_embedded_archive().kernel_abi_major(2).build().unwrap();
    let error = rt.mount_file(golden()).unwrap_err();
    assert_eq!(error.status(), Status::MISMATCH, "{error}");
}

/// A quiet builder on the fake driver, without the embedded archive, of signature policy `policy`.
fn checking(cache: &TempDir, policy: SignaturePolicy) -> RuntimeBuilder {
    Runtime::builder()
        .cuda_driver(fake_driver())
        .cache_dir(&cache.0)
        .no_embedded_archive()
        .log_level(LogLevel::OFF)
        .signature_policy(policy)
}

#[test]
fn the_signature_policy_refuses_an_unsigned_archive() {
    let cache = TempDir::new();
    let rt = match checking(&cache, SignaturePolicy::REQUIRE).trusted_keys(&[]).build() {
        // A libsdm built without libsodium refuses the policy: it cannot check signatures.
        Err(error) if error.status() == Status::UNSUPPORTED && error.message().contains("libsodium") => return,
        built => built.unwrap(),
    };
    // The golden archive is not signed.
    let error = rt.mount_file(golden()).unwrap_err();
    assert_eq!(error.status(), Status::UNTRUSTED, "{error}");
    assert_eq!(Status::UNTRUSTED.name(), "SDM_ERROR_UNTRUSTED");
    for piece in [golden().to_str().unwrap(), "is not signed", "it trusts no key"] {
        assert!(error.message().contains(piece), "{error} lacks {piece:?}");
    }
    let bytes = std::fs::read(golden()).unwrap();
    assert_eq!(rt.mount_memory(&bytes, Some("golden copy")).unwrap_err().status(), Status::UNTRUSTED);
    assert!(rt.archives().unwrap().is_empty());

    // The keys given are the ones trusted: the refusal names each by its id (the first 8 bytes of
    // BLAKE2b-256 of "sdm key id 1" and the key, docs/SIGNING.md).
    let rt = checking(&cache, SignaturePolicy::REQUIRE).trusted_keys(&[[1u8; 32]]).build().unwrap();
    let error = rt.mount_file(golden()).unwrap_err();
    assert!(error.message().contains("it trusts 3bf080b61db0f86b"), "{error}");

    // WARN mounts it and says why in the log.
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&lines);
    let rt = checking(&cache, SignaturePolicy::WARN)
        .trusted_keys(&[])
        .log_level(LogLevel::WARN)
        .log(move |_, message| sink.lock().unwrap().push(message.to_owned()))
        .build()
        .unwrap();
    rt.mount_file(golden()).unwrap();
    assert_eq!(rt.archives().unwrap().len(), 1);
    assert!(lines.lock().unwrap().iter().any(|line| line.contains("is not signed")), "{lines:?}");
}

#[test]
fn an_unknown_signature_policy_and_too_many_keys_are_refused() {
    let cache = TempDir::new();
    let error = checking(&cache, SignaturePolicy(7)).build().unwrap_err();
    assert_eq!(error.status(), Status::INVALID_ARGUMENT, "{error}");
    assert!(error.message().contains("signature_policy 7"), "{error}");
    // Checked whatever the policy, so also in a libsdm built without libsodium.
    let error = checking(&cache, SignaturePolicy::OFF).trusted_keys(&[[0u8; 32]; 257]).build().unwrap_err();
    assert_eq!(error.status(), Status::INVALID_ARGUMENT, "{error}");
    assert!(error.message().contains("trusted_key_count is 257"), "{error}");
    // OFF mounts an unsigned archive, as before ABI 1.2.
    checking(&cache, SignaturePolicy::OFF).build().unwrap().mount_file(golden()).unwrap();
}

// Generic over the handle, as a host's helper taking either kind of kernel is.
fn select<R: Deref<Target = Runtime>>(kernel: &KernelHandle<R>, n: i64) -> Plan {
    kernel.plan(&[n]).unwrap_or_else(|error| panic!("plan for {n}: {error}"))
}

#[test]
fn plan_select() {
    let cache = TempDir::new();
    let rt = mounted(&cache);
    let scale = rt.kernel(0, "scale").unwrap();
    let p = select(&scale, 1 << 20);
    assert_eq!((p.grid, p.block, p.smem_bytes), (1056, 256, 0));
    assert!(p.pdl());
    assert_eq!(p.cluster, [1, 1, 1]);
    assert_eq!((p.blocks_per_sm, p.occupancy, p.rule), (8, 8, 0));
    // Every dimension named (ABI 1.3: y and z of 1), no priority.
    assert_eq!((p.grid_y, p.grid_z, p.block_y, p.block_z, p.priority), (1, 1, 1, 1, 0));
    // Past a quarter of L2: clusters of two.
    let big = select(&scale, 1 << 25);
    assert_eq!((big.rule, big.cluster, big.block, big.grid), (1, [2, 1, 1], 1024, 32768));
    // The A100's rule.
    let a100 = select(&rt.kernel(1, "scale").unwrap(), 1 << 20);
    assert_eq!((a100.grid, a100.flags, a100.occupancy), (8192, 0, 16));
    // A kernel without rules.
    let error = rt.kernel(0, "axpy").unwrap().plan(&[1]).unwrap_err();
    assert_eq!(error.status(), Status::NOT_FOUND);
    assert!(error.message().contains("kernel axpy has no launch plans"), "{error}");
}

#[test]
fn launch_with_raw_device_pointers() {
    let cache = TempDir::new();
    let rt = mounted(&cache);
    let scale = rt.kernel(0, "scale").unwrap();
    let plan = select(&scale, 1 << 20);
    let y: sdm::DevicePtr = 0x7f00_0000_0000; // the fake driver runs nothing
    let factor = 2.0f32;
    let n = 1i32 << 20;
    unsafe { scale.launch(&plan, std::ptr::null_mut(), &[sdm::arg(&y), sdm::arg(&factor), sdm::arg(&n)]) }.unwrap();
    let error = unsafe { scale.launch(&plan, std::ptr::null_mut(), &[sdm::arg(&y), sdm::arg(&factor)]) }.unwrap_err();
    assert_eq!(error.status(), Status::INVALID_ARGUMENT);
    assert!(error.message().contains("kernel scale takes 3 argument(s) (ptr,f32,i32), not 2"), "{error}");
    // A block past the device's limit: sdm refuses it before the driver (ABI 1.3), naming the dimension.
    let bad = Plan { block: 2048, ..plan };
    let error = unsafe { scale.launch(&bad, std::ptr::null_mut(), &[sdm::arg(&y), sdm::arg(&factor), sdm::arg(&n)]) }
        .unwrap_err();
    assert_eq!(error.status(), Status::INVALID_ARGUMENT);
    assert!(error.message().contains("block x of 2048 (1..1024)"), "{error}");
    // A plan the driver refuses (more dynamic shared memory than the H200's opt-in 232,448 B):
    // the CUresult comes along.
    let bad = Plan { smem_bytes: 300_000, ..plan };
    let error = unsafe { scale.launch(&bad, std::ptr::null_mut(), &[sdm::arg(&y), sdm::arg(&factor), sdm::arg(&n)]) }
        .unwrap_err();
    assert_eq!(error.status(), Status::DRIVER);
    assert!(error.message().contains("CUDA_ERROR_INVALID_VALUE"), "{error}");
    assert_eq!(error.native(), 1, "CUDA_ERROR_INVALID_VALUE");
}

#[test]
fn the_log_callback_receives_messages() {
    let cache = TempDir::new();
    let lines = Arc::new(Mutex::new(Vec::<(LogLevel, String)>::new()));
    let sink = Arc::clone(&lines);
    let rt = Runtime::builder()
        .cuda_driver(fake_driver())
        .cache_dir(&cache.0)
        .no_embedded_archive()
        .log_level(LogLevel::DEBUG)
        .log(move |level, message| sink.lock().unwrap().push((level, message.to_owned())))
        .build()
        .unwrap();
    rt.mount_file(golden()).unwrap();
    rt.kernel(0, "scale").unwrap();
    let _ = rt.mount_file(repo().join("tests/golden/corrupt/header-flip.sdma"));
    drop(rt);
    let lines = lines.lock().unwrap();
    assert!(!lines.is_empty(), "debug logging said nothing");
    assert!(lines.iter().all(|(level, _)| (LogLevel::ERROR..=LogLevel::DEBUG).contains(level)));
    assert!(lines.iter().any(|(_, line)| line.contains("kernels.sdma")), "{lines:?}");
}

#[test]
fn a_panicking_log_function_does_not_unwind_into_libsdm() {
    let cache = TempDir::new();
    let rt = Runtime::builder()
        .cuda_driver(fake_driver())
        .cache_dir(&cache.0)
        .no_embedded_archive()
        .log_level(LogLevel::DEBUG)
        .log(|_, _| panic!("a broken log function"))
        .build()
        .unwrap();
    rt.mount_file(golden()).unwrap();
    rt.kernel(0, "scale").unwrap();
}

// A new version is written beside the mounted file and renamed over it, as docs/LOADING.md asks:
// the mounted file is mapped, and writing it in place changes bytes sdm already checked.
fn replace(from: &std::path::Path, to: &std::path::Path) {
    let next = to.with_extension("sdma.new");
    std::fs::copy(from, &next).unwrap();
    std::fs::rename(&next, to).unwrap();
}

#[test]
fn reload_keeps_the_old_version_when_the_new_one_is_damaged() {
    let cache = TempDir::new();
    let dir = TempDir::new();
    let file = dir.0.join("kernels.sdma");
    std::fs::copy(golden(), &file).unwrap();
    let rt = runtime(&cache);
    rt.mount_file(&file).unwrap();
    let kernel = rt.kernel(0, "scale").unwrap();
    assert_eq!(rt.poll_archives().unwrap(), 0, "nothing changed");
    replace(&repo().join("tests/golden/corrupt/header-flip.sdma"), &file);
    let error = rt.reload().unwrap_err();
    assert_eq!(error.status(), Status::ARCHIVE_CORRUPT);
    assert!(error.message().contains(file.to_str().unwrap()), "{error}");
    // The old version still serves.
    assert_eq!(kernel.info().unwrap().name, "scale");
    assert_eq!(rt.kernel(0, "axpy").unwrap().info().unwrap().name, "axpy");
    // A good new version replaces it.
    replace(&golden(), &file);
    rt.reload().unwrap();
    assert_eq!(rt.archives().unwrap().len(), 1);
    drop(kernel); // releases the reference on the old module
    select(&rt.kernel(0, "scale").unwrap(), 1 << 20);
}

#[test]
fn a_runtime_is_shared_between_threads() {
    let cache = TempDir::new();
    let rt = mounted(&cache);
    std::thread::scope(|scope| {
        for t in 0..4 {
            let rt = &rt;
            scope.spawn(move || {
                for i in 0..50 {
                    let ordinal = (t + i) % 2;
                    let kernel = rt.kernel(ordinal, if i % 2 == 0 { "scale" } else { "axpy" }).unwrap();
                    assert_eq!(kernel.info().unwrap().ordinal, ordinal);
                }
            });
        }
    });
}

#[test]
fn an_owned_kernel_is_kept_beside_its_runtime_and_moved_to_threads() {
    fn send_sync_static<T: Send + Sync + 'static>() {}
    send_sync_static::<OwnedKernel>();
    send_sync_static::<Kernel<'static>>();

    /// What a host keeps: the runtime and kernels fetched from it, in one struct.
    struct Host {
        runtime: Arc<Runtime>,
        scale: OwnedKernel,
    }
    let cache = TempDir::new();
    let runtime = Arc::new(mounted(&cache));
    let host = Host { scale: runtime.owned_kernel_checked(0, "scale", "ptr,f32,i32").unwrap(), runtime };
    assert!(Arc::ptr_eq(host.scale.runtime(), &host.runtime));
    assert_eq!(host.runtime.owned_kernel_checked(0, "scale", "ptr").unwrap_err().status(), Status::MISMATCH);

    let workers: Vec<_> = (0..2)
        .map(|ordinal| {
            let kernel = host.runtime.owned_kernel(ordinal, "scale").unwrap();
            std::thread::spawn(move || {
                let plan = select(&kernel, 1 << 20);
                let (y, factor, n): (sdm::DevicePtr, f32, i32) = (0x7f00_0000_0000, 2.0, 1 << 20);
                // SAFETY: the fake driver runs nothing.
                unsafe { kernel.launch(&plan, std::ptr::null_mut(), &[sdm::arg(&y), sdm::arg(&factor), sdm::arg(&n)]) }
                    .unwrap();
                kernel.info().unwrap().ordinal
            })
        })
        .collect();
    let ordinals: Vec<i32> = workers.into_iter().map(|worker| worker.join().unwrap()).collect();
    assert_eq!(ordinals, [0, 1]);

    // The last owner keeps the runtime: dropped before its kernel, it is destroyed after it.
    let Host { runtime, scale } = host;
    drop(runtime);
    assert_eq!(scale.info().unwrap().name, "scale");
    assert_eq!(Arc::strong_count(scale.runtime()), 1);
}

#[test]
fn a_plugin_that_cannot_be_loaded_is_an_error_naming_it() {
    let cache = TempDir::new();
    let rt = runtime(&cache);
    // SAFETY: nothing is loaded: the file does not exist.
    let error = unsafe { rt.load_plugin("/nonexistent/libsdm_plugin.so") }.unwrap_err();
    assert!(error.message().contains("/nonexistent/libsdm_plugin.so"), "{error}");
}

// ---- an engine's loader (ABI 1.5) ----

#[test]
fn unmount_and_footprint() {
    let cache = TempDir::new();
    let rt = runtime(&cache);
    let bytes = std::fs::read(golden()).unwrap();
    rt.mount_memory(&bytes, Some("from memory")).unwrap();
    let before = rt.footprint().unwrap();
    assert!(before.archive_memory_bytes >= bytes.len() as u64, "{before:?}");
    assert_eq!(before.module_count, 0);
    let k = rt.kernel(0, "scale").unwrap();
    let loaded = rt.footprint().unwrap();
    assert_eq!(loaded.module_count, 1);
    assert!(loaded.device_bytes > 0, "{loaded:?}");
    let e = rt.unmount("elsewhere").unwrap_err();
    assert_eq!(e.status(), Status::NOT_FOUND, "{e}");
    assert!(e.message().contains("elsewhere"), "{e}");
    assert_eq!(rt.unmount("from memory").unwrap(), 1);
    assert!(rt.archives().unwrap().is_empty());
    drop(k); // the unmounted archive's module goes with its last reference
    assert_eq!(rt.footprint().unwrap().module_count, 0);
}

#[test]
fn preload_async() {
    let cache = TempDir::new();
    let rt = mounted(&cache);
    let warmup = rt.preload_async(0, &["scale"], 2).unwrap();
    warmup.wait(std::time::Duration::from_secs(60)).unwrap();
    let (done, total) = warmup.progress().unwrap();
    assert!(total > 0 && done == total, "{done} of {total}");
    warmup.wait(std::time::Duration::ZERO).unwrap(); // the outcome again
    warmup.cancel().unwrap(); // finished: nothing changes
    drop(warmup);
    let failing = rt.preload_async(0, &["nonexistent"], 0).unwrap();
    let e = failing.wait(std::time::Duration::from_secs(60)).unwrap_err();
    assert_eq!(e.status(), Status::NOT_FOUND, "{e}");
    assert!(e.message().contains("nonexistent"), "{e}");
    let everything = rt.preload_async(0, &[], 0).unwrap();
    everything.wait(std::time::Duration::from_secs(60)).unwrap();
    drop(rt); // the warm-up outlives its runtime and still answers
    everything.wait(std::time::Duration::ZERO).unwrap();
}
