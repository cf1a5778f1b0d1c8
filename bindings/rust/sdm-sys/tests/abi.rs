// The raw declarations against the linked libsdm: the function table agrees with the exported
// functions and with our struct sizes, and the library refuses a struct_size below its minimum
// without touching the out-parameters. Runs through the fake driver (run_tests.sh sets
// $SDM_CUDA_DRIVER).
use sdm_sys::*;
use std::ffi::{c_void, CStr};
use std::mem::size_of;
use std::ptr;

fn message(error: *const sdm_error) -> String {
    unsafe { CStr::from_ptr(sdm_error_message(error)) }.to_string_lossy().into_owned()
}

fn fake_runtime() -> *mut sdm_runtime {
    std::env::var_os("SDM_CUDA_DRIVER")
        .expect("set SDM_CUDA_DRIVER to build/tests/fake_cuda/libcuda_fake.so (run_tests.sh does)");
    // A fixed environment, set once before any runtime reads it (the fake reads it at cuInit).
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("SDM_FAKE_CUDA_DEVICES", "NVIDIA H200,9.0,232448,132,62914560"));
    let params =
        sdm_runtime_params { flags: SDM_RUNTIME_NO_EMBEDDED_ARCHIVE, log_level: SDM_LOG_OFF, ..Default::default() };
    let mut runtime = ptr::null_mut();
    let mut error = ptr::null_mut();
    assert_eq!(unsafe { sdm_runtime_create(&params, &mut runtime, &mut error) }, SDM_OK);
    assert!(error.is_null(), "a successful call sets *error to NULL");
    assert!(!runtime.is_null());
    runtime
}

#[test]
fn versions_and_the_function_table() {
    let version = unsafe { sdm_abi_version() };
    assert_eq!(version >> 16, SDM_ABI_VERSION_MAJOR);
    assert!(version & 0xffff >= SDM_ABI_VERSION_MINOR, "libsdm implements ABI minor {}", version & 0xffff);

    let mut minor = SDM_ABI_VERSION_MINOR;
    let mut api: *const sdm_api = ptr::null();
    assert_eq!(unsafe { sdm_get_api(1, &mut minor, &mut api) }, SDM_OK);
    assert!(minor >= SDM_ABI_VERSION_MINOR);
    let api = unsafe { &*api };
    // The library's table is at least as large as ours: every member we declare is filled.
    assert!(api.struct_size as usize >= size_of::<sdm_api>(), "table of {} bytes", api.struct_size);
    assert_eq!(api.abi_minor, minor);
    // Our table and our extern block name the same functions at the same places.
    assert_eq!(api.runtime_create.unwrap() as usize, sdm_runtime_create as *const () as usize);
    assert_eq!(api.archive_info_get.unwrap() as usize, sdm_archive_info_get as *const () as usize);
    assert_eq!(api.device_class_name.unwrap() as usize, sdm_device_class_name as *const () as usize);
    assert_eq!(api.cache_stats_get.unwrap() as usize, sdm_cache_stats_get as *const () as usize);
    assert_eq!(api.kernel_get_checked.unwrap() as usize, sdm_kernel_get_checked as *const () as usize);
    assert_eq!(api.launch.unwrap() as usize, sdm_launch as *const () as usize);
    assert_eq!(api.plugin_load.unwrap() as usize, sdm_plugin_load as *const () as usize);

    let mut untouched: *const sdm_api = ptr::null();
    assert_eq!(unsafe { sdm_get_api(2, &mut minor, &mut untouched) }, SDM_ERROR_UNSUPPORTED);
    assert!(untouched.is_null());

    let name = |status| unsafe { CStr::from_ptr(sdm_status_string(status)) }.to_str().unwrap().to_owned();
    assert_eq!(name(SDM_ERROR_ARCHIVE_CORRUPT), "SDM_ERROR_ARCHIVE_CORRUPT");
    assert_eq!(name(SDM_ERROR_INTERNAL), "SDM_ERROR_INTERNAL");
    assert_eq!(name(4242), "SDM_ERROR_UNKNOWN");
    // NULL errors read as empty.
    assert_eq!(unsafe { sdm_error_code(ptr::null()) }, SDM_OK);
    assert_eq!(message(ptr::null()), "");
    unsafe { sdm_error_destroy(ptr::null_mut()) };
    unsafe { sdm_runtime_destroy(ptr::null_mut()) };
}

