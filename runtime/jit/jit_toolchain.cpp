#include "jit_toolchain.hpp"

namespace sdm::runtime {

JitToolchain::JitToolchain(const Logger& log, JitPolicy policy, const JitIsolationOptions& isolation, std::string nvjitlink)
    : log_(log), policy_(policy), isolation_(JitIsolationSettings::resolve(isolation, log)), nvjitlink_path_(std::move(nvjitlink)) {}

std::optional<NvJitLinkLocation> JitToolchain::nvjitlink_location() {
    std::call_once(locate_once_, [this] { nvjitlink_location_ = locate_nvjitlink(nvjitlink_path_); });
    return nvjitlink_location_;
}

std::shared_ptr<const NvJitLink> JitToolchain::nvjitlink() {
    const auto located = nvjitlink_location();
    std::call_once(nvjitlink_once_, [&] {
        auto loaded = NvJitLink::load(located ? located->file : nvjitlink_path_);
        if (loaded) nvjitlink_ = std::make_shared<const NvJitLink>(std::move(*loaded));
        else nvjitlink_error_ = loaded.error().message;
    });
    return nvjitlink_;
}

std::string JitToolchain::nvjitlink_error() {
    (void)nvjitlink();
    return nvjitlink_error_;
}

Result<std::vector<std::string>> JitToolchain::helper() {
    std::call_once(helper_once_, [this] { helper_.emplace(jit_helper_command(isolation_)); });
    return *helper_;
}

}  // namespace sdm::runtime
