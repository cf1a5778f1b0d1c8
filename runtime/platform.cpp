#include "platform.hpp"

#include <cstdlib>
#include <utility>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sdm::runtime::platform {

Result<Library> Library::open(const std::string& path, bool keep_loaded) {
    dlerror();
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (keep_loaded ? RTLD_NODELETE : 0));
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

Result<FileLock> FileLock::acquire(const std::string& path, double warn_after_seconds, const std::function<void()>& waiting) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return make_error(ErrorCode::io, "cannot open lock file " + path + ": " + std::strerror(errno));
    const auto started = std::chrono::steady_clock::now();
    bool warned = false;
    for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return FileLock(fd);
        if (errno != EWOULDBLOCK && errno != EINTR) {
            const int err = errno;
            ::close(fd);
            return make_error(ErrorCode::io, "cannot lock " + path + ": " + std::strerror(err));
        }
        if (!warned && std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() > warn_after_seconds) {
            warned = true;
            if (waiting) waiting();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock::~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

Result<void> make_directories(const std::string& path, unsigned mode) {
    std::string partial;
    size_t at = 0;
    while (at != std::string::npos) {
        at = path.find('/', at + 1);
        partial = path.substr(0, at);
        if (partial.empty()) continue;
        if (::mkdir(partial.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST)
            return make_error(ErrorCode::io, "cannot create directory " + partial + ": " + std::strerror(errno));
    }
    return {};
}

std::optional<std::string> home_directory() {
    if (auto home = env("HOME")) return home;
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir != nullptr) return std::string(pw->pw_dir);
    return std::nullopt;
}

}  // namespace sdm::runtime::platform