#[test]
fn struct_size_below_the_minimum_is_refused_and_out_parameters_stay() {
    // sdm_runtime_params of 8 bytes.
    let params = sdm_runtime_params { struct_size: 8, ..Default::default() };
    let sentinel = 0x1 as *mut sdm_runtime;
    let mut runtime = sentinel;
    let mut error = ptr::null_mut();
    assert_eq!(unsafe { sdm_runtime_create(&params, &mut runtime, &mut error) }, SDM_ERROR_INVALID_ARGUMENT);
    assert_eq!(runtime, sentinel);
    assert_eq!(unsafe { sdm_error_code(error) }, SDM_ERROR_INVALID_ARGUMENT);
    let text = message(error);
    unsafe { sdm_error_destroy(error) };
    assert!(text.contains("sdm_runtime_params.struct_size is 8"), "{text}");
    assert!(text.contains("sizeof(sdm_runtime_params)"), "{text}");

    // sdm_device_info of 4 bytes: refused, the struct untouched; last_error keeps the message.
    let runtime = fake_runtime();
    let mut info = sdm_device_info { struct_size: 4, ordinal: 77, ..Default::default() };
    assert_eq!(unsafe { sdm_device_info_get(runtime, 0, &mut info, ptr::null_mut()) }, SDM_ERROR_INVALID_ARGUMENT);
    assert_eq!(info.ordinal, 77);
    let mut last = ptr::null_mut();
    assert_eq!(unsafe { sdm_runtime_last_error(runtime, &mut last) }, SDM_OK);
    let text = message(last);
    unsafe { sdm_error_destroy(last) };
    assert!(text.contains("sdm_device_info.struct_size is 4"), "{text}");

    // sdm_plan of 8 bytes (an ABI 1.1 struct) is refused the same way, before any kernel lookup.
    let mut plan = sdm_plan { struct_size: 8, ..Default::default() };
    let n: i64 = 1;
    assert_eq!(unsafe { sdm_plan_select(ptr::null(), &n, 1, &mut plan, ptr::null_mut()) }, SDM_ERROR_INVALID_ARGUMENT);

    // A larger struct (a newer host's) is fine: sdm writes only the fields it knows.
    #[repr(C)]
    struct Bigger {
        info: sdm_device_info,
        extra: u32,
    }
    let mut bigger = Bigger { info: Default::default(), extra: 0xabcdef };
    bigger.info.struct_size = size_of::<Bigger>() as u32;
    let mut error = ptr::null_mut();
    let status = unsafe { sdm_device_info_get(runtime, 0, &mut bigger.info, &mut error) };
    assert_eq!(status, SDM_OK, "{}", message(error));
    assert_eq!(bigger.extra, 0xabcdef);
    assert_eq!(bigger.info.capability_major, 9);
    let name = unsafe { CStr::from_ptr(bigger.info.name.as_ptr()) }.to_str().unwrap();
    assert_eq!(name, "NVIDIA H200");
    unsafe { sdm_runtime_destroy(runtime) };
}

#[test]
fn a_null_out_pointer_is_an_invalid_argument_not_a_crash() {
    let runtime = fake_runtime();
    let mut error = ptr::null_mut();
    assert_eq!(unsafe { sdm_device_count(runtime, ptr::null_mut(), &mut error) }, SDM_ERROR_INVALID_ARGUMENT);
    assert!(!message(error).is_empty());
    unsafe { sdm_error_destroy(error) };
    let mut function: *mut c_void = ptr::null_mut();
    assert_eq!(unsafe { sdm_kernel_function(ptr::null(), &mut function, ptr::null_mut()) }, SDM_ERROR_INVALID_ARGUMENT);
    unsafe { sdm_runtime_destroy(runtime) };
}
