// The few driver calls the GPU tests make themselves, resolved the way sdm resolves them
// (cuGetProcAddress for CUDA 12.0), and the tests' check-and-count.
#pragma once

#include <cstdio>
#include <string>

#include <cuda.h>
#include <dlfcn.h>

namespace sdm::gpu_test {

inline int failures = 0;
inline void check(bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

struct Cuda {
    void* lib{nullptr};
    template <typename F>
    F get(const char* name) {
        using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
        static GetProc gpa = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
        void* fn = nullptr;
        gpa(name, &fn, 12000, 0, nullptr);
        return reinterpret_cast<F>(fn);
    }
    // Loads libcuda, initialises it and makes device 0's primary context current; false when
    // there is no driver or device (the test then exits 77: skipped).
    bool open_device0() {
        lib = dlopen("libcuda.so.1", RTLD_NOW);
        if (lib == nullptr || get<decltype(&cuInit)>("cuInit")(0) != CUDA_SUCCESS) return false;
        CUcontext ctx = nullptr;
        return get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&ctx, 0) == CUDA_SUCCESS &&
               get<decltype(&cuCtxPushCurrent)>("cuCtxPushCurrent")(ctx) == CUDA_SUCCESS;
    }
};

}  // namespace sdm::gpu_test
