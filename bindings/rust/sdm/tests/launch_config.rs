// ABI 1.3 through the safe bindings and the fake CUDA driver (tests/fake_cuda), on a user's
// kernels as `sdm import` archives them (tests/data/launch.sm_90.cubin, from launch.cu): 3-D and
// cooperative launches, priorities and launch attributes, plans for kernels without rules, module
// globals, C++ kernel names, derived signatures and the kernel listing. run_tests.sh sets
// $SDM_CUDA_DRIVER to the fake and $SDM_TOOL to the build's sdm tool.
//
// A process of its own (cargo runs each file of tests/ as one), so that its devices can include
// one without cooperative launches. The fake's last launch and call counters are process-wide:
// every test holds SERIAL, so that they read their own.
use sdm::{KernelSetting, LaunchAttribute, LogLevel, Plan, Runtime, Status};
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

const DEVICES: &str = "NVIDIA H200,9.0,232448,132,62914560;\
                       NVIDIA H200 (no cooperative launch),9.0,232448,132,62914560";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..").canonicalize().unwrap()
}

fn fake_driver() -> PathBuf {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var("SDM_FAKE_CUDA_DEVICES", DEVICES);
        std::env::set_var("SDM_FAKE_CUDA_VERSION", "13000");
        std::env::set_var("SDM_FAKE_CUDA_FAIL", "");
        std::env::set_var("SDM_FAKE_CUDA_MISSING", "");
        // Each launch's parameter buffer (last_params): every launch here passes what the image takes.
        std::env::set_var("SDM_FAKE_CUDA_RECORD_PARAMS", "1");
    });
    PathBuf::from(
        std::env::var_os("SDM_CUDA_DRIVER")
            .expect("set SDM_CUDA_DRIVER to build/tests/fake_cuda/libcuda_fake.so (run_tests.sh does)"),
    )
}

/// This process's scratch directory (the archive, the kernel cache): beside $SDM_CACHE_DIR, in the
/// temporary directory run_tests.sh removes when it ends; else in the system's.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let name = format!("sdm-rust-launch-{}", std::process::id());
        let dir = match std::env::var_os("SDM_CACHE_DIR") {
            Some(cache) => PathBuf::from(cache).with_file_name(name),
            None => std::env::temp_dir().join(name),
        };
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// tests/data/launch.sm_90.cubin as `sdm import` archives it (signatures derived from the image),
/// made once per process with $SDM_TOOL.
fn launch_archive() -> &'static Path {
    static ARCHIVE: OnceLock<PathBuf> = OnceLock::new();
    ARCHIVE.get_or_init(|| {
        let tool = std::env::var_os("SDM_TOOL").expect("set SDM_TOOL to build/tools/sdm (run_tests.sh does)");
        let archive = scratch().join("launch.sdma");
        let status = Command::new(&tool)
            .arg("import")
            .arg(repo().join("tests/data/launch.sm_90.cubin"))
            .arg("-o")
            .arg(&archive)
            .arg("-q")
            .status()
            .unwrap_or_else(|error| panic!("running {}: {error}", Path::new(&tool).display()));
        assert!(status.success(), "sdm import failed: {status}");
        archive
    })
}

fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A quiet runtime on the fake driver with the launch archive mounted, its cache in the scratch
/// directory.
fn runtime() -> Runtime {
    let rt = Runtime::builder()
        .cuda_driver(fake_driver())
        .cache_dir(scratch().join("cache"))
        .no_embedded_archive()
        .log_level(LogLevel::OFF)
        .build()
        .expect("a runtime on the fake driver");
    rt.mount_file(launch_archive()).unwrap();
    rt
}

// ---- the fake driver's test helpers (tests/fake_cuda/sdm_fake_cuda.h), through dlsym ----

#[repr(C)]
#[derive(Default, Debug)]
struct FakeLaunch {
    grid: [u32; 3],
    block: [u32; 3],
    smem_bytes: u32,
    cluster: [u32; 3],
    cooperative: i32,
    priority: i32,
    pdl: i32,
    attribute_count: u32,
    attribute_ids: [i32; 32],
    stream: usize,
}

