//! Raw bindings to libsdm's C ABI, `include/sdm/sdm.h` (ABI 1.1), written by hand.
//!
//! Every item mirrors the header one to one: names, types, field order and values. The header's
//! comments are the documentation; only what Rust adds is commented here. The `Default` of each
//! struct is all zeros with `struct_size` set to the size declared here, which is what the C ABI
//! asks a caller to pass. Layouts are pinned by the tests at the bottom with the numbers of
//! `tests/abi/layout.c`.
//!
//! Safe wrappers live in the `sdm` crate.
#![no_std]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_void};

pub const SDM_ABI_VERSION_MAJOR: u32 = 1;
pub const SDM_ABI_VERSION_MINOR: u32 = 1;

// ---- statuses -----------------------------------------------------------------------------------

pub type sdm_status = i32;
pub const SDM_OK: sdm_status = 0;
pub const SDM_ERROR_INVALID_ARGUMENT: sdm_status = 1;
pub const SDM_ERROR_OUT_OF_MEMORY: sdm_status = 2;
pub const SDM_ERROR_NO_DRIVER: sdm_status = 3;
pub const SDM_ERROR_DRIVER_TOO_OLD: sdm_status = 4;
pub const SDM_ERROR_DRIVER: sdm_status = 5;
pub const SDM_ERROR_NO_DEVICE: sdm_status = 6;
pub const SDM_ERROR_UNSUPPORTED_DEVICE: sdm_status = 7;
pub const SDM_ERROR_ARCHIVE_CORRUPT: sdm_status = 8;
pub const SDM_ERROR_ARCHIVE_UNSUPPORTED: sdm_status = 9;
pub const SDM_ERROR_IO: sdm_status = 10;
pub const SDM_ERROR_NOT_FOUND: sdm_status = 11;
pub const SDM_ERROR_UNSUPPORTED: sdm_status = 12;
pub const SDM_ERROR_NO_IMAGE: sdm_status = 13;
pub const SDM_ERROR_IMAGE_REFUSED: sdm_status = 14;
pub const SDM_ERROR_JIT: sdm_status = 15;
pub const SDM_ERROR_MISMATCH: sdm_status = 16;
pub const SDM_ERROR_GRAPH_CAPTURE: sdm_status = 17;
pub const SDM_ERROR_INTERNAL: sdm_status = 18;

// ---- errors and logging -------------------------------------------------------------------------

/// Opaque: only ever behind a pointer.
#[repr(C)]
pub struct sdm_error {
    _opaque: [u8; 0],
    _not_send_sync_unpin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

pub type sdm_log_level = i32;
pub const SDM_LOG_OFF: sdm_log_level = -1;
pub const SDM_LOG_DEFAULT: sdm_log_level = 0;
pub const SDM_LOG_ERROR: sdm_log_level = 1;
pub const SDM_LOG_WARN: sdm_log_level = 2;
pub const SDM_LOG_INFO: sdm_log_level = 3;
pub const SDM_LOG_DEBUG: sdm_log_level = 4;

pub type sdm_log_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, level: sdm_log_level, message: *const c_char, length: usize)>;

// ---- runtime ------------------------------------------------------------------------------------

#[repr(C)]
pub struct sdm_runtime {
    _opaque: [u8; 0],
    _not_send_sync_unpin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sdm_chain {
    pub struct_size: u32,
    pub type_: u32, // `type` in C
    pub next: *const sdm_chain,
}

pub const SDM_RUNTIME_NO_EMBEDDED_ARCHIVE: u32 = 1 << 0;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sdm_runtime_params {
    pub struct_size: u32,
    pub flags: u32,
    pub log_fn: sdm_log_fn,
    pub log_user_data: *mut c_void,
    pub log_level: sdm_log_level,
    pub reserved0: i32,
    pub cuda_driver: *const c_char,
    pub cuda_context: *mut c_void,
    pub next: *const sdm_chain,
    pub cache_dir: *const c_char,
    pub cache_max_bytes: u64,
    pub cache_flags: u32,
    pub jit_flags: u32,
    // ABI 1.1
    pub kernel_abi_major: u32,
    pub reserved1: u32,
}

pub const SDM_CACHE_DISABLED: u32 = 1 << 0;
pub const SDM_CACHE_READ_ONLY: u32 = 1 << 1;
pub const SDM_JIT_NO_NVJITLINK: u32 = 1 << 0;
pub const SDM_JIT_NO_DRIVER: u32 = 1 << 1;
pub const SDM_JIT_NO_PTX_COMPILER: u32 = 1 << 2;

// ---- archives -----------------------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sdm_archive_info {
    pub struct_size: u32,
    pub entry_count: u32,
    pub kernel_count: u32,
    pub kernel_abi_major: u16,
    pub kernel_abi_minor: u16,
    pub format_major: u16,
    pub format_minor: u16,
    pub embedded: u32,
    pub size_bytes: u64,
    pub label: *const c_char,
    pub content_version: *const c_char,
}

