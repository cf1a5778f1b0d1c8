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
};

}  // namespace sdm::gpu_test
