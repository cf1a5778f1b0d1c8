// The driver's own JIT as the last backend: PTX handed to cuModuleLoadDataEx, which compiles and
// loads in one call (so nothing is cached; the driver keeps its own cache). Not when the host
// forbids it or CUDA_DISABLE_PTX_JIT=1 is set, as the driver itself would refuse.
#include "jit_backend.hpp"
#include "runtime.hpp"

namespace sdm::runtime {
namespace {

class DriverJitBackend final : public JitBackend {
public:
    DriverJitBackend(Runtime& runtime, Driver& driver, const DriverSwitches& switches) : runtime_(runtime), driver_(driver), switches_(switches) {}
    ImageSource source() const noexcept override { return ImageSource::driver_jit; }
    const char* name() const noexcept override { return "the driver's JIT"; }

    std::string unavailable(const JitJob& job) override {
        if (!runtime_.jit_policy().driver) return "the driver's JIT is forbidden by the host";
        if (switches_.disable_ptx_jit) return "the driver's JIT is off (CUDA_DISABLE_PTX_JIT=1 is set)";
        if (job.kind != archive::Kind::ptx) return "the driver's JIT compiles PTX only";
        return {};
    }

    Result<std::optional<Hash128>> cache_key(const JitJob&) override { return std::optional<Hash128>(); }

    Result<JitProduct> build(const JitJob& job) override {
        ByteVector text(job.input.begin(), job.input.end());  // the driver wants NUL-terminated PTX
        if (text.empty() || text.back() != std::byte{0}) text.push_back(std::byte{0});
        char error_log[16384] = {0};
        char info_log[4096] = {0};
        CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                                  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
        void* values[] = {error_log, reinterpret_cast<void*>(sizeof error_log), info_log, reinterpret_cast<void*>(sizeof info_log)};
        CUmodule module = nullptr;
        auto loaded = SDM_DRIVER_CALL(driver_, cuModuleLoadDataEx, "the driver's JIT of " + job.image + " on " + job.device, &module, text.data(), 4u,
                                      options, values);
        if (!loaded) {
            Error e = std::move(loaded).error();
            e.code = ErrorCode::jit;
            e.log = error_log;
            if (!e.log.empty()) e.message += ":\n" + e.log;
            return e;
        }
        return JitProduct{{}, module};
    }

private:
    Runtime& runtime_;
    Driver& driver_;
    DriverSwitches switches_;
};

}  // namespace

std::unique_ptr<JitBackend> driver_jit_backend(Runtime& runtime, Driver& driver, const DriverSwitches& switches) {
    return std::make_unique<DriverJitBackend>(runtime, driver, switches);
}

}  // namespace sdm::runtime
