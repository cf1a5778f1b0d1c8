// The fake CUDA driver (libcuda_fake.so, sdm_fake_cuda.h) controlled from a test in the process:
// its devices and settings as structs, handed over through sdm_fake_cuda_configure. Once a test
// configures it so, the fake no longer reads SDM_FAKE_CUDA_*; processes a test starts (the sdm
// tool, the stress hosts) are configured by that environment instead.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sdm_fake_cuda.h"

namespace sdm::test {

// What cuDeviceGetName and cuDeviceGetAttribute report for one device.
struct FakeDevice {
    std::string name{};
    int capability_major{0};
    int capability_minor{0};
    int smem_optin_bytes{0};
    int sm_count{0};
    int l2_bytes{0};
};

// Rows of the hardware matrix most tests run on.
inline const FakeDevice kH200{"NVIDIA H200", 9, 0, 232448, 132, 62914560};
inline const FakeDevice kA100{"NVIDIA A100-SXM4-80GB", 8, 0, 166912, 108, 41943040};
inline const FakeDevice kRtx4090{"NVIDIA GeForce RTX 4090", 8, 9, 101376, 128, 75497472};

// Entry point `entry_point` (a base name: "cuModuleLoadData") returns `code`, or throws
// std::bad_alloc when `throws`, on its `nth` call since cuInit (1-based), or on every call (0).
struct FakeFailure {
    std::string entry_point{};
    CUresult code{CUDA_SUCCESS};
    int64_t nth{0};
    bool throws{false};
};

// The fake's whole configuration (sdm_fake_cuda_config); the default is a 13.0 driver without
// devices, which fails cuInit with CUDA_ERROR_NO_DEVICE.
struct FakeConfig {
    std::vector<FakeDevice> devices{};
    int driver_version{13000};
    std::vector<FakeFailure> failures{};
    std::vector<std::string> missing{};  // entry points cuGetProcAddress does not find (an old driver)
    bool disable_jit{false};           // every PTX load fails with CUDA_ERROR_JIT_COMPILER_NOT_FOUND
    bool capturing{false};             // cuStreamIsCapturing reports CU_STREAM_CAPTURE_STATUS_ACTIVE
    std::optional<int> occupancy{};    // what cuOccupancyMaxActiveBlocksPerMultiprocessor reports instead of its model
    std::string image_log{};           // a file that gets a line per cubin loaded (XXH3-128, BLAKE2b-256); "": none
    bool hold_work{false};             // launches stay queued until fake_finish_work or a synchronize waits for them
    bool record_params{false};         // each launch records its parameter buffer (fake_last_params)
    bool hold_loads{false};            // each image load waits for fake_release_loads (fake_calls("@held_loads") counts them)
};

// Hands `config` to `configure` (the sdm_fake_cuda_configure of a fake driver the caller loaded);
// what it returned: CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE with the reason on stderr.
CUresult fake_apply(const FakeConfig& config, sdm_fake_cuda_configure_fn configure);

// The helpers below drive the fake at SDM_FAKE_CUDA_PATH (the one libsdm loads in these tests),
// from the test's thread. The configuration they apply takes effect as sdm_fake_cuda.h says: the
// devices, failures and missing entry points at the next cuInit (a new runtime's first driver
// call), the rest at each call.

// Makes `config` the fake's configuration, until the next one; REQUIREs that the fake takes it.
void fake_configure(FakeConfig config);
// `devices` on a 13.0 driver, nothing else configured.
void fake(std::vector<FakeDevice> devices);
// Each changes one setting of the configuration applied last and applies it again.
void fake_fail(const char* entry_point, CUresult code, int64_t nth = 0);
void fake_throw(const char* entry_point, int64_t nth = 0);
void fake_clear_failures();
void fake_set_disable_jit(bool disable);
void fake_set_capturing(bool capturing);
void fake_set_occupancy(std::optional<int> blocks);
void fake_set_hold_work(bool hold);
void fake_set_record_params(bool record);
void fake_set_hold_loads(bool hold);
// With hold_loads: `count` more image loads may go on.
void fake_release_loads(int64_t count);
// Waits until at least `count` image loads wait for a permit (REQUIREs they come, within 30 s).
void fake_wait_held_loads(int64_t count);
// With hold_work: every queued launch finishes now.
void fake_finish_work();
// The configuration of the last cuLaunchKernelEx that succeeded (REQUIREs there was one).
sdm_fake_cuda_launch fake_last_launch();
// The kernel parameter buffer of that launch, as the fake received it (REQUIREs there was one,
// made with record_params on).
std::vector<unsigned char> fake_last_params();

// Symbol `name` of the fake driver (its exports: cuGetProcAddress_v2, the sdm_fake_cuda_ helpers).
void* fake_symbol(const char* name);
// How many times the fake driver ran entry point `what` since its last cuInit ("@modules": loaded
// now, "@contexts": primary context retains held now; the others sdm_fake_cuda.h lists).
int64_t fake_calls(const char* what);
// Images handed to the driver to load as they are (no JIT): cuLibraryLoadData, or
// cuModuleLoadData where sdm loads modules.
int64_t fake_image_loads();
// A context of the host's own, for tests of the context choices: the primary context of device
// `ordinal` (the fake has no other kind; cuInit is run first if nothing ran it), retained outside
// sdm. With `push`, it is made current on the calling thread (fake_pop_context undoes that).
CUcontext fake_host_context(int ordinal, bool push = false);
void fake_pop_context();
// Drops the retain fake_host_context took: the last one destroys the context and its modules.
void fake_release_host_context(int ordinal);
// Back to a freshly loaded fake driver, its configuration kept: uninitialized, every module
// unloaded, every context released, the counters zeroed.
void fake_reset();

}  // namespace sdm::test
