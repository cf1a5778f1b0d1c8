/* The smallest useful C host: list the GPUs sdm sees and the archive it was given. */
#include <stdio.h>
#include <sdm/sdm.h>

int main(int argc, char** argv) {
    sdm_runtime* rt = NULL;
    sdm_error* err = NULL;
    if (sdm_runtime_create(NULL, &rt, &err) != SDM_OK) return 1;
    if (argc > 1 && sdm_archive_mount_file(rt, argv[1], &err) != SDM_OK) {
        fprintf(stderr, "%s\n", sdm_error_message(err));
        sdm_error_destroy(err);
    }
    int32_t n = 0;
    if (sdm_device_count(rt, &n, &err) != SDM_OK) {
        fprintf(stderr, "%s: %s\n", sdm_status_string(sdm_error_code(err)), sdm_error_message(err));
        sdm_error_destroy(err);
    }
    for (int32_t i = 0; i < n; ++i) {
        sdm_device_info info = {0};
        info.struct_size = sizeof info;
        if (sdm_device_info_get(rt, i, &info, NULL) == SDM_OK)
            printf("%d: %s (%d.%d) class %s, %d SMs\n", i, info.name, info.capability_major,
                   info.capability_minor, sdm_device_class_name(info.device_class), info.sm_count);
    }
    sdm_runtime_destroy(rt);
    return 0;
}
