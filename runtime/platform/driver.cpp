#include "driver.hpp"

#include "settings.hpp"

namespace sdm::runtime {
namespace {

constexpr const char* kEntryNames[] = {
#define SDM_ENTRY_NAME(name) #name,
    SDM_DRIVER_ENTRY_POINTS(SDM_ENTRY_NAME)
#undef SDM_ENTRY_NAME
};
#ifdef _WIN32
constexpr const char* kDefaultDriver = "nvcuda.dll";  // (System32: Library::open's search order)
#else
constexpr const char* kDefaultDriver = "libcuda.so.1";
#endif

std::string version_text(int version) { return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10); }

}  // namespace

const char* entry_point_name(EntryPoint entry) noexcept { return kEntryNames[static_cast<size_t>(entry)]; }

int entry_point_version(EntryPoint entry) noexcept { return entry == EntryPoint::cuStreamGetCaptureInfo ? 12030 : kCudaApiVersion; }

Result<std::shared_ptr<Driver>> Driver::load(const std::string& requested) {
    std::string path = requested;
    if (path.empty()) path = settings::value_or(settings::path(settings::Id::cuda_driver), kDefaultDriver);
    auto library = platform::Library::open(path);
    if (!library)
        return make_error(ErrorCode::no_driver, "cannot load the CUDA driver " + path + " (" + library.error().message +
                                                    "); install the NVIDIA driver, or set SDM_CUDA_DRIVER to its path. "
                                                    "Archives can still be opened, listed and verified without it");
    std::shared_ptr<Driver> driver(new Driver());
    driver->library_ = std::move(*library);
    // The one bootstrap symbol found by name; everything else comes through it.
    driver->get_proc_address_ = reinterpret_cast<GetProcAddress>(driver->library_.symbol("cuGetProcAddress_v2"));
    using GetVersion = CUresult (*)(int*);
    const auto get_version = reinterpret_cast<GetVersion>(driver->library_.symbol("cuDriverGetVersion"));
    int version = 0;
    if (get_version == nullptr || get_version(&version) != CUDA_SUCCESS)
        return make_error(ErrorCode::driver_too_old, "the CUDA driver " + path + " does not report its version (cuDriverGetVersion); "
                                                         "it is not a working libcuda. Update the NVIDIA driver");
    driver->version_ = version;
    if (driver->get_proc_address_ == nullptr || version < kCudaApiVersion)
        return make_error(ErrorCode::driver_too_old, "the CUDA driver " + path + " is version " + version_text(version) + "; sdm needs " +
                                                         version_text(kCudaApiVersion) + " or newer. Update the NVIDIA driver");
    SDM_TRY_GET(init, driver->resolve(EntryPoint::cuInit));
    const CUresult rc = reinterpret_cast<decltype(&::cuInit)>(*init)(0);
    if (rc == CUDA_ERROR_NO_DEVICE) {
        driver->has_devices_ = false;
    } else if (rc != CUDA_SUCCESS) {
        return driver->error(rc, EntryPoint::cuInit, "initializing the CUDA driver " + path);
    }
    return driver;
}

Result<void*> Driver::resolve(EntryPoint entry) {
    std::atomic<void*>& slot = entries_[static_cast<size_t>(entry)];
    if (void* fn = slot.load(std::memory_order_acquire)) return fn;
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    const int wanted = entry_point_version(entry);
    const CUresult rc = version_ < wanted ? CUDA_ERROR_NOT_FOUND : get_proc_address_(entry_point_name(entry), &fn, wanted, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (rc != CUDA_SUCCESS || fn == nullptr || status != CU_GET_PROC_ADDRESS_SUCCESS) {
        Error e = make_error(ErrorCode::driver_too_old, "the CUDA driver " + path() + " (version " + version_text(version_) +
                                                            ") has no entry point " + entry_point_name(entry) + " for CUDA " +
                                                            version_text(wanted) + "; update the NVIDIA driver");
        e.native = static_cast<int32_t>(rc);
        return e;
    }
    slot.store(fn, std::memory_order_release);  // racing resolvers store the same pointer
    return fn;
}

std::string Driver::result_name(CUresult rc) {
    std::string out = "CUresult " + std::to_string(static_cast<int>(rc));
    const char* name = nullptr;
    const char* text = nullptr;
    if (auto fn = resolve(EntryPoint::cuGetErrorName); fn && reinterpret_cast<decltype(&::cuGetErrorName)>(*fn)(rc, &name) == CUDA_SUCCESS && name)
        out = name;
    if (auto fn = resolve(EntryPoint::cuGetErrorString); fn && reinterpret_cast<decltype(&::cuGetErrorString)>(*fn)(rc, &text) == CUDA_SUCCESS && text)
        out += std::string(" (") + text + ")";
    return out;
}

Error Driver::error(CUresult rc, EntryPoint entry, const std::string& what) {
    Error e = make_error(ErrorCode::driver, what + ": " + entry_point_name(entry) + " failed with " + result_name(rc));
    e.native = static_cast<int32_t>(rc);
    return e;
}

}  // namespace sdm::runtime
