/* The README's C host: fetch the kernel `scale` of an archive by name, launch it on GPU 0 and check
 * what it computed. Device memory is the host's own: it calls the CUDA driver sdm loads
 * ($SDM_CUDA_DRIVER, else libcuda.so.1) through cuGetProcAddress, as CUDA 12 hosts do. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <sdm/sdm.h>

static CUresult (*get_proc)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

/* Stores the driver's entry point `name` (its CUDA 12.0 ABI) in the function pointer at `out`. */
static int resolve(void* out, const char* name) {
    void* fn = NULL;
    if (get_proc(name, &fn, 12000, 0, NULL) != CUDA_SUCCESS || fn == NULL) return 0;
    memcpy(out, &fn, sizeof fn); /* ISO C has no cast from an object pointer to a function pointer */
    return 1;
}

static int fail(sdm_error* err) {
    fprintf(stderr, "%s: %s\n", sdm_status_string(sdm_error_code(err)), sdm_error_message(err));
    sdm_error_destroy(err);
    return 1;
}

int main(int argc, char** argv) {
    const char* driver_path = getenv("SDM_CUDA_DRIVER");
    void* driver = dlopen(driver_path != NULL ? driver_path : "libcuda.so.1", RTLD_NOW);
    void* symbol = driver != NULL ? dlsym(driver, "cuGetProcAddress_v2") : NULL;
    if (argc != 2 || symbol == NULL) return fprintf(stderr, "usage: quickstart ARCHIVE (and a CUDA driver)\n"), 2;
    memcpy(&get_proc, &symbol, sizeof symbol);
    CUresult (*retain)(CUcontext*, CUdevice), (*set_current)(CUcontext), (*synchronize)(void);
    CUresult (*alloc)(CUdeviceptr*, size_t), (*to_device)(CUdeviceptr, const void*, size_t), (*to_host)(void*, CUdeviceptr, size_t);
    if (!resolve(&retain, "cuDevicePrimaryCtxRetain") || !resolve(&set_current, "cuCtxSetCurrent") ||
        !resolve(&synchronize, "cuCtxSynchronize") || !resolve(&alloc, "cuMemAlloc") || !resolve(&to_device, "cuMemcpyHtoD") ||
        !resolve(&to_host, "cuMemcpyDtoH"))
        return fprintf(stderr, "the CUDA driver lacks an entry point\n"), 1;

    /* sdm: a runtime, the archive, the kernel by its name and the parameter types this host passes. */
    sdm_runtime* rt = NULL;
    sdm_kernel* scale = NULL;
    sdm_error* err = NULL;
    if (sdm_runtime_create(NULL, &rt, &err) != SDM_OK || sdm_archive_mount_file(rt, argv[1], &err) != SDM_OK ||
        sdm_kernel_get_checked(rt, 0, "scale", "ptr,f32,i32", NULL /* stream */, &scale, &err) != SDM_OK)
        return fail(err);
    sdm_kernel_info info = {.struct_size = sizeof info};
    if (sdm_kernel_info_get(scale, &info, &err) != SDM_OK) return fail(err);
    printf("kernel %s (%s) from %s, image sm_%u\n", info.name, info.signature, info.archive, info.loaded_sm);

    /* Device 0's primary context, the one sdm loaded the kernel in; x = 0, 1, 2, ... on the device. */
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; ++i) x[i] = (float)i;
    CUcontext context = NULL;
    CUdeviceptr device_x = 0;
    if (retain(&context, 0) != CUDA_SUCCESS || set_current(context) != CUDA_SUCCESS || alloc(&device_x, sizeof x) != CUDA_SUCCESS ||
        to_device(device_x, x, sizeof x) != CUDA_SUCCESS)
        return fprintf(stderr, "no device memory\n"), 1;

    /* The plan the archive's manifest gives for N elements on this GPU, and the launch: x *= 2. */
    const int64_t problem[] = {N};
    sdm_plan plan = {.struct_size = sizeof plan};
    float factor = 2.0f;
    int32_t n = N;
    void* args[] = {&device_x, &factor, &n};
    if (sdm_plan_select(scale, problem, 1, &plan, &err) != SDM_OK ||
        sdm_launch(scale, &plan, NULL /* the current context's stream */, args, 3, &err) != SDM_OK)
        return fail(err);
    if (synchronize() != CUDA_SUCCESS || to_host(y, device_x, sizeof y) != CUDA_SUCCESS) return fprintf(stderr, "the launch failed\n"), 1;
    printf("launched: grid %u x %u threads\n", plan.grid, plan.block);

    int doubled = 1, unchanged = 1;
    for (int i = 0; i < N; ++i) {
        doubled &= y[i] == 2.0f * x[i];
        unchanged &= y[i] == x[i];
    }
    /* The fake driver (docs/GPU_TESTS.md) loads images and takes launches but runs no kernel. */
    const int fake = dlsym(driver, "sdm_fake_cuda_configure") != NULL;
    printf("y[999] = %g: %s\n", (double)y[N - 1],
           doubled ? "x * 2, as computed on the GPU" : unchanged && fake ? "x, unchanged: the fake driver runs no kernel" : "WRONG");
    sdm_runtime_destroy(rt);
    return doubled || (unchanged && fake) ? 0 : 1;
}
