// nvPTXCompiler, the PTX-to-cubin compiler of the CUDA toolkit as a static library
// (libnvptxcompiler_static.a), linked into libsdm when the Meson feature `ptx_compiler` finds it
// at build time (not on CI machines, which lack it; the GPU machine's toolkit has it). It compiles
// PTX (not LTO-IR) for one SM without a GPU or a driver. Without it in the build, every call says
// so (ErrorCode::unsupported) and the loader goes on to the next backend.
#pragma once

#include <string>
#include <vector>

#include "archive/format.hpp"
#include "jit_nvjitlink.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// Whether this libsdm was built with nvPTXCompiler.
bool ptx_compiler_built() noexcept;
// "13.0" (what the static library reports), or why there is none.
Result<std::string> ptx_compiler_version();
// Compiles PTX `input` for sm_XY[a]: --gpu-name=sm_XY[a], then `options`. A failure is
// ErrorCode::jit with the compiler's result in Error::native and its error log in Error::log.
Result<JitOutput> ptx_compile(const JitInput& input, uint16_t sm, archive::Variant variant, const std::vector<std::string>& options);
// Every option ptx_compile passes for (sm, variant) with `extra`: what its output is cached under.
inline std::vector<std::string> ptx_compiler_options(uint16_t sm, archive::Variant variant, const std::vector<std::string>& extra) {
    std::vector<std::string> all{"--gpu-name=" + archive::target_name(archive::Kind::cubin, sm, variant)};
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
}

}  // namespace sdm::runtime
