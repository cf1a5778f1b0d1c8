/* The test helpers of libcuda_fake.so, the fake CUDA driver (fake_cuda.cpp). Tests dlopen the
 * library and look these up with dlsym; every CUDA entry point comes from cuGetProcAddress_v2.
 *
 * Configuration, read from the environment at every cuInit (which also restarts the call
 * counters; live contexts and modules survive it):
 *   SDM_FAKE_CUDA_DEVICES  rows "name,major.minor,smem_optin_bytes,sm_count,l2_bytes" joined by
 *                          ';' (NVIDIA H200,9.0,232448,132,62914560). Unset or empty: no device,
 *                          and cuInit returns CUDA_ERROR_NO_DEVICE as libcuda does.
 *   SDM_FAKE_CUDA_VERSION  the driver version, default 13000. It bounds the PTX ISA the JIT takes
 *                          (13000: 9.0, 12080: 8.7, 12040: 8.4, 12000: 8.0), as read by cuInit.
 *                          cuDriverGetVersion reads it at each call (it needs no cuInit).
 *   SDM_FAKE_CUDA_FAIL     "entry=code[@n],...": the entry point (base name) returns `code` (a
 *                          number or a CUDA_ERROR_ name) on its n-th call since cuInit, or on every
 *                          call. A cuInit rule applies to the cuInit that reads it;
 *                          cuDriverGetVersion (which needs no cuInit) reads its rules at each call.
 *   SDM_FAKE_CUDA_MISSING  "name,...": cuGetProcAddress reports these as not found (an old driver).
 *   SDM_FAKE_CUDA_IMAGE_LOG FILE: one line per cubin loaded, the XXH3-128 of the bytes read (read at
 *                          each load).
 * A malformed variable fails cuInit with CUDA_ERROR_INVALID_VALUE and a line on stderr.
 * Read at each call instead: SDM_FAKE_CUDA_DISABLE_JIT=1 (every PTX load fails with
 * CUDA_ERROR_JIT_COMPILER_NOT_FOUND) and SDM_FAKE_CUDA_CAPTURING=1 (cuStreamIsCapturing reports
 * CU_STREAM_CAPTURE_STATUS_ACTIVE). */
#ifndef SDM_FAKE_CUDA_H
#define SDM_FAKE_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Calls of `entry_point` (a base name: "cuModuleLoadData") since the last cuInit or
 * sdm_fake_cuda_reset, failed calls included; -1 for a name the fake does not implement.
 * Two pseudo-names report live state instead: "@modules" (modules loaded and not unloaded) and
 * "@contexts" (the sum of the primary contexts' retain counts). */
int64_t sdm_fake_cuda_calls(const char* entry_point);
/* Back to the state of a freshly loaded library: uninitialized (until the next cuInit), every
 * module unloaded, every primary context released, the calling thread's context stack emptied,
 * counters zeroed. Handles stay memory-safe: a stale one is reported invalid. */
void sdm_fake_cuda_reset(void);

typedef int64_t (*sdm_fake_cuda_calls_fn)(const char*);
typedef void (*sdm_fake_cuda_reset_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* SDM_FAKE_CUDA_H */
