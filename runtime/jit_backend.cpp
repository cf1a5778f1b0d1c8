#include "jit_backend.hpp"

namespace sdm::runtime {

std::vector<std::unique_ptr<JitBackend>> jit_backends(Runtime& runtime, Driver& driver, const DriverSwitches& switches) {
    std::vector<std::unique_ptr<JitBackend>> out;
    out.push_back(nvjitlink_backend(runtime, driver));
    out.push_back(ptx_compiler_backend(runtime, driver));
    out.push_back(driver_jit_backend(runtime, driver, switches));
    return out;
}

}  // namespace sdm::runtime
