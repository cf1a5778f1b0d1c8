/* Pins the layout of every public struct in sdm.h and the value of every enum constant, as
 * literal numbers, so that a change which moves, resizes or reorders a field, or renumbers a
 * constant, fails to compile. Hosts bind these by hand (Go, Julia, ctypes) or from a bindgen run
 * made once; a moved field breaks them silently at run time, so it must break here first.
 *
 * When a minor version appends fields: add their lines below the 1.0 ones and raise the struct's
 * total size. Never change a line that is already here: a shipped layout stays.
 *
 * Built as C11 and run as a test (main returns 0); it needs no library. */
#include <sdm/sdm.h>

#include <stddef.h>

#define PIN_FIELD(type, field, offset, size)                                                              \
    _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved");                         \
    _Static_assert(sizeof(((type*)0)->field) == (size), #type "." #field " changed size")
#define PIN_SIZE(type, size, align)                                                                       \
    _Static_assert(sizeof(type) == (size), "sizeof(" #type ") changed");                                  \
    _Static_assert(_Alignof(type) == (align), "_Alignof(" #type ") changed")
#define PIN_VALUE(name, value) _Static_assert((name) == (value), #name " was renumbered")

/* ---- values: the same on every platform ------------------------------------------------------ */

PIN_VALUE(SDM_ABI_VERSION_MAJOR, 1);
PIN_VALUE(SDM_ABI_VERSION_MINOR, 1); /* moves with each minor: update it with docs/ABI_CHANGELOG.md */

PIN_SIZE(sdm_status, 4, 4);
PIN_SIZE(sdm_log_level, 4, 4);
PIN_SIZE(sdm_device_class, 4, 4);

PIN_VALUE(SDM_OK, 0);
PIN_VALUE(SDM_ERROR_INVALID_ARGUMENT, 1);
PIN_VALUE(SDM_ERROR_OUT_OF_MEMORY, 2);
PIN_VALUE(SDM_ERROR_NO_DRIVER, 3);
PIN_VALUE(SDM_ERROR_DRIVER_TOO_OLD, 4);
PIN_VALUE(SDM_ERROR_DRIVER, 5);
PIN_VALUE(SDM_ERROR_NO_DEVICE, 6);
PIN_VALUE(SDM_ERROR_UNSUPPORTED_DEVICE, 7);
PIN_VALUE(SDM_ERROR_ARCHIVE_CORRUPT, 8);
PIN_VALUE(SDM_ERROR_ARCHIVE_UNSUPPORTED, 9);
PIN_VALUE(SDM_ERROR_IO, 10);
PIN_VALUE(SDM_ERROR_NOT_FOUND, 11);
PIN_VALUE(SDM_ERROR_UNSUPPORTED, 12);
PIN_VALUE(SDM_ERROR_NO_IMAGE, 13);
PIN_VALUE(SDM_ERROR_IMAGE_REFUSED, 14);
PIN_VALUE(SDM_ERROR_JIT, 15);
PIN_VALUE(SDM_ERROR_MISMATCH, 16);
PIN_VALUE(SDM_ERROR_GRAPH_CAPTURE, 17);
PIN_VALUE(SDM_ERROR_INTERNAL, 18);

PIN_VALUE(SDM_LOG_OFF, -1);
PIN_VALUE(SDM_LOG_DEFAULT, 0);
PIN_VALUE(SDM_LOG_ERROR, 1);
PIN_VALUE(SDM_LOG_WARN, 2);
PIN_VALUE(SDM_LOG_INFO, 3);
PIN_VALUE(SDM_LOG_DEBUG, 4);

PIN_VALUE(SDM_RUNTIME_NO_EMBEDDED_ARCHIVE, 1);

PIN_VALUE(SDM_DEVICE_CLASS_UNSUPPORTED, 0);
PIN_VALUE(SDM_DEVICE_CLASS_MODERN, 1);
PIN_VALUE(SDM_DEVICE_CLASS_A100, 2);
PIN_VALUE(SDM_DEVICE_CLASS_RTX, 3);

/* ---- layouts: LP64 (x86_64 and aarch64 Linux) ------------------------------------------------ */

#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))

/* ABI 1.0 */
PIN_FIELD(sdm_runtime_params, struct_size, 0, 4);
PIN_FIELD(sdm_runtime_params, flags, 4, 4);
PIN_FIELD(sdm_runtime_params, log_fn, 8, 8);
PIN_FIELD(sdm_runtime_params, log_user_data, 16, 8);
PIN_FIELD(sdm_runtime_params, log_level, 24, 4);
PIN_FIELD(sdm_runtime_params, reserved0, 28, 4);
PIN_FIELD(sdm_runtime_params, cuda_driver, 32, 8);
PIN_FIELD(sdm_runtime_params, cuda_context, 40, 8);
PIN_FIELD(sdm_runtime_params, next, 48, 8);
PIN_FIELD(sdm_runtime_params, cache_dir, 56, 8);
PIN_FIELD(sdm_runtime_params, cache_max_bytes, 64, 8);
PIN_FIELD(sdm_runtime_params, cache_flags, 72, 4);
PIN_FIELD(sdm_runtime_params, jit_flags, 76, 4);
PIN_FIELD(sdm_runtime_params, kernel_abi_major, 80, 4); /* 1.1 */
PIN_FIELD(sdm_runtime_params, reserved1, 84, 4);
PIN_SIZE(sdm_runtime_params, 88, 8);
PIN_VALUE(SDM_CACHE_DISABLED, 1);
PIN_VALUE(SDM_CACHE_READ_ONLY, 2);
PIN_VALUE(SDM_JIT_NO_NVJITLINK, 1);
PIN_VALUE(SDM_JIT_NO_DRIVER, 2);
PIN_VALUE(SDM_JIT_NO_PTX_COMPILER, 4); /* 1.1 */
PIN_VALUE(SDM_PLAN_PDL, 1);            /* 1.1 */

PIN_FIELD(sdm_kernel_info, struct_size, 0, 4);
PIN_FIELD(sdm_kernel_info, ordinal, 4, 4);
PIN_FIELD(sdm_kernel_info, image_kind, 8, 4);
PIN_FIELD(sdm_kernel_info, image_sm, 12, 4);
PIN_FIELD(sdm_kernel_info, loaded_sm, 16, 4);
PIN_FIELD(sdm_kernel_info, source, 20, 4);
PIN_FIELD(sdm_kernel_info, name, 24, 8);
PIN_FIELD(sdm_kernel_info, module, 32, 8);
PIN_FIELD(sdm_kernel_info, archive, 40, 8);
PIN_FIELD(sdm_kernel_info, signature, 48, 8);
PIN_SIZE(sdm_kernel_info, 56, 8);

PIN_FIELD(sdm_cache_stats, struct_size, 0, 4);
PIN_FIELD(sdm_cache_stats, reserved0, 4, 4);
PIN_FIELD(sdm_cache_stats, hits, 8, 8);
PIN_FIELD(sdm_cache_stats, misses, 16, 8);
PIN_FIELD(sdm_cache_stats, builds, 24, 8);
PIN_FIELD(sdm_cache_stats, evictions, 32, 8);
PIN_FIELD(sdm_cache_stats, bad_entries, 40, 8);
PIN_FIELD(sdm_cache_stats, bytes_written, 48, 8);
PIN_FIELD(sdm_cache_stats, build_milliseconds, 56, 8);
PIN_SIZE(sdm_cache_stats, 64, 8);

PIN_FIELD(sdm_chain, struct_size, 0, 4);
PIN_FIELD(sdm_chain, type, 4, 4);
PIN_FIELD(sdm_chain, next, 8, 8);
PIN_SIZE(sdm_chain, 16, 8);

/* ABI 1.0 */
PIN_FIELD(sdm_archive_info, struct_size, 0, 4);
PIN_FIELD(sdm_archive_info, entry_count, 4, 4);
PIN_FIELD(sdm_archive_info, kernel_count, 8, 4);
PIN_FIELD(sdm_archive_info, kernel_abi_major, 12, 2);
PIN_FIELD(sdm_archive_info, kernel_abi_minor, 14, 2);
PIN_FIELD(sdm_archive_info, format_major, 16, 2);
PIN_FIELD(sdm_archive_info, format_minor, 18, 2);
PIN_FIELD(sdm_archive_info, embedded, 20, 4);
PIN_FIELD(sdm_archive_info, size_bytes, 24, 8);
PIN_FIELD(sdm_archive_info, label, 32, 8);
PIN_FIELD(sdm_archive_info, content_version, 40, 8);
PIN_SIZE(sdm_archive_info, 48, 8);

/* ABI 1.0 */
PIN_FIELD(sdm_device_info, struct_size, 0, 4);
PIN_FIELD(sdm_device_info, ordinal, 4, 4);
PIN_FIELD(sdm_device_info, capability_major, 8, 4);
PIN_FIELD(sdm_device_info, capability_minor, 12, 4);
PIN_FIELD(sdm_device_info, device_class, 16, 4);
PIN_FIELD(sdm_device_info, sm_count, 20, 4);
PIN_FIELD(sdm_device_info, l2_bytes, 24, 8);
PIN_FIELD(sdm_device_info, smem_optin_bytes, 32, 4);
PIN_FIELD(sdm_device_info, smem_cap_bytes, 36, 4);
PIN_FIELD(sdm_device_info, smem_per_sm_bytes, 40, 4);
PIN_FIELD(sdm_device_info, pdl_allowed, 44, 4);
PIN_FIELD(sdm_device_info, clusters_allowed, 48, 4);
PIN_FIELD(sdm_device_info, untested, 52, 4);
PIN_FIELD(sdm_device_info, name, 56, 256);
PIN_SIZE(sdm_device_info, 312, 8);

/* ABI 1.0: the function table, in declaration order. */
PIN_FIELD(sdm_api, struct_size, 0, 4);
PIN_FIELD(sdm_api, abi_minor, 4, 4);
PIN_FIELD(sdm_api, status_string, 8, 8);
PIN_FIELD(sdm_api, abi_version, 16, 8);
PIN_FIELD(sdm_api, version_string, 24, 8);
PIN_FIELD(sdm_api, error_code, 32, 8);
PIN_FIELD(sdm_api, error_message, 40, 8);
PIN_FIELD(sdm_api, error_native, 48, 8);
PIN_FIELD(sdm_api, error_log, 56, 8);
PIN_FIELD(sdm_api, error_destroy, 64, 8);
PIN_FIELD(sdm_api, runtime_create, 72, 8);
PIN_FIELD(sdm_api, runtime_destroy, 80, 8);
PIN_FIELD(sdm_api, runtime_last_error, 88, 8);
PIN_FIELD(sdm_api, archive_mount_file, 96, 8);
PIN_FIELD(sdm_api, archive_mount_memory, 104, 8);
PIN_FIELD(sdm_api, archive_count, 112, 8);
PIN_FIELD(sdm_api, archive_info_get, 120, 8);
PIN_FIELD(sdm_api, driver_version, 128, 8);
PIN_FIELD(sdm_api, device_count, 136, 8);
PIN_FIELD(sdm_api, device_info_get, 144, 8);
PIN_FIELD(sdm_api, device_class_get, 152, 8);
PIN_FIELD(sdm_api, device_class_name, 160, 8);
PIN_FIELD(sdm_api, kernel_get, 168, 8);
PIN_FIELD(sdm_api, kernel_function, 176, 8);
PIN_FIELD(sdm_api, kernel_info_get, 184, 8);
PIN_FIELD(sdm_api, preload, 192, 8);
PIN_FIELD(sdm_api, cache_stats_get, 200, 8);
/* ABI 1.1 */
PIN_FIELD(sdm_api, kernel_get_checked, 208, 8);
PIN_FIELD(sdm_api, kernel_release, 216, 8);
PIN_FIELD(sdm_api, runtime_reload, 224, 8);
PIN_FIELD(sdm_api, runtime_poll_archives, 232, 8);
PIN_FIELD(sdm_api, plan_select, 240, 8);
PIN_FIELD(sdm_api, launch, 248, 8);
PIN_FIELD(sdm_api, plugin_load, 256, 8);
PIN_SIZE(sdm_api, 264, 8);
/* ABI 1.1: plans */
PIN_FIELD(sdm_plan, struct_size, 0, 4);
PIN_FIELD(sdm_plan, flags, 4, 4);
PIN_FIELD(sdm_plan, grid, 8, 4);
PIN_FIELD(sdm_plan, block, 12, 4);
PIN_FIELD(sdm_plan, smem_bytes, 16, 4);
PIN_FIELD(sdm_plan, cluster, 20, 12);
PIN_FIELD(sdm_plan, blocks_per_sm, 32, 4);
PIN_FIELD(sdm_plan, occupancy, 36, 4);
PIN_FIELD(sdm_plan, rule, 40, 4);
PIN_FIELD(sdm_plan, reserved0, 44, 4);
PIN_SIZE(sdm_plan, 48, 4);

#else
#error "layout.c pins the LP64 layout of x86_64 and aarch64; add this platform's numbers (from a probe) before building on it"
#endif

int main(void) { return 0; }
