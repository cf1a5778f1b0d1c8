/* One process of the multi-process cold-start stress (tests/stress/cold_start.py): waits for the
 * start signal (a byte on stdin, so that every process starts at once), creates a runtime on the
 * shared $SDM_CACHE_DIR, mounts ARCHIVE and fetches every KERNEL on every device, then prints one
 * line: "ok builds B hits H misses M bad X sources S..." (sdm_cache_stats; each fetch's source:
 * 2 cache, 3 nvJitLink), or "FAIL ..." with sdm's message, and exits 1.
 * Usage: stress_cold_start ARCHIVE KERNEL... */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sdm/sdm.h>

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: stress_cold_start ARCHIVE KERNEL...\n");
        return 2;
    }
    char go = 0;
    if (read(0, &go, 1) != 1) return 3; /* the parent went away */
    sdm_runtime_params params;
    memset(&params, 0, sizeof params);
    params.struct_size = sizeof params;
    params.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    params.log_level = SDM_LOG_OFF;
    sdm_runtime* rt = NULL;
    sdm_error* error = NULL;
    if (sdm_runtime_create(&params, &rt, &error) != SDM_OK || sdm_archive_mount_file(rt, argv[1], &error) != SDM_OK) {
        printf("FAIL setup: %s\n", sdm_error_message(error));
        return 1;
    }
    int32_t devices = 0;
    if (sdm_device_count(rt, &devices, &error) != SDM_OK) {
        printf("FAIL devices: %s\n", sdm_error_message(error));
        return 1;
    }
    char sources[256] = "";
    for (int32_t d = 0; d < devices; ++d)
        for (int k = 2; k < argc; ++k) {
            sdm_kernel* kernel = NULL;
            sdm_kernel_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            if (sdm_kernel_get(rt, d, argv[k], NULL, &kernel, &error) != SDM_OK || sdm_kernel_info_get(kernel, &info, &error) != SDM_OK) {
                printf("FAIL kernel %s on device %d: %s\n", argv[k], d, sdm_error_message(error));
                return 1;
            }
            size_t used = strlen(sources);
            snprintf(sources + used, sizeof sources - used, "%s%u", used ? "," : "", info.source);
        }
    sdm_cache_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    if (sdm_cache_stats_get(rt, &stats, &error) != SDM_OK) {
        printf("FAIL stats: %s\n", sdm_error_message(error));
        return 1;
    }
    printf("ok builds %llu hits %llu misses %llu bad %llu sources %s\n", (unsigned long long)stats.builds, (unsigned long long)stats.hits,
           (unsigned long long)stats.misses, (unsigned long long)stats.bad_entries, sources);
    sdm_runtime_destroy(rt);
    return 0;
}
