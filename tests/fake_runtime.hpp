// Test helpers for loading through the C ABI with the fake driver (tests/fake_cuda): the fake's
// typed control (fake_config.hpp), runtimes, a fixture holding one, archives of the test kernels,
// and what a kernel_get returned. Shared by the loader's tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "archive/writer.hpp"
#include "common/bytes.hpp"
#include "fake_config.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

namespace sdm::test {

struct RuntimeDeleter {
    void operator()(sdm_runtime* r) const { sdm_runtime_destroy(r); }
};
using RuntimePtr = std::unique_ptr<sdm_runtime, RuntimeDeleter>;

// Only the driver's JIT may take PTX (nvJitLink and nvPTXCompiler forbidden).
inline constexpr uint32_t kDriverJitOnly = SDM_JIT_NO_NVJITLINK | SDM_JIT_NO_PTX_COMPILER;

// A runtime on the fake driver with its cache in `cache_dir`; no embedded archive, log off unless
// `log` (then every message is appended to it). With nvJitLink forbidden (the driver's JIT is
// then what links), links run in the process (SDM_ISOLATION_NEVER): the driver compiles there.
// `flags`: SDM_RUNTIME_* beside SDM_RUNTIME_NO_EMBEDDED_ARCHIVE.
// `jit_isolation`: SDM_JIT_ISOLATION_* (DEFAULT: NEVER when nvJitLink is forbidden, else the
// library's default, AUTO).
RuntimePtr make_runtime(const std::string& cache_dir, uint32_t jit_flags = 0, uint32_t cache_flags = 0, std::vector<std::string>* log = nullptr,
                        uint32_t flags = 0, uint32_t jit_isolation = SDM_ISOLATION_DEFAULT);
// An archive of the test kernels: `targets` of module `module` (tests/data/kernels.TARGET.cubin or
// .ptx, or "FILE=TARGET" for another file of tests/data), a manifest listing `kernels` there.
// By default the archive declares that its kernels follow the SDM hardware matrix, as the SDM
// kernels' archive does (the seed's device and image policy apply); Matrix::none makes a user's
// archive, served on any device with a fitting image.
enum class Matrix { follows, none };
ByteVector make_archive(const std::string& module, std::initializer_list<const char*> targets,
                        std::vector<std::string> kernels = {"axpy", "scale"}, uint16_t kernel_abi_major = 1,
                        Matrix matrix = Matrix::follows, const archive::WriterOptions& options = {});
// A user's archive as `sdm import` makes it of tests/data/launch.sm_90.cubin (launch.cu): module
// "launch", every kernel with the signature derived from the cubin, no hardware matrix; another
// `content_version` makes another version of it.
ByteVector launch_archive(const std::string& content_version = "");
void mount(sdm_runtime* rt, const ByteVector& bytes, const char* label);
// Replaces the file `path` the way a deployment does: a temporary file beside it, then rename.
void drop(const std::string& path, const ByteVector& bytes);
// sdm_kernel_get, requiring status `expect`; the info on success, the message in `message`.
sdm_kernel_info info_of(sdm_runtime* rt, int32_t ordinal, const char* name, sdm_status expect = SDM_OK, std::string* message = nullptr);
sdm_cache_stats stats_of(sdm_runtime* rt);
// sdm_kernel_get of `name` on device `ordinal`; FAILs with the error's message.
sdm_kernel* kernel_of(sdm_runtime* rt, const char* name, int32_t ordinal = 0);
// sdm_launch of make_archive's scale (one ptr; 1 block of 128) on `stream`; the error's message
// goes to `message` when given (and to the test's log on a failure).
sdm_status launch_scale(const sdm_kernel* k, CUstream stream = nullptr, std::string* message = nullptr);
// The same without Catch (which is not thread-safe): for a test's worker threads.
sdm_status launch_scale_quietly(const sdm_kernel* k, CUstream stream = nullptr, sdm_error** error = nullptr);
// How many lines of `log` contain `text`.
int count_containing(const std::vector<std::string>& log, const std::string& text);
// The demangled names of mounted archive `archive` (sdm_kernel_list_create), in the listing's order.
std::vector<std::string> demangled_listing(sdm_runtime* rt, uint32_t archive);

struct FakeRuntimeOptions {
    std::vector<FakeDevice> devices{kH200};  // on a 13.0 driver, nothing else configured
    uint32_t jit_flags{0};
    bool log{false};  // every message (debug and up) into FakeRuntime::log
    uint32_t jit_isolation{SDM_ISOLATION_DEFAULT};  // as make_runtime takes it
};

// A runtime over the fake driver, the setup most loader tests share: a fresh directory, the fake
// configured with the options' devices, and make_runtime's runtime with its cache in the
// directory's "cache" folder. TEST_CASE_METHOD(FakeRuntime, ...) gives one H200 with the log off;
// a local FakeRuntime f({.devices = {kH200, kA100}, .jit_flags = kDriverJitOnly, .log = true})
// anything else. A runtime calls the driver first (cuInit) when it first needs it, so settings of
// the fake changed after construction (fake_fail, ...) still reach it.
struct FakeRuntime {
    explicit FakeRuntime(FakeRuntimeOptions options = {});

    FakeRuntimeOptions options;
    TempDir dir;                   // the cache's parent: room for a test's own files
    std::string cache_dir;         // dir.path + "/cache"
    std::vector<std::string> log;  // filled when options.log (declared before rt: it outlives it)
    RuntimePtr rt;

    // Another runtime with the options as they are now and the same cache, beside this one.
    RuntimePtr another();
    // Destroys the runtime, then creates another with the options as they are now: the next
    // process on the same cache.
    void restart();
};

}  // namespace sdm::test
