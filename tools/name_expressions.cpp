#include "name_expressions.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <type_traits>

#include "archive/file_map.hpp"
#include "archive/format.hpp"
#include "common/text.hpp"
#include "runtime/platform/settings.hpp"

namespace sdm::tools {
namespace {

constexpr uint64_t kMaxSource = uint64_t{64} << 20;

// NVRTC's C API as nvrtc.h declares it (stable since CUDA 8), so that the tool builds without the
// toolkit's headers and loads NVRTC only when asked to lower.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

// The NVRTC entry points sdm uses, from the toolkit's library.
struct Nvrtc {
    void* handle{nullptr};
    nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*){nullptr};
    nvrtcResult (*add)(nvrtcProgram, const char*){nullptr};
    nvrtcResult (*compile)(nvrtcProgram, int, const char* const*){nullptr};
    nvrtcResult (*lowered)(nvrtcProgram, const char*, const char**){nullptr};
    nvrtcResult (*log_size)(nvrtcProgram, size_t*){nullptr};
    nvrtcResult (*log)(nvrtcProgram, char*){nullptr};
    nvrtcResult (*destroy)(nvrtcProgram*){nullptr};
    const char* (*error)(nvrtcResult){nullptr};
};

// The toolkit nvcc belongs to: $CUDA_HOME when absolute, else /usr/local/cuda.
std::string toolkit_root() {
    const auto home = runtime::settings::value_or(runtime::settings::path(runtime::settings::Id::cuda_home), "");
    return home.starts_with('/') ? home : "/usr/local/cuda";
}

Result<Nvrtc> open_nvrtc() {
    std::vector<std::string> tried;
    std::vector<std::string> candidates{toolkit_root() + "/lib64/libnvrtc.so.13", "libnvrtc.so.13"};
    candidates.push_back("libnvrtc.so");
    Nvrtc n;
    for (const auto& c : candidates) {
        n.handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (n.handle != nullptr) break;
        tried.push_back(c);
    }
    if (n.handle == nullptr) {
        std::string list;
        for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
        return make_error(ErrorCode::unsupported, "name expressions are lowered with NVRTC, which could not be loaded (tried " + list +
                                                      "); install the CUDA toolkit's NVRTC or set CUDA_HOME");
    }
    const auto get = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(n.handle, name));
        return fn != nullptr;
    };
    if (!get(n.create, "nvrtcCreateProgram") || !get(n.add, "nvrtcAddNameExpression") || !get(n.compile, "nvrtcCompileProgram") ||
        !get(n.lowered, "nvrtcGetLoweredName") || !get(n.log_size, "nvrtcGetProgramLogSize") || !get(n.log, "nvrtcGetProgramLog") ||
        !get(n.destroy, "nvrtcDestroyProgram") || !get(n.error, "nvrtcGetErrorString"))
        return make_error(ErrorCode::unsupported, "the NVRTC library loaded lacks an entry point sdm uses (nvrtcGetLoweredName needs CUDA 8 or later)");
    return n;
}

// The toolkit's include folders nvcc passes on its own: include and include/cccl, those that exist.
std::vector<std::string> toolkit_includes() {
    const std::string root = toolkit_root();
    std::vector<std::string> out;
    for (const char* sub : {"/include", "/include/cccl"}) {
        struct stat st {};
        if (::stat((root + sub).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(root + sub);
    }
    return out;
}

// "MODULE=TEXT" -> (MODULE, TEXT), the module a valid name.
Result<std::pair<std::string, std::string>> split_option(const std::string& option, const char* what) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == option.size())
        return make_error(ErrorCode::invalid_argument, std::string(what) + " '" + printable(option) + "' is not MODULE=" +
                                                           (std::string_view(what) == "--source" ? "FILE" : "EXPRESSION"));
    std::string module = option.substr(0, eq), text = option.substr(eq + 1);
    if (!archive::valid_name(module, archive::limits::max_long_name_length))
        return make_error(ErrorCode::invalid_argument, std::string(what) + " '" + printable(option) + "': module name " + archive::name_problem(module) +
                                                           " (" + archive::kNameRules + ")");
    return std::pair{std::move(module), std::move(text)};
}

// NVRTC's log, line by line printable (a hostile source cannot move the terminal's cursor).
std::string printable_lines(const std::string& log) {
    std::string out;
    for (size_t at = 0; at <= log.size();) {
        const size_t end = std::min(log.find('\n', at), log.size());
        // Two appends, not ("" or "\n") + printable(...): GCC 12 -O3 warns a false -Wrestrict on
        // operator+(const char*, string&&) (GCC bug 105651).
        if (!out.empty()) out += '\n';
        out += printable(log.substr(at, end - at));
        at = end + 1;
    }
    return out;
}

