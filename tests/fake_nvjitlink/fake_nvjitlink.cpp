// A fake nvJitLink for tests: a JIT compiler that crashes, aborts, spins, sleeps, eats memory or
// fails on demand, so tests can show that a misbehaving compiler cannot take the host down.
//
// It exports exactly the entry points sdm resolves by plain name (runtime/jit/jit_nvjitlink.cpp),
// with the parameter types of CUDA 13's nvJitLink.h. The header is not included: it maps the
// names onto versioned symbols (__nvJitLinkCreate_13_0, ...) and would make the fake need a CUDA
// toolkit; the enum values below are copied from it (CUDA 13.0).
//
// A marker anywhere in the bytes given to nvJitLinkAddData picks what nvJitLinkComplete does:
//   SDM_FAKE_JIT_CRASH  a real SIGSEGV (a store through a null pointer)
//   SDM_FAKE_JIT_ABORT  std::abort()
//   SDM_FAKE_JIT_SPIN   loops forever on the CPU (a CPU-time limit catches it)
//   SDM_FAKE_JIT_SLEEP  blocks forever without CPU (only a wall-clock limit catches it)
//   SDM_FAKE_JIT_HOG    allocates and touches 64 MiB chunks until malloc fails (at most 64 GiB),
//                       then fails with NVJITLINK_ERROR_INTERNAL, as a well-behaved compiler would
//   SDM_FAKE_JIT_FAIL   fails with NVJITLINK_ERROR_PTX_COMPILE and a ptxas-like error log
// Without a marker the link succeeds and its cubin is the file named by SDM_FAKE_NVJITLINK_CUBIN.
// If SDM_FAKE_NVJITLINK_COUNT names a file, every Complete appends "link <pid>" to it first, so a
// test can count links, and see which process ran them, even when the link then crashes.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#ifdef _WIN32  // (the Windows build's nvJitLink_130_0.dll: tests/windows)
#include <fcntl.h>
#include <io.h>
#include <process.h>
#include <windows.h>
#define FAKE_EXPORT extern "C" __declspec(dllexport)
#else
#include <fcntl.h>
#include <unistd.h>
#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))
#endif

// nvJitLink.h's values (CUDA 13.0); sdm compares them with the header's names.
enum nvJitLinkResult : int {
    NVJITLINK_SUCCESS = 0,
    NVJITLINK_ERROR_UNRECOGNIZED_OPTION = 1,
    NVJITLINK_ERROR_MISSING_ARCH = 2,
    NVJITLINK_ERROR_INVALID_INPUT = 3,
    NVJITLINK_ERROR_PTX_COMPILE = 4,
    NVJITLINK_ERROR_NVVM_COMPILE = 5,
    NVJITLINK_ERROR_INTERNAL = 6,
    NVJITLINK_ERROR_NULL_INPUT = 10,
};
enum nvJitLinkInputType : int { NVJITLINK_INPUT_NONE = 0, NVJITLINK_INPUT_ANY = 10 };

// The header only declares the struct behind the handle; the library defines it, and so does the fake.
struct nvJitLink {
    enum class Mode { link, crash, abort, spin, sleep, hog, fail } mode = Mode::link;
    std::string arch;  // the value of -arch=
    std::vector<char> cubin;
    bool linked = false;
    std::string error_log, info_log;
};
using nvJitLinkHandle = nvJitLink*;

