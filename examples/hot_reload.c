/* A host with a frame loop that picks up new kernel archives while it runs: once a frame it polls
 * (sdm_runtime_poll_archives: one stat per archive file), fetches its kernel, and releases it at
 * the end of the frame. It prints a line when what serves the kernel changes, or when a dropped
 * file is refused. Usage: hot_reload ARCHIVE KERNEL FRAMES FRAME_MS
 * tests/gpu/reload_transcript.sh drops new and broken archives beside it. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sdm/sdm.h>

static const char* source_name(uint32_t source) {
    switch (source) {
    case 1: return "archive cubin";
    case 2: return "cache";
    case 3: return "nvJitLink";
    case 4: return "driver JIT";
    case 5: return "fatbin";
    default: return "?";
    }
}

/* The content version of the mounted archive labelled `label`. */
static const char* content_of(sdm_runtime* rt, const char* label) {
    uint32_t n = 0;
    sdm_archive_count(rt, &n, NULL);
    for (uint32_t i = 0; i < n; ++i) {
        sdm_archive_info a = {0};
        a.struct_size = sizeof a;
        if (sdm_archive_info_get(rt, i, &a, NULL) == SDM_OK && strcmp(a.label, label) == 0) return a.content_version;
    }
    return "?";
}

int main(int argc, char** argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: hot_reload ARCHIVE KERNEL FRAMES FRAME_MS\n");
        return 2;
    }
    const char* kernel_name = argv[2];
    const int frames = atoi(argv[3]);
    const long frame_ms = atol(argv[4]);
    sdm_runtime_params params = {0};
    params.struct_size = sizeof params;
    params.log_level = SDM_LOG_OFF; /* what matters is printed below */
    sdm_runtime* rt = NULL;
    sdm_error* err = NULL;
    if (sdm_runtime_create(&params, &rt, &err) != SDM_OK || sdm_archive_mount_file(rt, argv[1], &err) != SDM_OK) {
        fprintf(stderr, "%s\n", sdm_error_message(err));
        return 1;
    }
    char serving[512] = "";
    for (int frame = 0; frame < frames; ++frame) {
        uint32_t reloaded = 0;
        if (sdm_runtime_poll_archives(rt, &reloaded, &err) != SDM_OK) {
            printf("frame %d: new file refused (%s): %s\n", frame, sdm_status_string(sdm_error_code(err)), sdm_error_message(err));
            sdm_error_destroy(err);
            err = NULL;
        } else if (reloaded > 0) {
            printf("frame %d: reloaded %u archive(s)\n", frame, reloaded);
        }
        sdm_kernel* k = NULL;
        if (sdm_kernel_get(rt, 0, kernel_name, NULL, &k, &err) != SDM_OK) {
            printf("frame %d: %s: %s\n", frame, sdm_status_string(sdm_error_code(err)), sdm_error_message(err));
            sdm_error_destroy(err);
            err = NULL;
        } else {
            sdm_kernel_info info = {0};
            info.struct_size = sizeof info;
            void* function = NULL;
            sdm_kernel_info_get(k, &info, NULL);
            sdm_kernel_function(k, &function, NULL); /* what a host hands to cuLaunchKernel */
            char now[512];
            snprintf(now, sizeof now, "%s from %s (content %s), %s%u via %s", info.name, info.archive, content_of(rt, info.archive),
                     info.image_kind == 1 ? "cubin sm_" : "PTX compute_", info.image_sm, source_name(info.source));
            if (strcmp(now, serving) != 0) {
                printf("frame %d: %s, function %p\n", frame, now, function);
                strcpy(serving, now);
            }
            sdm_kernel_release(rt, k, NULL); /* end of frame: the old module may go after a reload */
        }
        fflush(stdout);
        struct timespec pause = {frame_ms / 1000, (frame_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    printf("after %d frames: done\n", frames);
    sdm_runtime_destroy(rt);
    return 0;
}