// ---- devices ------------------------------------------------------------------------------------

pub type sdm_device_class = i32;
pub const SDM_DEVICE_CLASS_UNSUPPORTED: sdm_device_class = 0;
pub const SDM_DEVICE_CLASS_MODERN: sdm_device_class = 1;
pub const SDM_DEVICE_CLASS_A100: sdm_device_class = 2;
pub const SDM_DEVICE_CLASS_RTX: sdm_device_class = 3;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sdm_device_info {
    pub struct_size: u32,
    pub ordinal: i32,
    pub capability_major: i32,
    pub capability_minor: i32,
    pub device_class: sdm_device_class,
    pub sm_count: i32,
    pub l2_bytes: u64,
    pub smem_optin_bytes: i32,
    pub smem_cap_bytes: i32,
    pub smem_per_sm_bytes: i32,
    pub pdl_allowed: i32,
    pub clusters_allowed: i32,
    pub untested: i32, // ABI 1.1
    pub name: [c_char; 256],
}

// ---- kernels ------------------------------------------------------------------------------------

#[repr(C)]
pub struct sdm_kernel {
    _opaque: [u8; 0],
    _not_send_sync_unpin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sdm_kernel_info {
    pub struct_size: u32,
    pub ordinal: i32,
    pub image_kind: u32,
    pub image_sm: u32,
    pub loaded_sm: u32,
    pub source: u32,
    pub name: *const c_char,
    pub module: *const c_char,
    pub archive: *const c_char,
    pub signature: *const c_char,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sdm_cache_stats {
    pub struct_size: u32,
    pub reserved0: u32,
    pub hits: u64,
    pub misses: u64,
    pub builds: u64,
    pub evictions: u64,
    pub bad_entries: u64,
    pub bytes_written: u64,
    pub build_milliseconds: f64,
}

// ---- plans and launches (ABI 1.1) ---------------------------------------------------------------

pub const SDM_PLAN_PDL: u32 = 1 << 0;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct sdm_plan {
    pub struct_size: u32,
    pub flags: u32,
    pub grid: u32,
    pub block: u32,
    pub smem_bytes: u32,
    pub cluster: [u32; 3],
    pub blocks_per_sm: i32,
    pub occupancy: i32,
    pub rule: i32,
    pub reserved0: u32,
}

// ---- the function table -------------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sdm_api {
    pub struct_size: u32,
    pub abi_minor: u32,
    pub status_string: Option<unsafe extern "C" fn(sdm_status) -> *const c_char>,
    pub abi_version: Option<unsafe extern "C" fn() -> u32>,
    pub version_string: Option<unsafe extern "C" fn() -> *const c_char>,
    pub error_code: Option<unsafe extern "C" fn(*const sdm_error) -> sdm_status>,
    pub error_message: Option<unsafe extern "C" fn(*const sdm_error) -> *const c_char>,
    pub error_native: Option<unsafe extern "C" fn(*const sdm_error) -> i32>,
    pub error_log: Option<unsafe extern "C" fn(*const sdm_error) -> *const c_char>,
    pub error_destroy: Option<unsafe extern "C" fn(*mut sdm_error)>,
    pub runtime_create: Option<
        unsafe extern "C" fn(*const sdm_runtime_params, *mut *mut sdm_runtime, *mut *mut sdm_error) -> sdm_status,
    >,
    pub runtime_destroy: Option<unsafe extern "C" fn(*mut sdm_runtime)>,
    pub runtime_last_error: Option<unsafe extern "C" fn(*mut sdm_runtime, *mut *mut sdm_error) -> sdm_status>,
    pub archive_mount_file:
        Option<unsafe extern "C" fn(*mut sdm_runtime, *const c_char, *mut *mut sdm_error) -> sdm_status>,
    pub archive_mount_memory: Option<
        unsafe extern "C" fn(*mut sdm_runtime, *const c_void, usize, *const c_char, *mut *mut sdm_error) -> sdm_status,
    >,
    pub archive_count: Option<unsafe extern "C" fn(*mut sdm_runtime, *mut u32, *mut *mut sdm_error) -> sdm_status>,
    pub archive_info_get:
        Option<unsafe extern "C" fn(*mut sdm_runtime, u32, *mut sdm_archive_info, *mut *mut sdm_error) -> sdm_status>,
    pub driver_version: Option<unsafe extern "C" fn(*mut sdm_runtime, *mut i32, *mut *mut sdm_error) -> sdm_status>,
    pub device_count: Option<unsafe extern "C" fn(*mut sdm_runtime, *mut i32, *mut *mut sdm_error) -> sdm_status>,
    pub device_info_get:
        Option<unsafe extern "C" fn(*mut sdm_runtime, i32, *mut sdm_device_info, *mut *mut sdm_error) -> sdm_status>,
    pub device_class_get:
        Option<unsafe extern "C" fn(*mut sdm_runtime, i32, *mut sdm_device_class, *mut *mut sdm_error) -> sdm_status>,
    pub device_class_name: Option<unsafe extern "C" fn(sdm_device_class) -> *const c_char>,
    pub kernel_get: Option<
        unsafe extern "C" fn(
            *mut sdm_runtime,
            i32,
            *const c_char,
            *mut c_void,
            *mut *mut sdm_kernel,
            *mut *mut sdm_error,
        ) -> sdm_status,
    >,
    pub kernel_function:
        Option<unsafe extern "C" fn(*const sdm_kernel, *mut *mut c_void, *mut *mut sdm_error) -> sdm_status>,
    pub kernel_info_get:
        Option<unsafe extern "C" fn(*const sdm_kernel, *mut sdm_kernel_info, *mut *mut sdm_error) -> sdm_status>,
    pub preload: Option<
        unsafe extern "C" fn(*mut sdm_runtime, i32, *const *const c_char, u32, *mut *mut sdm_error) -> sdm_status,
    >,
    pub cache_stats_get:
        Option<unsafe extern "C" fn(*mut sdm_runtime, *mut sdm_cache_stats, *mut *mut sdm_error) -> sdm_status>,
    // ABI 1.1
    pub kernel_get_checked: Option<
        unsafe extern "C" fn(
            *mut sdm_runtime,
            i32,
            *const c_char,
            *const c_char,
            *mut c_void,
            *mut *mut sdm_kernel,
            *mut *mut sdm_error,
        ) -> sdm_status,
    >,
    pub kernel_release:
        Option<unsafe extern "C" fn(*mut sdm_runtime, *const sdm_kernel, *mut *mut sdm_error) -> sdm_status>,
    pub runtime_reload: Option<unsafe extern "C" fn(*mut sdm_runtime, *mut u32, *mut *mut sdm_error) -> sdm_status>,
    pub runtime_poll_archives:
        Option<unsafe extern "C" fn(*mut sdm_runtime, *mut u32, *mut *mut sdm_error) -> sdm_status>,
    pub plan_select: Option<
        unsafe extern "C" fn(*const sdm_kernel, *const i64, u32, *mut sdm_plan, *mut *mut sdm_error) -> sdm_status,
    >,
    pub launch: Option<
        unsafe extern "C" fn(
            *const sdm_kernel,
            *const sdm_plan,
            *mut c_void,
            *const *mut c_void,
            u32,
            *mut *mut sdm_error,
        ) -> sdm_status,
    >,
    pub plugin_load: Option<unsafe extern "C" fn(*mut sdm_runtime, *const c_char, *mut *mut sdm_error) -> sdm_status>,
}

// ---- defaults: zeros, struct_size set -----------------------------------------------------------

macro_rules! sized_default {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                // SAFETY: every field is an integer, a float, a raw pointer, an Option of a
                // function pointer or an array of those: all-zero bytes are a valid value (NULL,
                // None, 0).
                let mut value: Self = unsafe { core::mem::zeroed() };
                value.struct_size = core::mem::size_of::<Self>() as u32;
                value
            }
        }
    )*};
}
sized_default!(
    sdm_chain,
    sdm_runtime_params,
    sdm_archive_info,
    sdm_device_info,
    sdm_kernel_info,
    sdm_cache_stats,
    sdm_plan,
    sdm_api
);

