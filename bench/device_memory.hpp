// Device memory in use, as the benches read it (cuMemGetInfo's total - free, after the current
// context's work is done): what a load took is the difference between two readings.
#pragma once

#include <cuda.h>

#include "cuda_driver.hpp"

namespace sdm_bench {

// -1 when the driver cannot say.
inline long long used_device_bytes(sdm_host::CudaDriver& cu) {
    const auto sync = cu.get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize");
    const auto info = cu.get<decltype(&cuMemGetInfo)>("cuMemGetInfo");
    size_t free = 0, total = 0;
    if (sync == nullptr || info == nullptr || sync() != CUDA_SUCCESS || info(&free, &total) != CUDA_SUCCESS) return -1;
    return static_cast<long long>(total - free);
}

}  // namespace sdm_bench
