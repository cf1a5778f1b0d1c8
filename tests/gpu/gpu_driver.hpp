// The few driver calls the GPU tests make themselves (through examples/cuda_driver.hpp, as a host
// makes them), and the tests' check-and-count.
#pragma once

#include <cstdio>
#include <string>

#include "cuda_driver.hpp"

namespace sdm::gpu_test {

inline int failures = 0;
inline void check(bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

// The driver for the tests' own calls (examples/cuda_driver.hpp).
struct Cuda : sdm_host::CudaDriver {
    // Loads libcuda, initialises it and makes device 0's primary context current; false when
    // there is no driver or device (the test then exits 77: skipped).
    bool open_device0() { return open() && make_current(0); }
};

}  // namespace sdm::gpu_test
