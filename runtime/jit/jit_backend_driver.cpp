// The driver's own JIT as the last backend: PTX handed to cuModuleLoadDataEx, which compiles and
// loads in one call (so nothing is cached; the driver keeps its own cache). Not when the host
// forbids it or CUDA_DISABLE_PTX_JIT=1 is set, as the driver itself would refuse, and not for a job
// the isolation policy runs in the JIT helper: the driver compiles inside this process.
#include "jit_backend.hpp"
#include "jit_isolation.hpp"

namespace sdm::runtime {
namespace {

class DriverJitBackend final : public JitBackend {
public:
    DriverJitBackend(JitToolchain& jit, LoadContext& load, Driver& driver, const DriverSwitches& switches) : jit_(jit), load_(load), driver_(driver), switches_(switches) {}
    ImageSource source() const noexcept override { return ImageSource::driver_jit; }
    const char* name() const noexcept override { return "the driver's JIT"; }

    std::string unavailable(const JitJob& job) override {
        if (!jit_.policy().driver) return "the driver's JIT is forbidden by the host";
        if (switches_.disable_ptx_jit) return "the driver's JIT is off (CUDA_DISABLE_PTX_JIT=1 is set)";
        if (job.kind != archive::Kind::ptx) return "the driver's JIT compiles PTX only";
        if (job.isolated)
            return "the driver's JIT compiles inside this process, and the JIT isolation policy (" +
                   std::string(isolation_name(jit_.isolation().policy)) + ") keeps " + job.isolated_because +
                   " out of it (sign the archive with a trusted key, install nvJitLink, or set SDM_JIT_ISOLATION=never)";
        return {};
    }

    Result<std::optional<Hash128>> cache_key(const JitJob&) override { return std::optional<Hash128>(); }

    Result<JitProduct> build(const JitJob& job) override {
        // Under the watchdog: the compile runs on a thread of its own in the caller's context, and
        // owns what it touches (the driver, the text); one that ends past the limit unloads its module.
        SDM_TRY_GET(shared_driver, load_.driver());
        std::shared_ptr<Driver> driver = *shared_driver;
        CUcontext context = nullptr;
        SDM_TRY(SDM_DRIVER_CALL(*driver, cuCtxGetCurrent, "reading the context for the driver's JIT of " + job.image, &context));
        auto text = std::make_shared<ByteVector>(job.input.begin(), job.input.end());  // the driver wants NUL-terminated PTX
        if (text->empty() || text->back() != std::byte{0}) text->push_back(std::byte{0});
        const std::string what = "the driver's JIT of " + job.image + " on " + job.device;
        const auto compile = [driver, context, text, what]() -> Result<CUmodule> {
            SDM_TRY(SDM_DRIVER_CALL(*driver, cuCtxPushCurrent, what, context));
            std::string error_log(16384, '\0');
            std::string info_log(4096, '\0');
            CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                                      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
            void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size()), info_log.data(), reinterpret_cast<void*>(info_log.size())};
            CUmodule module = nullptr;
            auto loaded = SDM_DRIVER_CALL(*driver, cuModuleLoadDataEx, what, &module, text->data(), 4u, options, values);
            CUcontext popped = nullptr;
            (void)SDM_DRIVER_CALL(*driver, cuCtxPopCurrent, what, &popped);
            if (!loaded) {
                Error e = std::move(loaded).error();
                e.code = ErrorCode::jit;
                e.log = error_log.c_str();
                if (!e.log.empty()) e.message += ":\n" + e.log;
                return e;
            }
            return module;
        };
        const auto late = [driver, context](Result<CUmodule>& module) {
            if (!module || !SDM_DRIVER_CALL(*driver, cuCtxPushCurrent, "unloading a late JIT's module", context)) return;
            (void)SDM_DRIVER_CALL(*driver, cuModuleUnload, "unloading a late JIT's module", *module);
            CUcontext popped = nullptr;
            (void)SDM_DRIVER_CALL(*driver, cuCtxPopCurrent, "unloading a late JIT's module", &popped);
        };
        SDM_TRY_GET(module, run_with_watchdog<CUmodule>(jit_.isolation().limits.seconds, what, compile, late));
        return JitProduct{{}, *module};
    }

private:
    JitToolchain& jit_;
    LoadContext& load_;
    Driver& driver_;
    DriverSwitches switches_;
};

}  // namespace

std::unique_ptr<JitBackend> driver_jit_backend(JitToolchain& jit, LoadContext& load, Driver& driver, const DriverSwitches& switches) {
    return std::make_unique<DriverJitBackend>(jit, load, driver, switches);
}

}  // namespace sdm::runtime
