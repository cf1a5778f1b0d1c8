// The runtime's platform layer: loading shared libraries and reading the environment. A Windows
// port (nvcuda.dll, LoadLibrary, GetProcAddress) replaces platform.cpp and nothing else here.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "result.hpp"

namespace sdm::runtime::platform {

class Library {
public:
    // Loads `path` (a file name searched the platform's way, or a path) with local symbol scope.
    // `keep_loaded`: never unloaded once loaded (a later open is then a cheap reference).
    static Result<Library> open(const std::string& path, bool keep_loaded = false);
    Library() = default;
    Library(Library&& other) noexcept;
    Library& operator=(Library&& other) noexcept;
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    ~Library();

    void* symbol(const char* name) const noexcept;  // nullptr when absent
    const std::string& path() const noexcept { return path_; }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    void* handle_{nullptr};
    std::string path_;
};

// The variable's value; nullopt when unset or empty.
std::optional<std::string> env(const char* name);

// An exclusive lock on a lock file (flock: the kernel drops it when the holder dies, so a killed
// process never leaves a stale lock). Each acquire opens the file anew, so threads of one process
// exclude each other too.
class FileLock {
public:
    // Waits for the lock; after `warn_after_seconds` calls `waiting` once (to log who waits).
    static Result<FileLock> acquire(const std::string& path, double warn_after_seconds, const std::function<void()>& waiting);
    FileLock(FileLock&& other) noexcept;
    FileLock& operator=(FileLock&&) = delete;
    ~FileLock();

private:
    explicit FileLock(int fd) : fd_(fd) {}
    int fd_{-1};
};

// mkdir -p with `mode` for the directories it creates.
Result<void> make_directories(const std::string& path, unsigned mode);
// The user's home directory ($HOME, else the password database).
std::optional<std::string> home_directory();

}  // namespace sdm::runtime::platform
