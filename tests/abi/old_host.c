/* A host compiled against the released ABI 1.0 header (tests/abi/released/1.0/sdm/sdm.h), run on
 * the current libsdm (meson test abi_1_0_host, on the fake driver): its 1.0-sized structs are
 * accepted, every 1.0 function answers as 1.0 said, and the 1.0 function table is filled. The
 * archive to mount is argv[1] (tests/golden/kernels.sdma: kernels "scale" and "axpy"). */
#include <stdio.h>
#include <string.h>

#include <sdm/sdm.h>

#if SDM_ABI_VERSION_MAJOR != 1 || SDM_ABI_VERSION_MINOR != 0
#error "old_host.c must be compiled against the ABI 1.0 header"
#endif

static int failures = 0;

static void check(int ok, const char* what, sdm_error* error) {
    printf("%s: %s%s%s\n", ok ? "ok" : "FAIL", what, error ? ": " : "", error ? sdm_error_message(error) : "");
    failures += ok ? 0 : 1;
    sdm_error_destroy(error);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: abi_1_0_host ARCHIVE\n");
        return 2;
    }
    const uint32_t abi = sdm_abi_version();
    printf("libsdm %s implements C ABI %u.%u; this host was built for 1.0\n", sdm_version_string(), abi >> 16, abi & 0xffffu);
    check(abi >> 16 == 1, "same major", NULL);

    sdm_runtime_params params;
    memset(&params, 0, sizeof params);
    params.struct_size = sizeof params; /* 80 bytes: the 1.0 size */
    params.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    params.cache_flags = SDM_CACHE_DISABLED;
    sdm_runtime* rt = NULL;
    sdm_error* error = NULL;
    check(sizeof params == 80 && sdm_runtime_create(&params, &rt, &error) == SDM_OK, "runtime from 1.0 params (80 bytes)", error);
    if (rt == NULL) return 1;
    error = NULL;
    check(sdm_archive_mount_file(rt, argv[1], &error) == SDM_OK, "mount", error);

    sdm_archive_info archive;
    memset(&archive, 0, sizeof archive);
    archive.struct_size = sizeof archive;
    error = NULL;
    check(sdm_archive_info_get(rt, 0, &archive, &error) == SDM_OK && archive.kernel_count == 2, "archive info (2 kernels)", error);

    int32_t devices = 0;
    error = NULL;
    check(sdm_device_count(rt, &devices, &error) == SDM_OK && devices == 1, "one device", error);
    sdm_device_info device;
    memset(&device, 0, sizeof device);
    device.struct_size = sizeof device;
    error = NULL;
    check(sdm_device_info_get(rt, 0, &device, &error) == SDM_OK && device.capability_major == 9 && device.sm_count == 132 &&
              device.device_class == SDM_DEVICE_CLASS_MODERN,
          "device info (an H200 row, class modern)", error);

    sdm_kernel* kernel = NULL;
    error = NULL;
    check(sdm_kernel_get(rt, 0, "scale", NULL, &kernel, &error) == SDM_OK, "kernel scale", error);
    sdm_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    error = NULL;
    check(kernel != NULL && sdm_kernel_info_get(kernel, &info, &error) == SDM_OK && strcmp(info.signature, "ptr,f32,i32") == 0,
          "kernel info (signature ptr,f32,i32)", error);
    void* function = NULL;
    error = NULL;
    check(kernel != NULL && sdm_kernel_function(kernel, &function, &error) == SDM_OK && function != NULL, "kernel function", error);
    error = NULL;
    check(sdm_kernel_get(rt, 0, "no_such_kernel", NULL, &kernel, &error) == SDM_ERROR_NOT_FOUND && error != NULL &&
              strstr(sdm_error_message(error), "no_such_kernel") != NULL,
          "a missing kernel: SDM_ERROR_NOT_FOUND naming it", NULL);
    sdm_error_destroy(error);

    uint32_t minor = 0;
    const sdm_api* api = NULL;
    check(sdm_get_api(1, &minor, &api) == SDM_OK && api != NULL && minor >= 1 && api->struct_size >= sizeof(sdm_api) &&
              api->cache_stats_get != NULL && api->kernel_get == sdm_kernel_get,
          "the 1.0 function table, filled", NULL);
    sdm_runtime_destroy(rt);
    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