// ---- functions ----------------------------------------------------------------------------------

#[link(name = "sdm")]
extern "C" {
    pub fn sdm_status_string(status: sdm_status) -> *const c_char;

    pub fn sdm_abi_version() -> u32;
    pub fn sdm_version_string() -> *const c_char;

    pub fn sdm_error_code(error: *const sdm_error) -> sdm_status;
    pub fn sdm_error_message(error: *const sdm_error) -> *const c_char;
    pub fn sdm_error_native(error: *const sdm_error) -> i32;
    pub fn sdm_error_log(error: *const sdm_error) -> *const c_char;
    pub fn sdm_error_destroy(error: *mut sdm_error);

    pub fn sdm_runtime_create(
        params: *const sdm_runtime_params,
        runtime: *mut *mut sdm_runtime,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_runtime_destroy(runtime: *mut sdm_runtime);
    pub fn sdm_runtime_last_error(runtime: *mut sdm_runtime, last: *mut *mut sdm_error) -> sdm_status;

    pub fn sdm_archive_mount_file(
        runtime: *mut sdm_runtime,
        path: *const c_char,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_archive_mount_memory(
        runtime: *mut sdm_runtime,
        data: *const c_void,
        size: usize,
        label: *const c_char,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_runtime_reload(runtime: *mut sdm_runtime, reloaded: *mut u32, error: *mut *mut sdm_error) -> sdm_status;
    pub fn sdm_runtime_poll_archives(
        runtime: *mut sdm_runtime,
        reloaded: *mut u32,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_archive_count(runtime: *mut sdm_runtime, count: *mut u32, error: *mut *mut sdm_error) -> sdm_status;
    pub fn sdm_archive_info_get(
        runtime: *mut sdm_runtime,
        index: u32,
        info: *mut sdm_archive_info,
        error: *mut *mut sdm_error,
    ) -> sdm_status;

    pub fn sdm_driver_version(runtime: *mut sdm_runtime, version: *mut i32, error: *mut *mut sdm_error) -> sdm_status;
    pub fn sdm_device_count(runtime: *mut sdm_runtime, count: *mut i32, error: *mut *mut sdm_error) -> sdm_status;
    pub fn sdm_device_info_get(
        runtime: *mut sdm_runtime,
        ordinal: i32,
        info: *mut sdm_device_info,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_device_class_get(
        runtime: *mut sdm_runtime,
        ordinal: i32,
        device_class: *mut sdm_device_class,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_device_class_name(device_class: sdm_device_class) -> *const c_char;

    pub fn sdm_kernel_get(
        runtime: *mut sdm_runtime,
        ordinal: i32,
        name: *const c_char,
        stream: *mut c_void,
        kernel: *mut *mut sdm_kernel,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_kernel_get_checked(
        runtime: *mut sdm_runtime,
        ordinal: i32,
        name: *const c_char,
        signature: *const c_char,
        stream: *mut c_void,
        kernel: *mut *mut sdm_kernel,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_kernel_release(
        runtime: *mut sdm_runtime,
        kernel: *const sdm_kernel,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_kernel_function(
        kernel: *const sdm_kernel,
        function: *mut *mut c_void,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_kernel_info_get(
        kernel: *const sdm_kernel,
        info: *mut sdm_kernel_info,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_preload(
        runtime: *mut sdm_runtime,
        ordinal: i32,
        names: *const *const c_char,
        count: u32,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_cache_stats_get(
        runtime: *mut sdm_runtime,
        stats: *mut sdm_cache_stats,
        error: *mut *mut sdm_error,
    ) -> sdm_status;

    pub fn sdm_plan_select(
        kernel: *const sdm_kernel,
        problem: *const i64,
        problem_count: u32,
        plan: *mut sdm_plan,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_launch(
        kernel: *const sdm_kernel,
        plan: *const sdm_plan,
        stream: *mut c_void,
        args: *const *mut c_void,
        arg_count: u32,
        error: *mut *mut sdm_error,
    ) -> sdm_status;
    pub fn sdm_plugin_load(runtime: *mut sdm_runtime, path: *const c_char, error: *mut *mut sdm_error) -> sdm_status;

    pub fn sdm_get_api(major: u32, minor: *mut u32, api: *mut *const sdm_api) -> sdm_status;
}

// ---- layout: the numbers of tests/abi/layout.c --------------------------------------------------

#[cfg(all(test, target_pointer_width = "64", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod layout {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    macro_rules! pin_field {
        ($t:ty, $field:ident, $offset:expr, $size:expr) => {{
            assert_eq!(offset_of!($t, $field), $offset, concat!(stringify!($t), ".", stringify!($field), " moved"));
            let value: $t = Default::default();
            assert_eq!(
                core::mem::size_of_val(&value.$field),
                $size,
                concat!(stringify!($t), ".", stringify!($field), " changed size")
            );
        }};
    }
    macro_rules! pin_size {
        ($t:ty, $size:expr, $align:expr) => {{
            assert_eq!(size_of::<$t>(), $size, concat!("size_of::<", stringify!($t), ">() changed"));
            assert_eq!(align_of::<$t>(), $align, concat!("align_of::<", stringify!($t), ">() changed"));
        }};
    }

    #[test]
    fn values() {
        assert_eq!(SDM_ABI_VERSION_MAJOR, 1);
        assert_eq!(size_of::<sdm_status>(), 4);
        assert_eq!(size_of::<sdm_log_level>(), 4);
        assert_eq!(size_of::<sdm_device_class>(), 4);
        let statuses = [
            SDM_OK,
            SDM_ERROR_INVALID_ARGUMENT,
            SDM_ERROR_OUT_OF_MEMORY,
            SDM_ERROR_NO_DRIVER,
            SDM_ERROR_DRIVER_TOO_OLD,
            SDM_ERROR_DRIVER,
            SDM_ERROR_NO_DEVICE,
            SDM_ERROR_UNSUPPORTED_DEVICE,
            SDM_ERROR_ARCHIVE_CORRUPT,
            SDM_ERROR_ARCHIVE_UNSUPPORTED,
            SDM_ERROR_IO,
            SDM_ERROR_NOT_FOUND,
            SDM_ERROR_UNSUPPORTED,
            SDM_ERROR_NO_IMAGE,
            SDM_ERROR_IMAGE_REFUSED,
            SDM_ERROR_JIT,
            SDM_ERROR_MISMATCH,
            SDM_ERROR_GRAPH_CAPTURE,
            SDM_ERROR_INTERNAL,
        ];
        for (value, status) in statuses.iter().enumerate() {
            assert_eq!(*status, value as i32, "statuses are numbered 0..=18 in header order");
        }
        assert_eq!(
            [SDM_LOG_OFF, SDM_LOG_DEFAULT, SDM_LOG_ERROR, SDM_LOG_WARN, SDM_LOG_INFO, SDM_LOG_DEBUG],
            [-1, 0, 1, 2, 3, 4]
        );
        assert_eq!(SDM_RUNTIME_NO_EMBEDDED_ARCHIVE, 1);
        assert_eq!(
            [SDM_DEVICE_CLASS_UNSUPPORTED, SDM_DEVICE_CLASS_MODERN, SDM_DEVICE_CLASS_A100, SDM_DEVICE_CLASS_RTX],
            [0, 1, 2, 3]
        );
        assert_eq!([SDM_CACHE_DISABLED, SDM_CACHE_READ_ONLY], [1, 2]);
        assert_eq!([SDM_JIT_NO_NVJITLINK, SDM_JIT_NO_DRIVER, SDM_JIT_NO_PTX_COMPILER], [1, 2, 4]);
        assert_eq!(SDM_PLAN_PDL, 1);
    }

    #[test]
    fn runtime_params() {
        pin_field!(sdm_runtime_params, struct_size, 0, 4);
        pin_field!(sdm_runtime_params, flags, 4, 4);
        pin_field!(sdm_runtime_params, log_fn, 8, 8);
        pin_field!(sdm_runtime_params, log_user_data, 16, 8);
        pin_field!(sdm_runtime_params, log_level, 24, 4);
        pin_field!(sdm_runtime_params, reserved0, 28, 4);
        pin_field!(sdm_runtime_params, cuda_driver, 32, 8);
        pin_field!(sdm_runtime_params, cuda_context, 40, 8);
        pin_field!(sdm_runtime_params, next, 48, 8);
        pin_field!(sdm_runtime_params, cache_dir, 56, 8);
        pin_field!(sdm_runtime_params, cache_max_bytes, 64, 8);
        pin_field!(sdm_runtime_params, cache_flags, 72, 4);
        pin_field!(sdm_runtime_params, jit_flags, 76, 4);
        pin_field!(sdm_runtime_params, kernel_abi_major, 80, 4);
        pin_field!(sdm_runtime_params, reserved1, 84, 4);
        pin_size!(sdm_runtime_params, 88, 8);
    }

    #[test]
    fn kernel_info() {
        pin_field!(sdm_kernel_info, struct_size, 0, 4);
        pin_field!(sdm_kernel_info, ordinal, 4, 4);
        pin_field!(sdm_kernel_info, image_kind, 8, 4);
        pin_field!(sdm_kernel_info, image_sm, 12, 4);
        pin_field!(sdm_kernel_info, loaded_sm, 16, 4);
        pin_field!(sdm_kernel_info, source, 20, 4);
        pin_field!(sdm_kernel_info, name, 24, 8);
        pin_field!(sdm_kernel_info, module, 32, 8);
        pin_field!(sdm_kernel_info, archive, 40, 8);
        pin_field!(sdm_kernel_info, signature, 48, 8);
        pin_size!(sdm_kernel_info, 56, 8);
    }

    #[test]
    fn cache_stats() {
        pin_field!(sdm_cache_stats, struct_size, 0, 4);
        pin_field!(sdm_cache_stats, reserved0, 4, 4);
        pin_field!(sdm_cache_stats, hits, 8, 8);
        pin_field!(sdm_cache_stats, misses, 16, 8);
        pin_field!(sdm_cache_stats, builds, 24, 8);
        pin_field!(sdm_cache_stats, evictions, 32, 8);
        pin_field!(sdm_cache_stats, bad_entries, 40, 8);
        pin_field!(sdm_cache_stats, bytes_written, 48, 8);
        pin_field!(sdm_cache_stats, build_milliseconds, 56, 8);
        pin_size!(sdm_cache_stats, 64, 8);
    }

    #[test]
    fn chain() {
        pin_field!(sdm_chain, struct_size, 0, 4);
        pin_field!(sdm_chain, type_, 4, 4);
        pin_field!(sdm_chain, next, 8, 8);
        pin_size!(sdm_chain, 16, 8);
    }

    #[test]
    fn archive_info() {
        pin_field!(sdm_archive_info, struct_size, 0, 4);
        pin_field!(sdm_archive_info, entry_count, 4, 4);
        pin_field!(sdm_archive_info, kernel_count, 8, 4);
        pin_field!(sdm_archive_info, kernel_abi_major, 12, 2);
        pin_field!(sdm_archive_info, kernel_abi_minor, 14, 2);
        pin_field!(sdm_archive_info, format_major, 16, 2);
        pin_field!(sdm_archive_info, format_minor, 18, 2);
        pin_field!(sdm_archive_info, embedded, 20, 4);
        pin_field!(sdm_archive_info, size_bytes, 24, 8);
        pin_field!(sdm_archive_info, label, 32, 8);
        pin_field!(sdm_archive_info, content_version, 40, 8);
        pin_size!(sdm_archive_info, 48, 8);
    }

    #[test]
    fn device_info() {
        pin_field!(sdm_device_info, struct_size, 0, 4);
        pin_field!(sdm_device_info, ordinal, 4, 4);
        pin_field!(sdm_device_info, capability_major, 8, 4);
        pin_field!(sdm_device_info, capability_minor, 12, 4);
        pin_field!(sdm_device_info, device_class, 16, 4);
        pin_field!(sdm_device_info, sm_count, 20, 4);
        pin_field!(sdm_device_info, l2_bytes, 24, 8);
        pin_field!(sdm_device_info, smem_optin_bytes, 32, 4);
        pin_field!(sdm_device_info, smem_cap_bytes, 36, 4);
        pin_field!(sdm_device_info, smem_per_sm_bytes, 40, 4);
        pin_field!(sdm_device_info, pdl_allowed, 44, 4);
        pin_field!(sdm_device_info, clusters_allowed, 48, 4);
        pin_field!(sdm_device_info, untested, 52, 4);
        pin_field!(sdm_device_info, name, 56, 256);
        pin_size!(sdm_device_info, 312, 8);
    }

    #[test]
    fn api() {
        pin_field!(sdm_api, struct_size, 0, 4);
        pin_field!(sdm_api, abi_minor, 4, 4);
        pin_field!(sdm_api, status_string, 8, 8);
        pin_field!(sdm_api, abi_version, 16, 8);
        pin_field!(sdm_api, version_string, 24, 8);
        pin_field!(sdm_api, error_code, 32, 8);
        pin_field!(sdm_api, error_message, 40, 8);
        pin_field!(sdm_api, error_native, 48, 8);
        pin_field!(sdm_api, error_log, 56, 8);
        pin_field!(sdm_api, error_destroy, 64, 8);
        pin_field!(sdm_api, runtime_create, 72, 8);
        pin_field!(sdm_api, runtime_destroy, 80, 8);
        pin_field!(sdm_api, runtime_last_error, 88, 8);
        pin_field!(sdm_api, archive_mount_file, 96, 8);
        pin_field!(sdm_api, archive_mount_memory, 104, 8);
        pin_field!(sdm_api, archive_count, 112, 8);
        pin_field!(sdm_api, archive_info_get, 120, 8);
        pin_field!(sdm_api, driver_version, 128, 8);
        pin_field!(sdm_api, device_count, 136, 8);
        pin_field!(sdm_api, device_info_get, 144, 8);
        pin_field!(sdm_api, device_class_get, 152, 8);
        pin_field!(sdm_api, device_class_name, 160, 8);
        pin_field!(sdm_api, kernel_get, 168, 8);
        pin_field!(sdm_api, kernel_function, 176, 8);
        pin_field!(sdm_api, kernel_info_get, 184, 8);
        pin_field!(sdm_api, preload, 192, 8);
        pin_field!(sdm_api, cache_stats_get, 200, 8);
        pin_field!(sdm_api, kernel_get_checked, 208, 8);
        pin_field!(sdm_api, kernel_release, 216, 8);
        pin_field!(sdm_api, runtime_reload, 224, 8);
        pin_field!(sdm_api, runtime_poll_archives, 232, 8);
        pin_field!(sdm_api, plan_select, 240, 8);
        pin_field!(sdm_api, launch, 248, 8);
        pin_field!(sdm_api, plugin_load, 256, 8);
        pin_size!(sdm_api, 264, 8);
    }

    #[test]
    fn plan() {
        pin_field!(sdm_plan, struct_size, 0, 4);
        pin_field!(sdm_plan, flags, 4, 4);
        pin_field!(sdm_plan, grid, 8, 4);
        pin_field!(sdm_plan, block, 12, 4);
        pin_field!(sdm_plan, smem_bytes, 16, 4);
        pin_field!(sdm_plan, cluster, 20, 12);
        pin_field!(sdm_plan, blocks_per_sm, 32, 4);
        pin_field!(sdm_plan, occupancy, 36, 4);
        pin_field!(sdm_plan, rule, 40, 4);
        pin_field!(sdm_plan, reserved0, 44, 4);
        pin_size!(sdm_plan, 48, 4);
    }

    #[test]
    fn defaults_set_struct_size() {
        assert_eq!(sdm_runtime_params::default().struct_size, 88);
        assert_eq!(sdm_device_info::default().struct_size, 312);
        assert_eq!(sdm_plan::default().struct_size, 48);
        assert!(sdm_runtime_params::default().cuda_driver.is_null());
        assert!(sdm_runtime_params::default().log_fn.is_none());
    }
}
