// The static nvPTXCompiler as a JIT backend (jit_ptxcompiler.hpp), when this libsdm was built with
// it: PTX only, in the JIT helper when the job is isolated (the helper is built with the same
// compiler), else in this process under the watchdog. Its output is keyed by the compiler's
// version and the driver's.
#include "jit_backend.hpp"
#include "jit_isolation.hpp"
#include "jit_ptxcompiler.hpp"

namespace sdm::runtime {
namespace {

class PtxCompilerBackend final : public JitBackend {
public:
    PtxCompilerBackend(JitToolchain& jit, Driver& driver) : jit_(jit), driver_(driver) {}
    ImageSource source() const noexcept override { return ImageSource::ptx_compiler; }
    const char* name() const noexcept override { return "nvPTXCompiler"; }

    std::string unavailable(const JitJob& job) override {
        if (!jit_.policy().ptx_compiler) return "nvPTXCompiler is forbidden by the host";
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
        const JitLimits& limits = jit_.isolation().limits;
        Result<JitOutput> out = make_error(ErrorCode::internal, "not built");
        if (job.isolated) {
            SDM_TRY_GET(helper, jit_.helper());
            out = run_isolated(*helper, {IsolatedTool::ptx_compiler, {}, {job.kind, job.input, job.input_name}, job.target_sm, job.target_variant, {}}, limits);
        } else {
            auto input = std::make_shared<const ByteVector>(job.input.begin(), job.input.end());
            out = run_with_watchdog<JitOutput>(limits.seconds, "nvPTXCompiler compiling " + job.image + " for " + job.target,
                                    [input, kind = job.kind, name = job.input_name, sm = job.target_sm, variant = job.target_variant] {
                                        return ptx_compile({kind, *input, name}, sm, variant, {});
                                    });
        }
        if (!out) return std::move(out).error();
        jit_.log().info("compiled " + job.image + " for " + job.target + " with nvPTXCompiler " + version_ + " in " +
                            std::to_string(out->milliseconds) + " ms" + (job.isolated ? " in the JIT helper (isolated: " + job.isolated_because + ")" : ""));
        return JitProduct{std::move(out->cubin), nullptr};
    }

private:
    JitToolchain& jit_;
    Driver& driver_;
    std::string version_;
};

}  // namespace

std::unique_ptr<JitBackend> ptx_compiler_backend(JitToolchain& jit, Driver& driver) { return std::make_unique<PtxCompilerBackend>(jit, driver); }

}  // namespace sdm::runtime
