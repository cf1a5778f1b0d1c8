// nvJitLink as a JIT backend: links PTX or LTO-IR for the device's SM (jit_nvjitlink.hpp loads it).
// Its output is keyed by the identity of nvJitLink's file (found without loading it, so a warm hit
// never pays its dlopen) and the driver's version.
#include "jit_backend.hpp"
#include "jit_nvjitlink.hpp"
#include "runtime.hpp"

namespace sdm::runtime {
namespace {

class NvJitLinkBackend final : public JitBackend {
public:
    NvJitLinkBackend(Runtime& runtime, Driver& driver) : runtime_(runtime), driver_(driver) {}
    ImageSource source() const noexcept override { return ImageSource::nvjitlink; }
    const char* name() const noexcept override { return "nvJitLink"; }

    std::string unavailable(const JitJob&) override {
        if (!runtime_.jit_policy().nvjitlink) return "nvJitLink is forbidden by the host";
        if (identity_.empty()) identity_ = runtime_.nvjitlink_identity();
        if (identity_.empty()) {  // not locatable without loading: load it, and key by its file
            if (const NvJitLink* jit = runtime_.nvjitlink()) identity_ = jit->file();
        }
        return identity_.empty() ? runtime_.nvjitlink_error() : std::string();
    }

    Result<std::optional<Hash128>> cache_key(const JitJob& job) override {
        return std::optional<Hash128>(jit_cache_key("nvJitLink link", job, identity_, driver_.version(),
                                                  nvjitlink_options(job.kind, job.target_sm, job.target_variant, {})));
    }

    Result<JitProduct> build(const JitJob& job) override {
        const NvJitLink* linker = runtime_.nvjitlink();
        if (linker == nullptr) return make_error(ErrorCode::jit, "loading " + job.image + " needs nvJitLink: " + runtime_.nvjitlink_error());
        SDM_TRY_GET(out, linker->link({job.kind, job.input, job.input_name}, job.target_sm, job.target_variant, {}));
        runtime_.log().info("linked " + job.image + " for " + job.target + " with nvJitLink " + linker->version() + " in " +
                            std::to_string(out->milliseconds) + " ms");
        return JitProduct{std::move(out->cubin), nullptr};
    }

private:
    Runtime& runtime_;
    Driver& driver_;
    std::string identity_;
};

}  // namespace

std::unique_ptr<JitBackend> nvjitlink_backend(Runtime& runtime, Driver& driver) { return std::make_unique<NvJitLinkBackend>(runtime, driver); }

}  // namespace sdm::runtime