namespace {

// The C API must not let an exception (std::bad_alloc, mostly) unwind into its C caller.
template <class F>
nvJitLinkResult guarded(F&& body) noexcept {
    try {
        return body();
    } catch (...) {
        return NVJITLINK_ERROR_INTERNAL;
    }
}

// One write(2) on an O_APPEND descriptor, so that lines from concurrent processes do not interleave.
void count_link() {
    const char* file = std::getenv("SDM_FAKE_NVJITLINK_COUNT");
    if (file == nullptr || *file == '\0') return;
#ifdef _WIN32
    const int fd = ::_open(file, _O_WRONLY | _O_APPEND | _O_CREAT | _O_BINARY, 0644);
    if (fd < 0) return;
    char line[32];
    const int n = std::snprintf(line, sizeof line, "link %ld\n", static_cast<long>(::_getpid()));
    [[maybe_unused]] const int written = ::_write(fd, line, static_cast<unsigned>(n));
    ::_close(fd);
#else
    const int fd = ::open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[32];  // no std::string: nothing here may throw
    const int n = std::snprintf(line, sizeof line, "link %ld\n", static_cast<long>(::getpid()));
    [[maybe_unused]] const ssize_t written = ::write(fd, line, static_cast<size_t>(n));
    ::close(fd);
#endif
}

// Touches every page, so that the memory is really committed, not just reserved.
nvJitLinkResult hog(nvJitLink& h) {
    constexpr size_t chunk = size_t{64} << 20, cap = size_t{64} << 30;
    std::vector<void*> kept;
    kept.reserve(cap / chunk);  // up front: no allocation but the chunks once memory runs short
    while (kept.size() < cap / chunk) {
        auto* p = static_cast<volatile char*>(std::malloc(chunk));
        if (p == nullptr) break;
        for (size_t at = 0; at < chunk; at += 4096) p[at] = 1;
        kept.push_back(const_cast<char*>(p));
    }
    const size_t mib = kept.size() * (chunk >> 20);
    const bool capped = kept.size() == cap / chunk;
    for (void* p : kept) std::free(p);  // first: the log below needs memory
    h.error_log = "out of memory after " + std::to_string(mib) + " MiB" + (capped ? " (the fake's 64 GiB cap)" : "");
    return NVJITLINK_ERROR_INTERNAL;
}

nvJitLinkResult link(nvJitLink& h) {
    const char* file = std::getenv("SDM_FAKE_NVJITLINK_CUBIN");
    if (file == nullptr || *file == '\0') {
        h.error_log = "fake nvJitLink: SDM_FAKE_NVJITLINK_CUBIN is not set (it names the file the link returns)";
        return NVJITLINK_ERROR_INTERNAL;
    }
    // stdio, not ifstream: a directory opens fine and reads as empty through a stream, where
    // fread reports EISDIR.
    std::vector<char> bytes;
    int error = 0;
    if (std::FILE* f = std::fopen(file, "rb")) {
        char buffer[65536];
        for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) bytes.insert(bytes.end(), buffer, buffer + n);
        if (std::ferror(f)) error = errno;
        std::fclose(f);
    } else {
        error = errno;
    }
    if (error != 0) {
        h.error_log = std::string("fake nvJitLink: cannot read SDM_FAKE_NVJITLINK_CUBIN=") + file + ": " + std::strerror(error);
        return NVJITLINK_ERROR_INTERNAL;
    }
    h.cubin = std::move(bytes);
    h.linked = true;
    h.info_log = "fake nvJitLink: linked " + std::to_string(h.cubin.size()) + " bytes for " + h.arch;
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult log_size(nvJitLinkHandle h, size_t* size, const std::string nvJitLink::*log) {
    if (h == nullptr || size == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
    *size = (h->*log).size() + 1;  // with the NUL, as the real library counts
    return NVJITLINK_SUCCESS;
}

nvJitLinkResult get_log(nvJitLinkHandle h, char* out, const std::string nvJitLink::*log) {
    if (h == nullptr || out == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
    std::memcpy(out, (h->*log).c_str(), (h->*log).size() + 1);
    return NVJITLINK_SUCCESS;
}

}  // namespace

FAKE_EXPORT nvJitLinkResult nvJitLinkVersion(unsigned int* major, unsigned int* minor) {
    if (major == nullptr || minor == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
    *major = 13;
    *minor = 0;
    return NVJITLINK_SUCCESS;
}

FAKE_EXPORT nvJitLinkResult nvJitLinkCreate(nvJitLinkHandle* handle, uint32_t numOptions, const char** options) {
    if (handle == nullptr || (numOptions > 0 && options == nullptr)) return NVJITLINK_ERROR_INVALID_INPUT;
    return guarded([&] {
        std::string arch;
        for (uint32_t i = 0; i < numOptions; ++i) {
            if (options[i] == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
            const std::string_view o = options[i];
            if (o.empty() || o[0] != '-') return NVJITLINK_ERROR_UNRECOGNIZED_OPTION;  // "-lto", "-O3", ... pass
            if (o.starts_with("-arch=")) arch = o.substr(6);
        }
        // The real library's answer to a link without -arch=sm_NN.
        if (arch.empty()) return NVJITLINK_ERROR_MISSING_ARCH;
        auto* h = new nvJitLink;
        h->arch = std::move(arch);
        *handle = h;
        return NVJITLINK_SUCCESS;
    });
}

FAKE_EXPORT nvJitLinkResult nvJitLinkDestroy(nvJitLinkHandle* handle) {
    if (handle == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
    delete *handle;
    *handle = nullptr;
    return NVJITLINK_SUCCESS;
}

FAKE_EXPORT nvJitLinkResult nvJitLinkAddData(nvJitLinkHandle handle, nvJitLinkInputType, const void* data, size_t size, const char*) {
    if (handle == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
    if (data == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
    // Byte search, not C-string search: LTO-IR holds NULs anywhere. The first marker in this
    // order wins, whichever input carried it.
    using M = nvJitLink::Mode;
    static constexpr std::pair<std::string_view, M> markers[] = {
        {"SDM_FAKE_JIT_CRASH", M::crash}, {"SDM_FAKE_JIT_ABORT", M::abort}, {"SDM_FAKE_JIT_SPIN", M::spin},
        {"SDM_FAKE_JIT_SLEEP", M::sleep}, {"SDM_FAKE_JIT_HOG", M::hog},     {"SDM_FAKE_JIT_FAIL", M::fail}};
    const std::string_view bytes(static_cast<const char*>(data), size);
    for (const auto& [marker, mode] : markers)
        if (bytes.find(marker) != std::string_view::npos) {
            if (handle->mode == M::link || mode < handle->mode) handle->mode = mode;
            break;
        }
    return NVJITLINK_SUCCESS;
}

FAKE_EXPORT nvJitLinkResult nvJitLinkComplete(nvJitLinkHandle handle) {
    if (handle == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
    count_link();
    switch (handle->mode) {
        case nvJitLink::Mode::crash: {
            // A real fault, not raise(SIGSEGV): the pointer is read through a volatile, so the
            // compiler cannot see it is null and turn the store into a trap (SIGILL).
            int* volatile null = nullptr;
            *static_cast<volatile int*>(null) = 1;
            std::abort();  // unreachable
        }
        case nvJitLink::Mode::abort: std::abort();
        case nvJitLink::Mode::spin:
            // Volatile accesses are side effects: the loop can be neither removed nor assumed to end.
            for (volatile uint64_t n = 0;;) n = n + 1;
        case nvJitLink::Mode::sleep:
#ifdef _WIN32
            for (;;) ::Sleep(INFINITE);
#else
            for (;;) ::pause();  // a handled signal returns from pause: sleep again
#endif
        case nvJitLink::Mode::hog: return guarded([&] { return hog(*handle); });
        case nvJitLink::Mode::fail:
            return guarded([&] {
                handle->error_log = "ptxas fatal   : the fake's SDM_FAKE_JIT_FAIL marker";
                return NVJITLINK_ERROR_PTX_COMPILE;
            });
        case nvJitLink::Mode::link: break;
    }
    return guarded([&] { return link(*handle); });
}

FAKE_EXPORT nvJitLinkResult nvJitLinkGetLinkedCubinSize(nvJitLinkHandle handle, size_t* size) {
    if (handle == nullptr || size == nullptr || !handle->linked) return NVJITLINK_ERROR_INVALID_INPUT;
    *size = handle->cubin.size();
    return NVJITLINK_SUCCESS;
}

FAKE_EXPORT nvJitLinkResult nvJitLinkGetLinkedCubin(nvJitLinkHandle handle, void* cubin) {
    if (handle == nullptr || cubin == nullptr || !handle->linked) return NVJITLINK_ERROR_INVALID_INPUT;
    std::copy(handle->cubin.begin(), handle->cubin.end(), static_cast<char*>(cubin));
    return NVJITLINK_SUCCESS;
}

FAKE_EXPORT nvJitLinkResult nvJitLinkGetErrorLogSize(nvJitLinkHandle handle, size_t* size) {
    return log_size(handle, size, &nvJitLink::error_log);
}
FAKE_EXPORT nvJitLinkResult nvJitLinkGetErrorLog(nvJitLinkHandle handle, char* log) { return get_log(handle, log, &nvJitLink::error_log); }
FAKE_EXPORT nvJitLinkResult nvJitLinkGetInfoLogSize(nvJitLinkHandle handle, size_t* size) {
    return log_size(handle, size, &nvJitLink::info_log);
}
FAKE_EXPORT nvJitLinkResult nvJitLinkGetInfoLog(nvJitLinkHandle handle, char* log) { return get_log(handle, log, &nvJitLink::info_log); }
