// nvPTXCompiler linked statically (meson: the `ptx_compiler` feature found it).
#include "jit_ptxcompiler.hpp"

#include <chrono>

#include <nvPTXCompiler.h>

namespace sdm::runtime {
namespace {

const char* result_name(nvPTXCompileResult r) {
    switch (r) {
    case NVPTXCOMPILE_SUCCESS: return "NVPTXCOMPILE_SUCCESS";
    case NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE: return "NVPTXCOMPILE_ERROR_INVALID_COMPILER_HANDLE";
    case NVPTXCOMPILE_ERROR_INVALID_INPUT: return "NVPTXCOMPILE_ERROR_INVALID_INPUT";
    case NVPTXCOMPILE_ERROR_COMPILATION_FAILURE: return "NVPTXCOMPILE_ERROR_COMPILATION_FAILURE";
    case NVPTXCOMPILE_ERROR_INTERNAL: return "NVPTXCOMPILE_ERROR_INTERNAL";
    case NVPTXCOMPILE_ERROR_OUT_OF_MEMORY: return "NVPTXCOMPILE_ERROR_OUT_OF_MEMORY";
    case NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE: return "NVPTXCOMPILE_ERROR_COMPILER_INVOCATION_INCOMPLETE";
    case NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION: return "NVPTXCOMPILE_ERROR_UNSUPPORTED_PTX_VERSION";
    default: return "an nvPTXCompileResult unknown to this build";
    }
}

// Owns a compiler handle.
struct Handle {
    nvPTXCompilerHandle h{nullptr};
    ~Handle() {
        if (h != nullptr) (void)nvPTXCompilerDestroy(&h);
    }
};

std::string log_of(nvPTXCompilerHandle h, nvPTXCompileResult (*size_fn)(nvPTXCompilerHandle, size_t*),
                   nvPTXCompileResult (*text_fn)(nvPTXCompilerHandle, char*)) {
    size_t size = 0;
    if (size_fn(h, &size) != NVPTXCOMPILE_SUCCESS || size == 0) return {};
    std::string text(size, '\0');
    if (text_fn(h, text.data()) != NVPTXCOMPILE_SUCCESS) return {};
    while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
    return text;
}

}  // namespace

bool ptx_compiler_built() noexcept { return true; }

Result<std::string> ptx_compiler_version() {
    unsigned major = 0, minor = 0;
    if (const auto r = nvPTXCompilerGetVersion(&major, &minor); r != NVPTXCOMPILE_SUCCESS)
        return make_error(ErrorCode::jit, std::string("nvPTXCompilerGetVersion failed with ") + result_name(r));
    return std::to_string(major) + "." + std::to_string(minor);
}

Result<JitOutput> ptx_compile(const JitInput& input, uint16_t sm, archive::Variant variant, const std::vector<std::string>& options) {
    if (input.kind != archive::Kind::ptx)
        return make_error(ErrorCode::invalid_argument, "nvPTXCompiler compiles PTX only; " + input.name + " is " + archive::kind_name(input.kind));
    const auto started = std::chrono::steady_clock::now();
    const std::string target = archive::target_name(archive::Kind::cubin, sm, variant);
    const auto fail = [&](nvPTXCompileResult r, const char* step, std::string log) {
        Error e = make_error(ErrorCode::jit, "nvPTXCompiler could not compile " + input.name + " for " + target + ": " + step + " failed with " +
                                                 result_name(r) + (log.empty() ? std::string() : ":\n" + log));
        e.native = static_cast<int32_t>(r);
        e.log = std::move(log);
        return e;
    };
    Handle c;
    // The PTX need not be NUL-terminated: its length is passed.
    if (const auto r = nvPTXCompilerCreate(&c.h, input.bytes.size(), reinterpret_cast<const char*>(input.bytes.data())); r != NVPTXCOMPILE_SUCCESS)
        return fail(r, "nvPTXCompilerCreate", {});
    const std::vector<std::string> all = ptx_compiler_options(sm, variant, options);
    std::vector<const char*> argv;
    for (const auto& o : all) argv.push_back(o.c_str());
    if (const auto r = nvPTXCompilerCompile(c.h, static_cast<int>(argv.size()), argv.data()); r != NVPTXCOMPILE_SUCCESS)
        return fail(r, "nvPTXCompilerCompile", log_of(c.h, nvPTXCompilerGetErrorLogSize, nvPTXCompilerGetErrorLog));
    size_t size = 0;
    if (const auto r = nvPTXCompilerGetCompiledProgramSize(c.h, &size); r != NVPTXCOMPILE_SUCCESS)
        return fail(r, "nvPTXCompilerGetCompiledProgramSize", {});
    JitOutput out;
    out.cubin.resize(size);
    if (const auto r = nvPTXCompilerGetCompiledProgram(c.h, out.cubin.data()); r != NVPTXCOMPILE_SUCCESS)
        return fail(r, "nvPTXCompilerGetCompiledProgram", {});
    out.info_log = log_of(c.h, nvPTXCompilerGetInfoLogSize, nvPTXCompilerGetInfoLog);
    out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return out;
}

}  // namespace sdm::runtime