extern "C" {
    fn dlopen(path: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

/// `name` of the fake driver libsdm loaded (dlopen of the same path gives the same library).
fn fake_symbol(name: &str) -> *mut c_void {
    let path = CString::new(fake_driver().as_os_str().as_encoded_bytes()).unwrap();
    let name = CString::new(name).unwrap();
    // SAFETY: valid strings; RTLD_NOW (2). The library is the test build's fake driver.
    let handle = unsafe { dlopen(path.as_ptr(), 2) };
    assert!(!handle.is_null(), "dlopen of the fake driver");
    // SAFETY: a live handle and a valid string.
    let symbol = unsafe { dlsym(handle, name.as_ptr()) };
    assert!(!symbol.is_null(), "the fake driver has no {name:?}");
    symbol
}

/// The last launch the fake driver took.
fn last_launch() -> FakeLaunch {
    let f: extern "C" fn(*mut FakeLaunch) -> i32 =
        // SAFETY: sdm_fake_cuda_last_launch's type, as sdm_fake_cuda.h declares it.
        unsafe { std::mem::transmute(fake_symbol("sdm_fake_cuda_last_launch")) };
    let mut launch = FakeLaunch::default();
    assert_eq!(f(&mut launch), 0, "the fake driver saw no launch");
    launch
}

/// Calls of the driver's `entry` since the last cuInit.
fn fake_calls(entry: &str) -> i64 {
    let f: extern "C" fn(*const c_char) -> i64 =
        // SAFETY: sdm_fake_cuda_calls's type, as sdm_fake_cuda.h declares it.
        unsafe { std::mem::transmute(fake_symbol("sdm_fake_cuda_calls")) };
    let entry = CString::new(entry).unwrap();
    f(entry.as_ptr())
}

const CU_LAUNCH_ATTRIBUTE_COOPERATIVE: u32 = 2;
const CU_LAUNCH_ATTRIBUTE_PRIORITY: u32 = 8;
const CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: u32 = 10;

fn assert_error(result: sdm::Result<impl std::fmt::Debug>, status: Status, pieces: &[&str]) -> sdm::Error {
    let error = result.expect_err("an error");
    assert_eq!(error.status(), status, "{error}");
    for piece in pieces {
        assert!(error.message().contains(piece), "{error} lacks {piece:?}");
    }
    error
}

// ---- launches ----

#[test]
fn plans_in_three_dimensions() {
    let plan = Plan::new([7, 7, 1], [16, 16, 1]);
    assert_eq!((plan.grid, plan.grid_y, plan.grid_z, plan.block, plan.block_y, plan.block_z), (7, 7, 1, 16, 16, 1));
    assert_eq!((plan.blocks(), plan.threads_per_block(), plan.rule, plan.cluster), (49, 256, -1, [1, 1, 1]));
    assert!(!plan.cooperative() && !plan.pdl());
    // A plan of the 1.1 fields alone: y and z of 0 read as 1.
    let flat = Plan { grid: 3, block: 64, ..Plan::default() };
    assert_eq!((flat.grid_dims(), flat.block_dims()), ([3, 1, 1], [64, 1, 1]));
    let plan = plan.with_cooperative(true).with_pdl(true).with_priority(-2).with_smem_bytes(512);
    assert_eq!(plan.flags, Plan::COOPERATIVE | Plan::PDL);
    assert!(plan.cooperative() && plan.pdl());
    assert_eq!((plan.priority, plan.smem_bytes), (-2, 512));
    assert_eq!(plan.with_cooperative(false).flags, Plan::PDL);
}

#[test]
fn a_three_dimensional_launch_reaches_the_driver() {
    let _serial = serial();
    let rt = runtime();
    let matmul = rt.kernel_checked(0, "matmul_tiled", "ptr,ptr,ptr,i32").unwrap();
    let (a, n): (sdm::DevicePtr, i32) = (0x7f00_0000_0000, 100); // the fake driver runs nothing
    let args = [sdm::arg(&a), sdm::arg(&a), sdm::arg(&a), sdm::arg(&n)];
    // SAFETY: the fake driver runs nothing.
    unsafe { matmul.launch(&Plan::new([7, 7, 1], [16, 16, 1]), std::ptr::null_mut(), &args) }.unwrap();
    let launch = last_launch();
    assert_eq!((launch.grid, launch.block, launch.attribute_count), ([7, 7, 1], [16, 16, 1], 0), "{launch:?}");

    // Three dimensions everywhere, a cluster in y, a priority.
    let plan = Plan::new([4, 6, 3], [8, 4, 2]).with_cluster([1, 2, 1]).with_priority(-3);
    // SAFETY: as above.
    unsafe { matmul.launch(&plan, std::ptr::null_mut(), &args) }.unwrap();
    let launch = last_launch();
    assert_eq!((launch.grid, launch.block, launch.cluster), ([4, 6, 3], [8, 4, 2], [1, 2, 1]), "{launch:?}");
    assert_eq!((launch.priority, launch.cooperative), (-3, 0), "{launch:?}");

    // Out of range: refused before the driver, naming the dimension and its limit.
    let launched = fake_calls("cuLaunchKernelEx");
    for (plan, why) in [
        (Plan::new([1, 65536, 1], [16, 1, 1]), "grid y of 65536 (1..65535)"),
        (Plan::new([1, 1, 1], [1, 1, 65]), "block z of 65 (1..64)"),
        (Plan::new([1, 1, 1], [32, 32, 2]), "block 32x32x2 of 2048 threads (at most 1024)"),
        (Plan::new([1, 1, 1], [16, 1, 1]).with_priority(3), "launch priority 3 is outside the context's range -5"),
    ] {
        // SAFETY: as above.
        assert_error(unsafe { matmul.launch(&plan, std::ptr::null_mut(), &args) }, Status::INVALID_ARGUMENT, &[why]);
    }
    assert_eq!(fake_calls("cuLaunchKernelEx"), launched);
}

#[test]
fn a_cooperative_launch_runs_when_the_grid_fits_and_is_refused_when_it_cannot_be_resident() {
    let _serial = serial();
    let rt = runtime();
    let grid_sum = rt.kernel(0, "grid_sum").unwrap();
    let (partial, total): (sdm::DevicePtr, sdm::DevicePtr) = (0x7f00_0000_0000, 0x7f00_0001_0000);
    let args = [sdm::arg(&partial), sdm::arg(&total)];
    // The fake's model: 8 blocks of 256 threads per SM, 132 SMs.
    let fits = Plan::new([132 * 8, 1, 1], [256, 1, 1]).with_cooperative(true);
    // SAFETY: the fake driver runs nothing.
    unsafe { grid_sum.launch(&fits, std::ptr::null_mut(), &args) }.unwrap();
    let launch = last_launch();
    assert_eq!((launch.cooperative, launch.grid[0]), (1, 1056), "{launch:?}");
    assert_eq!(launch.attribute_ids[..launch.attribute_count as usize], [CU_LAUNCH_ATTRIBUTE_COOPERATIVE as i32]);

    let launched = fake_calls("cuLaunchKernelEx");
    let too_large = Plan { grid: 132 * 8 + 1, ..fits };
    // SAFETY: as above.
    assert_error(
        unsafe { grid_sum.launch(&too_large, std::ptr::null_mut(), &args) },
        Status::INVALID_ARGUMENT,
        &[
            "kernel grid_sum cannot launch cooperatively with grid 1057, block 256",
            "its 1057 blocks cannot all be resident on device 0 (NVIDIA H200)",
            "launch at most 1056 blocks",
        ],
    );
    // In two dimensions the product counts.
    let square = Plan::new([33, 33, 1], [256, 1, 1]).with_cooperative(true);
    // SAFETY: as above.
    assert_error(
        unsafe { grid_sum.launch(&square, std::ptr::null_mut(), &args) },
        Status::INVALID_ARGUMENT,
        &["its 1089 blocks cannot all be resident"],
    );
    assert_eq!(fake_calls("cuLaunchKernelEx"), launched, "nothing refused reached the driver");
    // Without the flag the same grid is the host's business: it launches.
    // SAFETY: as above.
    unsafe { grid_sum.launch(&too_large.with_cooperative(false), std::ptr::null_mut(), &args) }.unwrap();

    // A device without cooperative launches.
    let other = rt.kernel(1, "grid_sum").unwrap();
    // SAFETY: as above.
    assert_error(
        unsafe { other.launch(&Plan::new([4, 1, 1], [32, 1, 1]).with_cooperative(true), std::ptr::null_mut(), &args) },
        Status::INVALID_ARGUMENT,
        &["cannot launch cooperatively on device 1", "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0"],
    );
}

#[test]
fn launch_attributes_follow_sdms_own() {
    let _serial = serial();
    let rt = runtime();
    let k = rt.kernel(0, "scale_by_table").unwrap();
    let (a, n): (sdm::DevicePtr, i32) = (0x7f00_0000_0000, 1);
    let args = [sdm::arg(&a), sdm::arg(&a), sdm::arg(&n)];
    let plan = Plan::new([2, 1, 1], [32, 1, 1]).with_priority(-1);
    let domain = LaunchAttribute::int(CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, 1); // CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
    assert_eq!(std::mem::size_of::<LaunchAttribute>(), 72, "sizeof(CUlaunchAttribute)");
    // SAFETY: the fake driver runs nothing; the attribute's value is an int.
    unsafe { k.launch_with_attributes(&plan, std::ptr::null_mut(), &args, &[domain]) }.unwrap();
    let launch = last_launch();
    assert_eq!(
        launch.attribute_ids[..launch.attribute_count as usize],
        [CU_LAUNCH_ATTRIBUTE_PRIORITY as i32, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN as i32]
    );
    // No attributes: a plain launch.
    // SAFETY: as above.
    unsafe { k.launch_with_attributes(&plan, std::ptr::null_mut(), &args, &[]) }.unwrap();
    assert_eq!(last_launch().attribute_count, 1);
    // One a plan field sets is refused; so are too many, and a value past the union.
    let cooperative = LaunchAttribute::int(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1);
    // SAFETY: as above.
    assert_error(
        unsafe { k.launch_with_attributes(&plan, std::ptr::null_mut(), &args, &[domain, cooperative]) },
        Status::INVALID_ARGUMENT,
        &["launch attribute 2 in sdm_launch_attributes is one sdm_plan sets"],
    );
    // SAFETY: as above.
    assert_error(
        unsafe { k.launch_with_attributes(&plan, std::ptr::null_mut(), &args, &[domain; 17]) },
        Status::INVALID_ARGUMENT,
        &["at most 16"],
    );
    assert_error(LaunchAttribute::new(10, &[0; 65]), Status::INVALID_ARGUMENT, &["a value of 65 bytes"]);
    assert_eq!(LaunchAttribute::new(10, &1i32.to_ne_bytes()).unwrap(), domain);
}

#[test]
fn a_plan_for_elements() {
    let _serial = serial();
    let rt = runtime();
    let k = rt.kernel(0, "scale_by_table").unwrap();
    let plan = k.plan_for_elements(1_000_000, 0).unwrap();
    // The fake's suggestion: the largest block of the most resident threads.
    assert_eq!((plan.block, plan.grid), (1024, 977)); // ceil(1000000 / 1024)
    assert_eq!((plan.grid_dims(), plan.block_dims()), ([977, 1, 1], [1024, 1, 1]));
    assert_eq!((plan.grid_y, plan.grid_z, plan.block_y, plan.block_z), (1, 1, 1, 1));
    assert_eq!((plan.rule, plan.occupancy), (-1, 2));
    let (a, n): (sdm::DevicePtr, i32) = (0x7f00_0000_0000, 1_000_000);
    // SAFETY: the fake driver runs nothing.
    unsafe { k.launch(&plan, std::ptr::null_mut(), &[sdm::arg(&a), sdm::arg(&a), sdm::arg(&n)]) }.unwrap();
    assert_eq!((last_launch().grid, last_launch().block), ([977, 1, 1], [1024, 1, 1]));
    assert_error(k.plan_for_elements(0, 0), Status::INVALID_ARGUMENT, &["a plan for 0 elements"]);
    assert_error(
        k.plan_for_elements(1 << 62, 0),
        Status::INVALID_ARGUMENT,
        &["blocks, over the grid's 2147483647 in x"],
    );
    assert_error(k.plan_for_elements(10, 300_000), Status::INVALID_ARGUMENT, &["300000 B of dynamic shared memory"]);
}

// ---- attributes, settings and occupancy (ABI 1.4) ----

#[test]
fn attributes_are_the_drivers() {
    let _serial = serial();
    let rt = runtime();
    let k = rt.kernel(0, "scale_by_table").unwrap();
    let a = k.attributes().unwrap();
    // The fake's fixed answers (tests/fake_cuda/fake_cuda.cpp), each distinct.
    assert_eq!(
        (a.max_threads_per_block, a.shared_size_bytes, a.const_size_bytes, a.local_size_bytes, a.num_regs),
        (1024, 0, 136, 24, 32)
    );
    assert_eq!((a.ptx_version, a.binary_version, a.cache_mode_ca), (90, 90, 1));
    assert_eq!((a.max_dynamic_shared_size_bytes, a.preferred_shared_memory_carveout), (49152, -1));
    assert!(a.has_cluster);
    assert_eq!((a.required_cluster_width, a.required_cluster_height, a.required_cluster_depth), (2, 3, 4));
    assert_eq!((a.non_portable_cluster_size_allowed, a.cluster_scheduling_policy_preference), (5, 6));
}

#[test]
fn settings_are_set_refused_and_survive_a_reload() {
    let _serial = serial();
    let path = scratch().join("reloaded.sdma");
    std::fs::copy(launch_archive(), &path).unwrap();
    let rt = Runtime::builder()
        .cuda_driver(fake_driver())
        .cache_dir(scratch().join("cache"))
        .no_embedded_archive()
        .log_level(LogLevel::OFF)
        .build()
        .unwrap();
    rt.mount_file(&path).unwrap();
    let old = rt.kernel(0, "scale_by_table").unwrap();
    let sets = fake_calls("cuFuncSetAttribute");
    old.set(KernelSetting::MAX_DYNAMIC_SHARED_BYTES, 65536).unwrap();
    old.set(KernelSetting::PREFERRED_CARVEOUT, 25).unwrap();
    assert_eq!(fake_calls("cuFuncSetAttribute"), sets + 2);
    assert_error(
        old.set(KernelSetting::MAX_DYNAMIC_SHARED_BYTES, 232_449),
        Status::INVALID_ARGUMENT,
        &["232449 B is outside 0 .. 232448 B", "static shared memory"],
    );
    assert_error(old.set(KernelSetting::PREFERRED_CARVEOUT, 101), Status::INVALID_ARGUMENT, &["carveout of 101"]);
    assert_eq!(fake_calls("cuFuncSetAttribute"), sets + 2);
    // Another version of the archive: the same cubin, another archive version.
    let incoming = scratch().join("incoming.sdma");
    let status = Command::new(std::env::var_os("SDM_TOOL").unwrap())
        .arg("import")
        .arg(repo().join("tests/data/launch.sm_90.cubin"))
        .arg("-o")
        .arg(&incoming)
        .args(["-q", "--archive-version", "2"])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::rename(&incoming, &path).unwrap();
    assert_eq!(rt.reload().unwrap(), 1);
    let sets = fake_calls("cuFuncSetAttribute");
    let fresh = rt.kernel(0, "scale_by_table").unwrap();
    assert_eq!(fake_calls("cuFuncSetAttribute"), sets + 2, "the recorded settings, given at the fetch");
    let a = fresh.attributes().unwrap();
    assert_eq!((a.max_dynamic_shared_size_bytes, a.preferred_shared_memory_carveout), (65536, 25));
    let other = rt.kernel(0, "grid_sum").unwrap().attributes().unwrap();
    assert_eq!(other.max_dynamic_shared_size_bytes, 49152);
}

#[test]
fn occupancy_is_the_drivers() {
    let _serial = serial();
    let rt = runtime();
    let k = rt.kernel(0, "scale_by_table").unwrap();
    assert_eq!(k.max_active_blocks(256, 0).unwrap(), 8);
    assert_eq!(k.max_active_blocks(1024, 100_000).unwrap(), 2);
    assert_eq!(k.max_potential_block_size(0, 0).unwrap(), (1024, 264));
    assert_eq!(k.max_potential_block_size(0, 256).unwrap().0, 256);
    assert_error(k.max_active_blocks(0, 0), Status::INVALID_ARGUMENT, &["a block of 0 threads"]);
}

// ---- globals ----

#[test]
fn module_globals_round_trip() {
    let _serial = serial();
    let rt = runtime();
    let k = rt.kernel(0, "scale_by_table").unwrap();
    let (address, bytes) = k.global("coefficients").unwrap();
    assert_ne!(address, 0);
    assert_eq!(bytes, 64, "__constant__ float coefficients[16]");
    assert_eq!(k.global("launches").unwrap().1, 4, "__device__ unsigned launches");

    let table: [f32; 16] = std::array::from_fn(|i| i as f32 * 0.5);
    k.global_write("coefficients", 0, &table).unwrap();
    let mut back = [0f32; 16];
    k.global_read("coefficients", 0, &mut back).unwrap();
    assert_eq!(back, table);
    let mut last = [0f32; 1];
    k.global_read("coefficients", 60, &mut last).unwrap(); // the last element
    assert_eq!(last, [7.5]);
    // As bytes, and as one array value.
    let mut raw = [0u8; 8];
    k.global_read("coefficients", 4, &mut raw).unwrap();
    assert_eq!(raw[..4], 0.5f32.to_ne_bytes());
    let mut whole = [[0f32; 16]];
    k.global_read("coefficients", 0, &mut whole).unwrap();
    assert_eq!(whole[0], table);
    k.global_write("launches", 0, &[41u32]).unwrap();
    let mut launches = [0u32];
    k.global_read("launches", 0, &mut launches).unwrap();
    assert_eq!(launches, [41]);
    // The same globals through another kernel of the module.
    let other = rt.kernel(0, "grid_sum").unwrap();
    assert_eq!(other.global("coefficients").unwrap(), (address, 64));

    // Missing, a kernel's name, past the end, a NUL inside.
    assert_error(
        k.global("coefficient"),
        Status::NOT_FOUND,
        &["(as loaded for kernel scale_by_table) defines no global variable coefficient"],
    );
    assert_error(
        k.global("grid_sum"),
        Status::INVALID_ARGUMENT,
        &["grid_sum is a kernel of module launch, not a global variable"],
    );
    assert_error(
        k.global_write("coefficients", 60, &[1f32, 2f32]),
        Status::INVALID_ARGUMENT,
        &["global coefficients of module launch is 64 bytes: a copy of 8 bytes at offset 60 runs past it"],
    );
    assert_error(k.global_read("coefficients", u64::MAX, &mut last), Status::INVALID_ARGUMENT, &[]);
    assert_error(k.global("coeff\0icients"), Status::INVALID_ARGUMENT, &["contains a NUL byte"]);
}

// ---- names and signatures ----

const FILL_FLOAT: &str = "_ZN8sdm_test4fillIfLi256EEEvPT_S1_";
const FILL_INT: &str = "_ZN8sdm_test4fillIiLi256EEEvPT_S1_";
const REDUCE: &str = "_ZN8sdm_test6reduceIiEEvPKT_PS1_i";

#[test]
fn cxx_names_fetch_kernels() {
    let _serial = serial();
    let rt = runtime();
    let name_of =
        |asked: &str| rt.kernel(0, asked).unwrap_or_else(|error| panic!("{asked}: {error}")).info().unwrap().name;
    assert_eq!(name_of("void sdm_test::fill<float, 256>(float*, float)"), FILL_FLOAT); // c++filt's line
    assert_eq!(name_of("sdm_test::fill<float, 256>"), FILL_FLOAT); // a CuPy name expression
    assert_eq!(name_of("  fill < float , 256 > "), FILL_FLOAT);
    assert_eq!(name_of("fill<int, 256>"), FILL_INT);
    assert_eq!(name_of("sdm_test::reduce<int>(int const*, int*, int)"), REDUCE);
    assert_eq!(name_of("reduce"), REDUCE); // one instantiation has that name
    assert_eq!(name_of(FILL_FLOAT), FILL_FLOAT);
    assert_eq!(name_of("matmul_tiled"), "matmul_tiled");
    // Fetched by another spelling: the same C handle.
    assert_eq!(
        rt.kernel(0, "sdm_test::fill<float, 256>").unwrap().as_raw(),
        rt.kernel(0, FILL_FLOAT).unwrap().as_raw()
    );
}

#[test]
fn an_ambiguous_name_lists_the_candidates() {
    let _serial = serial();
    let rt = runtime();
    assert_eq!(Status::AMBIGUOUS, Status(20));
    assert_eq!(Status::AMBIGUOUS.name(), "SDM_ERROR_AMBIGUOUS");
    assert_error(
        rt.kernel(0, "fill"),
        Status::AMBIGUOUS,
        &[
            "kernel name 'fill' matches 2 kernels",
            "void sdm_test::fill<float, 256>(float*, float) (_ZN8sdm_test4fillIfLi256EEEvPT_S1_)",
            "void sdm_test::fill<int, 256>(int*, int) (_ZN8sdm_test4fillIiLi256EEEvPT_S1_)",
        ],
    );
    assert_error(rt.kernel(0, "sdm_test::fill<float"), Status::INVALID_ARGUMENT, &["an unclosed '<'"]);
    assert_error(rt.kernel(0, "matmul_tild"), Status::NOT_FOUND, &["the closest: matmul_tiled"]);
}

#[test]
fn derived_signatures_agree_with_typed_ones_of_their_layout() {
    let _serial = serial();
    let rt = runtime();
    // scale_by_table(const float*, float*, int), imported as b64,b64,b32.
    assert_eq!(rt.kernel(0, "scale_by_table").unwrap().info().unwrap().signature, "b64,b64,b32");
    rt.kernel_checked(0, "scale_by_table", "ptr,ptr,i32").unwrap();
    rt.kernel_checked(0, "scale_by_table", "u64, ptr, f32").unwrap(); // b32 takes any 4-byte type
    rt.kernel_checked(0, "sdm_test::fill<float, 256>", "ptr,f32").unwrap();
    assert_error(
        rt.kernel_checked(0, "scale_by_table", "ptr,ptr,i64"),
        Status::MISMATCH,
        &["parameter 2 is b32 (4 bytes at offset 16)", "but the host passes i64 (8 bytes at offset 16)"],
    );
}

// ---- the listing ----

#[test]
fn the_kernel_listing() {
    let _serial = serial();
    let rt = runtime();
    let golden = repo().join("tests/golden/kernels.sdma");
    rt.mount_file(&golden).unwrap(); // archive 1: axpy, scale
    let launch = rt.kernels(Some(0)).unwrap();
    let names: Vec<&str> = launch.iter().map(|entry| entry.name.as_str()).collect();
    assert_eq!(names, [FILL_FLOAT, FILL_INT, REDUCE, "grid_sum", "matmul_tiled", "scale_by_table"]);
    let fill = &launch[0];
    assert_eq!(fill.demangled, "void sdm_test::fill<float, 256>(float*, float)");
    assert_eq!((fill.module.as_str(), fill.signature.as_str(), fill.targets.as_str()), ("launch", "b64,b32", "sm_90"));
    assert_eq!((fill.archive_index, fill.shadowed), (0, false));
    assert_eq!(launch[3].demangled, "", "extern \"C\": nothing to demangle");

    let served = rt.kernels(None).unwrap();
    assert_eq!(served.len(), 8);
    let axpy = served.iter().find(|entry| entry.name == "axpy").unwrap();
    assert_eq!((axpy.archive_index, axpy.signature.as_str()), (1, "ptr,ptr,f32,i32"));
    assert!(served.windows(2).all(|pair| pair[0].name < pair[1].name), "sorted by name");

    // A newer copy of the golden archive shadows the older one's names.
    rt.mount_file(&golden).unwrap();
    let older = rt.kernels(Some(1)).unwrap();
    assert_eq!(older.len(), 2);
    assert!(older.iter().all(|entry| entry.shadowed), "{older:?}");
    assert!(rt.kernels(None).unwrap().iter().all(|entry| !entry.shadowed && entry.archive_index != 1));
    assert_error(rt.kernels(Some(3)), Status::NOT_FOUND, &["there is no mounted archive 3 (3 mounted"]);
    assert_error(rt.kernels(Some(u32::MAX)), Status::NOT_FOUND, &["pass None"]);
}

// ---- values packed by the parameter's layout, refusals, and the image refusal ----

/// tests/data/`cubin` as `sdm import` archives it, under `manifest` (TOML text) when it is not "".
fn imported(cubin: &str, manifest: &str) -> PathBuf {
    let tool = std::env::var_os("SDM_TOOL").expect("set SDM_TOOL to build/tools/sdm (run_tests.sh does)");
    let stem = cubin.trim_end_matches(".cubin");
    let archive = scratch().join(format!("{stem}{}.sdma", if manifest.is_empty() { "" } else { "-manifest" }));
    let mut command = Command::new(&tool);
    command.arg("import").arg(repo().join("tests/data").join(cubin)).arg("-o").arg(&archive).arg("-q");
    if !manifest.is_empty() {
        let path = scratch().join(format!("{stem}.toml"));
        std::fs::write(&path, manifest).unwrap();
        command.arg("-m").arg(path);
    }
    let status = command.status().unwrap();
    assert!(status.success(), "sdm import {cubin} failed: {status}");
    archive
}

/// The kernel parameter buffer the fake driver received at the last launch (sdm_fake_cuda_last_params).
fn last_params() -> Vec<u8> {
    let f: extern "C" fn(*mut c_void, usize, *mut usize) -> i32 =
        // SAFETY: sdm_fake_cuda_last_params's type, as sdm_fake_cuda.h declares it.
        unsafe { std::mem::transmute(fake_symbol("sdm_fake_cuda_last_params")) };
    let mut size = 0usize;
    assert_eq!(f(std::ptr::null_mut(), 0, &mut size), 0, "the fake driver saw no launch");
    let mut buffer = vec![0u8; size];
    assert_eq!(f(buffer.as_mut_ptr().cast(), size, std::ptr::null_mut()), 0);
    buffer
}

fn params_runtime() -> Runtime {
    let rt = runtime();
    rt.mount_file(imported("params.sm_90.cubin", "")).unwrap();
    rt
}

#[test]
fn complex_scalars_reach_the_kernel_byte_exact() {
    use sdm::{Complex32, Complex64, Value};
    let _serial = serial();
    let rt = params_runtime();
    let one = Plan::new([1, 1, 1], [1, 1, 1]);
    // by_struct(Pair, float*): b64,b64, the slot of a complex<float>: real, then imaginary, two f32.
    let by_struct = rt.kernel(0, "by_struct").unwrap();
    for value in [Value::Complex32(Complex32::new(2.0, 3.0)), Value::from([2.0f32, 3.0])] {
        // SAFETY: the fake driver runs nothing.
        unsafe { by_struct.launch_values(&one, std::ptr::null_mut(), &[value, Value::Ptr(0)]) }.unwrap();
        assert_eq!(last_params(), [&2.0f32.to_le_bytes()[..], &3.0f32.to_le_bytes(), &[0; 8]].concat());
    }
    // mixed(char, double, int, long long, Odd, Wide, void*): opaque:16:8 at offset 40 takes a complex<double>.
    let mixed = rt.kernel(0, "mixed").unwrap();
    let args = [
        Value::I8(-3),
        Value::F64(2.5),
        Value::I32(7),
        Value::I64(1 << 40),
        Value::Bytes(b"xyz"),
        Value::Complex64(Complex64::new(0.1, 1e300)),
        Value::Ptr(0x7f00_0000_0000),
    ];
    // SAFETY: as above.
    unsafe { mixed.launch_values(&one, std::ptr::null_mut(), &args) }.unwrap();
    let want = [
        &[0xfd][..],
        &[0; 7],
        &2.5f64.to_le_bytes(),
        &7i32.to_le_bytes(),
        &[0; 4],
        &(1i64 << 40).to_le_bytes(),
        b"xyz\0\0\0\0\0",
        &0.1f64.to_le_bytes(),
        &1e300f64.to_le_bytes(),
        &0x7f00_0000_0000u64.to_le_bytes(),
    ]
    .concat();
    assert_eq!(last_params(), want);
}

#[test]
fn lossy_values_are_refused_naming_the_argument_and_both_types() {
    use sdm::{Complex32, Complex64, Value};
    let _serial = serial();
    let rt = params_runtime();
    let one = Plan::new([1, 1, 1], [1, 1, 1]);
    let mixed = rt.kernel(0, "mixed").unwrap(); // b8,b64,b32,b64,opaque:3:1,opaque:16:8,b64
    let typed = rt.kernel_checked(0, "mixed", "b8,f64,i32,i64,opaque:3:1,opaque:16:8,ptr").unwrap();
    let good = [
        Value::I8(1),
        Value::F64(2.5),
        Value::I32(3),
        Value::I64(4),
        Value::Bytes(b"xyz"),
        Value::Complex64(Complex64::default()),
        Value::Ptr(0),
    ];
    let c32 = Value::Complex32(Complex32::new(2.0, 3.0));
    let launched = fake_calls("cuLaunchKernelEx");
    for (kernel, index, value, want) in [
        (
            &typed,
            1,
            c32,
            "kernel argument 1 (f64): a Complex32 (2+3i) does not convert to a f64 without losing its imaginary part",
        ),
        (&mixed, 2, c32, "kernel argument 2 (b32): a Complex32 (2+3i) does not convert to a b32"),
        (
            &mixed,
            1,
            Value::from([2.0f64, 3.0]),
            "kernel argument 1 (b64): a Complex64 is 16 bytes and the parameter 8; pass a Complex32",
        ),
        (
            &mixed,
            5,
            c32,
            "kernel argument 5 (opaque:16:8): a Complex32 is 8 bytes and the parameter 16; pass a Complex64",
        ),
        (&typed, 2, Value::F64(2.5), "kernel argument 2 (i32): a f64 2.5 does not convert to a i32 without loss"),
        (
            &typed,
            2,
            Value::I64(1 << 31),
            "kernel argument 2 (i32): the i64 2147483648 does not fit a i32 (-2147483648 .. 2147483647)",
        ),
        (&mixed, 2, Value::U64(1 << 32), "kernel argument 2 (b32): the u64 4294967296 does not fit a b32"),
        (&mixed, 0, Value::I16(256), "kernel argument 0 (b8): the i16 256 does not fit a b8 (-128 .. 255)"),
        (&mixed, 2, Value::F64(1e39), "kernel argument 2 (b32): the f64 1e39 does not fit an f32"),
        (&typed, 1, Value::I32(2), "kernel argument 1 (f64): an i32 does not convert to a f64 parameter"),
        (&typed, 6, Value::I64(-1), "kernel argument 6 (ptr): the i64 -1 does not fit a ptr"),
        (&mixed, 4, Value::Bytes(b"abcd"), "kernel argument 4 (opaque:3:1): 4 byte(s) for a parameter of 3"),
    ] {
        let mut args = good;
        args[index] = value;
        // SAFETY: the fake driver runs nothing (and nothing reaches it).
        assert_error(
            unsafe { kernel.launch_values(&one, std::ptr::null_mut(), &args) },
            Status::INVALID_ARGUMENT,
            &[want],
        );
    }
    // One value short: refused by count, never padded.
    // SAFETY: as above.
    assert_error(
        unsafe { mixed.launch_values(&one, std::ptr::null_mut(), &good[..good.len() - 1]) },
        Status::INVALID_ARGUMENT,
        &["kernel argument(s) for a kernel of", "pass one value per parameter"],
    );
    assert_eq!(fake_calls("cuLaunchKernelEx"), launched, "a refused launch reached the driver");
}

#[test]
fn an_image_refusal_is_its_own_kind() {
    let _serial = serial();
    let rt = runtime();
    // An sm_90 cubin compiled from compute_80, on an H200, in an archive under the hardware matrix.
    let manifest = "[archive]\nkernel_abi = \"1.0\"\nhardware_matrix = \"sdm\"\n";
    rt.mount_file(imported("kernels.sm_90-from-compute_80.cubin", manifest)).unwrap();
    let error = assert_error(
        rt.kernel(0, "scale"),
        Status::IMAGE_REFUSED,
        &["was compiled for compute_80", "Rebuild the archive"],
    );
    assert!(error.is_image_refusal());
    let other = assert_error(rt.kernel(0, "no_such_kernel"), Status::NOT_FOUND, &[]);
    assert!(!other.is_image_refusal());
}

/// Device bytes held after fetching a kernel of the golden archive and one of the launch archive,
/// under `budget` (0: none), and the first kernel's attributes read after (a use: under the budget
/// its evicted module reloads there).
fn held_under(budget: u64) -> u64 {
    let rt = Runtime::builder()
        .cuda_driver(fake_driver())
        .cache_dir(scratch().join("cache"))
        .no_embedded_archive()
        .log_level(LogLevel::OFF)
        .device_memory_budget(budget)
        .build()
        .expect("a runtime on the fake driver");
    rt.mount_file(repo().join("tests/golden/kernels.sdma")).unwrap();
    rt.mount_file(launch_archive()).unwrap();
    let first = rt.kernel(0, "scale").unwrap();
    let entry =
        rt.kernels(None).unwrap().into_iter().find(|k| k.module == "launch").expect("a kernel of the module launch");
    let _other = rt.kernel(0, &sdm::qualified_name(&entry.module, &entry.name)).unwrap();
    let held = rt.footprint().unwrap().device_bytes;
    first.attributes().unwrap();
    held
}

#[test]
fn a_device_memory_budget_evicts_and_handles_survive() {
    let _serial = serial();
    let (all, budgeted) = (held_under(0), held_under(1));
    assert!(
        budgeted > 0 && budgeted < all,
        "device bytes held: {all} with no budget, {budgeted} under a 1-byte budget"
    );
}
