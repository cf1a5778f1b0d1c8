// The CUDA driver, loaded at run time: libcuda.so.1, nvcuda.dll on Windows (or $SDM_CUDA_DRIVER, or a path the host gives)
// with dlopen on first need, and every entry point resolved through cuGetProcAddress pinned to
// CUDA 12.0 on its first use (a plain dlsym("cuCtxPushCurrent") would return the legacy ABI).
// No driver, an old driver, a missing entry point and a failing cuInit are each an Error with a
// message, never a crash. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include <cuda.h>

#include "driver_entry_points.hpp"
#include "platform.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// The CUDA version every entry point is resolved for, and the oldest driver sdm accepts
// (cuGetProcAddress_v2 and the entry points' current ABIs exist from 12.0 on).
inline constexpr int kCudaApiVersion = 12000;

enum class EntryPoint : size_t {
#define SDM_ENTRY_ENUM(name) name,
    SDM_DRIVER_ENTRY_POINTS(SDM_ENTRY_ENUM)
#undef SDM_ENTRY_ENUM
        count
};

const char* entry_point_name(EntryPoint entry) noexcept;
// The CUDA version `entry` is resolved for: kCudaApiVersion, but where sdm calls a later ABI of
// it (cuStreamGetCaptureInfo: the 12.3 one, cuStreamGetCaptureInfo_v3, which CUDA 13's cuda.h
// declares). A driver older than that has no such entry point (resolve() says so without asking:
// cuGetProcAddress would hand an older driver's older ABI of the name).
int entry_point_version(EntryPoint entry) noexcept;

class Driver {
public:
    // Loads `path` (empty: $SDM_CUDA_DRIVER, else libcuda.so.1), checks its version and runs cuInit.
    // A driver whose cuInit reports CUDA_ERROR_NO_DEVICE loads, with zero devices.
    static Result<std::shared_ptr<Driver>> load(const std::string& path);

    int version() const noexcept { return version_; }             // 12080 for 12.8
    const std::string& path() const noexcept { return library_.path(); }
    bool has_devices() const noexcept { return has_devices_; }

    // The entry point, resolved on first use; ErrorCode::driver_too_old when the driver lacks it.
    Result<void*> resolve(EntryPoint entry);

    // Calls entry point `entry` (of function type Fn) with `args`; a failing CUresult becomes an
    // ErrorCode::driver error "<what>: cuX failed with CUDA_ERROR_Y (description)".
    template <typename Fn, typename... Args>
    Result<void> call(EntryPoint entry, const std::string& what, Args... args) {
        SDM_TRY_GET(fn, resolve(entry));
        const CUresult rc = reinterpret_cast<Fn>(*fn)(args...);
        if (rc != CUDA_SUCCESS) return error(rc, entry, what);
        return {};
    }

    Error error(CUresult rc, EntryPoint entry, const std::string& what);
    std::string result_name(CUresult rc);

private:
    Driver() = default;
    platform::Library library_;
    using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    GetProcAddress get_proc_address_{nullptr};
    std::array<std::atomic<void*>, static_cast<size_t>(EntryPoint::count)> entries_{};
    int version_{0};
    bool has_devices_{true};
};

// Calls through the driver with the entry point's own function type from cuda.h.
#define SDM_DRIVER_CALL(driver, name, what, ...) \
    (driver).call<decltype(&::name)>(::sdm::runtime::EntryPoint::name, what, __VA_ARGS__)

}  // namespace sdm::runtime