std::string trimmed(const std::string& text) {
    const size_t first = text.find_first_not_of(' '), last = text.find_last_not_of(' ');
    return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

// Lowers `expressions` of one source with NVRTC: expression -> symbol.
Result<std::vector<std::pair<std::string, std::string>>> lower(const Nvrtc& n, const std::string& file, const std::string& source,
                                                                const std::vector<std::string>& expressions, const std::vector<std::string>& options) {
    nvrtcProgram program = nullptr;
    if (const nvrtcResult r = n.create(&program, source.c_str(), file.c_str(), 0, nullptr, nullptr); r != NVRTC_SUCCESS)
        return make_error(ErrorCode::jit, "NVRTC could not take " + file + ": " + n.error(r));
    const auto destroy = [&] { n.destroy(&program); };
    for (const auto& x : expressions)
        if (const nvrtcResult r = n.add(program, x.c_str()); r != NVRTC_SUCCESS) {
            destroy();
            return make_error(ErrorCode::invalid_argument, "NVRTC refused name expression '" + printable(x) + "': " + n.error(r));
        }
    std::vector<const char*> argv;
    for (const auto& o : options) argv.push_back(o.c_str());
    const nvrtcResult compiled = n.compile(program, static_cast<int>(argv.size()), argv.data());
    if (compiled != NVRTC_SUCCESS) {
        size_t size = 0;
        std::string log;
        if (n.log_size(program, &size) == NVRTC_SUCCESS && size > 1 && size < (size_t{16} << 20)) {
            log.resize(size);
            if (n.log(program, log.data()) != NVRTC_SUCCESS) log.clear();
            while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
        }
        destroy();
        return make_error(ErrorCode::jit, "NVRTC could not compile " + file + " to lower its name expressions (" + n.error(compiled) +
                                              "); pass what nvcc was given with --nvrtc-option (-std=c++17, -I DIR, -D NAME)" +
                                              (log.empty() ? std::string() : ":\n" + printable_lines(log.substr(0, 8192))));
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& x : expressions) {
        const char* symbol = nullptr;
        if (const nvrtcResult r = n.lowered(program, x.c_str(), &symbol); r != NVRTC_SUCCESS || symbol == nullptr) {
            destroy();
            return make_error(ErrorCode::invalid_argument, "NVRTC did not lower name expression '" + printable(x) + "' of " + file + ": " + n.error(r) +
                                                               " (is it a __global__ function, or an instantiation of a __global__ template, of that source?)");
        }
        out.emplace_back(x, symbol);
    }
    destroy();
    return out;
}

}  // namespace

Result<void> lower_name_expressions(const NameExpressionOptions& options, archive::Manifest& manifest) {
    if (options.empty()) return {};
    std::map<std::string, std::string> sources;  // module -> file
    for (const auto& s : options.sources) {
        SDM_TRY_GET(pair, split_option(s, "--source"));
        if (!sources.emplace(pair->first, pair->second).second)
            return make_error(ErrorCode::invalid_argument, "--source names module " + pair->first + " twice");
    }
    std::map<std::string, std::vector<std::string>> by_module;
    for (const auto& e : options.expressions) {
        SDM_TRY_GET(pair, split_option(e, "--name-expression"));
        std::string expression = trimmed(pair->second);
        if (const std::string problem = archive::expression_problem(expression); !problem.empty())
            return make_error(ErrorCode::invalid_argument, "--name-expression " + printable(e.substr(0, 256)) + ": " + problem);
        if (!sources.count(pair->first))
            return make_error(ErrorCode::invalid_argument, "--name-expression " + printable(e.substr(0, 256)) + " is of module " + pair->first +
                                                               ", which no --source names (give --source " + pair->first + "=FILE.cu)");
        by_module[pair->first].push_back(std::move(expression));
    }
    if (by_module.empty()) return make_error(ErrorCode::invalid_argument, "--source without --name-expression: nothing to lower");
    SDM_TRY_GET(nvrtc, open_nvrtc());
    // What nvcc adds on its own: the toolkit's headers, CCCL's among them (CUDA 13 keeps libcu++,
    // CUB and Thrust in include/cccl), then the user's options.
    std::vector<std::string> nvrtc_options;
    for (const auto& dir : toolkit_includes()) nvrtc_options.push_back("-I" + dir);
    nvrtc_options.insert(nvrtc_options.end(), options.nvrtc_options.begin(), options.nvrtc_options.end());
    for (const auto& [module, expressions] : by_module) {
        const std::string& file = sources[module];
        SDM_TRY_GET(map, archive::FileMap::open(file));  // a regular file only, never a FIFO or a device
        if ((*map)->bytes().size() > kMaxSource)
            return make_error(ErrorCode::invalid_argument, "source " + file + " is " + std::to_string((*map)->bytes().size()) + " bytes, more than the 64 MiB a source may be");
        const auto bytes = (*map)->bytes();
        const std::string source(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        if (source.find('\0') != std::string::npos) return make_error(ErrorCode::invalid_argument, "source " + file + " holds a NUL byte: not CUDA C++ source");
        SDM_TRY_GET(lowered, lower(*nvrtc, file, source, expressions, nvrtc_options));
        for (auto& [expression, symbol] : *lowered) {
            if (manifest.find_kernel(symbol, module) == nullptr)
                return make_error(ErrorCode::invalid_argument, "name expression '" + expression + "' of " + file + " lowers to " + printable(symbol) +
                                                                   ", which module " + module +
                                                                   "'s images do not define: compile the module from this source with the same options, "
                                                                   "and instantiate the template (CuPy's name_expressions do that for NVRTC)");
            manifest.expressions.push_back({std::move(expression), module, std::move(symbol)});
        }
    }
    return {};
}

}  // namespace sdm::tools
