// Test helpers for loading through the C ABI with the fake driver (tests/fake_cuda): runtimes,
// archives of the test kernels, and what a kernel_get returned. Shared by the loader's tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "bytes.hpp"
#include "sdm/sdm.h"

namespace sdm::test {

struct RuntimeDeleter {
    void operator()(sdm_runtime* r) const { sdm_runtime_destroy(r); }
};
using RuntimePtr = std::unique_ptr<sdm_runtime, RuntimeDeleter>;

// Only the driver's JIT may take PTX (nvJitLink and nvPTXCompiler forbidden).
inline constexpr uint32_t kDriverJitOnly = SDM_JIT_NO_NVJITLINK | SDM_JIT_NO_PTX_COMPILER;

inline constexpr const char* kH200 = "NVIDIA H200,9.0,232448,132,62914560";
inline constexpr const char* kA100 = "NVIDIA A100-SXM4-80GB,8.0,166912,108,41943040";
inline constexpr const char* kRtx4090 = "NVIDIA GeForce RTX 4090,8.9,101376,128,75497472";

// How many times the fake driver ran entry point `what` since its last cuInit ("@modules": loaded now).
int64_t fake_calls(const char* what);
// Back to a freshly loaded fake driver: every module unloaded, every context released.
void fake_reset();
// Configures the fake driver: its devices (rows separated by ';'), version 13.0, no failures.
void fake(const char* devices);
// A runtime on the fake driver with its cache in `cache_dir`; no embedded archive, log off unless
// `log` (then every message is appended to it).
RuntimePtr make_runtime(const std::string& cache_dir, uint32_t jit_flags = 0, uint32_t cache_flags = 0, std::vector<std::string>* log = nullptr);
// An archive of the test kernels: `targets` of module `module` (tests/data/kernels.TARGET.cubin or
// .ptx, or "FILE=TARGET" for another file of tests/data), a manifest listing `kernels` there.
ByteVector make_archive(const std::string& module, std::initializer_list<const char*> targets,
                                 std::vector<std::string> kernels = {"axpy", "scale"}, uint16_t kernel_abi_major = 1);
void mount(sdm_runtime* rt, const ByteVector& bytes, const char* label);
// sdm_kernel_get, requiring status `expect`; the info on success, the message in `message`.
sdm_kernel_info info_of(sdm_runtime* rt, int32_t ordinal, const char* name, sdm_status expect = SDM_OK, std::string* message = nullptr);
sdm_cache_stats stats_of(sdm_runtime* rt);

}  // namespace sdm::test
