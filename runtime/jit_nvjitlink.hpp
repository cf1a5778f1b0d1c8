// nvJitLink, loaded with dlopen only when needed: $SDM_NVJITLINK, then its sonames, then
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64. This file finds the library and probes its version;
// linking PTX through it lands with the loading issue.
#pragma once

#include <string>

#include "platform.hpp"
#include "result.hpp"

namespace sdm::runtime {

struct NvJitLink {
    platform::Library library;
    unsigned major{0};
    unsigned minor{0};
};

// `path` empty: the search order above. The error lists every place tried.
Result<NvJitLink> load_nvjitlink(const std::string& path);

}  // namespace sdm::runtime
