// The runtime's platform layer: loading shared libraries and reading the environment. A Windows
// port (nvcuda.dll, LoadLibrary, GetProcAddress) replaces platform.cpp and nothing else here.
#pragma once

#include <optional>
#include <string>

#include "result.hpp"

namespace sdm::runtime::platform {

class Library {
public:
    // Loads `path` (a file name searched the platform's way, or a path) with local symbol scope.
    static Result<Library> open(const std::string& path);
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

}  // namespace sdm::runtime::platform
