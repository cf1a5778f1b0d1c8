/* A host that loads libsdm by a relative path (what a relative LD_LIBRARY_PATH entry gives the
 * loader), then changes its working directory before sdm first needs its JIT helper
 * (tests/runtime/platform/test_host_process.cpp). sdm must run the helper beside the libsdm it loaded, found by
 * the absolute path fixed at load, never the one the new working directory's relative path names.
 *   relative_host LIBSDM NEW_DIR ARCHIVE FAKE_DRIVER
 * Prints every log line, then "demangled N of M" for the archive's kernel names (their demangling
 * runs in the helper). Exits 0 when every call returned, 1 otherwise. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sdm/sdm.h"

static void print_line(void* user, sdm_log_level level, const char* message, size_t length) {
    (void)user;
    (void)level;
    (void)length;
    printf("log: %s\n", message);
}

/* (POSIX's idiom for a function from dlsym: ISO C has no object-to-function pointer conversion.) */
#define FIND(name) typeof(&name) p_##name; *(void**)(&p_##name) = dlsym(library, #name); if (!p_##name) { printf("no %s\n", #name); return 1; }

int main(int argc, char** argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: relative_host LIBSDM NEW_DIR ARCHIVE FAKE_DRIVER\n");
        return 2;
    }
    void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    FIND(sdm_runtime_create) FIND(sdm_runtime_destroy) FIND(sdm_archive_mount_file) FIND(sdm_error_message) FIND(sdm_error_destroy)
    FIND(sdm_kernel_list_create) FIND(sdm_kernel_list_count) FIND(sdm_kernel_list_get) FIND(sdm_kernel_list_destroy)
    sdm_runtime_params params;
    memset(&params, 0, sizeof params);
    params.struct_size = sizeof params;
    params.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    params.log_fn = print_line;
    params.log_level = SDM_LOG_INFO;
    params.cuda_driver = argv[4];
    params.jit_isolation = SDM_ISOLATION_AUTO;
    params.cache_flags = SDM_CACHE_DISABLED;
    sdm_runtime* runtime = NULL;
    sdm_error* error = NULL;
    if (p_sdm_runtime_create(&params, &runtime, &error) != SDM_OK) {
        printf("create: %s\n", p_sdm_error_message(error));
        return 1;
    }
    if (chdir(argv[2]) != 0) {
        perror("chdir");
        return 1;
    }
    if (p_sdm_archive_mount_file(runtime, argv[3], &error) != SDM_OK) {
        printf("mount: %s\n", p_sdm_error_message(error));
        return 1;
    }
    sdm_kernel_list* list = NULL;
    if (p_sdm_kernel_list_create(runtime, 0, &list, &error) != SDM_OK) {
        printf("list: %s\n", p_sdm_error_message(error));
        return 1;
    }
    uint32_t count = 0, demangled = 0;
    p_sdm_kernel_list_count(list, &count, NULL);
    for (uint32_t i = 0; i < count; ++i) {
        sdm_kernel_entry entry;
        memset(&entry, 0, sizeof entry);
        entry.struct_size = sizeof entry;
        if (p_sdm_kernel_list_get(list, i, &entry, NULL) == SDM_OK && entry.demangled[0] != '\0') ++demangled;
    }
    printf("demangled %u of %u\n", demangled, count);
    p_sdm_kernel_list_destroy(list);
    p_sdm_runtime_destroy(runtime);
    return 0;
}
