/* The test helpers of libcuda_fake.so, the fake CUDA driver (fake_cuda.cpp). Tests dlopen the
 * library and look these up with dlsym; every CUDA entry point comes from cuGetProcAddress_v2.
 *
 * The fake has one configuration (sdm_fake_cuda_config below) from one of two sources:
 *   - sdm_fake_cuda_configure, for tests in the process: once called, the last configuration it
 *     was given is the fake's and the environment is no longer read, until it is called with
 *     NULL (sdm_fake_cuda_reset keeps it);
 *   - the environment otherwise, for other processes (the sdm tool, the stress hosts, the
 *     bindings' tests, anything a test executes), parsed into the same configuration.
 * Either takes effect in the same way: cuInit adopts the configuration whole (which also restarts
 * the call counters; live contexts and modules survive it): the devices, the failure rules, the
 * missing entry points and the version the JIT's PTX ISA follows. What a call needs before or
 * without a cuInit is read as it is at each call: the version and the failure rules of
 * cuDriverGetVersion, disable_jit, capturing, the forced occupancy, the image log, record_params
 * and hold_loads.
 *
 * The environment:
 *   SDM_FAKE_CUDA_DEVICES  rows "name,major.minor,smem_optin_bytes,sm_count,l2_bytes" joined by
 *                          ';' (NVIDIA H200,9.0,232448,132,62914560). Unset or empty: no device,
 *                          and cuInit returns CUDA_ERROR_NO_DEVICE as libcuda does.
 *   SDM_FAKE_CUDA_VERSION  the driver version, default 13000. It bounds the PTX ISA the JIT takes
 *                          (13000: 9.0, 12080: 8.7, 12040: 8.4, 12000: 8.0).
 *   SDM_FAKE_CUDA_FAIL     "entry=code[@n],...": the entry point (base name) returns `code` (a
 *                          number or a CUDA_ERROR_ name, or "throw": the call throws
 *                          std::bad_alloc) on its n-th call since cuInit, or on every call. A
 *                          cuInit rule applies to the cuInit that reads it.
 *   SDM_FAKE_CUDA_MISSING  "name,...": cuGetProcAddress reports these as not found (an old driver).
 *   SDM_FAKE_CUDA_DISABLE_JIT=1  every PTX load fails with CUDA_ERROR_JIT_COMPILER_NOT_FOUND.
 *   SDM_FAKE_CUDA_CAPTURING=1    cuStreamIsCapturing reports CU_STREAM_CAPTURE_STATUS_ACTIVE.
 *   SDM_FAKE_CUDA_OCCUPANCY=N    cuOccupancyMaxActiveBlocksPerMultiprocessor reports N blocks.
 *   SDM_FAKE_CUDA_IMAGE_LOG=FILE one line per cubin loaded, the XXH3-128 of the bytes read.
 *   SDM_FAKE_CUDA_RECORD_PARAMS=1 each launch records its parameter buffer (sdm_fake_cuda_last_params).
 *   SDM_FAKE_CUDA_HOLD_LOADS=1   each image load waits for sdm_fake_cuda_release_loads.
 * A malformed variable fails cuInit with CUDA_ERROR_INVALID_VALUE and a line on stderr. */
#ifndef SDM_FAKE_CUDA_H
#define SDM_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One device, as cuDeviceGetName and cuDeviceGetAttribute report it (cooperative launches from
 * compute capability 6.0 on, unless the name contains "(no cooperative launch)"). */
typedef struct sdm_fake_cuda_device {
    const char* name;          /* 1 to 255 bytes */
    int32_t capability_major;  /* 1 to 99 */
    int32_t capability_minor;  /* 0 to 9 */
    int32_t smem_optin_bytes;  /* > 0: the opt-in shared memory per block */
    int32_t sm_count;          /* > 0 */
    int32_t l2_bytes;          /* >= 0 */
} sdm_fake_cuda_device;

/* Entry point `entry_point` (a base name, "cuModuleLoadData") returns `code` (a CUresult), or
 * throws std::bad_alloc when `throws` is nonzero (as an allocation failing inside a load path
 * would), on its `nth` call since cuInit (1-based), or on every call when `nth` is 0. Of several
 * rules for one entry point, the first that matches applies. */
typedef struct sdm_fake_cuda_failure {
    const char* entry_point;
    int32_t code;
    int32_t throws;
    int64_t nth;
} sdm_fake_cuda_failure;

/* The whole configuration; zero-initialized, it is a 13.0 driver without devices. */
typedef struct sdm_fake_cuda_config {
    const sdm_fake_cuda_device* devices; /* ordinals 0 .. device_count - 1; none: cuInit returns CUDA_ERROR_NO_DEVICE */
    size_t device_count;
    int32_t driver_version;              /* 0: 13000 */
    const sdm_fake_cuda_failure* failures;
    size_t failure_count;
    const char* const* missing;          /* names cuGetProcAddress reports as not found (an old driver) */
    size_t missing_count;
    int32_t disable_jit;                 /* nonzero: every PTX load fails with CUDA_ERROR_JIT_COMPILER_NOT_FOUND */
    int32_t capturing;                   /* nonzero: cuStreamIsCapturing reports CU_STREAM_CAPTURE_STATUS_ACTIVE */
    int32_t force_occupancy;             /* nonzero: cuOccupancyMaxActiveBlocksPerMultiprocessor reports `occupancy` */
    int32_t occupancy;
    const char* image_log;               /* NULL or "": none; else a file that gets a line per cubin loaded: its XXH3-128 and BLAKE2b-256 in hex */
    int32_t hold_work;                   /* nonzero: a launch stays queued on its stream until sdm_fake_cuda_finish_work,
                                            or a cuEventSynchronize / cuCtxSynchronize that waits for it */
    int32_t record_params;               /* nonzero: each launch records its parameter buffer (sdm_fake_cuda_last_params) */
    int32_t hold_loads;                  /* nonzero: each cuModuleLoadData, cuModuleLoadDataEx and cuLibraryLoadData
                                            waits, before it does anything, for a permit of sdm_fake_cuda_release_loads
                                            (loads in the background made slow at will; "@held_loads" counts the waiting) */
} sdm_fake_cuda_config;

