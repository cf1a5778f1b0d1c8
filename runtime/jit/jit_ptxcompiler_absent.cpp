// This libsdm was built without nvPTXCompiler (meson: the `ptx_compiler` feature did not find
// libnvptxcompiler_static.a and nvPTXCompiler.h): every call says so.
#include "jit_ptxcompiler.hpp"

namespace sdm::runtime {
namespace {

Error absent() {
    return make_error(ErrorCode::unsupported, "this libsdm was built without nvPTXCompiler (the Meson feature ptx_compiler found no "
                                            "libnvptxcompiler_static.a); rebuild with -Dptx_compiler=enabled on a machine whose CUDA "
                                            "toolkit has it, or let nvJitLink or the driver's JIT link PTX");
}

}  // namespace

bool ptx_compiler_built() noexcept { return false; }
Result<std::string> ptx_compiler_version() { return absent(); }
Result<JitOutput> ptx_compile(const JitInput&, uint16_t, archive::Variant, const std::vector<std::string>&) { return absent(); }

}  // namespace sdm::runtime
