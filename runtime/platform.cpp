#include "platform.hpp"

#include <cstdlib>
#include <utility>

#include <dlfcn.h>

namespace sdm::runtime::platform {

Result<Library> Library::open(const std::string& path) {
    dlerror();
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        return make_error(ErrorCode::io, why != nullptr ? why : ("cannot load " + path));
    }
    Library lib;
    lib.handle_ = handle;
    lib.path_ = path;
    return lib;
}

Library::Library(Library&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

Library& Library::operator=(Library&& other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) ::dlclose(handle_);
        handle_ = std::exchange(other.handle_, nullptr);
        path_ = std::move(other.path_);
    }
    return *this;
}

Library::~Library() {
    if (handle_ != nullptr) ::dlclose(handle_);
}

void* Library::symbol(const char* name) const noexcept { return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr; }

std::optional<std::string> env(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
}

}  // namespace sdm::runtime::platform
