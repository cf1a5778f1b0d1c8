// What a host calls in the CUDA driver itself, beside sdm (its own context, memory, a plain
// launch): libcuda opened with dlopen (nvcuda.dll with LoadLibrary on Windows) and each entry
// point resolved with cuGetProcAddress for CUDA 12.0, as sdm resolves its own (a plain
// dlsym("cuMemAlloc") returns the legacy ABI). The examples, the benches and the GPU tests share
// it; it needs cuda.h and -ldl, nothing of sdm.
#pragma once

#include <cstdlib>

#include <cuda.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace sdm_host {

class CudaDriver {
public:
    // Opens `path` (nullptr: $SDM_CUDA_DRIVER, else libcuda.so.1 or nvcuda.dll) and runs cuInit(0); false when
    // there is no driver or no device.
    bool open(const char* path = nullptr) {
        if (!attach(path)) return false;
        const auto init = get<decltype(&cuInit)>("cuInit");
        return init != nullptr && init(0) == CUDA_SUCCESS;
    }
    // The same without cuInit: for a process whose driver sdm already initialized.
    bool attach(const char* path = nullptr) {
        if (path == nullptr) path = std::getenv("SDM_CUDA_DRIVER");
#ifdef _WIN32
        lib_ = ::LoadLibraryExA(path != nullptr ? path : "nvcuda.dll", nullptr, path != nullptr ? LOAD_WITH_ALTERED_SEARCH_PATH : LOAD_LIBRARY_SEARCH_SYSTEM32);
        if (lib_ == nullptr) return false;
        gpa_ = reinterpret_cast<GetProc>(reinterpret_cast<void*>(::GetProcAddress(static_cast<HMODULE>(lib_), "cuGetProcAddress_v2")));
#else
        lib_ = dlopen(path != nullptr ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib_ == nullptr) return false;
        gpa_ = reinterpret_cast<GetProc>(dlsym(lib_, "cuGetProcAddress_v2"));
#endif
        return gpa_ != nullptr;
    }
    // Entry point `name` (a base name), as the function type F of cuda.h for CUDA `version`
    // (12000: the ABI every call here was written for; newer calls need their version); nullptr
    // when absent.
    template <typename F>
    F get(const char* name, int version = 12000) const {
        void* fn = nullptr;
        if (gpa_ == nullptr || gpa_(name, &fn, version, 0, nullptr) != CUDA_SUCCESS) return nullptr;
        return reinterpret_cast<F>(fn);
    }
    // Retains device `ordinal`'s primary context and makes it current on this thread.
    bool make_current(int ordinal, CUcontext* context = nullptr) {
        CUdevice device = 0;
        CUcontext ctx = nullptr;
        const auto device_get = get<decltype(&cuDeviceGet)>("cuDeviceGet");
        const auto retain = get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
        const auto push = get<decltype(&cuCtxPushCurrent)>("cuCtxPushCurrent");
        if (device_get == nullptr || retain == nullptr || push == nullptr) return false;
        if (device_get(&device, ordinal) != CUDA_SUCCESS || retain(&ctx, device) != CUDA_SUCCESS || push(ctx) != CUDA_SUCCESS) return false;
        if (context != nullptr) *context = ctx;
        return true;
    }

private:
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    void* lib_{nullptr};
    GetProc gpa_{nullptr};
};

}  // namespace sdm_host
