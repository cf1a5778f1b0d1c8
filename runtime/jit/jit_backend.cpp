#include "jit_backend.hpp"

#include "sdm_version.h"

#include "cache.hpp"

namespace sdm::runtime {

Hash128 jit_cache_key(std::string_view backend, const JitJob& job, std::string_view tool, int driver_version,
                      const std::vector<std::string>& options) {
    CacheKeyBuilder key;
    key.field(backend).field(job.input_identity).field(job.target).field(tool).field(static_cast<uint64_t>(driver_version));
    key.field(static_cast<uint64_t>(options.size()));
    for (const auto& o : options) key.field(o);
    return key.field(std::string_view(SDM_VERSION_STRING)).key();
}

std::vector<std::unique_ptr<JitBackend>> jit_backends(JitToolchain& jit, LoadContext& load, Driver& driver, const DriverSwitches& switches) {
    std::vector<std::unique_ptr<JitBackend>> out;
    out.push_back(nvjitlink_backend(jit, driver));
    out.push_back(ptx_compiler_backend(jit, driver));
    out.push_back(driver_jit_backend(jit, load, driver, switches));
    return out;
}

}  // namespace sdm::runtime
