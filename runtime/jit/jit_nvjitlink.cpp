#include "jit_nvjitlink.hpp"

#include <chrono>

#include <climits>
#include <cstdlib>

#include <nvJitLink.h>

#include "runtime/platform/settings.hpp"
#include "runtime/platform/platform.hpp"

namespace sdm::runtime {
namespace {

// nvJitLink's C API through pointers resolved by plain name (the header maps its names onto
// versioned symbols, which would pin sdm to one nvJitLink release).
using Create = nvJitLinkResult (*)(nvJitLinkHandle*, uint32_t, const char**);
using Destroy = nvJitLinkResult (*)(nvJitLinkHandle*);
using AddData = nvJitLinkResult (*)(nvJitLinkHandle, nvJitLinkInputType, const void*, size_t, const char*);
using Complete = nvJitLinkResult (*)(nvJitLinkHandle);
using Size = nvJitLinkResult (*)(nvJitLinkHandle, size_t*);
using Get = nvJitLinkResult (*)(nvJitLinkHandle, void*);
using GetText = nvJitLinkResult (*)(nvJitLinkHandle, char*);
using Version = nvJitLinkResult (*)(unsigned*, unsigned*);

std::string text_log(nvJitLinkHandle h, void* size_fn, void* get_fn) {
    size_t size = 0;
    if (reinterpret_cast<Size>(size_fn)(h, &size) != NVJITLINK_SUCCESS || size == 0) return {};
    std::string text(size, '\0');
    if (reinterpret_cast<GetText>(get_fn)(h, text.data()) != NVJITLINK_SUCCESS) return {};
    while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
    return text;
}

std::optional<NvJitLinkLocation> identify(const std::string& file) {
    const auto found = platform::resolved_regular_file(file);
    if (!found) return std::nullopt;
    const auto& [resolved, st] = *found;
    return NvJitLinkLocation{resolved, resolved + ":" + std::to_string(st.size) + ":" + std::to_string(st.mtime_ns)};
}

// nvJitLink's search order, which the load (NvJitLink::load) and the cache key's identity
// (locate_nvjitlink) both walk: its file names, newest first (platform::toolkit_library_names:
// libnvJitLink.so.13, ... on Linux, nvJitLink_130_0.dll, ... on Windows), through the loader's own
// search; then each name in the toolkit's folders ($CUDA_PATH's and $CUDA_HOME's, then
// /usr/local/cuda's on Linux; platform::toolkit_library_folders).
std::vector<std::string> nvjitlink_names() { return platform::toolkit_library_names("nvJitLink", {13, 12}); }

std::vector<std::string> toolkit_library_dirs() {
    std::vector<std::string> homes;
    for (const auto id : {settings::Id::cuda_path, settings::Id::cuda_home})
        if (auto home = settings::value_or(settings::path(id), ""); !home.empty()) homes.push_back(std::move(home));
    if (platform::kDefaultToolkitHome != nullptr) homes.emplace_back(platform::kDefaultToolkitHome);
    std::vector<std::string> dirs;
    for (const auto& home : homes)
        for (auto& dir : platform::toolkit_library_folders(home)) dirs.push_back(std::move(dir));
    return dirs;
}

}  // namespace

std::optional<NvJitLinkLocation> locate_nvjitlink(const std::string& path) {
    std::string explicit_path = path;
    if (explicit_path.empty()) explicit_path = settings::value_or(settings::path(settings::Id::nvjitlink), "");
    if (!explicit_path.empty()) return platform::names_a_path(explicit_path) ? identify(explicit_path) : std::nullopt;
    // The loader's search, and then the toolkit's.
    std::vector<std::string> dirs = platform::loader_search_folders();
    for (auto& dir : toolkit_library_dirs()) dirs.push_back(std::move(dir));
    for (const auto& name : nvjitlink_names())
        for (const auto& dir : dirs)
            if (auto found = identify(dir + "/" + name)) return found;
    return std::nullopt;
}

Result<NvJitLink> NvJitLink::load(const std::string& path) {
    std::vector<std::string> candidates;
    if (!path.empty()) {
        candidates.push_back(path);
    } else if (auto named = settings::value_or(settings::path(settings::Id::nvjitlink), ""); !named.empty()) {
        candidates.push_back(std::move(named));
    } else {
        candidates = nvjitlink_names();
        for (const auto& dir : toolkit_library_dirs())
            for (const auto& name : nvjitlink_names()) candidates.push_back(dir + "/" + name);
    }
    std::string tried;
    for (const std::string& candidate : candidates) {
        // Kept loaded: its dlopen costs milliseconds, and a host that makes a second runtime, or
        // sdm jit's next link, should not pay it again.
        auto lib = platform::Library::open(candidate, true);
        if (!lib) {
            tried += "\n  " + candidate + ": " + lib.error().message;
            continue;
        }
        NvJitLink out;
        const auto version = reinterpret_cast<Version>(lib->symbol("nvJitLinkVersion"));
        if (version == nullptr || version(&out.major_, &out.minor_) != NVJITLINK_SUCCESS) {
            tried += "\n  " + candidate + ": loads, but has no working nvJitLinkVersion (nvJitLink older than 12.3)";
            continue;
        }
        const std::pair<void**, const char*> symbols[] = {
            {&out.create_, "nvJitLinkCreate"},          {&out.destroy_, "nvJitLinkDestroy"},
            {&out.add_data_, "nvJitLinkAddData"},       {&out.complete_, "nvJitLinkComplete"},
            {&out.cubin_size_, "nvJitLinkGetLinkedCubinSize"}, {&out.cubin_, "nvJitLinkGetLinkedCubin"},
            {&out.error_log_size_, "nvJitLinkGetErrorLogSize"}, {&out.error_log_, "nvJitLinkGetErrorLog"},
            {&out.info_log_size_, "nvJitLinkGetInfoLogSize"},   {&out.info_log_, "nvJitLinkGetInfoLog"}};
        std::string missing;
        for (const auto& [slot, name] : symbols)
            if ((*slot = lib->symbol(name)) == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
        if (!missing.empty()) {
            tried += "\n  " + candidate + ": lacks " + missing;
            continue;
        }
        out.library_ = std::move(*lib);
        return out;
    }
    return make_error(ErrorCode::not_found, "nvJitLink was not found; install the CUDA toolkit's libnvjitlink (or the nvidia-nvjitlink "
                                            "wheel) or set SDM_NVJITLINK to its path. Tried:" + tried);
}

std::string NvJitLink::file() const {
    return platform::Library::file_of(reinterpret_cast<const void*>(create_)).value_or(path());
}

std::vector<std::string> nvjitlink_options(archive::Kind kind, uint16_t sm, archive::Variant variant, const std::vector<std::string>& extra) {
    std::vector<std::string> all{"-arch=" + archive::target_name(archive::Kind::cubin, sm, variant)};
    if (kind == archive::Kind::ltoir) all.emplace_back("-lto");
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
}

Result<JitOutput> NvJitLink::link(const JitInput& input, uint16_t sm, archive::Variant variant, const std::vector<std::string>& options) const {
    const auto started = std::chrono::steady_clock::now();
    const std::string target = archive::target_name(archive::Kind::cubin, sm, variant);
    const std::vector<std::string> all = nvjitlink_options(input.kind, sm, variant, options);
    std::vector<const char*> argv;
    for (const auto& o : all) argv.push_back(o.c_str());
    const std::string what = "nvJitLink " + version() + " linking " + input.name + " for " + target;

    nvJitLinkHandle handle = nullptr;
    nvJitLinkResult rc = reinterpret_cast<Create>(create_)(&handle, static_cast<uint32_t>(argv.size()), argv.data());
    if (rc != NVJITLINK_SUCCESS) {
        Error e = make_error(ErrorCode::jit, what + ": nvJitLinkCreate failed with result " + std::to_string(rc) + " (options: " +
                                                 [&] { std::string s; for (const auto& o : all) s += (s.empty() ? "" : " ") + o; return s; }() + ")");
        e.native = rc;
        return e;
    }
    struct Guard {
        void* destroy;
        nvJitLinkHandle* handle;
        ~Guard() { reinterpret_cast<Destroy>(destroy)(handle); }
    } guard{destroy_, &handle};
    const nvJitLinkInputType type = input.kind == archive::Kind::ltoir ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_PTX;
    // PTX must reach nvJitLink NUL-terminated (it reads the text as a C string).
    ByteVector terminated;
    Bytes data = input.bytes;
    if (type == NVJITLINK_INPUT_PTX && (data.empty() || data.back() != std::byte{0})) {
        terminated.assign(data.begin(), data.end());
        terminated.push_back(std::byte{0});
        data = terminated;
    }
    rc = reinterpret_cast<AddData>(add_data_)(handle, type, data.data(), data.size(), input.name.c_str());
    if (rc == NVJITLINK_SUCCESS) rc = reinterpret_cast<Complete>(complete_)(handle);
    if (rc != NVJITLINK_SUCCESS) {
        Error e = make_error(ErrorCode::jit, what + " failed with nvJitLink result " + std::to_string(rc) + "; its log follows");
        e.native = rc;
        e.log = text_log(handle, error_log_size_, error_log_);
        if (!e.log.empty()) e.message += ":\n" + e.log;
        return e;
    }
    JitOutput out;
    size_t size = 0;
    rc = reinterpret_cast<Size>(cubin_size_)(handle, &size);
    if (rc == NVJITLINK_SUCCESS) {
        out.cubin.resize(size);
        rc = reinterpret_cast<Get>(cubin_)(handle, out.cubin.data());
    }
    if (rc != NVJITLINK_SUCCESS) {
        Error e = make_error(ErrorCode::jit, what + ": reading the linked cubin failed with result " + std::to_string(rc));
        e.native = rc;
        return e;
    }
    out.info_log = text_log(handle, info_log_size_, info_log_);
    out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return out;
}

}  // namespace sdm::runtime
