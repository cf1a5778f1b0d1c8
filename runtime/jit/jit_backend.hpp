// The JIT backends (docs/LOADING.md, "When no cubin fits"): what turns PTX or LTO-IR into something
// the driver loads. In preference order: nvJitLink (jit_backend_nvjitlink.cpp), the static
// nvPTXCompiler (jit_backend_ptx_compiler.cpp), the driver's own JIT (jit_backend_driver.cpp).
// The first one that may run for a job builds it; those passed over are logged with why, and one
// that runs and fails (ErrorCode::jit) hands the job to the next (image_source.cpp). Each
// backend owns what keys its output in the cache (everything that changes the bytes it builds)
// and its build. Adding one: a file with its class and factory, and one line in jit_backend.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "runtime/platform/driver.hpp"
#include "archive/format.hpp"
#include "common/digest.hpp"
#include "common/hash.hpp"
#include "runtime/platform/image_origin.hpp"
#include "runtime/select/image_selection.hpp"
#include "jit_toolchain.hpp"
#include "runtime/device/load_context.hpp"
#include "common/result.hpp"

namespace sdm::runtime {


// One image to build: checked bytes of an archive entry, and what to build them for.
struct JitJob {
    archive::Kind kind{archive::Kind::ptx};  // ptx or ltoir
    Bytes input;                             // passed archive::check_declared_target; empty until a build reads it
    crypto::Digest input_identity{};         // what the bytes are: archive::Archive::identity, never a declared hash
    std::string input_name;                  // "module.compute_90", for the backend's own log
    uint16_t target_sm{0};
    archive::Variant target_variant{archive::Variant::base};
    std::string target;  // "sm_90a"
    std::string image;   // "ptx kernels, compute_90 (entry 2) of archive k.sdma", for messages
    std::string device;  // "device 0 (NVIDIA H200, compute capability 9.0, class modern)"
    // Whether the build runs in the JIT helper (jit_isolation.hpp), and why ("LTO-IR, which sdm
    // cannot fully check"); else it runs in this process under the watchdog.
    bool isolated{false};
    std::string isolated_because;
};

// What a backend built: a cubin for the driver to load, or (the driver's JIT) the loaded module.
struct JitProduct {
    ByteVector cubin;
    CUmodule module{nullptr};
};

class JitBackend {
public:
    virtual ~JitBackend() = default;
    virtual ImageSource source() const noexcept = 0;
    virtual const char* name() const noexcept = 0;  // "nvJitLink"
    // Empty when it may build `job`; otherwise why not ("nvJitLink is forbidden by the host").
    virtual std::string unavailable(const JitJob& job) = 0;
    // What its output for `job` is cached under; nullopt: not cached (it loads as it builds).
    virtual Result<std::optional<Hash128>> cache_key(const JitJob& job) = 0;
    virtual Result<JitProduct> build(const JitJob& job) = 0;
};

// The key every caching backend uses: its name, the input's content, the target, what identifies
// the tool that builds (a version, or its file's identity), the driver's version, every option the
// build passes, and this sdm's release (a new sdm may build differently, and never reads what an
// older one cached as its own).
Hash128 jit_cache_key(std::string_view backend, const JitJob& job, std::string_view tool, int driver_version,
                      const std::vector<std::string>& options);

// The backends for one load, in preference order, as the runtime's JIT policy, the build and the
// driver switches allow them (each says why not through unavailable()).
std::vector<std::unique_ptr<JitBackend>> jit_backends(JitToolchain& jit, LoadContext& load, Driver& driver, const DriverSwitches& switches);

// The factories the list is made of, one per backend file.
std::unique_ptr<JitBackend> nvjitlink_backend(JitToolchain& jit, Driver& driver);
std::unique_ptr<JitBackend> ptx_compiler_backend(JitToolchain& jit, Driver& driver);
std::unique_ptr<JitBackend> driver_jit_backend(JitToolchain& jit, LoadContext& load, Driver& driver, const DriverSwitches& switches);

}  // namespace sdm::runtime
