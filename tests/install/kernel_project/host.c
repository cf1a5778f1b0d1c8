/* Loads the kernel project's kernel by name from the archive sdm_add_archive packed, and launches
 * it with the host's own shape (the archive has no plans). */
#include <stdio.h>
#include <sdm/sdm.h>

static int fail(const char* what, sdm_error* err) {
    fprintf(stderr, "kernel_host: %s: %s\n", what, sdm_error_message(err));
    sdm_error_destroy(err);
    return 1;
}

int main(void) {
    sdm_runtime_params params = {0};
    params.struct_size = sizeof params;
    params.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    sdm_runtime* rt = NULL;
    sdm_error* err = NULL;
    if (sdm_runtime_create(&params, &rt, &err) != SDM_OK) return fail("sdm_runtime_create", err);
    if (sdm_archive_mount_file(rt, USER_ARCHIVE, &err) != SDM_OK) return fail("mount", err);
    sdm_kernel* k = NULL;
    if (sdm_kernel_get(rt, 0, "scale", NULL, &k, &err) != SDM_OK) return fail("sdm_kernel_get(scale)", err);
    sdm_kernel_info info = {0};
    info.struct_size = sizeof info;
    if (sdm_kernel_info_get(k, &info, &err) != SDM_OK) return fail("sdm_kernel_info_get", err);
    printf("kernel %s of module %s (%s), image sm_%u\n", info.name, info.module, info.signature, info.image_sm);
    void* p = NULL;
    float factor = 2.0f;
    int n = 0;
    void* args[3] = {&p, &factor, &n};
    sdm_plan plan = {0};
    plan.struct_size = sizeof plan;
    plan.grid = 1;
    plan.block = 32;
    plan.cluster[0] = plan.cluster[1] = plan.cluster[2] = 1;
    if (sdm_launch(k, &plan, NULL, args, 3, &err) != SDM_OK) return fail("sdm_launch", err);
    sdm_runtime_destroy(rt);
    return 0;
}
