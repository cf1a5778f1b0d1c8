// What the JIT rooms are given: which backends the host allows, where links run and under which
// limits (jit_isolation.hpp), nvJitLink (located, and loaded into this process, each on first
// need) and the JIT helper's command line. The runtime holds one; the JIT backends, the image
// source and the kernel-name index reach the toolchain through it and nothing else.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jit_isolation.hpp"
#include "jit_nvjitlink.hpp"
#include "runtime/platform/log.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct JitPolicy {
    bool nvjitlink{true};  // link PTX / LTO-IR with nvJitLink (cached)
    bool ptx_compiler{true};  // compile PTX with the static nvPTXCompiler, when built in (cached)
    bool driver{true};     // hand PTX to the driver's own JIT when nvJitLink cannot
};

class JitToolchain {
public:
    // `nvjitlink`: empty for $SDM_NVJITLINK, then the search order (locate_nvjitlink).
    JitToolchain(const Logger& log, JitPolicy policy, const JitIsolationOptions& isolation, std::string nvjitlink);
    JitToolchain(const JitToolchain&) = delete;
    JitToolchain& operator=(const JitToolchain&) = delete;

    const Logger& log() const noexcept { return log_; }
    const JitPolicy& policy() const noexcept { return policy_; }
    const JitIsolationSettings& isolation() const noexcept { return isolation_; }
    // nvJitLink, loaded into this process on first need; null when absent (nvjitlink_error() says
    // why). Shared: a link under the watchdog that outlives its fetch keeps it.
    std::shared_ptr<const NvJitLink> nvjitlink();
    std::string nvjitlink_error();
    // Where nvJitLink is, found without loading it: what keys the cache for its builds (the file's
    // identity), and what the JIT helper loads. nullopt when it cannot be located without loading
    // (then nvjitlink() decides).
    std::optional<NvJitLinkLocation> nvjitlink_location();
    // The JIT helper's command line, located on first need (jit_helper_command).
    Result<std::vector<std::string>> helper();

private:
    const Logger& log_;
    const JitPolicy policy_;
    const JitIsolationSettings isolation_;
    const std::string nvjitlink_path_;
    std::once_flag nvjitlink_once_, locate_once_, helper_once_;
    std::shared_ptr<const NvJitLink> nvjitlink_;
    std::string nvjitlink_error_;
    std::optional<NvJitLinkLocation> nvjitlink_location_;
    std::optional<Result<std::vector<std::string>>> helper_;
};

}  // namespace sdm::runtime
