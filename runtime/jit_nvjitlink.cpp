#include "jit_nvjitlink.hpp"

#include <vector>

namespace sdm::runtime {

Result<NvJitLink> load_nvjitlink(const std::string& path) {
    std::vector<std::string> candidates;
    if (!path.empty()) {
        candidates.push_back(path);
    } else if (const auto env = platform::env("SDM_NVJITLINK")) {
        candidates.push_back(*env);
    } else {
        candidates = {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"};
        if (const auto home = platform::env("CUDA_HOME")) candidates.push_back(*home + "/lib64/libnvJitLink.so");
        candidates.push_back("/usr/local/cuda/lib64/libnvJitLink.so");
    }
    std::string tried;
    for (const std::string& candidate : candidates) {
        auto lib = platform::Library::open(candidate);
        if (!lib) {
            tried += "\n  " + candidate + ": " + lib.error().message;
            continue;
        }
        using Version = int (*)(unsigned*, unsigned*);  // nvJitLinkResult nvJitLinkVersion(unsigned*, unsigned*)
        const auto version = reinterpret_cast<Version>(lib->symbol("nvJitLinkVersion"));
        NvJitLink out;
        if (version == nullptr || version(&out.major, &out.minor) != 0) {
            tried += "\n  " + candidate + ": loads, but has no working nvJitLinkVersion (nvJitLink older than 12.3)";
            continue;
        }
        out.library = std::move(*lib);
        return out;
    }
    return make_error(ErrorCode::not_found, "nvJitLink was not found; install the CUDA toolkit's libnvjitlink (or the nvidia-nvjitlink "
                                            "wheel) or set SDM_NVJITLINK to its path. Tried:" + tried);
}

}  // namespace sdm::runtime
