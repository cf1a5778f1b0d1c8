// The static nvPTXCompiler as a JIT backend (jit_ptxcompiler.hpp), when this libsdm was built with
// it: PTX only. Its output is keyed by the compiler's version and the driver's.
#include "jit_backend.hpp"
#include "jit_ptxcompiler.hpp"
#include "runtime.hpp"

namespace sdm::runtime {
namespace {

class PtxCompilerBackend final : public JitBackend {
public:
    PtxCompilerBackend(Runtime& runtime, Driver& driver) : runtime_(runtime), driver_(driver) {}
    ImageSource source() const noexcept override { return ImageSource::ptx_compiler; }
    const char* name() const noexcept override { return "nvPTXCompiler"; }

    std::string unavailable(const JitJob& job) override {
        if (!runtime_.jit_policy().ptx_compiler) return "nvPTXCompiler is forbidden by the host";
        if (!ptx_compiler_built()) return "this libsdm was built without nvPTXCompiler";
        if (job.kind != archive::Kind::ptx) return "nvPTXCompiler compiles PTX only";
        return {};
    }

    Result<std::optional<Hash128>> cache_key(const JitJob& job) override {
        SDM_TRY_GET(version, ptx_compiler_version());
        version_ = *version;
        return std::optional<Hash128>(jit_cache_key("nvPTXCompiler compile", job, version_, driver_.version(),
                                                  ptx_compiler_options(job.target_sm, job.target_variant, {})));
    }

    Result<JitProduct> build(const JitJob& job) override {
        SDM_TRY_GET(out, ptx_compile({job.kind, job.input, job.input_name}, job.target_sm, job.target_variant, {}));
        runtime_.log().info("compiled " + job.image + " for " + job.target + " with nvPTXCompiler " + version_ + " in " +
                            std::to_string(out->milliseconds) + " ms");
        return JitProduct{std::move(out->cubin), nullptr};
    }

private:
    Runtime& runtime_;
    Driver& driver_;
    std::string version_;
};

}  // namespace

std::unique_ptr<JitBackend> ptx_compiler_backend(Runtime& runtime, Driver& driver) { return std::make_unique<PtxCompilerBackend>(runtime, driver); }

}  // namespace sdm::runtime