/* Makes `config` the fake's configuration in place of the environment, until the next call; NULL
 * hands the configuration back to the environment. It takes effect as described above (most of
 * it at the next cuInit). The fake copies what it needs: nothing `config` points to must outlive
 * the call. Returns CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE for an invalid configuration (a
 * value out of range, an entry point the fake does not implement, a count with a NULL array),
 * which changes nothing and is named on stderr. Any thread may call it. */
int32_t sdm_fake_cuda_configure(const sdm_fake_cuda_config* config);
/* Calls of `entry_point` (a base name: "cuModuleLoadData") since the last cuInit or
 * sdm_fake_cuda_reset, failed calls included; -1 for a name the fake does not implement.
 * Pseudo-names report live state instead: "@modules" (modules loaded and not unloaded),
 * "@device0_memory" (device 0's memory in use, as cuMemGetInfo reports it: each loaded module's
 * image and 16 KiB more, in 64 KiB pages of its own),
 * "@contexts" (the sum of the primary contexts' retain counts), "@queued" (launches not finished,
 * with hold_work), "@events" (events created and not destroyed), "@libraries" (cuLibraryLoadData
 * libraries not unloaded; each context's load of one counts in "@modules"), "@unloaded_busy" (modules
 * unloaded while a launch of theirs was queued: on a GPU, a kernel losing its code), and "@graphs",
 * "@graph_execs", "@user_objects" (CUDA graphs, executable graphs and user objects alive), and
 * "@held_loads" (loads waiting for a permit, with hold_loads). */
int64_t sdm_fake_cuda_calls(const char* entry_point);
/* Back to the state of a freshly loaded library, but for the configuration, which stays:
 * uninitialized (until the next cuInit), every module unloaded, every primary context released,
 * the calling thread's context stack emptied, counters zeroed. Handles stay memory-safe: a stale
 * one is reported invalid. */
void sdm_fake_cuda_reset(void);
/* With hold_work: every queued launch finishes now. */
void sdm_fake_cuda_finish_work(void);
/* With hold_loads: `count` more loads may go on (the longest waiting first, as the scheduler
 * wakes them); permits not yet used wait for the next loads while loads are held. A configuration
 * without hold_loads lets every waiting load go (and drops the permits left). */
void sdm_fake_cuda_release_loads(int64_t count);

/* The configuration of the last cuLaunchKernelEx that succeeded since cuInit or a reset, as the
 * fake received it: dims, dynamic shared memory, every attribute's id in order and the values of
 * those sdm sets. CUDA_ERROR_NOT_FOUND (500) when there was none. */
typedef struct sdm_fake_cuda_launch {
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t smem_bytes;
    uint32_t cluster[3];       /* 0,0,0 without a cluster attribute */
    int32_t cooperative;
    int32_t priority;
    int32_t pdl;
    uint32_t attribute_count;  /* at most 32 recorded */
    int32_t attribute_ids[32];
    void* stream;
} sdm_fake_cuda_launch;
int32_t sdm_fake_cuda_last_launch(sdm_fake_cuda_launch* launch);

/* With record_params, the kernel parameter buffer of that launch, the bytes the kernel would read: its size in `*size`
 * (when `size` is not NULL) and its first min(capacity, size) bytes copied to `buffer` (when not
 * NULL). sdm launches with kernelParams, an array of one pointer per parameter: the fake, like the
 * driver, reads through each as many bytes as the loaded image's parameter table gives that
 * parameter (a cubin's EIATTR_KPARAM_INFO, a PTX .entry's .param list, parsed at load time by
 * sdm's archive/kernel_params), and lays them out at the C-layout offsets of that signature
 * (archive::param_offsets), the bytes between parameters zero. A launch through `extra`
 * (CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE) records that buffer as given.
 * Recording is asked for (record_params) because it reads through every pointer the image's
 * parameter table implies, as the driver does: a test that archives a kernel under a shorter
 * signature than its image's, and launches it with that many pointers, would have it read past
 * the array. CUDA_ERROR_NOT_FOUND (500) when there was no launch, record_params was off at that
 * launch, or its kernel's parameters do not derive from its image (an unrepresentable signature). */
int32_t sdm_fake_cuda_last_params(void* buffer, size_t capacity, size_t* size);

typedef int32_t (*sdm_fake_cuda_last_launch_fn)(sdm_fake_cuda_launch*);
typedef int32_t (*sdm_fake_cuda_last_params_fn)(void*, size_t, size_t*);
typedef int32_t (*sdm_fake_cuda_configure_fn)(const sdm_fake_cuda_config*);
typedef int64_t (*sdm_fake_cuda_calls_fn)(const char*);
typedef void (*sdm_fake_cuda_reset_fn)(void);
typedef void (*sdm_fake_cuda_finish_work_fn)(void);
typedef void (*sdm_fake_cuda_release_loads_fn)(int64_t);

#ifdef __cplusplus
}
#endif

#endif /* SDM_FAKE_CUDA_H */
