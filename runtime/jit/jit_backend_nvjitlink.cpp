// nvJitLink as a JIT backend: links PTX or LTO-IR for the device's SM (jit_nvjitlink.hpp loads it),
// in the JIT helper when the job is isolated, else in this process under the watchdog
// (jit_isolation.hpp). Its output is keyed by the identity of nvJitLink's file (found without
// loading it, so a warm hit never pays its dlopen) and the driver's version: where it ran changes
// nothing of what it builds.
#include "jit_backend.hpp"
#include "jit_isolation.hpp"
#include "jit_nvjitlink.hpp"

namespace sdm::runtime {
namespace {

class NvJitLinkBackend final : public JitBackend {
public:
    NvJitLinkBackend(JitToolchain& jit, Driver& driver) : jit_(jit), driver_(driver) {}
    ImageSource source() const noexcept override { return ImageSource::nvjitlink; }
    const char* name() const noexcept override { return "nvJitLink"; }

    std::string unavailable(const JitJob&) override {
        if (!jit_.policy().nvjitlink) return "nvJitLink is forbidden by the host";
        if (identity_.empty()) {
            if (const auto located = jit_.nvjitlink_location()) {
                identity_ = located->identity;
                file_ = located->file;
            }
        }
        if (identity_.empty()) {  // not locatable without loading: load it, and key by its file
            if (const auto jit = jit_.nvjitlink()) identity_ = file_ = jit->file();
        }
        return identity_.empty() ? jit_.nvjitlink_error() : std::string();
    }

    Result<std::optional<Hash128>> cache_key(const JitJob& job) override {
        return std::optional<Hash128>(jit_cache_key("nvJitLink link", job, identity_, driver_.version(),
                                                  nvjitlink_options(job.kind, job.target_sm, job.target_variant, {})));
    }

    Result<JitProduct> build(const JitJob& job) override {
        const JitLimits& limits = jit_.isolation().limits;
        if (job.isolated) {
            SDM_TRY_GET(helper, jit_.helper());
            const IsolatedJob isolated{IsolatedTool::nvjitlink, file_, {job.kind, job.input, job.input_name}, job.target_sm, job.target_variant, {}};
            SDM_TRY_GET(out, run_isolated(*helper, isolated, limits));
            jit_.log().info("linked " + job.image + " for " + job.target + " with nvJitLink in the JIT helper in " + std::to_string(out->milliseconds) +
                                " ms (isolated: " + job.isolated_because + ")");
            return JitProduct{std::move(out->cubin), nullptr};
        }
        const std::shared_ptr<const NvJitLink> linker = jit_.nvjitlink();
        if (linker == nullptr) return make_error(ErrorCode::jit, "loading " + job.image + " needs nvJitLink: " + jit_.nvjitlink_error());
        // The watchdog's thread owns its input: past the limit it outlives this fetch.
        auto input = std::make_shared<const ByteVector>(job.input.begin(), job.input.end());
        const auto link = [linker, input, kind = job.kind, name = job.input_name, sm = job.target_sm, variant = job.target_variant] {
            return linker->link({kind, *input, name}, sm, variant, {});
        };
        SDM_TRY_GET(out, run_with_watchdog<JitOutput>(limits.seconds, "nvJitLink linking " + job.image + " for " + job.target, link));
        jit_.log().info("linked " + job.image + " for " + job.target + " with nvJitLink " + linker->version() + " in " +
                            std::to_string(out->milliseconds) + " ms");
        return JitProduct{std::move(out->cubin), nullptr};
    }

private:
    JitToolchain& jit_;
    Driver& driver_;
    std::string identity_;
    std::string file_;  // what the helper loads (empty: it searches the way NvJitLink::load does)
};

}  // namespace

std::unique_ptr<JitBackend> nvjitlink_backend(JitToolchain& jit, Driver& driver) { return std::make_unique<NvJitLinkBackend>(jit, driver); }

}  // namespace sdm::runtime
